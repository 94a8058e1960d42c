package brokerstats

import (
	"sync"
	"sync/atomic"
)

// entry is what a set holds: one or more items sampled together.
type entry interface {
	comparable
	sampleMinute(now, idleBefore int64) (idle bool)
	sampleHour(now int64)
	sampleDay(now int64)
}

// set is one bounded family of keys (topics, topic@group pairs). Lookups of existing keys take
// the read lock only; a key is created under the write lock unless the set is full.
type set[K comparable, V entry] struct {
	mu      sync.RWMutex
	m       map[K]V
	max     int // 0: no bound
	refused atomic.Int64
}

func newSet[K comparable, V entry](max int) *set[K, V] {
	return &set[K, V]{m: map[K]V{}, max: max}
}

// get returns k's entry, creating it with mk when the set has room; the zero V when it has not
// (counted in refused).
func (s *set[K, V]) get(k K, mk func() V) V {
	var zero V
	s.mu.RLock()
	v, ok := s.m[k]
	full := s.max > 0 && len(s.m) >= s.max
	s.mu.RUnlock()
	if ok {
		return v
	}
	if full {
		// Checked under the read lock so that a flood of new keys past the bound does not
		// serialise every request on the write lock.
		s.refused.Add(1)
		return zero
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[k]; ok {
		return v
	}
	if s.max > 0 && len(s.m) >= s.max {
		s.refused.Add(1)
		return zero
	}
	v = mk()
	s.m[k] = v
	return v
}

func (s *set[K, V]) lookup(k K) (V, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[k]
	return v, ok
}

func (s *set[K, V]) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// entries copies the set's content, so that sampling runs without the lock.
func (s *set[K, V]) entries() ([]K, []V) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ks, vs := make([]K, 0, len(s.m)), make([]V, 0, len(s.m))
	for k, v := range s.m {
		ks = append(ks, k)
		vs = append(vs, v)
	}
	return ks, vs
}

// removeIf drops the keys drop selects.
func (s *set[K, V]) removeIf(drop func(K) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if drop(k) {
			delete(s.m, k)
		}
	}
}

// sampleMinute samples every entry and drops those idle since before idleBefore (0: none).
func (s *set[K, V]) sampleMinute(now, idleBefore int64) {
	ks, vs := s.entries()
	var idle map[K]V
	for i, v := range vs {
		if v.sampleMinute(now, idleBefore) {
			if idle == nil {
				idle = map[K]V{}
			}
			idle[ks[i]] = v
		}
	}
	if idle == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range idle {
		if s.m[k] == v {
			delete(s.m, k)
		}
	}
}

func (s *set[K, V]) sampleHour(now int64) {
	_, vs := s.entries()
	for _, v := range vs {
		v.sampleHour(now)
	}
}

func (s *set[K, V]) sampleDay(now int64) {
	_, vs := s.entries()
	for _, v := range vs {
		v.sampleDay(now)
	}
}

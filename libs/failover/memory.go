package failover

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MemCoordinator is an in-memory Coordinator with Consul's semantics (TTL checks that
// invalidate their sessions, session-held locks released on invalidation, modify indexes),
// on an injected clock. For unit tests.
type MemCoordinator struct {
	mu       sync.Mutex
	now      func() time.Time
	index    uint64
	checks   map[string]memCheck
	sessions map[string]string // id -> check
	kv       map[string]KV
	nextID   int
	// Down makes every call fail (a partition from the coordinator).
	down map[string]bool // check -> cut off
}

type memCheck struct {
	ttl      time.Duration
	lastPass time.Time
}

// errMemDown is what a cut-off caller gets.
var errMemDown = errors.New("failover: coordinator unreachable")

// NewMemCoordinator returns an empty store on clock now.
func NewMemCoordinator(now func() time.Time) *MemCoordinator {
	return &MemCoordinator{now: now, checks: map[string]memCheck{}, sessions: map[string]string{},
		kv: map[string]KV{}, down: map[string]bool{}}
}

// CutOff makes calls that name checkID fail (PassLease) until restored with CutOff(id, false).
func (m *MemCoordinator) CutOff(checkID string, cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down[checkID] = cut
}

// expire invalidates sessions whose check missed its TTL (Consul does this on its own clock).
func (m *MemCoordinator) expire() {
	now := m.now()
	for id, chk := range m.sessions {
		c, ok := m.checks[chk]
		if ok && now.Sub(c.lastPass) < c.ttl {
			continue
		}
		delete(m.sessions, id)
		for k, v := range m.kv {
			if v.Session == id {
				m.index++
				v.Session, v.ModifyIndex = "", m.index
				m.kv[k] = v
			}
		}
	}
}

func (m *MemCoordinator) RegisterLease(_ context.Context, id string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checks[id] = memCheck{ttl: ttl, lastPass: m.now()}
	return nil
}

func (m *MemCoordinator) PassLease(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down[id] {
		return errMemDown
	}
	m.expire()
	c, ok := m.checks[id]
	if !ok {
		return errors.New("failover: no such check")
	}
	c.lastPass = m.now()
	m.checks[id] = c
	return nil
}

func (m *MemCoordinator) DeregisterLease(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.checks, id)
	m.expire()
	return nil
}

func (m *MemCoordinator) CreateSession(_ context.Context, chk string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire()
	if _, ok := m.checks[chk]; !ok {
		return "", errors.New("failover: check not passing")
	}
	m.nextID++
	id := "s" + strconv.Itoa(m.nextID)
	m.sessions[id] = chk
	return id, nil
}

func (m *MemCoordinator) DestroySession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	for k, v := range m.kv {
		if v.Session == id {
			m.index++
			v.Session, v.ModifyIndex = "", m.index
			m.kv[k] = v
		}
	}
	return nil
}

func (m *MemCoordinator) Get(_ context.Context, key string) (KV, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire()
	v, ok := m.kv[key]
	return v, ok, nil
}

func (m *MemCoordinator) Acquire(_ context.Context, key, session string, value []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire()
	if _, ok := m.sessions[session]; !ok {
		return false, errors.New("failover: invalid session")
	}
	v := m.kv[key]
	if v.Session != "" && v.Session != session {
		return false, nil
	}
	m.index++
	m.kv[key] = KV{Value: append([]byte(nil), value...), ModifyIndex: m.index, Session: session}
	return true, nil
}

func (m *MemCoordinator) Release(_ context.Context, key, session string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.kv[key]
	if !ok || v.Session != session {
		return false, nil
	}
	m.index++
	v.Session, v.ModifyIndex = "", m.index
	m.kv[key] = v
	return true, nil
}

func (m *MemCoordinator) CAS(_ context.Context, key string, value []byte, index uint64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.kv[key]
	if (index == 0 && ok) || (index != 0 && (!ok || v.ModifyIndex != index)) {
		return false, nil
	}
	m.index++
	m.kv[key] = KV{Value: append([]byte(nil), value...), ModifyIndex: m.index, Session: v.Session}
	return true, nil
}

func (m *MemCoordinator) List(_ context.Context, prefix string) ([]KV, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire()
	var out []KV
	for k, v := range m.kv {
		if strings.HasPrefix(k, prefix) {
			v.Key = k
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (m *MemCoordinator) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kv, key)
	return nil
}

package metasync

import (
	"strings"
	"sync"
)

// Bus is the announcement transport: NATS in production (NATSBus), MemBus in
// unit tests. It is a doorbell only; losing a message costs latency (the
// follower's catch-up and periodic sync repair it), never correctness.
type Bus interface {
	// Publish sends data on subject. It may buffer while disconnected.
	Publish(subject string, data []byte) error
	// Subscribe calls fn for every message on subject (NATS wildcards '*' and
	// '>' apply) until the returned cancel function is called. A
	// subscription survives reconnects.
	Subscribe(subject string, fn func(subject string, data []byte)) (cancel func() error, error error)
	// Connected reports whether messages currently flow.
	Connected() bool
}

// MemBus is an in-process Bus with NATS subject matching, for unit tests.
// SetConnected(false) drops every message, like a NATS outage.
type MemBus struct {
	mu        sync.Mutex
	subs      map[int]memSub
	next      int
	connected bool
}

type memSub struct {
	pattern string
	fn      func(string, []byte)
}

// NewMemBus returns a connected in-memory bus.
func NewMemBus() *MemBus { return &MemBus{subs: map[int]memSub{}, connected: true} }

// SetConnected simulates an outage (false) and its end (true).
func (b *MemBus) SetConnected(c bool) {
	b.mu.Lock()
	b.connected = c
	b.mu.Unlock()
}

// Connected implements Bus.
func (b *MemBus) Connected() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.connected
}

// Publish implements Bus: delivery is synchronous, in subscription order.
func (b *MemBus) Publish(subject string, data []byte) error {
	b.mu.Lock()
	if !b.connected {
		b.mu.Unlock()
		return nil
	}
	var fns []func(string, []byte)
	for i := 0; i < b.next; i++ {
		if s, ok := b.subs[i]; ok && SubjectMatches(s.pattern, subject) {
			fns = append(fns, s.fn)
		}
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(subject, append([]byte(nil), data...))
	}
	return nil
}

// Subscribe implements Bus.
func (b *MemBus) Subscribe(subject string, fn func(string, []byte)) (func() error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = memSub{pattern: subject, fn: fn}
	return func() error {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
		return nil
	}, nil
}

// SubjectMatches applies NATS wildcard rules: '*' matches one token, a final
// '>' one or more.
func SubjectMatches(pattern, subject string) bool {
	p := strings.Split(pattern, ".")
	s := strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" {
			return i == len(p)-1 && len(s) > i
		}
		if i >= len(s) {
			return false
		}
		if tok != "*" && tok != s[i] {
			return false
		}
	}
	return len(p) == len(s)
}

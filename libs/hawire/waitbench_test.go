package hawire

import (
	"testing"
	"time"
)

// syncedState is a SYNC master's state (two in-sync copies) with slave 1 connected.
func syncedState(tb testing.TB) *MasterState {
	tb.Helper()
	cfg := DefaultMasterConfig()
	cfg.InSyncReplicas = 2
	h, err := NewEpochHistory(nil)
	if err != nil {
		tb.Fatal(err)
	}
	s := NewMasterState(cfg, 1000, h)
	s.Connect(1, "x", [NonceLen]byte{}, t0)
	if _, _, ef := s.Handshake(1, handshakeFor("", Hello{}, 0, 0, 0, 0), 0, 0, t0); ef != nil {
		tb.Fatal(ef.Message)
	}
	return s
}

// BenchmarkWaitAck: the master state's work per SYNC send at 64 in flight: 64
// WaitFunc registrations, then one Ack that completes them all (TakeCompleted
// and the callbacks included), reported per message.
func BenchmarkWaitAck(b *testing.B) {
	s := syncedState(b)
	const inflight, size = 64, 1100
	var done []Completion
	var got int
	fn := func(ReplStatus) { got++ }
	now := t0
	off := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i += inflight {
		now = now.Add(time.Millisecond)
		start := off
		for k := 0; k < inflight; k++ {
			off += size
			// Sends arrive a few µs apart: every deadline differs.
			at := now.Add(time.Duration(k) * 3 * time.Microsecond)
			if _, ok := s.WaitFunc(off, at.Add(3*time.Second), off, at, fn); ok {
				b.Fatal("completed at once")
			}
		}
		if err := s.Sent(1, start, int(off-start), now); err != nil {
			b.Fatal(err)
		}
		if err := s.Ack(1, Ack{Written: off, Flushed: off}, off, now); err != nil {
			b.Fatal(err)
		}
		done = s.TakeCompleted(done[:0])
		fire(done)
	}
	if got < b.N {
		b.Fatalf("%d of %d completed", got, b.N)
	}
}

// countingCallback is a ReplCallback the test holds a pointer to, as the broker holds its
// pending send.
type countingCallback struct{ ok, other int }

func (c *countingCallback) Replicated(s ReplStatus) {
	if s == ReplOK {
		c.ok++
	} else {
		c.other++
	}
}

// A SYNC wait answered by an ack allocates nothing once the waiter pool is warm: registering a
// callback the caller already holds, completing it and calling it back.
func TestWaitCallbackAllocatesNothing(t *testing.T) {
	s := syncedState(t)
	cb := &countingCallback{}
	done := make([]Completion, 0, 4)
	off := int64(0)
	send := func() {
		start := off
		off += 1100
		if _, ok := s.WaitCallback(off, t0.Add(time.Hour), off, t0, cb); ok {
			t.Fatal("completed at once")
		}
		if err := s.Sent(1, start, int(off-start), t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(1, Ack{Written: off, Flushed: off}, off, t0); err != nil {
			t.Fatal(err)
		}
		done = s.TakeCompleted(done[:0])
		fire(done)
	}
	send() // warms the waiter pool
	if n := testing.AllocsPerRun(100, send); n != 0 {
		t.Fatalf("%.1f allocations per wait", n)
	}
	if cb.ok != 102 || cb.other != 0 {
		t.Fatalf("callbacks: %d OK, %d other, want 102 OK", cb.ok, cb.other)
	}
}

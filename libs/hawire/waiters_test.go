package hawire

import (
	"math/rand/v2"
	"testing"
	"time"
)

// checkHeap fails unless h is a min-heap by deadline whose waiters know their index.
func checkHeap(t *testing.T, h deadlineHeap) {
	t.Helper()
	for i, w := range h {
		if w.hidx != i {
			t.Fatalf("waiter at %d has hidx %d", i, w.hidx)
		}
		if i > 0 && w.deadline.Before(h[(i-1)/2].deadline) {
			t.Fatalf("waiter at %d is earlier than its parent", i)
		}
	}
}

// TestDeadlineHeap drives the heap with random pushes, removals at random
// indexes and pops of the earliest, and checks its order and indexes after
// each, and that pops come out earliest first.
func TestDeadlineHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h deadlineHeap
	for step := 0; step < 20000; step++ {
		switch op := rng.IntN(3); {
		case op == 0 || len(h) == 0:
			h.push(&waiter{deadline: t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)})
		case op == 1:
			i := rng.IntN(len(h))
			want := h[i]
			if w := h.remove(i); w != want || w.hidx != -1 {
				t.Fatalf("remove(%d) returned another waiter or kept its index", i)
			}
		default:
			min := h[0].deadline
			for _, w := range h {
				if w.deadline.Before(min) {
					t.Fatal("the root is not the earliest")
				}
			}
			if w := h.remove(0); !w.deadline.Equal(min) {
				t.Fatal("pop returned a later waiter")
			}
		}
		checkHeap(t, h)
	}
}

// TestWaitQueueModel drives a waitQueue with random waits, acks (small ones
// that remove waiters one by one, large ones that drop most at once) and
// expiries, against a list of what is pending: every waiter completes once,
// with ReplOK when an ack covered it while pending and ReplTimeout when its
// deadline passed first, and the heap stays ordered.
func TestWaitQueueModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type ref struct {
		end      int64
		deadline time.Time
		got      []ReplStatus
	}
	var q waitQueue
	var all, pending []*ref
	now := t0
	acked := int64(0)
	for step := 0; step < 50000; step++ {
		switch op := rng.IntN(10); {
		case op < 6:
			r := &ref{end: acked + int64(rng.IntN(200)), deadline: now.Add(time.Duration(50+rng.IntN(100)) * time.Millisecond)}
			all, pending = append(all, r), append(pending, r)
			q.add(r.end, r.deadline, nil, ReplFunc(func(s ReplStatus) { r.got = append(r.got, s) }))
		case op < 9:
			if op == 8 {
				acked += int64(rng.IntN(400)) // most of what is pending
			} else {
				acked += int64(rng.IntN(30))
			}
			q.completeUpTo(acked)
			left := pending[:0]
			for _, r := range pending {
				if r.end <= acked {
					r.got = append(r.got, 100+ReplOK) // what the queue must have fired
				} else {
					left = append(left, r)
				}
			}
			pending = left
		default:
			now = now.Add(time.Duration(rng.IntN(40)) * time.Millisecond)
			q.expire(now)
			left := pending[:0]
			for _, r := range pending {
				if !r.deadline.After(now) {
					r.got = append(r.got, 100+ReplTimeout)
				} else {
					left = append(left, r)
				}
			}
			pending = left
		}
		fire(q.fired)
		q.fired = q.fired[:0]
		checkHeap(t, q.byTime)
		if q.Len() != len(pending) {
			t.Fatalf("step %d: queue holds %d, %d pending", step, q.Len(), len(pending))
		}
		for _, r := range all {
			// got holds the expected status (+100) and then the fired one, in either order.
			if len(r.got) == 1 && r.got[0] < 100 {
				t.Fatalf("step %d: waiter end %d fired %s while still pending", step, r.end, r.got[0])
			}
			if len(r.got) == 1 {
				t.Fatalf("step %d: waiter end %d did not fire %s", step, r.end, r.got[0]-100)
			}
			if len(r.got) == 2 {
				a, b := r.got[0], r.got[1]
				if a >= 100 {
					a, b = b, a
				}
				if a != b-100 {
					t.Fatalf("step %d: waiter end %d fired %s, want %s", step, r.end, a, b-100)
				}
				r.got = nil // checked
				r.end = -1
			}
			if len(r.got) > 2 {
				t.Fatalf("step %d: waiter fired more than once", step)
			}
		}
		kept := all[:0]
		for _, r := range all {
			if r.end >= 0 {
				kept = append(kept, r)
			}
		}
		all = kept
	}
}

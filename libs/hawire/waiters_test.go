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

package hawire

import (
	"sort"
	"time"
)

// ReplStatus is the outcome of a SYNC_MASTER wait.
type ReplStatus int

// Replication outcomes and the RocketMQ send status each maps to.
const (
	// ReplOK: InSyncReplicas copies hold the message (SEND_OK).
	ReplOK ReplStatus = iota
	// ReplTimeout: the deadline passed first; the message is stored on the
	// master but not known to be replicated (FLUSH_SLAVE_TIMEOUT).
	ReplTimeout
	// ReplSlaveNotAvailable: too few slaves in sync when the send arrived;
	// stored on the master only (SLAVE_NOT_AVAILABLE).
	ReplSlaveNotAvailable
)

func (s ReplStatus) String() string {
	switch s {
	case ReplOK:
		return "OK"
	case ReplTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case ReplSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "UNKNOWN"
}

type waiter struct {
	end      int64
	deadline time.Time
	ch       chan ReplStatus // buffered 1; nil for a callback waiter
	cb       ReplCallback    // callback waiter: queued in fired, called by the driver
	hidx     int             // index in the deadline heap, -1 once completed
	q        *waitQueue
}

func (w *waiter) complete(s ReplStatus) {
	if w.cb != nil {
		w.q.fired = append(w.q.fired, Completion{Cb: w.cb, Status: s})
		return
	}
	w.ch <- s // buffered 1, completed exactly once
}

// Completion is a callback waiter that completed: the driver calls
// Cb.Replicated(Status) after releasing its lock (TakeCompleted).
type Completion struct {
	Cb     ReplCallback
	Status ReplStatus
}

// ReplCallback is what a callback wait calls, once, with its status. A pointer the caller
// already holds (the broker's pending send) implements it without the closure a function
// would need: one allocation less per SYNC send.
type ReplCallback interface {
	Replicated(ReplStatus)
}

// ReplFunc adapts a function to ReplCallback.
type ReplFunc func(ReplStatus)

// Replicated calls f.
func (f ReplFunc) Replicated(s ReplStatus) { f(s) }

// waitQueue holds pending SYNC waiters ordered by end offset (for acks) and
// by deadline (for the sweeper). No goroutine per waiter: whoever processes
// an ack or a tick completes the waiters it covers.
type waitQueue struct {
	byOff  []*waiter // ascending end; completed ones are skipped lazily
	head   int
	byTime deadlineHeap
	fired  []Completion // completed callback waiters not yet taken
	// free holds waiters out of both byOff and byTime, for add to reuse:
	// every SYNC send registers one, and at tens of thousands a second their
	// allocation was most of what the queue cost.
	free []*waiter
}

// maxFree bounds the waiters kept for reuse (a burst of pending waiters
// beyond it is left to the collector once it drains).
const maxFree = 4096

func (q *waitQueue) Len() int { return len(q.byTime) }

func (q *waitQueue) add(end int64, deadline time.Time, ch chan ReplStatus, cb ReplCallback) {
	var w *waiter
	if n := len(q.free); n > 0 {
		w = q.free[n-1]
		q.free[n-1] = nil
		q.free = q.free[:n-1]
	} else {
		w = new(waiter)
	}
	*w = waiter{end: end, deadline: deadline, ch: ch, cb: cb, q: q}
	n := len(q.byOff)
	if n == q.head || q.byOff[n-1].end <= w.end {
		q.byOff = append(q.byOff, w)
	} else {
		i := q.head + sort.Search(n-q.head, func(i int) bool { return q.byOff[q.head+i].end > w.end })
		q.byOff = append(q.byOff, nil)
		copy(q.byOff[i+1:], q.byOff[i:])
		q.byOff[i] = w
	}
	q.byTime.push(w)
}

// completeUpTo completes every waiter whose end ≤ offset with ReplOK and
// returns how many it completed.
func (q *waitQueue) completeUpTo(offset int64) int {
	stop := q.head
	for stop < len(q.byOff) && q.byOff[stop].end <= offset {
		stop++
	}
	done := q.byOff[q.head:stop]
	// An ack usually covers most pending waiters, the earliest deadlines
	// first: removing them one by one sifts the heap once each, while
	// dropping them in one pass and rebuilding what is left walks it once.
	pending := 0
	for _, w := range done {
		if w.hidx >= 0 {
			pending++
		}
	}
	bulk := pending >= 8 && 4*pending >= len(q.byTime)
	for _, w := range done {
		if w.hidx >= 0 {
			if !bulk {
				q.byTime.remove(w.hidx)
			}
			w.complete(ReplOK)
		}
	}
	if bulk {
		// Every pending waiter with end ≤ offset is in done (byOff is
		// sorted by end from head), so this drops exactly those.
		q.byTime.dropUpTo(offset)
	}
	for i, w := range done {
		q.recycle(w) // out of byOff and, completed now or expired before, out of byTime
		done[i] = nil
	}
	q.head = stop
	q.compact()
	return pending
}

// expire completes every waiter whose deadline is ≤ now with ReplTimeout.
func (q *waitQueue) expire(now time.Time) int {
	n := 0
	for len(q.byTime) > 0 && !q.byTime[0].deadline.After(now) {
		w := q.byTime.remove(0)
		w.complete(ReplTimeout)
		n++
	}
	q.skipDone()
	return n
}

// failAll completes everything with s (used on close).
func (q *waitQueue) failAll(s ReplStatus) {
	for len(q.byTime) > 0 {
		q.byTime.remove(0).complete(s)
	}
	q.byOff, q.head = nil, 0
}

func (q *waitQueue) skipDone() {
	for q.head < len(q.byOff) && q.byOff[q.head].hidx < 0 {
		q.recycle(q.byOff[q.head]) // expired: already out of byTime
		q.byOff[q.head] = nil
		q.head++
	}
	q.compact()
}

// recycle keeps w, completed and referenced by neither byOff nor byTime, for add.
func (q *waitQueue) recycle(w *waiter) {
	if len(q.free) < maxFree {
		*w = waiter{hidx: -1}
		q.free = append(q.free, w)
	}
}

func (q *waitQueue) compact() {
	if q.head == len(q.byOff) {
		q.byOff, q.head = q.byOff[:0], 0
	} else if q.head > 1024 && q.head > len(q.byOff)/2 {
		n := copy(q.byOff, q.byOff[q.head:])
		clear(q.byOff[n:])
		q.byOff, q.head = q.byOff[:n], 0
	}
}

// nextDeadline is the earliest pending deadline.
func (q *waitQueue) nextDeadline() (time.Time, bool) {
	if len(q.byTime) == 0 {
		return time.Time{}, false
	}
	return q.byTime[0].deadline, true
}

// deadlineHeap is a min-heap of pending waiters by deadline, each waiter
// holding its index (hidx, -1 once out). Its operations are written out
// rather than behind container/heap's interface: an ack removes every waiter
// it completes, and the interface calls (Less, Swap) were most of that.
type deadlineHeap []*waiter

func (h *deadlineHeap) push(w *waiter) {
	*h = append(*h, w)
	h.up(len(*h)-1, w)
}

// remove takes the waiter at index i out of the heap and returns it.
func (h *deadlineHeap) remove(i int) *waiter {
	old := *h
	n := len(old) - 1
	w := old[i]
	last := old[n]
	old[n] = nil
	*h = old[:n]
	if i != n {
		if !h.down(i, last) {
			h.up(i, last)
		}
	}
	w.hidx = -1
	return w
}

// dropUpTo takes every waiter whose end ≤ offset out of the heap and
// rebuilds it from the others.
func (h *deadlineHeap) dropUpTo(offset int64) {
	old := *h
	n := 0
	for _, w := range old {
		if w.end <= offset {
			w.hidx = -1
			continue
		}
		old[n] = w
		w.hidx = n
		n++
	}
	clear(old[n:])
	*h = old[:n]
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i, old[i])
	}
}

// up places w, which belongs at index j or above, moving larger parents down.
func (h deadlineHeap) up(j int, w *waiter) {
	for j > 0 {
		i := (j - 1) / 2
		if !w.deadline.Before(h[i].deadline) {
			break
		}
		h[j] = h[i]
		h[j].hidx = j
		j = i
	}
	h[j] = w
	w.hidx = j
}

// down places w, which belongs at index i0 or below, moving smaller children
// up; it reports whether w went below i0.
func (h deadlineHeap) down(i0 int, w *waiter) bool {
	n := len(h)
	i := i0
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && h[j2].deadline.Before(h[j].deadline) {
			j = j2
		}
		if !h[j].deadline.Before(w.deadline) {
			break
		}
		h[i] = h[j]
		h[i].hidx = i
		i = j
	}
	h[i] = w
	w.hidx = i
	return i > i0
}

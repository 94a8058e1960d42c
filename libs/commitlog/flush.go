package commitlog

import (
	"container/heap"
	"time"
)

// waiter is one WaitFlush call. It sits in two heaps at once: by end offset
// (completed by the flusher) and by deadline (expired by the sweeper).
type waiter struct {
	end      int64
	deadline time.Time
	ch       chan error
	oi, di   int
}

type offsetHeap []*waiter

func (h offsetHeap) Len() int           { return len(h) }
func (h offsetHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h offsetHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].oi, h[j].oi = i, j
}
func (h *offsetHeap) Push(x any) { w := x.(*waiter); w.oi = len(*h); *h = append(*h, w) }
func (h *offsetHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.oi = -1
	return w
}

type deadlineHeap []*waiter

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].di, h[j].di = i, j
}
func (h *deadlineHeap) Push(x any) { w := x.(*waiter); w.di = len(*h); *h = append(*h, w) }
func (h *deadlineHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.di = -1
	return w
}

// WaitFlush returns a channel that receives nil once every byte below
// endOffset is fsynced, ErrFlushTimeout once deadline passes first, or the
// read-only / ErrClosed error. Concurrent waiters are completed together by
// one fsync (group commit); no goroutine is started per waiter.
func (s *Store) WaitFlush(endOffset int64, deadline time.Time) <-chan error {
	ch := make(chan error, 1)
	if err := s.Err(); err != nil {
		ch <- err
		return ch
	}
	s.waitMu.Lock()
	if endOffset <= s.flushed.Load() {
		s.waitMu.Unlock()
		ch <- nil
		return ch
	}
	if s.closed.Load() {
		s.waitMu.Unlock()
		ch <- ErrClosed
		return ch
	}
	if err := s.Err(); err != nil {
		s.waitMu.Unlock()
		ch <- err
		return ch
	}
	w := &waiter{end: endOffset, deadline: deadline, ch: ch}
	heap.Push(&s.byOffset, w)
	heap.Push(&s.byDeadline, w)
	earliest := s.byDeadline[0] == w
	s.waitMu.Unlock()
	if earliest {
		notify(s.sweepReq)
	}
	notify(s.flushReq)
	return ch
}

// completeWaiters answers the waiters flushed covers and returns how many.
func (s *Store) completeWaiters(flushed int64) int {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	n := 0
	for len(s.byOffset) > 0 && s.byOffset[0].end <= flushed {
		w := heap.Pop(&s.byOffset).(*waiter)
		heap.Remove(&s.byDeadline, w.di)
		s.nFlushedW.Add(1)
		w.ch <- nil
		n++
	}
	return n
}

func (s *Store) failAllWaiters(err error) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	for _, w := range s.byOffset {
		w.ch <- err
	}
	s.byOffset = nil
	s.byDeadline = nil
}

func (s *Store) expireWaiters(now time.Time) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	for len(s.byDeadline) > 0 && !s.byDeadline[0].deadline.After(now) {
		w := heap.Pop(&s.byDeadline).(*waiter)
		heap.Remove(&s.byOffset, w.oi)
		s.nTimeouts.Add(1)
		w.ch <- ErrFlushTimeout
	}
}

// sweepLoop is the single deadline sweeper: it sleeps until the earliest
// waiter deadline and expires everything due.
func (s *Store) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := s.cfg.Now()
		s.expireWaiters(now)
		wait := time.Hour
		s.waitMu.Lock()
		if len(s.byDeadline) > 0 {
			wait = s.byDeadline[0].deadline.Sub(now)
		}
		s.waitMu.Unlock()
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.sweepReq:
			if !t.Stop() {
				<-t.C
			}
		case <-s.stopCh:
			return
		}
	}
}

// flushLoop is the single flusher: every FlushInterval, and at once when a
// waiter asks, it fsyncs everything written so far and completes the waiters
// it covers.
func (s *Store) flushLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	var last flushRound
	for {
		select {
		case <-s.flushReq:
			if !s.gatherWaiters(last) {
				return
			}
		case <-t.C:
		case <-s.stopCh:
			return
		}
		last = s.flushOnce()
		s.cpMu.Lock()
		due := s.cfg.Now().Sub(s.lastCP) >= s.cfg.CheckpointInterval
		s.cpMu.Unlock()
		if s.Err() == nil && due {
			if err := s.writeCheckpoint(false); err != nil {
				s.log.WithError(err).Warn("checkpoint not written")
			}
		}
	}
}

// Filling each fsync
//
// Group commit under SYNC_FLUSH: appenders wait for their flush (WaitFlush); one fsync covers
// every record written before it starts. The waiters a flush releases append again at once,
// but on a 2-core machine they take a while to get there, and a flush that starts with the
// first of them covers only those that made it: 64 appenders filled each fsync with about 30.
// So when a waiter arrives, the flusher first waits for as many waiters as its last flush
// released, for at most half that flush's duration (capped at maxFlushLinger): the next
// flush then covers about as many, for less than half an fsync of added latency. A lone
// appender (its last flush released one waiter) never waits.

// maxFlushLinger caps how long the flusher waits for waiters to gather.
const maxFlushLinger = time.Millisecond

// flushRound is what a flush did: how many waiters it released and how long it took.
type flushRound struct {
	released int
	took     time.Duration
}

// flushLinger is how long the flusher may wait for waiters to gather before its next flush,
// given the last round and how many waiters are pending: zero when they are as many as the
// last flush released (or it released at most one).
func flushLinger(last flushRound, pending int) time.Duration {
	if last.released <= 1 || pending >= last.released {
		return 0
	}
	return min(last.took/2, maxFlushLinger)
}

// gatherWaiters waits, before a flush a waiter asked for, until as many waiters are pending as
// the last flush released or flushLinger's time has passed; false when the store is closing.
func (s *Store) gatherWaiters(last flushRound) bool {
	d := flushLinger(last, s.pendingWaiters())
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for flushLinger(last, s.pendingWaiters()) > 0 {
		select {
		case <-s.flushReq: // another waiter
		case <-timer.C:
			return true
		case <-s.stopCh:
			return false
		}
	}
	return true
}

// pendingWaiters counts the flush waiters and the queued records (FlushQueued) the next flush
// would cover.
func (s *Store) pendingWaiters() int {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	return len(s.byOffset) + int(s.gqueued.Load())
}

// flushOnce writes what is queued (under SYNC_FLUSH: FlushQueued) and fsyncs the CommitLog up
// to the current max offset.
func (s *Store) flushOnce() flushRound {
	start := time.Now()
	if err := s.commit(); err != nil {
		return flushRound{}
	}
	// The queued records' callbacks register their flush waits as the write covers them, so
	// the fsync below completes them. Records a leader already writes (or a sync appender
	// waits to lead) are left to it; their waits then ask for another round. flushing is set
	// first: a FlushQueued that finds it clear knows this write is still to come, one that
	// finds it set arms holdTimer.
	s.flushing.Store(true)
	defer s.flushing.Store(false)
	if s.cfg.FlushDiskType == SyncFlush {
		s.appendMu.Lock()
		s.leadOneQueuedLocked()
	}
	s.flushRunMu.Lock()
	target := s.maxOffset.Load()
	from := s.flushed.Load()
	if target > from && s.Err() == nil {
		s.segMu.RLock()
		var segs []*segment
		for _, sg := range s.segs {
			if sg.start+s.segSize > from && sg.start < target {
				segs = append(segs, sg)
			}
		}
		s.segMu.RUnlock()
		for _, sg := range segs {
			if err := sg.f.Sync(); err != nil {
				s.flushRunMu.Unlock()
				s.setReadOnly(err)
				return flushRound{}
			}
		}
		s.nFsyncs.Add(1)
		s.flushed.Store(target)
	}
	s.flushRunMu.Unlock()
	n := s.completeWaiters(s.flushed.Load())
	return flushRound{released: n, took: time.Since(start)}
}

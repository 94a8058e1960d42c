package commitlog

import "fmt"

// Grouped writes (WriteBuffer 0, the default).
//
// Appends from concurrent senders share one write per wake-up instead of one pwrite each.
// Under appendMu an appender encodes its records at the end of the group buffer, at the
// offsets that follow everything already encoded (appendPosLocked counts gpending), then:
//
//	no leader writing   -> it becomes the leader: takes the whole buffer, drops appendMu,
//	                       writes it with one WriteAt, retakes appendMu, publishes maxOffset
//	                       and wakes the waiters; one whose records were queued meanwhile
//	                       leads the next write
//	a leader is writing -> it waits until maxOffset covers its records, the lead is free
//	                       (then it leads), or the store failed
//
//	   appender A              appender B               appender C
//	   encode [m, m+a)
//	   WriteAt [m, m+a)        encode [m+a, m+a+b)      encode [m+a+b, m+a+b+c)
//	   maxOffset = m+a         wait                     wait
//	   return                  WriteAt [m+a, m+a+b+c)   wait
//	                           maxOffset = m+a+b+c      return
//	                           return
//
// Append therefore still returns only once its bytes were handed to the file (the write
// syscall for an OS file): a kill -9 after SEND_OK loses nothing under ASYNC_FLUSH, and
// WaitFlush(EndOffset) still covers them under SYNC_FLUSH. A batch never crosses a segment
// end: an appender that needs the padding first waits for the group to drain
// (drainGroupLocked), as does every other writer (AppendRaw, Truncate, Reset, DeleteTopic,
// Close).
//
// AppendAsync appenders do not wait. One that finds no leader writing leads the write of its
// group itself (so a lone sender pays no hand-off); one that finds a leader writing queues its
// record and a waiter (its result and its AppendDone) and returns at once, and the write that
// covers the record calls Appended. AppendQueued queues without ever leading, for a caller
// with a burst in hand (a connection's reader with more requests buffered); its WriteQueued at
// the end of the burst leads one write for all of them. So a group holds a whole burst, or
// what arrived during a whole write, instead of what the few goroutines a 2-core machine runs
// at once could add to it.
//
// An async leader (AppendAsync, WriteQueued, the writer goroutine) goes on writing while
// records are queued, unless a sync appender waits for them (gsyncEnd lies beyond what was
// written: that appender leads their write). A sync leader writes once; records it leaves
// queued with no sync appender behind them go to the store's writer goroutine (writerLoop),
// so no queued record waits for a later append.
//
// Waiters are called in offset order, by the goroutine that wrote their group, after appendMu
// was dropped; Appended must not block (it answers a request by queueing the answer). Two
// groups written by different goroutines (an appender that leads, the writer goroutine) may have
// their waiters called at the same time, so a later group's can run before an earlier one's
// are done: offsets follow the order of the appends, answers need not.
// Memory is bounded by the appenders: a sync one adds one batch and waits; async ones are
// bounded by their callers (the broker charges every request to its byte budget until it is
// answered).

// shrinkGroupAbove: a group buffer that grew past this is dropped after its write.
const shrinkGroupAbove = 4 << 20

// AppendDone receives the outcome of an AppendAsync.
type AppendDone interface {
	// Appended runs once the message's bytes were handed to the file (res as Append returns
	// it, except MsgID, left empty: StoreHost and AppendOffsetMsgID write it without a string
	// per message) or its group's write failed (err; the store is read-only then). It runs on
	// the goroutine that wrote the group, possibly inside AppendAsync: it must not block.
	Appended(res AppendResult, err error)
}

// groupWaiter is an AppendAsync record queued in the group buffer.
type groupWaiter struct {
	res  AppendResult
	done AppendDone
}

// awaitGroupLocked makes sure the records ending at end are written (appendMu held, and held
// again on return): it waits while another appender writes, and writes the group itself when
// its records are still queued and no one is writing. It returns the max offset the caller
// must announce (afterAppend), or -1 when the leader that wrote its records announces it, and
// the async waiters the caller must call once appendMu is dropped (callGroup).
func (s *Store) awaitGroupLocked(end int64) (int64, []groupWaiter, error) {
	if end > s.gsyncEnd {
		s.gsyncEnd = end
	}
	s.gsyncWaiters++
	defer func() { s.gsyncWaiters-- }()
	for {
		if s.maxOffset.Load() >= end {
			return -1, nil, nil
		}
		if err := s.Err(); err != nil {
			notify(s.gkick) // the writer goroutine fails what stays queued
			return -1, nil, err
		}
		if !s.gwriting {
			return s.leadGroupLocked()
		}
		s.gcond.Wait()
	}
}

// leadGroupLocked writes the whole group buffer (which holds the caller's records: everything
// queued before them is written) with one write, then hands the lead on: an appender whose
// records were queued meanwhile writes the next group, so no appender writes for others for
// longer than one write; queued async records with no sync appender behind them go to the
// writer goroutine. Only the leader writes while gwriting is set, so it does so without
// appendMu. It returns the new max offset, and the async waiters its write covered (all of
// them, with the error, when the write failed), for the caller to call after dropping appendMu.
func (s *Store) leadGroupLocked() (int64, []groupWaiter, error) {
	s.gwriting = true
	defer func() {
		s.gwriting = false
		s.gcond.Broadcast()
	}()
	batch := s.gbuf
	pos := s.maxOffset.Load()
	s.gbuf = s.gspare[:0]
	s.gspare = nil
	s.appendMu.Unlock()
	err := s.writeLocked(pos, batch)
	s.appendMu.Lock()
	s.gwrites.Add(1)
	n := int64(len(batch))
	if err != nil {
		// The store is read-only now: what was queued meanwhile will not be written either;
		// its appenders wake to the error.
		s.gpending = 0
		s.gbuf = s.gbuf[:0]
		return -1, s.takeWaitersLocked(len(s.gwaiters)), err
	}
	s.maxOffset.Store(pos + n)
	s.gpending -= n
	if cap(batch) <= shrinkGroupAbove {
		s.gspare = batch[:0]
	}
	k := 0
	for k < len(s.gwaiters) && s.gwaiters[k].res.EndOffset <= pos+n {
		k++
	}
	return pos + n, s.takeWaitersLocked(k), nil
}

// takeWaitersLocked removes the first k waiters and returns them (in a slice of their own:
// the caller calls them without appendMu while others queue).
func (s *Store) takeWaitersLocked(k int) []groupWaiter {
	if k == 0 {
		return nil
	}
	out := s.gcalled[:0]
	s.gcalled = nil
	out = append(out, s.gwaiters[:k]...)
	n := copy(s.gwaiters, s.gwaiters[k:])
	clear(s.gwaiters[n:])
	s.gwaiters = s.gwaiters[:n]
	s.gqueued.Store(int64(n))
	return out
}

// callGroup calls the waiters a write covered, in order (appendMu not held), then keeps their
// slice for the next write. A waiter that panics is logged; the others are still called.
func (s *Store) callGroup(ws []groupWaiter, err error) {
	if ws == nil {
		return
	}
	for i := range ws {
		w := &ws[i]
		s.callWaiter(w, err)
		ws[i] = groupWaiter{}
	}
	s.appendMu.Lock()
	if s.gcalled == nil && cap(ws) <= 4096 {
		s.gcalled = ws[:0]
	}
	s.appendMu.Unlock()
}

func (s *Store) callWaiter(w *groupWaiter, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.WithField("panic", fmt.Sprint(r)).Error("commitlog: append callback panicked")
		}
	}()
	w.done.Appended(w.res, err)
}

// leadQueuedLocked (appendMu held, dropped on return) writes what is queued while no one else
// writes and no sync appender waits to lead it, one group after another, calling each group's
// async waiters between writes.
func (s *Store) leadQueuedLocked() {
	for len(s.gbuf) > 0 && !s.gwriting {
		if err := s.Err(); err != nil {
			// Read-only: the queued records will not be written; their senders hear why.
			s.gpending -= int64(len(s.gbuf))
			s.gbuf = s.gbuf[:0]
			ws := s.takeWaitersLocked(len(s.gwaiters))
			s.gcond.Broadcast()
			s.appendMu.Unlock()
			s.callGroup(ws, err)
			s.appendMu.Lock()
			continue
		}
		if s.syncLeadPendingLocked() {
			break // a sync appender waits for these records: it leads their write
		}
		committed, ws, err := s.leadGroupLocked()
		s.appendMu.Unlock()
		if committed >= 0 {
			s.afterAppend(committed)
		}
		s.callGroup(ws, err)
		s.appendMu.Lock()
	}
	s.appendMu.Unlock()
}

// leadOneQueuedLocked (appendMu held, dropped on return) writes what is queued now as one
// group, when no one else writes and no sync appender waits to lead it: the flusher's write
// before its fsync (FlushQueued), which must not go on writing while senders keep queuing.
// Records queued meanwhile wait for the next round. A read-only store fails what is queued.
func (s *Store) leadOneQueuedLocked() {
	if s.Err() != nil {
		s.leadQueuedLocked()
		return
	}
	if len(s.gbuf) == 0 || s.gwriting || s.syncLeadPendingLocked() {
		s.appendMu.Unlock()
		return
	}
	committed, ws, err := s.leadGroupLocked()
	s.appendMu.Unlock()
	if committed >= 0 {
		s.afterAppend(committed)
	}
	s.callGroup(ws, err)
}

// syncLeadPendingLocked reports whether a sync appender waits for records not yet written
// (it leads their write when the lead is free).
func (s *Store) syncLeadPendingLocked() bool {
	return s.gsyncWaiters > 0 && s.gsyncEnd > s.maxOffset.Load()
}

// writerLoop writes the queued records no appender leads (see the top of the file), until the
// store closes.
func (s *Store) writerLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stopCh:
			return
		case <-s.gkick:
		}
		s.appendMu.Lock()
		s.leadQueuedLocked()
	}
}

// drainGroupLocked waits until no group write is in progress or queued (appendMu held).
func (s *Store) drainGroupLocked() {
	for s.gwriting || len(s.gbuf) > 0 {
		if !s.gwriting {
			notify(s.gkick) // queued records no appender leads: the writer goroutine takes them
		}
		s.gcond.Wait()
	}
}

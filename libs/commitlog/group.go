package commitlog

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
// Close). Memory is bounded by the appenders: each adds one batch and waits.

// shrinkGroupAbove: a group buffer that grew past this is dropped after its write.
const shrinkGroupAbove = 4 << 20

// awaitGroupLocked makes sure the records ending at end are written (appendMu held, and held
// again on return): it waits while another appender writes, and writes the group itself when
// its records are still queued and no one is writing. It returns the max offset the caller
// must announce (afterAppend), or -1 when the leader that wrote its records announces it.
func (s *Store) awaitGroupLocked(end int64) (int64, error) {
	for {
		if s.maxOffset.Load() >= end {
			return -1, nil
		}
		if err := s.Err(); err != nil {
			return -1, err
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
// longer than one write. Only the leader writes while gwriting is set, so it does so without
// appendMu.
func (s *Store) leadGroupLocked() (int64, error) {
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
		return -1, err
	}
	s.maxOffset.Store(pos + n)
	s.gpending -= n
	if cap(batch) <= shrinkGroupAbove {
		s.gspare = batch[:0]
	}
	return pos + n, nil
}

// drainGroupLocked waits until no group write is in progress or queued (appendMu held).
func (s *Store) drainGroupLocked() {
	for s.gwriting || len(s.gbuf) > 0 {
		s.gcond.Wait()
	}
}

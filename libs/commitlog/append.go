package commitlog

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

var zeroPage = make([]byte, 64<<10)

func (s *Store) validate(m *Message) error {
	if err := ValidateTopic(m.Topic); err != nil {
		return err
	}
	if m.QueueID < 0 {
		return fmt.Errorf("%w: %d", ErrQueueIDInvalid, m.QueueID)
	}
	if len(m.Body) > s.cfg.MaxMessageSize {
		return fmt.Errorf("%w: body %d bytes, max %d", ErrMessageTooLarge, len(m.Body), s.cfg.MaxMessageSize)
	}
	if len(m.Properties) > MaxPropertiesLength {
		return fmt.Errorf("%w: %d bytes", ErrPropertiesTooLarge, len(m.Properties))
	}
	if !validPropsString(m.Properties) {
		return ErrPropertiesInvalid
	}
	return nil
}

func isDispatchable(sysFlag int32) bool {
	t := sysFlag & SysFlagTxMask
	return t != SysFlagTxPrepared && t != SysFlagTxRollback
}

// Append stores one message and returns where it went. The bytes are in the
// page cache when Append returns; WaitFlush(res.EndOffset, …) waits for fsync.
func (s *Store) Append(m *Message) (AppendResult, error) {
	var res [1]AppendResult
	one := [1]*Message{m}
	if err := s.appendBatch(one[:], res[:], nil, false); err != nil {
		return AppendResult{}, err
	}
	return res[0], nil
}

// AppendAsync stores one message like Append without waiting for its write: done.Appended
// gets the result once the bytes were handed to the file, possibly before AppendAsync returns
// (group.go). An error returned here (an invalid message, a read-only or closed store) means
// nothing was queued and done is not called; otherwise done is called exactly once. With
// WriteBuffer set, it appends as Append does and calls done before returning.
func (s *Store) AppendAsync(m *Message, done AppendDone) error {
	var res [1]AppendResult
	one := [1]*Message{m}
	if s.cfg.WriteBuffer > 0 {
		if err := s.appendBatch(one[:], res[:], nil, false); err != nil {
			return err
		}
		done.Appended(res[0], nil)
		return nil
	}
	return s.appendBatch(one[:], res[:], done, false)
}

// AppendQueued is AppendAsync for a caller that has more messages coming: it queues the
// record and never writes, so the records of a whole burst leave in one write. The caller
// must call WriteQueued once its burst ends (a remoting connection's reader: when it has no
// complete request buffered); until then done may not be called. With WriteBuffer set it is
// AppendAsync.
func (s *Store) AppendQueued(m *Message, done AppendDone) error {
	if s.cfg.WriteBuffer > 0 {
		return s.AppendAsync(m, done)
	}
	var res [1]AppendResult
	one := [1]*Message{m}
	return s.appendBatch(one[:], res[:], done, true)
}

// WriteQueued writes the records queued by AppendQueued (and any other queued records) when
// no write is under way, and calls their AppendDone; when one is under way, its leader writes
// them after it (group.go). It returns once nothing it could write is left queued.
func (s *Store) WriteQueued() {
	s.appendMu.Lock()
	s.leadQueuedLocked()
}

// KickQueued is WriteQueued on the store's writer goroutine: it returns at once.
func (s *Store) KickQueued() { notify(s.gkick) }

// FlushQueued ends a burst of AppendQueued records whose senders are answered only once the
// records are fsynced (SYNC_FLUSH). Instead of writing them now, it leaves them to the
// flusher, which writes everything queued right before its fsync (flushOnce): one write and
// one fsync then cover every sender that queued meanwhile. Were each to write its own, the
// senders released by one fsync would write one after another before the next could start
// (64 senders: about 50 writes per fsync), and a SYNC_MASTER would replicate each write on
// its own. It returns at once; done is called by the write, before the fsync that covers it.
//
// A burst that finds a round under way waits for the next one, unless the round holds on
// for maxFlushHold (a stalled disk): then the store's writer writes what is queued, so that
// the senders' flush waits start, and time out, as they would have had each written its own.
// Under ASYNC_FLUSH, where the answer must not wait for the flusher, and with WriteBuffer
// set, it is WriteQueued.
func (s *Store) FlushQueued() {
	if s.cfg.FlushDiskType != SyncFlush || s.cfg.WriteBuffer > 0 {
		s.WriteQueued()
		return
	}
	if s.flushing.Load() && s.holdArmed.CompareAndSwap(false, true) {
		s.holdTimer.Reset(maxFlushHold)
	}
	notify(s.flushReq)
}

// maxFlushHold is how long records left to the flusher (FlushQueued) wait behind a round
// before the store's writer writes them instead.
const maxFlushHold = 10 * time.Millisecond

// holdExpired runs maxFlushHold after a burst was left to the flusher during a round: if a
// round is still under way, the store's writer writes what is queued.
func (s *Store) holdExpired() {
	s.holdArmed.Store(false)
	if s.flushing.Load() {
		s.KickQueued()
	}
}

// AppendBatch stores messages of one topic and queue as one contiguous run
// with consecutive queue offsets, never interleaved with other appends.
func (s *Store) AppendBatch(ms []*Message) ([]AppendResult, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	res := make([]AppendResult, len(ms))
	if err := s.appendBatch(ms, res, nil, false); err != nil {
		return nil, err
	}
	return res, nil
}

// appendBatch appends ms; with done (one message, grouped writes) it does not wait for the
// write and calls done instead, and with queueOnly it leaves the write to WriteQueued.
func (s *Store) appendBatch(ms []*Message, res []AppendResult, done AppendDone, queueOnly bool) error {
	total := 0
	for i, m := range ms {
		if err := s.validate(m); err != nil {
			return err
		}
		if i > 0 && (m.Topic != ms[0].Topic || m.QueueID != ms[0].QueueID) {
			return ErrBatchMixed
		}
		total += RecordSize(len(m.Body), len(m.Topic), len(m.Properties), isV6(m.BornHost), isV6(s.cfg.StoreHost))
	}
	if int64(total)+BlankMinLength > s.segSize {
		return fmt.Errorf("%w: %d record bytes do not fit a %d-byte segment", ErrMessageTooLarge, total, s.segSize)
	}
	s.appendMu.Lock()
	if err := s.writable(); err != nil {
		s.appendMu.Unlock()
		return err
	}
	pos := s.appendPosLocked()
	for rem := s.segEnd(pos) - pos; int64(total)+BlankMinLength > rem; rem = s.segEnd(pos) - pos {
		if _, err := s.commitLocked(); err != nil {
			s.appendMu.Unlock()
			return err
		}
		if s.gwriting || len(s.gbuf) > 0 {
			// The padding goes after the group's records: wait for them, then look again
			// (another appender may have padded the segment meanwhile).
			s.drainGroupLocked()
			if err := s.writable(); err != nil {
				s.appendMu.Unlock()
				return err
			}
			pos = s.appendPosLocked()
			continue
		}
		if err := s.writePadding(pos, rem); err != nil {
			s.appendMu.Unlock()
			return err
		}
		pos += rem
	}
	now := s.cfg.Now().UnixMilli()
	key := qkey{ms[0].Topic, ms[0].QueueID}
	qoff := s.queueOffsets[key]
	grouped := s.cfg.WriteBuffer <= 0
	buf := s.encBuf[:0]
	if grouped {
		buf = s.gbuf // records go straight into the group's next write
	}
	first := len(buf)
	off := pos
	for i, m := range ms {
		q := int64(0)
		if isDispatchable(m.SysFlag) {
			q = qoff
			qoff++
		}
		start := len(buf)
		buf = AppendRecord(buf, &Record{
			BodyCRC:                   BodyCRC(m.Body),
			QueueID:                   m.QueueID,
			Flag:                      m.Flag,
			QueueOffset:               q,
			PhysicalOffset:            off,
			SysFlag:                   m.SysFlag,
			BornTimestamp:             m.BornTimestamp,
			BornHost:                  m.BornHost,
			StoreTimestamp:            now,
			StoreHost:                 s.cfg.StoreHost,
			ReconsumeTimes:            m.ReconsumeTimes,
			PreparedTransactionOffset: m.PreparedTransactionOffset,
			Body:                      m.Body,
			Topic:                     m.Topic,
			Properties:                m.Properties,
		})
		n := len(buf) - start
		res[i] = AppendResult{WroteOffset: off, WroteBytes: int32(n), QueueOffset: q, StoreTimestamp: now, EndOffset: off + int64(n)}
		off += int64(n)
	}
	wrote := int64(len(buf) - first)
	committed := int64(-1)
	if grouped {
		s.gbuf = buf
		s.gpending += wrote
		s.queueOffsets[key] = qoff
		s.nAppends.Add(int64(len(ms)))
		s.nBytes.Add(wrote)
		if done != nil {
			s.gwaiters = append(s.gwaiters, groupWaiter{res: res[0], done: done})
			s.gqueued.Store(int64(len(s.gwaiters)))
			if s.gwriting || queueOnly {
				s.appendMu.Unlock() // the write under way, or WriteQueued, takes these records
				return nil
			}
			s.leadQueuedLocked()
			return nil
		}
		committed, ws, err := s.awaitGroupLocked(off)
		if len(s.gbuf) > 0 && !s.gwriting && !s.syncLeadPendingLocked() {
			notify(s.gkick) // async records queued behind this write: no appender leads them
		}
		s.appendMu.Unlock()
		if committed >= 0 {
			s.afterAppend(committed)
		}
		s.callGroup(ws, err)
		if err != nil {
			return err
		}
		for i := range res {
			res[i].MsgID = OffsetMsgID(s.cfg.StoreHost, res[i].WroteOffset)
		}
		return nil
	}
	if cap(buf) <= 1<<20 {
		s.encBuf = buf
	}
	if s.cfg.WriteBuffer > 0 {
		s.wbuf = append(s.wbuf, buf...)
		if len(s.wbuf) >= s.cfg.WriteBuffer {
			c, err := s.commitLocked()
			if err != nil {
				s.appendMu.Unlock()
				return err
			}
			committed = c
		}
	} else {
		if err := s.writeLocked(pos, buf); err != nil {
			s.appendMu.Unlock()
			return err
		}
		s.maxOffset.Store(off)
		committed = off
	}
	s.queueOffsets[key] = qoff
	s.appendMu.Unlock()

	for i := range res {
		res[i].MsgID = OffsetMsgID(s.cfg.StoreHost, res[i].WroteOffset)
	}
	s.nAppends.Add(int64(len(ms)))
	s.nBytes.Add(int64(len(buf)))
	if committed >= 0 {
		s.afterAppend(committed)
	}
	return nil
}

// queueUpdate is the next queue offset of one queue after a raw append.
type queueUpdate struct {
	k qkey
	q int64
}

// recentQueues is how many of the latest queue updates noteQueueOffset searches before adding
// one: a replicated batch holds runs of a few queues, so the search finds nearly every record's
// queue and the topic string is made once per queue, not once per record.
const recentQueues = 16

// noteQueueOffset records that topic's queue goes on at next, updating the entry among the
// last recentQueues that names it (comparing topic bytes, no string made) or adding one whose
// topic string comes from names (nil: a new string).
func noteQueueOffset(upd []queueUpdate, names *topicNames, topic []byte, queue int32, next int64) []queueUpdate {
	for i := len(upd) - 1; i >= 0 && i >= len(upd)-recentQueues; i-- {
		if upd[i].k.qid == queue && upd[i].k.topic == string(topic) {
			upd[i].q = next
			return upd
		}
	}
	return append(upd, queueUpdate{qkey{names.get(topic), queue}, next})
}

// recentTopics is how many topic strings topicNames keeps.
const recentTopics = 8

// topicNames hands out the topic strings of raw appends: a replicated batch names the same
// few topics as the one before, so keeping the last few strings spares a string per queue and
// batch.
type topicNames struct {
	names []string
	next  int // the entry replaced when names is full
}

func (t *topicNames) get(topic []byte) string {
	if t == nil {
		return string(topic)
	}
	for _, n := range t.names {
		if n == string(topic) {
			return n
		}
	}
	n := string(topic)
	if len(t.names) < recentTopics {
		t.names = append(t.names, n)
	} else {
		t.names[t.next] = n
		t.next = (t.next + 1) % recentTopics
	}
	return n
}

// appendPosLocked is where the next record goes: after the file's bytes, the
// write buffer and the records of the group being written.
func (s *Store) appendPosLocked() int64 {
	return s.maxOffset.Load() + int64(len(s.wbuf)) + s.gpending
}

// commitLocked writes the write buffer to the file and publishes it
// (appendMu held). It returns the new max offset, or -1 if nothing was
// pending.
func (s *Store) commitLocked() (int64, error) {
	if len(s.wbuf) == 0 {
		return -1, nil
	}
	if err := s.Err(); err != nil {
		s.wbuf = s.wbuf[:0]
		return -1, err
	}
	pos := s.maxOffset.Load()
	if err := s.writeLocked(pos, s.wbuf); err != nil {
		s.wbuf = s.wbuf[:0]
		return -1, err
	}
	end := pos + int64(len(s.wbuf))
	s.maxOffset.Store(end)
	if cap(s.wbuf) > 2*s.cfg.WriteBuffer+(1<<20) {
		s.wbuf = nil
	} else {
		s.wbuf = s.wbuf[:0]
	}
	return end, nil
}

// commit writes pending buffered appends to the file.
func (s *Store) commit() error {
	if s.cfg.WriteBuffer <= 0 {
		return nil
	}
	s.appendMu.Lock()
	end, err := s.commitLocked()
	s.appendMu.Unlock()
	if end >= 0 {
		s.afterAppend(end)
	}
	return err
}

func (s *Store) commitLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.stopCh:
			return
		}
		_ = s.commit()
	}
}

func (s *Store) afterAppend(max int64) {
	notify(s.dispatchReq)
	s.fireAppend(max)
}

// writePadding fills [pos, pos+n) with a BLANK record (appendMu held).
func (s *Store) writePadding(pos, n int64) error {
	if n < BlankMinLength {
		return s.setReadOnly(fmt.Errorf("internal: %d bytes left at segment end", n))
	}
	hdr := AppendBlank(make([]byte, 0, 8), 8)
	be := hdr[:8]
	be[0], be[1], be[2], be[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	if err := s.writeLocked(pos, be); err != nil {
		return err
	}
	for p := pos + 8; p < pos+n; {
		k := int64(len(zeroPage))
		if pos+n-p < k {
			k = pos + n - p
		}
		if err := s.writeLocked(p, zeroPage[:k]); err != nil {
			return err
		}
		p += k
	}
	s.maxOffset.Store(pos + n)
	s.nBytes.Add(n)
	return nil
}

// writeLocked writes b at pos, creating the segment when pos starts one.
// b must not cross a segment end. A failure turns the store read-only.
func (s *Store) writeLocked(pos int64, b []byte) error {
	if pos+int64(len(b)) > s.segEnd(pos) {
		return s.setReadOnly(fmt.Errorf("internal: write [%d,+%d) crosses segment end", pos, len(b)))
	}
	s.segMu.RLock()
	sg := s.segmentForLocked(pos)
	s.segMu.RUnlock()
	if sg == nil {
		var err error
		if sg, err = s.createSegment(pos - pos%s.segSize); err != nil {
			return s.setReadOnly(err)
		}
	}
	if _, err := vfs.WriteAtTail(sg.f, b, pos-sg.start); err != nil {
		return s.setReadOnly(fmt.Errorf("write %s at %d: %w", sg.name, pos, err))
	}
	s.tail.Load().write(pos, b)
	if w := pos - sg.start + int64(len(b)); w > sg.written {
		sg.written = w
	}
	return nil
}

// createSegment creates the file for a new segment and makes its directory
// entry durable.
func (s *Store) createSegment(start int64) (*segment, error) {
	s.segMu.RLock()
	n := len(s.segs)
	var last *segment
	if n > 0 {
		last = s.segs[n-1]
	}
	s.segMu.RUnlock()
	if last != nil && start != last.start+s.segSize {
		return nil, fmt.Errorf("internal: new segment %d does not follow %d", start, last.start)
	}
	name := filepath.Join(s.clDir, segName(start))
	f, err := s.fs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", name, err)
	}
	if err := s.fs.SyncDir(s.clDir); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync dir %s: %w", s.clDir, err)
	}
	sg := &segment{start: start, f: f, name: name}
	s.segMu.Lock()
	s.segs = append(s.segs, sg)
	s.segMu.Unlock()
	return sg, nil
}

// AppendRaw appends bytes copied from a master's CommitLog. offset must equal
// MaxOffset (an empty store accepts any segment-aligned offset and starts
// there); data must be whole, valid records laid out as the master wrote them
// (physical offsets match, BLANK padding ends a segment). The dispatcher
// builds the consume queues behind it.
func (s *Store) AppendRaw(offset int64, data []byte) error {
	return s.appendRaw(offset, data, true)
}

// AppendRawVerified is AppendRaw for bytes whose integrity the caller has just
// proved (an HA slave checked the CRC-32C of the Data frame they came in): it
// checks every record's framing, physical offset and segment bounds, but not
// its body CRC again, so each replicated byte is checksummed once on the hop.
//
// The dispatcher is not woken: the caller is expected to hand the same bytes
// to DispatchRaw once it has acknowledged them, so they are parsed from memory
// instead of being read back from the file (the dispatch loop's tick, or any
// WaitDispatched, still picks them up if it does not).
func (s *Store) AppendRawVerified(offset int64, data []byte) error {
	return s.appendRaw(offset, data, false)
}

// DispatchRaw builds the consume-queue units and index entries of data, which
// the caller has just appended at offset (AppendRawVerified), from the
// caller's memory. It does so only when the dispatcher is idle and everything
// before offset is dispatched; otherwise it wakes the dispatch loop, which
// reads the records from the file as usual. data is not retained.
func (s *Store) DispatchRaw(offset int64, data []byte) {
	if !s.dispatchMu.TryLock() {
		notify(s.dispatchReq)
		return
	}
	defer s.dispatchMu.Unlock()
	if s.dispatched.Load() != offset || offset < s.minOffset.Load() || offset+int64(len(data)) > s.maxOffset.Load() {
		notify(s.dispatchReq)
		return
	}
	if _, err := s.dispatchBytes(offset, data); err != nil {
		s.log.WithError(err).Error("dispatch failed")
		return
	}
	if s.dispatched.Load() < s.maxOffset.Load() {
		notify(s.dispatchReq)
	}
}

func (s *Store) appendRaw(offset int64, data []byte, crc bool) error {
	s.appendMu.Lock()
	s.drainGroupLocked()
	if err := s.writable(); err != nil {
		s.appendMu.Unlock()
		return err
	}
	if _, err := s.commitLocked(); err != nil {
		s.appendMu.Unlock()
		return err
	}
	max := s.maxOffset.Load()
	if offset != max {
		if max == s.minOffset.Load() && offset >= 0 && offset%s.segSize == 0 {
			if err := s.rebaseEmptyLocked(offset); err != nil {
				s.appendMu.Unlock()
				return err
			}
		} else {
			s.appendMu.Unlock()
			return fmt.Errorf("%w: raw append at %d, local max offset %d", ErrOffsetMismatch, offset, max)
		}
	}
	if len(data) == 0 {
		s.appendMu.Unlock()
		return nil
	}
	upd := s.rawUpd[:0]
	for p := 0; p < len(data); {
		pos := offset + int64(p)
		m, n, err := s.checkRecordCRC(data[p:], pos, crc)
		if err == nil && m.blank && p+n > len(data) {
			err = ErrIncomplete
		}
		if err != nil {
			s.appendMu.Unlock()
			if err == ErrIncomplete {
				return &CorruptError{Offset: pos, Reason: "partial record at end of raw data"}
			}
			return err
		}
		if !m.blank && isDispatchable(m.sysFlag) {
			upd = noteQueueOffset(upd, &s.rawTopics, m.topic, m.queueID, m.queueOffset+1)
		}
		p += n
	}
	for p := 0; p < len(data); {
		pos := offset + int64(p)
		k := s.segEnd(pos) - pos
		if rest := int64(len(data) - p); rest < k {
			k = rest
		}
		if err := s.writeLocked(pos, data[p:p+int(k)]); err != nil {
			s.appendMu.Unlock()
			return err
		}
		p += int(k)
	}
	for _, u := range upd {
		s.queueOffsets[u.k] = u.q
	}
	if cap(upd) <= 1024 {
		clear(upd)
		s.rawUpd = upd[:0]
	}
	end := offset + int64(len(data))
	s.maxOffset.Store(end)
	s.appendMu.Unlock()
	s.nRaw.Add(1)
	s.nBytes.Add(int64(len(data)))
	if crc {
		s.afterAppend(end)
	} else {
		s.fireAppend(end) // DispatchRaw follows
	}
	return nil
}

// rebaseEmptyLocked moves an empty store to start at a segment-aligned offset.
func (s *Store) rebaseEmptyLocked(offset int64) error {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.flushRunMu.Lock()
	defer s.flushRunMu.Unlock()
	s.segMu.Lock()
	old := s.segs
	s.segs = nil
	s.segMu.Unlock()
	s.tail.Load().invalidate()
	for _, sg := range old {
		sg.f.Close()
		if err := s.fs.Remove(sg.name); err != nil {
			return s.setReadOnly(err)
		}
	}
	s.minOffset.Store(offset)
	s.maxOffset.Store(offset)
	s.flushed.Store(offset)
	s.dispatched.Store(offset)
	if _, err := s.createSegment(offset); err != nil {
		return s.setReadOnly(err)
	}
	return nil
}

package commitlog

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
)

// Truncate cuts the CommitLog so that offset becomes its max offset (a
// replica's divergent tail). It is crash safe: a durable intent is written
// first, then files are cut and fsynced, then the intent is cleared; a crash
// in between replays the cut at Open. Consume queues follow.
func (s *Store) Truncate(offset int64) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.drainGroupLocked()
	if err := s.writable(); err != nil {
		return err
	}
	if _, err := s.commitLocked(); err != nil {
		return err
	}
	max, min := s.maxOffset.Load(), s.minOffset.Load()
	if offset == max {
		return nil
	}
	if offset < min || offset > max {
		return fmt.Errorf("%w: truncate to %d outside [%d, %d]", ErrBadOffset, offset, min, max)
	}
	if offset%s.segSize != 0 {
		var hdr [8]byte
		if err := s.readAt(hdr[:], offset); err != nil {
			return err
		}
		magic := int32(binary.BigEndian.Uint32(hdr[4:]))
		if magic != MagicV1 && magic != MagicV2 && magic != MagicBlank {
			return fmt.Errorf("%w: no record starts at %d", ErrBadOffset, offset)
		}
	}
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	if err := s.dispatchLocked(); err != nil {
		return err
	}
	s.flushRunMu.Lock()
	defer s.flushRunMu.Unlock()
	if err := s.writeIntent(intentTruncate, offset); err != nil {
		return s.setReadOnly(fmt.Errorf("write truncate intent: %w", err))
	}
	s.tail.Load().invalidate() // the cut bytes may be written again
	if err := s.cutSegments(offset); err != nil {
		return s.setReadOnly(err)
	}
	s.maxOffset.Store(offset)
	s.gsyncEnd = 0 // the group is drained: no sync appender waits (group.go)
	if s.flushed.Load() > offset {
		s.flushed.Store(offset)
	}
	if s.dispatched.Load() > offset {
		s.dispatched.Store(offset)
	}
	for _, cq := range s.allCQs() {
		if _, err := s.cqCutFrom(cq, offset); err != nil {
			return s.setReadOnly(err)
		}
		_, qmax := cq.bounds()
		s.queueOffsets[qkey{cq.topic, cq.qid}] = qmax
	}
	s.truncateIndex(offset)
	// The coverage manifest follows the cut queues before the intent is cleared.
	if err := s.writeCheckpoint(true); err != nil {
		return s.setReadOnly(err)
	}
	if err := s.clearIntent(); err != nil {
		return s.setReadOnly(err)
	}
	s.log.WithField("offset", offset).WithField("old_max", max).Warn("commitlog truncated")
	return nil
}

// Reset wipes every CommitLog and consume-queue file and starts empty at a
// segment-aligned offset (a replica that must copy again). Registered readers
// are told their data is gone.
func (s *Store) Reset(startOffset int64) error {
	if startOffset < 0 || startOffset%s.segSize != 0 {
		return fmt.Errorf("%w: reset offset %d is not a multiple of the segment size %d", ErrBadOffset, startOffset, s.segSize)
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.drainGroupLocked()
	if err := s.writable(); err != nil {
		return err
	}
	s.wbuf = s.wbuf[:0]
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.flushRunMu.Lock()
	defer s.flushRunMu.Unlock()
	if err := s.writeIntent(intentReset, startOffset); err != nil {
		return s.setReadOnly(fmt.Errorf("write reset intent: %w", err))
	}
	s.cqMu.Lock()
	for _, qs := range s.cqs {
		for _, cq := range qs {
			cq.closeFiles()
		}
	}
	s.cqs = map[string]map[int32]*consumeQueue{}
	s.cqMu.Unlock()
	s.tail.Load().invalidate()
	if err := s.resetFiles(startOffset); err != nil {
		return s.setReadOnly(err)
	}
	if s.idx != nil {
		if err := s.idx.reset(startOffset); err != nil {
			_ = s.idx.fail(err)
		}
	}
	s.queueOffsets = map[qkey]int64{}
	s.minOffset.Store(startOffset)
	s.maxOffset.Store(startOffset)
	s.gsyncEnd = 0 // the group is drained: no sync appender waits (group.go)
	s.flushed.Store(startOffset)
	s.dispatched.Store(startOffset)
	if err := s.putCheckpoint(startOffset, startOffset); err != nil {
		return s.setReadOnly(err)
	}
	if err := s.writeManifest(&manifest{dispatched: startOffset, minOffset: startOffset}); err != nil {
		return s.setReadOnly(err)
	}
	if err := s.clearIntent(); err != nil {
		return s.setReadOnly(err)
	}
	s.readersMu.Lock()
	for r := range s.readers {
		r.markRemoved()
	}
	s.readersMu.Unlock()
	s.log.WithField("offset", startOffset).Warn("commitlog reset")
	return nil
}

// DeleteTopic removes the consume queues of a topic. Its CommitLog records
// stay until retention removes their segments.
func (s *Store) DeleteTopic(topic string) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	s.drainGroupLocked()
	if s.closed.Load() {
		return ErrClosed
	}
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	if err := s.dispatchLocked(); err != nil {
		return err
	}
	s.cqMu.Lock()
	qs := s.cqs[topic]
	delete(s.cqs, topic)
	s.cqMu.Unlock()
	for _, cq := range qs {
		cq.closeFiles()
	}
	for k := range s.queueOffsets {
		if k.topic == topic {
			delete(s.queueOffsets, k)
		}
	}
	// The manifest forgets the topic before its files go: the start-up check must not
	// rebuild what was deleted on purpose.
	if err := s.writeCheckpoint(true); err != nil {
		return err
	}
	if err := s.fs.RemoveAll(filepath.Join(s.cqDir, topic)); err != nil {
		return err
	}
	return s.fs.SyncDir(s.cqDir)
}

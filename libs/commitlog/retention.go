package commitlog

import (
	"sync"
	"sync/atomic"
	"time"
)

// Reader registers a position that retention must respect: a replica still
// catching up, or a consumer in the middle of a read.
type Reader struct {
	s       *Store
	name    string
	off     atomic.Int64
	removed chan struct{}
	once    sync.Once
}

// RegisterReader registers a reader at a physical offset.
func (s *Store) RegisterReader(name string, offset int64) *Reader {
	r := &Reader{s: s, name: name, removed: make(chan struct{})}
	r.off.Store(offset)
	s.readersMu.Lock()
	s.readers[r] = struct{}{}
	s.readersMu.Unlock()
	if offset < s.MinOffset() {
		r.markRemoved()
	}
	return r
}

// Name is the name given at registration.
func (r *Reader) Name() string { return r.name }

// Offset is the reader's current position.
func (r *Reader) Offset() int64 { return r.off.Load() }

// Advance moves the reader's position.
func (r *Reader) Advance(offset int64) { r.off.Store(offset) }

// Close unregisters the reader.
func (r *Reader) Close() {
	r.s.readersMu.Lock()
	delete(r.s.readers, r)
	r.s.readersMu.Unlock()
}

// Removed is closed when data at or after the reader's position was deleted
// (retention under disk pressure, Reset).
func (r *Reader) Removed() <-chan struct{} { return r.removed }

func (r *Reader) markRemoved() { r.once.Do(func() { close(r.removed) }) }

func (s *Store) retentionLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.CleanInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.stopCh:
			return
		}
		if _, err := s.RunRetention(false); err != nil {
			s.log.WithError(err).Warn("retention failed")
		}
	}
}

func (s *Store) diskFull() bool {
	total, free, err := s.fs.DiskUsage(s.cfg.Dir)
	if err != nil || total == 0 {
		return false
	}
	used := (total - free) * 100 / total
	return used > uint64(s.cfg.DiskMaxUsedSpaceRatio)
}

// RunRetention deletes CommitLog segments: expired ones (last written more
// than FileReservedTime ago) when the clock is at a DeleteWhen hour or force
// is set, and the oldest ones regardless of age while the disk is fuller
// than DiskMaxUsedSpaceRatio. The active segment, segments not yet flushed
// or dispatched, and (unless the disk is full) segments a registered reader
// still needs are kept. Readers whose data is deleted are told via Removed.
// Consume queues and min offsets follow. It returns the number of segments
// deleted.
func (s *Store) RunRetention(force bool) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	now := s.cfg.Now()
	hourOK := force
	for _, h := range s.cfg.DeleteWhen {
		if now.Hour() == h {
			hourOK = true
		}
	}
	full := s.diskFull()
	if !hourOK && !full {
		return 0, nil
	}
	deleted := 0
	for {
		s.flushRunMu.Lock()
		s.segMu.RLock()
		var first *segment
		if len(s.segs) > 1 {
			first = s.segs[0]
		}
		s.segMu.RUnlock()
		if first == nil {
			s.flushRunMu.Unlock()
			break
		}
		end := first.start + s.segSize
		limit := s.flushed.Load()
		if d := s.dispatched.Load(); d < limit {
			limit = d
		}
		if end > limit {
			s.flushRunMu.Unlock()
			break
		}
		expired := false
		if hourOK {
			if st, err := s.fs.Stat(first.name); err == nil && !st.ModTime.Add(s.cfg.FileReservedTime).After(now) {
				expired = true
			}
		}
		if !expired && !full {
			s.flushRunMu.Unlock()
			break
		}
		var hit []*Reader
		s.readersMu.Lock()
		for r := range s.readers {
			if r.off.Load() < end {
				hit = append(hit, r)
			}
		}
		s.readersMu.Unlock()
		if len(hit) > 0 && !full {
			s.flushRunMu.Unlock()
			break
		}
		s.segMu.Lock()
		s.segs = s.segs[1:]
		s.minOffset.Store(s.segs[0].start)
		s.segMu.Unlock()
		first.f.Close()
		err := s.fs.Remove(first.name)
		s.flushRunMu.Unlock()
		for _, r := range hit {
			r.markRemoved()
		}
		if err != nil {
			return deleted, err
		}
		deleted++
		s.log.WithField("file", first.name).WithField("expired", expired).WithField("disk_full", full).Info("commitlog segment deleted")
		if full {
			full = s.diskFull()
		}
	}
	if deleted > 0 {
		_ = s.fs.SyncDir(s.clDir)
		clMin := s.minOffset.Load()
		for _, cq := range s.allCQs() {
			s.cqCorrectMin(cq, clMin)
		}
		if s.idx != nil {
			s.dispatchMu.Lock()
			if err := s.idx.dropBelow(clMin); err != nil {
				s.log.WithError(err).Warn("index retention failed")
			}
			s.dispatchMu.Unlock()
		}
		// The manifest follows at once: queue heads removed here are not damage.
		if err := s.writeCheckpoint(true); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
)

// RecoveryReport says what Open found and what it repaired.
type RecoveryReport struct {
	Clean          bool   // the checkpoint was trusted (clean shutdown)
	Intent         string // an interrupted truncate/reset that was replayed, if any
	ScannedFrom    int64  // crash recovery: first offset validated
	ScannedBytes   int64  // crash recovery: bytes validated
	MaxOffset      int64  // recovered max offset
	CutAt          int64  // first invalid byte, -1 when nothing was cut
	CutBytes       int64  // CommitLog bytes dropped (files removed included)
	CutFile        string // segment holding the first invalid byte
	CutReason      string // why that byte is invalid
	CQUnitsCut     int64  // consume-queue units dropped to match
	RedispatchFrom int64  // where the dispatcher restarted
	// CQCheck says how consume-queue coverage was checked: against the manifest, or why
	// every queue was rebuilt from the whole log (no manifest, or an unusable one).
	CQCheck string
	// CQRepairs lists the consume queues found incomplete and rebuilt from the CommitLog
	// (each also logged with topic, queue and ranges).
	CQRepairs []CQRepair
	// CQRestored is the number of consume-queue entries those rebuilds wrote.
	CQRestored int64
	// IndexCheck names the first index file found damaged or unfinished, why, and
	// where its rebuild started; empty when every file was sound.
	IndexCheck string
	// IndexFrom is where the message index was rebuilt from the CommitLog (its
	// unfinished file after a crash), -1 when nothing was rebuilt.
	IndexFrom int64
}

func (s *Store) listSegments() ([]int64, error) {
	names, err := s.fs.List(s.clDir)
	if err != nil {
		return nil, err
	}
	var starts []int64
	for _, n := range names {
		if len(n) != 20 {
			continue
		}
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 0 {
			continue
		}
		if v%s.segSize != 0 {
			return nil, fmt.Errorf("%w: segment file %s is not aligned to SegmentSize %d", ErrInvalidConfig, n, s.segSize)
		}
		starts = append(starts, v)
	}
	return starts, nil
}

func (s *Store) recover() error {
	rep := RecoveryReport{CutAt: -1, IndexFrom: -1}
	starts, err := s.listSegments()
	if err != nil {
		return err
	}
	for _, st := range starts {
		name := filepath.Join(s.clDir, segName(st))
		f, err := s.fs.Open(name)
		if err != nil {
			return fmt.Errorf("commitlog: open %s: %w", name, err)
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return err
		}
		s.segs = append(s.segs, &segment{start: st, f: f, name: name, written: size})
	}
	cut := func(at int64, file, reason string) {
		if rep.CutAt < 0 || at < rep.CutAt {
			rep.CutAt, rep.CutFile, rep.CutReason = at, file, reason
		}
	}
	// Segments must be contiguous: everything after a gap is cut.
	for i := 1; i < len(s.segs); i++ {
		if s.segs[i].start != s.segs[i-1].start+s.segSize {
			cut(s.segs[i-1].start+s.segs[i-1].written, s.segs[i-1].name, fmt.Sprintf("segment %s missing", segName(s.segs[i-1].start+s.segSize)))
			break
		}
	}
	cp := s.readCheckpoint()
	s.cpSeq = cp.seq
	forceFull := false
	if kind, off, ok := s.readIntent(); ok {
		switch kind {
		case intentTruncate:
			rep.Intent = fmt.Sprintf("truncate to %d", off)
			if cp.flushed > off {
				cp.flushed = off
			}
			if cp.dispatched > off {
				cp.dispatched = off
			}
			forceFull = true // validate what is left from the start
			if err := s.cutSegments(off); err != nil {
				return err
			}
		case intentReset:
			rep.Intent = fmt.Sprintf("reset to %d", off)
			if err := s.resetFiles(off); err != nil {
				return err
			}
			cp = checkpoint{valid: true, flushed: off, dispatched: off, seq: cp.seq}
		}
	}
	_, abortErr := s.fs.Stat(filepath.Join(s.cfg.Dir, abortFile))
	crashed := abortErr == nil || !errors.Is(abortErr, fs.ErrNotExist) || !cp.valid || rep.Intent != ""

	var base int64
	if len(s.segs) > 0 {
		base = s.segs[0].start
	}
	lastEnd := base
	if n := len(s.segs); n > 0 {
		lastEnd = s.segs[n-1].start + s.segs[n-1].written
	}
	if rep.Intent == fmt.Sprintf("reset to %d", base) || len(s.segs) == 0 {
		crashed = false
		rep.Clean = len(s.segs) == 0
	}
	if !crashed && len(s.segs) > 0 {
		// Clean: trust the checkpoint if the files agree with it.
		ok := cp.flushed >= base && cp.flushed <= lastEnd && rep.CutAt < 0
		for i, sg := range s.segs {
			if i < len(s.segs)-1 && sg.written != s.segSize {
				ok = false
			}
		}
		if ok {
			rep.Clean = true
			if cp.flushed < lastEnd {
				if err := s.cutSegments(cp.flushed); err != nil {
					return err
				}
			}
		} else {
			crashed = true
		}
	}
	if len(s.segs) > 0 {
		// Validate the newest RecoveryCheckSegments segments always, and
		// after a crash everything from the last safe point.
		from := s.segs[len(s.segs)-1].start + s.segSize
		if k := s.cfg.RecoveryCheckSegments; k > 0 {
			i := len(s.segs) - k
			if i < 0 {
				i = 0
			}
			from = s.segs[i].start
		}
		if crashed {
			safe := base
			if cp.valid && cp.flushed >= base && !s.cfg.RecoveryFullScan && !forceFull {
				safe = cp.flushed - cp.flushed%s.segSize
			}
			if safe < from {
				from = safe
			}
		}
		if s.cfg.RecoveryFullScan {
			from = base
		}
		rep.ScannedFrom = from
		at, file, reason, scanned, err := s.scan(from)
		if err != nil {
			return err
		}
		rep.ScannedBytes = scanned
		if at >= 0 {
			cut(at, file, reason)
		}
	}
	if rep.CutAt >= 0 {
		before := s.endOfFiles()
		if err := s.cutSegments(rep.CutAt); err != nil {
			return err
		}
		rep.CutBytes = before - s.endOfFiles()
		s.log.WithField("offset", rep.CutAt).WithField("file", rep.CutFile).WithField("reason", rep.CutReason).WithField("bytes", rep.CutBytes).Warn("commitlog cut at first invalid byte")
	}
	// State.
	if len(s.segs) > 0 {
		s.minOffset.Store(s.segs[0].start)
		last := s.segs[len(s.segs)-1]
		s.maxOffset.Store(last.start + last.written)
	} else {
		s.minOffset.Store(0)
		s.maxOffset.Store(0)
	}
	max := s.maxOffset.Load()
	rep.MaxOffset = max
	// Make what we recovered durable before calling it flushed.
	for _, sg := range s.segs {
		if sg.start+s.segSize > cp.flushed || !rep.Clean {
			if err := sg.f.Sync(); err != nil {
				return fmt.Errorf("commitlog: sync %s: %w", sg.name, err)
			}
		}
	}
	s.flushed.Store(max)

	// Consume queues: cut to the last durable dispatch point, then replay.
	damaged, err := s.loadAllCQ(crashed || s.cfg.RecoveryFullScan)
	if err != nil {
		return err
	}
	d := s.minOffset.Load()
	if cp.valid || rep.Intent != "" {
		d = cp.dispatched
		if cp.flushed < d {
			d = cp.flushed
		}
	}
	if d > max {
		d = max
	}
	if d < s.minOffset.Load() {
		d = s.minOffset.Load()
	}
	// Coverage: every queue must still hold what the manifest says it held (coverage.go).
	d, targets := s.checkCoverage(&rep, d, s.minOffset.Load(), max, damaged)
	if len(s.segs) > 0 && d < rep.ScannedFrom && d < max {
		// Records about to be dispatched again were not validated yet.
		from := d - d%s.segSize
		at, file, reason, scanned, err := s.scan(from)
		if err != nil {
			return err
		}
		rep.ScannedFrom = from
		rep.ScannedBytes += scanned
		if at >= 0 && at < max {
			before := s.endOfFiles()
			if err := s.cutSegments(at); err != nil {
				return err
			}
			rep.CutAt, rep.CutFile, rep.CutReason = at, file, reason
			rep.CutBytes += before - s.endOfFiles()
			max = at
			if len(s.segs) > 0 {
				last := s.segs[len(s.segs)-1]
				max = last.start + last.written
			}
			s.maxOffset.Store(max)
			s.flushed.Store(max)
			rep.MaxOffset = max
			if d > max {
				d = max
			}
		}
	}
	rep.RedispatchFrom = d
	for _, qs := range s.cqs {
		for _, cq := range qs {
			n, err := s.cqCutFrom(cq, d)
			if err != nil {
				return err
			}
			rep.CQUnitsCut += n
		}
	}
	// Incomplete queues are refilled below d from their own records; from d on the
	// dispatcher rebuilds every queue.
	if err := s.rebuildTargets(targets, d); err != nil {
		s.log.WithError(err).Error("rebuilding consume queues from the CommitLog stopped early")
	}
	if err := s.recoverIndex(&rep, d); err != nil {
		return err
	}
	s.dispatched.Store(d)
	if err := s.dispatchLocked(); err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return err
	}
	clMin := s.minOffset.Load()
	for _, qs := range s.cqs {
		for _, cq := range qs {
			s.cqCorrectMin(cq, clMin)
			_, qmax := cq.bounds()
			s.queueOffsets[qkey{cq.topic, cq.qid}] = qmax
		}
	}
	rep.CQRepairs = append(rep.CQRepairs, s.finishRepairs(targets)...)
	for _, r := range rep.CQRepairs {
		rep.CQRestored += r.Restored
	}
	// Mark the store open (crash marker) and record the recovered state.
	af, err := s.fs.Create(filepath.Join(s.cfg.Dir, abortFile))
	if err != nil {
		return fmt.Errorf("commitlog: create abort marker: %w", err)
	}
	af.Close()
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		return err
	}
	if err := s.writeCheckpoint(true); err != nil {
		return err
	}
	if rep.Intent != "" {
		if err := s.clearIntent(); err != nil {
			return err
		}
	}
	s.recovery = rep
	s.log.WithField("clean", rep.Clean).WithField("max_offset", max).WithField("min_offset", s.minOffset.Load()).WithField("cq_units_cut", rep.CQUnitsCut).
		WithField("cq_check", rep.CQCheck).WithField("cq_repaired", len(rep.CQRepairs)).WithField("cq_restored", rep.CQRestored).Info("commitlog recovered")
	return nil
}

func (s *Store) endOfFiles() int64 {
	if len(s.segs) == 0 {
		return 0
	}
	last := s.segs[len(s.segs)-1]
	return last.start + last.written
}

// scan validates records from offset from (a segment start) to the end of
// the files and returns the first invalid offset (-1 if none).
func (s *Store) scan(from int64) (at int64, file, reason string, scanned int64, err error) {
	const chunk = 4 << 20
	buf := make([]byte, chunk)
	for i, sg := range s.segs {
		if sg.start+s.segSize <= from {
			continue
		}
		isLast := i == len(s.segs)-1
		pos := int64(0)
		for pos < sg.written {
			n := sg.written - pos
			if n > chunk {
				n = chunk
			}
			b := buf[:n]
			k, rerr := sg.f.ReadAt(b, pos)
			if int64(k) < n {
				return sg.start + pos, sg.name, fmt.Sprintf("read failed: %v", rerr), scanned, nil
			}
			p := int64(0)
			for p < n {
				off := sg.start + pos + p
				m, size, cerr := s.checkRecord(b[p:], off)
				if errors.Is(cerr, ErrIncomplete) {
					if p == 0 {
						// Larger than the chunk, or torn at the end of the file.
						if len(b) >= 8 {
							want := int64(int32(be32(b)))
							if int32(be32(b[4:])) == MagicBlank && want > n && pos+want == s.segSize && sg.written == s.segSize {
								// Padding to the end of a full segment: no need to read it.
								scanned += want
								p = want
								continue
							}
							if want > n && pos+want <= sg.written && want <= s.maxRecordBytes() {
								big := make([]byte, want)
								if k, _ := sg.f.ReadAt(big, pos); int64(k) == want {
									if _, sz, e := s.checkRecord(big, off); e == nil {
										p += int64(sz)
										scanned += int64(sz)
										continue
									} else {
										return off, sg.name, e.Error(), scanned, nil
									}
								}
							}
						}
						return off, sg.name, "torn record at end of data", scanned, nil
					}
					break
				}
				if cerr != nil {
					var ce *CorruptError
					if errors.As(cerr, &ce) {
						return off, sg.name, ce.Reason, scanned, nil
					}
					return off, sg.name, cerr.Error(), scanned, nil
				}
				if m.blank {
					if sg.written < s.segSize {
						return off, sg.name, "blank padding shorter than the segment", scanned, nil
					}
					scanned += int64(size)
					p = sg.written - pos
					break
				}
				p += int64(size)
				scanned += int64(size)
			}
			pos += p
			if p == 0 {
				break
			}
		}
		if !isLast && pos < s.segSize {
			return sg.start + pos, sg.name, "segment ends without blank padding before the next segment", scanned, nil
		}
	}
	return -1, "", "", scanned, nil
}

// cutSegments makes offset the end of the CommitLog files: later segments are
// removed, the one holding offset is truncated and fsynced.
func (s *Store) cutSegments(offset int64) error {
	keep := 0
	for keep < len(s.segs) && (s.segs[keep].start < offset || (s.segs[keep].start == offset && keep == 0)) {
		keep++
	}
	s.segMu.Lock()
	drop := append([]*segment(nil), s.segs[keep:]...)
	s.segs = s.segs[:keep]
	s.segMu.Unlock()
	for _, sg := range drop {
		sg.f.Close()
		if err := s.fs.Remove(sg.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("commitlog: remove %s: %w", sg.name, err)
		}
	}
	if keep > 0 {
		last := s.segs[keep-1]
		if n := offset - last.start; n >= 0 {
			if n > last.written {
				n = last.written
			}
			if n != last.written {
				if err := last.f.Truncate(n); err != nil {
					return fmt.Errorf("commitlog: truncate %s: %w", last.name, err)
				}
				last.written = n
			}
			if err := last.f.Sync(); err != nil {
				return fmt.Errorf("commitlog: sync %s: %w", last.name, err)
			}
		}
	}
	return s.fs.SyncDir(s.clDir)
}

// resetFiles removes every CommitLog and consume-queue file and creates an
// empty segment at start.
func (s *Store) resetFiles(start int64) error {
	s.segMu.Lock()
	old := s.segs
	s.segs = nil
	s.segMu.Unlock()
	for _, sg := range old {
		sg.f.Close()
	}
	if err := s.fs.RemoveAll(s.clDir); err != nil {
		return err
	}
	if err := s.fs.RemoveAll(s.cqDir); err != nil {
		return err
	}
	if err := s.removeManifest(); err != nil {
		return err
	}
	for _, d := range []string{s.clDir, s.cqDir} {
		if err := s.fs.MkdirAll(d); err != nil {
			return err
		}
	}
	name := filepath.Join(s.clDir, segName(start))
	f, err := s.fs.Create(name)
	if err != nil {
		return err
	}
	if err := s.fs.SyncDir(s.clDir); err != nil {
		f.Close()
		return err
	}
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		f.Close()
		return err
	}
	s.segMu.Lock()
	s.segs = []*segment{{start: start, f: f, name: name}}
	s.segMu.Unlock()
	return nil
}

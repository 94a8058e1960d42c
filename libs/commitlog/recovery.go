package commitlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
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
	began := time.Now()
	// Where an open's time goes, for its log line: a restart that takes long says which part.
	var phases []string
	mark := began
	lap := func(name string) {
		now := time.Now()
		phases = append(phases, name+":"+strconv.FormatInt(now.Sub(mark).Milliseconds(), 10))
		mark = now
	}
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
	// One pass over the log validates it and, after a crash, indexes and dispatches what it
	// validated (recoveryFeed): the decisions that need the dispatch point are taken first,
	// against the files as they are, and whatever the pass then cuts is taken back out.
	filesEnd := s.endOfFiles()
	scanFrom := int64(-1)
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
		scanFrom = from
	}
	if rep.CutAt >= 0 {
		// A missing segment: nothing after it is looked at.
		if err := s.cutSegments(rep.CutAt); err != nil {
			return err
		}
	}
	// State, as far as the files tell before they are validated.
	if len(s.segs) > 0 {
		s.minOffset.Store(s.segs[0].start)
	} else {
		s.minOffset.Store(0)
	}
	max := s.endOfFiles()
	s.maxOffset.Store(max)

	lap("segments")
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
	if scanFrom >= 0 && d < scanFrom && d < max {
		// Records about to be dispatched again are validated first.
		scanFrom = d - d%s.segSize
	}
	if err := s.cutQueuesFrom(&rep, d); err != nil {
		return err
	}
	lap("queues")
	if err := s.recoverIndex(&rep, d); err != nil {
		return err
	}
	if ix := s.idx; ix != nil && ix.indexedTo < d && scanFrom >= 0 && ix.indexedTo < scanFrom {
		// The index lacks records older than the pass starts at.
		if err := s.indexCatchUp(ix.indexedTo, min(scanFrom, d)); err != nil {
			_ = ix.fail(err)
		}
	}
	s.dispatched.Store(d)
	lap("index")
	// before sees d and targets as they are when it runs: in the pass, or after it when a cut
	// below the dispatch point lowered d.
	feed := &recoveryFeed{s: s, d: d, before: func() error {
		// Incomplete queues are refilled below d from their own records (validated by
		// now); from d on the dispatcher rebuilds every queue.
		if err := s.rebuildTargets(targets, d); err != nil {
			s.log.WithError(err).Error("rebuilding consume queues from the CommitLog stopped early")
		}
		return s.indexTo(d)
	}}
	if scanFrom >= 0 {
		rep.ScannedFrom = scanFrom
		at, file, reason, scanned, err := s.scan(scanFrom, feed.consume)
		if err == nil {
			err = feed.finish()
		}
		if err != nil {
			return err
		}
		rep.ScannedBytes = scanned
		if at >= 0 {
			cut(at, file, reason)
		}
	}
	lap("scan")
	if rep.CutAt >= 0 {
		if err := s.cutSegments(rep.CutAt); err != nil {
			return err
		}
		rep.CutBytes = filesEnd - s.endOfFiles()
		s.log.WithField("offset", rep.CutAt).WithField("file", rep.CutFile).WithField("reason", rep.CutReason).WithField("bytes", rep.CutBytes).Warn("commitlog cut at first invalid byte")
	}
	max = s.endOfFiles()
	s.maxOffset.Store(max)
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
	lap("sync")
	if d > max {
		// The cut lies below the dispatch point: the pass dispatched nothing, and what the
		// queues and the index hold from the cut on goes.
		d = max
		if max <= s.minOffset.Load() {
			rep.CQCheck, targets = "empty log", nil
		}
		if err := s.cutQueuesFrom(&rep, d); err != nil {
			return err
		}
		if s.idx != nil && s.idx.indexedTo > d {
			if err := s.idx.cutTo(d); err != nil {
				return err
			}
		}
		kept := targets[:0]
		for _, t := range targets {
			if t.from < d {
				kept = append(kept, t)
			}
		}
		targets = kept
		s.dispatched.Store(d)
	}
	if !feed.reached {
		if err := feed.before(); err != nil {
			return err
		}
	}
	rep.RedispatchFrom = d
	if err := s.dispatchLocked(); err != nil {
		return err
	}
	lap("dispatch") // with the queue rebuilds and the index catch-up the pass left to here
	if s.idx != nil && rep.IndexFrom >= 0 {
		s.log.WithField("from", rep.IndexFrom).WithField("to", d).Info("message index rebuilt from the CommitLog")
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
	lap("repairs")
	// Mark the store open (crash marker) and record the recovered state.
	af, err := s.fs.Create(filepath.Join(s.cfg.Dir, abortFile))
	if err != nil {
		return fmt.Errorf("commitlog: create abort marker: %w", err)
	}
	af.Close()
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		return err
	}
	lap("marker")
	if err := s.writeCheckpoint(true); err != nil {
		return err
	}
	lap("checkpoint")
	if rep.Intent != "" {
		if err := s.clearIntent(); err != nil {
			return err
		}
	}
	s.recovery = rep
	s.log.WithField("clean", rep.Clean).WithField("max_offset", max).WithField("min_offset", s.minOffset.Load()).WithField("cq_units_cut", rep.CQUnitsCut).
		WithField("cq_check", rep.CQCheck).WithField("cq_repaired", len(rep.CQRepairs)).WithField("cq_restored", rep.CQRestored).
		WithField("scanned_bytes", rep.ScannedBytes).WithField("redispatch_from", rep.RedispatchFrom).WithField("index_from", rep.IndexFrom).
		WithField("took_ms", time.Since(began).Milliseconds()).
		WithField("phases_ms", strings.Join(append(phases, "rest:"+strconv.FormatInt(time.Since(mark).Milliseconds(), 10)), "/")).Info("commitlog recovered")
	return nil
}

// cutQueuesFrom cuts every consume queue's units of records at or above d, counting them in
// rep.
func (s *Store) cutQueuesFrom(rep *RecoveryReport, d int64) error {
	for _, qs := range s.cqs {
		for _, cq := range qs {
			n, err := s.cqCutFrom(cq, d)
			if err != nil {
				return err
			}
			rep.CQUnitsCut += n
		}
	}
	return nil
}

func (s *Store) endOfFiles() int64 {
	if len(s.segs) == 0 {
		return 0
	}
	last := s.segs[len(s.segs)-1]
	return last.start + last.written
}

// scanChunk is how much of a segment the crash scan reads at a time, and scanEmitRun how
// much of it it validates before it hands the records on (recoveryFeed), so that the feed
// finds them in the cache; scanBuffers chunks are in flight between the scan, its read-ahead
// and the feed.
//
// The scan reads the next chunk on a goroutine while it validates the current one: copying
// a chunk out of the page cache took more than half of a warm scan (pread 57% of the scan's
// CPU on a 512 MiB log), which the other core now does meanwhile. The next chunk is read
// from where the current one ends, before the scan knows where its last whole record ends,
// into a buffer with scanHead bytes of room in front: the current chunk's unfinished tail is
// copied there, so the next chunk starts at a record again. A tail longer than scanHead (one
// record larger than that, cut by the chunk's end) makes the scan read the next chunk again
// from that record's start, as it did before.
const (
	scanChunk   = 4 << 20
	scanHead    = 256 << 10
	scanEmitRun = 256 << 10
	scanBuffers = 4
)

// scanRead is a chunk read ahead: n bytes from pos into buffer idx, after scanHead.
type scanRead struct {
	idx  int
	pos  int64
	n    int64
	k    int
	err  error
	done chan struct{}
}

// scanRun is a run of validated records on its way from the scan to its consumer: b holds
// whole records at offset off, metas their parseMeta results. release (with no records)
// gives the scan's buffer buf back.
type scanRun struct {
	off     int64
	b       []byte
	metas   []recordMeta
	buf     int
	release bool
}

// scan validates records from offset from (a segment start) to the end of
// the files and returns the first invalid offset (-1 if none). consume gets
// every run of records found valid, in log order: b holds whole records, and
// when it ends with blank padding, the padding's header. The records are read
// and validated on a goroutine of their own while consume works through the
// runs before them, so that the log is read while the records already read
// are indexed and dispatched.
func (s *Store) scan(from int64, consume func(off int64, b []byte, metas []recordMeta) error) (at int64, file, reason string, scanned int64, err error) {
	free := make(chan int, scanBuffers)
	for i := 0; i < scanBuffers; i++ {
		free <- i
	}
	runs := make(chan scanRun, 64)
	quit := make(chan struct{})
	var ioErr error
	go func() {
		defer close(runs)
		at, file, reason, scanned = s.scanRuns(from, free, quit, &ioErr, func(r scanRun) bool {
			select {
			case runs <- r:
				return true
			case <-quit:
				return false
			}
		})
	}()
	// Every run is received, after a failure too, so that the scan has stopped reading
	// (the files may be cut as soon as this returns) when runs is closed.
	for r := range runs {
		switch {
		case r.release:
			free <- r.buf
		case err == nil:
			if err = consume(r.off, r.b, r.metas); err != nil {
				close(quit)
			}
		}
	}
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return -1, "", "", scanned, err
	}
	return at, file, reason, scanned, nil
}

// scanRuns is scan's reading and validating side: it takes a buffer from free for every
// chunk, hands the runs of valid records to emit and gives the buffer back through emit
// (release) once its last run is out. It stops when emit returns false or quit is closed.
//
// A read that fails (other than by ending early) sets ioErr and stops the scan: the disk did
// not answer, which says nothing about the records, and cutting the log there would drop
// every record after it. The store does not open; nothing is cut.
func (s *Store) scanRuns(from int64, free chan int, quit chan struct{}, ioErr *error, emit func(scanRun) bool) (at int64, file, reason string, scanned int64) {
	var bufs [scanBuffers][]byte
	var metas [scanBuffers][]recordMeta
	take := func() (int, bool) {
		select {
		case idx := <-free:
			if bufs[idx] == nil {
				bufs[idx] = make([]byte, scanHead+scanChunk)
			}
			return idx, true
		case <-quit:
			return -1, false
		}
	}
	// ahead is the chunk being read ahead, if any. Every return waits for its read: the
	// files may be cut as soon as the scan returns.
	var ahead *scanRead
	defer func() {
		if ahead != nil {
			<-ahead.done
		}
	}()
	// unread drops the chunk read ahead, giving its buffer back.
	unread := func() {
		if ahead != nil {
			<-ahead.done
			free <- ahead.idx
			ahead = nil
		}
	}
	for i, sg := range s.segs {
		if sg.start+s.segSize <= from {
			continue
		}
		isLast := i == len(s.segs)-1
		pos := int64(0)
		// tail is the unfinished record the last chunk ended with: [pos, pos+tail) of the
		// segment, copied in front of the chunk read ahead.
		tail := int64(0)
		for pos < sg.written {
			var (
				idx  int
				b    []byte
				k    int
				rerr error
			)
			if ahead != nil && ahead.pos == pos+tail {
				<-ahead.done
				idx = ahead.idx
				b = bufs[idx][scanHead-tail : scanHead+ahead.n]
				k, rerr = int(tail)+ahead.k, ahead.err
				ahead = nil
			} else {
				unread()
				var ok bool
				if idx, ok = take(); !ok {
					return -1, "", "", scanned
				}
				b = bufs[idx][scanHead : scanHead+min(sg.written-pos, scanChunk)]
				k, rerr = sg.f.ReadAt(b, pos)
			}
			n := int64(len(b))
			if next := pos + n; int64(k) == n && next < sg.written {
				nidx, ok := take()
				if !ok {
					return -1, "", "", scanned
				}
				r := &scanRead{idx: nidx, pos: next, n: min(sg.written-next, scanChunk), done: make(chan struct{})}
				go func(f vfs.File, dst []byte) {
					defer close(r.done)
					r.k, r.err = f.ReadAt(dst, r.pos)
				}(sg.f, bufs[nidx][scanHead:scanHead+r.n])
				ahead = r
			}
			tail = 0
			ms := metas[idx][:0]
			p := int64(0)
			ep, em := int64(0), 0 // what of b and ms was handed on
			ok := true
			// flush hands on the records validated since the last flush.
			flush := func() bool {
				end := min(p, n)
				if ok && ep < end {
					ok = emit(scanRun{off: sg.start + pos + ep, b: b[ep:end], metas: ms[em:len(ms):len(ms)], buf: idx})
				}
				ep, em = p, len(ms)
				return ok
			}
			// done gives the buffer back (after its last run) and returns the scan's result.
			done := func(at int64, reason string) (int64, string, string, int64) {
				metas[idx] = ms
				flush()
				emit(scanRun{buf: idx, release: true})
				if at < 0 {
					return -1, "", "", scanned
				}
				return at, sg.name, reason, scanned
			}
			// readFailed reports whether err is a read the disk failed (not one that ended
			// early); it then stops the scan with ioErr set.
			readFailed := func(err error) bool {
				if err == nil || errors.Is(err, io.EOF) {
					return false
				}
				*ioErr = fmt.Errorf("commitlog: reading %s at %d: %w", sg.name, pos, err)
				done(-1, "")
				return true
			}
			if int64(k) < n {
				if readFailed(rerr) {
					return -1, "", "", scanned
				}
				return done(sg.start+pos, fmt.Sprintf("read failed: %v", rerr))
			}
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
								ms = append(ms, recordMeta{size: int32(want), blank: true})
								scanned += want
								p = want
								continue
							}
							if want > n && pos+want <= sg.written && want <= s.maxRecordBytes() {
								big := make([]byte, want)
								k, berr := sg.f.ReadAt(big, pos)
								if int64(k) < want && readFailed(berr) {
									return -1, "", "", scanned
								}
								if int64(k) == want {
									if bm, sz, e := s.checkRecord(big, off); e == nil {
										ok = ok && emit(scanRun{off: off, b: big, metas: []recordMeta{bm}, buf: -1})
										p += int64(sz)
										ep = p
										scanned += int64(sz)
										continue
									} else {
										return done(off, e.Error())
									}
								}
							}
						}
						return done(off, "torn record at end of data")
					}
					break
				}
				if cerr != nil {
					var ce *CorruptError
					if errors.As(cerr, &ce) {
						return done(off, ce.Reason)
					}
					return done(off, cerr.Error())
				}
				if !m.blank { // the consumer indexes and dispatches it
					s.readProps(&m)
				}
				ms = append(ms, m)
				if m.blank {
					if sg.written < s.segSize {
						ms = ms[:len(ms)-1]
						return done(off, "blank padding shorter than the segment")
					}
					scanned += int64(size)
					p = sg.written - pos
					break
				}
				p += int64(size)
				scanned += int64(size)
				if p-ep >= scanEmitRun && !flush() {
					break
				}
			}
			if ahead != nil && p < n && n-p <= scanHead && pos+n == ahead.pos {
				// The chunk ends inside a record: its start goes in front of the next chunk.
				<-ahead.done
				tail = n - p
				copy(bufs[ahead.idx][scanHead-tail:scanHead], b[p:n])
			}
			if done(-1, ""); !ok {
				return -1, "", "", scanned
			}
			pos += p
			if p == 0 {
				break
			}
		}
		unread()
		if !isLast && pos < s.segSize {
			return sg.start + pos, sg.name, "segment ends without blank padding before the next segment", scanned
		}
	}
	return -1, "", "", scanned
}

// readProps looks up what the index and the consume queue take from a record's properties
// (recordMeta.propsRead).
func (s *Store) readProps(m *recordMeta) {
	if s.cfg.MessageIndexEnable {
		m.uniq, _ = lookupPropertyBytes(m.props, PropertyUniqKey)
		m.keys, _ = lookupPropertyBytes(m.props, PropertyKeys)
	}
	if s.cfg.TagsCode == nil {
		h, _ := Props(m.props).JavaHash(PropertyTags)
		m.tags = int64(h)
	}
	m.propsRead = true
}

// recoveryFeed indexes and dispatches the records the crash scan validated, so that the log
// is read once: records below the dispatch point d only go to the message index (what its
// unfinished file lost), records from d on go through the dispatcher (queues and index).
// It stops, leaving the rest to dispatchLocked, at anything that does not follow on.
type recoveryFeed struct {
	s *Store
	d int64
	// before runs once, when the feed first reaches d: what needs the log validated below d.
	before  func() error
	reached bool
	stopped bool
	// run collects the dispatched records of several of the scan's runs, written out once
	// a chunk's worth (a consume-queue write per queue per run cost a system call each).
	run *dispatchRun
	// indexed is the end of the records indexed below d and not yet published, 0 when none.
	indexed int64
}

func (f *recoveryFeed) consume(off int64, b []byte, metas []recordMeta) error {
	s := f.s
	if f.stopped {
		return nil
	}
	p := 0
	at := off // the offset after what the feed stepped over
	if off < f.d {
		ix := s.idx
		indexing := ix != nil && ix.err == nil && ix.indexedTo < f.d
		if indexing && ix.indexedTo < off {
			// The index lacks records before this run: indexTo fills them in first.
			indexing = false
		}
		for p < len(b) && at < f.d {
			var m recordMeta
			if len(metas) > 0 {
				m, metas = metas[0], metas[1:]
			} else {
				var err error
				if m, err = parseMeta(b[p:]); err != nil {
					f.stopped = true
					return nil
				}
			}
			if m.blank {
				at, p = s.segEnd(at), len(b)
				break
			}
			if indexing && at >= ix.indexedTo {
				_ = ix.indexRecord(&m, at) // a failure stops the index, not the log
			}
			p += int(m.size)
			at += int64(m.size)
		}
		if indexing {
			// Published (and its entries written) a chunk at a time, and before anything
			// else indexes: indexCatchUp starts from the published offset.
			f.indexed = min(at, f.d)
			if f.indexed-ix.indexedTo >= scanChunk || f.indexed == f.d {
				f.publishIndex()
			}
		}
		if at > f.d {
			// A record or padding runs across d: the dispatcher takes it from there.
			f.stopped = true
			f.publishIndex()
			return nil
		}
		if at < f.d || p >= len(b) {
			return nil
		}
	}
	f.publishIndex()
	next := s.dispatched.Load()
	if f.run != nil {
		next = f.run.end
	}
	if at != next {
		f.stopped = true
		return f.finish()
	}
	if !f.reached {
		f.reached = true
		if err := f.before(); err != nil {
			return err
		}
	}
	if f.run == nil {
		f.run = s.startRun(at)
	}
	if _, err := s.collectRun(f.run, b[p:], metas); err != nil {
		return err
	}
	if f.run.end-f.run.start >= scanChunk {
		return s.commitRun(f.run)
	}
	return nil
}

// publishIndex advances the index over the records the feed indexed below d.
func (f *recoveryFeed) publishIndex() {
	if f.indexed > 0 {
		_ = f.s.idx.advance(f.indexed)
		f.indexed = 0
	}
}

// finish writes out what the feed collected (the scan is over, or the feed stops).
func (f *recoveryFeed) finish() error {
	f.publishIndex()
	if f.run == nil {
		return nil
	}
	r := f.run
	f.run = nil
	defer f.s.endRun(r)
	return f.s.commitRun(r)
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

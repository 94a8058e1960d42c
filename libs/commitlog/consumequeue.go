package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// CQUnitSize is the size of one consume-queue unit: CommitLog offset int64,
// size int32, tags code int64.
const CQUnitSize = 20

type cqFile struct {
	start  int64 // first logical offset in the file
	f      vfs.File
	name   string
	closed atomic.Bool
}

// consumeQueue is the index of one (topic, queue id). Only its file handles
// and bounds live in memory.
type consumeQueue struct {
	topic string
	qid   int32
	dir   string
	per   int64 // units per file

	mu    sync.RWMutex
	files []*cqFile
	min   int64 // first valid logical offset
	max   int64 // next logical offset
	// pend holds the units [pendQ, max) not written to the last file yet (see Units written
	// late); pendQ means nothing while pend is empty.
	pend  []byte
	pendQ int64
}

// Units written late
//
// The dispatcher used to write each pass's units to their queue's file at once: at one send at
// a time, one pwrite of 20 bytes per message, on the master and again on the slave. The units
// of a queue's newest file now gather in memory (pend) and leave in one write when cqPendFlush
// bytes have gathered, when the file is full, before the queue is cut, and before every
// checkpoint (writeCheckpoint), which syncs the files and then records the dispatched offset.
// So a checkpoint never claims a unit that is not in its file, and a crash (kill -9 as well as
// power loss) loses only units above the checkpoint's dispatched offset, which recovery
// dispatches again from the CommitLog, as it did for units written and not yet synced. Every
// read of a queue (readUnitsLocked) takes the pending units from memory, so what a
// consumer sees does not change.

// cqPendFlush is how many bytes of units a queue gathers before they are written: 102 units,
// so at most about 2 KiB per queue in memory.
const cqPendFlush = 2040

// stageLocked adds units for [q, q+len/CQUnitSize), all in f, at the queue's end (cq.mu held),
// writing what gathered when it reaches cqPendFlush bytes or the end of f.
func (s *Store) stageLocked(cq *consumeQueue, f *cqFile, q int64, units []byte) error {
	if len(cq.pend) > 0 && (cq.pendQ+int64(len(cq.pend)/CQUnitSize) != q || cq.fileForLocked(cq.pendQ) != f) {
		if err := s.flushPendLocked(cq); err != nil {
			return err
		}
	}
	if len(cq.pend) == 0 {
		cq.pendQ = q
	}
	cq.pend = append(cq.pend, units...)
	if len(cq.pend) >= cqPendFlush || q+int64(len(units)/CQUnitSize) == f.start+cq.per {
		return s.flushPendLocked(cq)
	}
	return nil
}

// flushPendLocked writes the pending units to their file (cq.mu held).
func (s *Store) flushPendLocked(cq *consumeQueue) error {
	if len(cq.pend) == 0 {
		return nil
	}
	f := cq.fileForLocked(cq.pendQ)
	if f == nil {
		return fmt.Errorf("internal: consume queue %s/%d has no file for pending unit %d", cq.topic, cq.qid, cq.pendQ)
	}
	if err := s.writeUnits(f, cq.pendQ, cq.pend); err != nil {
		return err
	}
	cq.dropPendLocked()
	return nil
}

// writeUnits writes units for logical offsets from q into f, which holds q.
func (s *Store) writeUnits(f *cqFile, q int64, units []byte) error {
	if _, err := vfs.WriteAtTail(f.f, units, (q-f.start)*CQUnitSize); err != nil {
		return fmt.Errorf("write %s: %w", f.name, err)
	}
	s.markDirty(f)
	return nil
}

// dropPendLocked forgets the pending units (written, or cut with their file).
func (cq *consumeQueue) dropPendLocked() {
	if cap(cq.pend) > 2*cqPendFlush {
		cq.pend = nil
	} else {
		cq.pend = cq.pend[:0]
	}
}

// allCQs returns every consume queue as of now (cqMu taken), for a caller that then works on
// each without holding cqMu.
func (s *Store) allCQs() []*consumeQueue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	n := 0
	for _, qs := range s.cqs {
		n += len(qs)
	}
	cqs := make([]*consumeQueue, 0, n)
	for _, qs := range s.cqs {
		for _, cq := range qs {
			cqs = append(cqs, cq)
		}
	}
	return cqs
}

// flushPendingCQ writes the pending units of every queue (before a checkpoint).
func (s *Store) flushPendingCQ() error {
	for _, cq := range s.allCQs() {
		cq.mu.Lock()
		err := s.flushPendLocked(cq)
		cq.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

type cqUnit struct {
	phys int64
	size int32
	tags int64
}

func putUnit(b []byte, u cqUnit) {
	binary.BigEndian.PutUint64(b, uint64(u.phys))
	binary.BigEndian.PutUint32(b[8:], uint32(u.size))
	binary.BigEndian.PutUint64(b[12:], uint64(u.tags))
}

func getUnit(b []byte) cqUnit {
	return cqUnit{phys: int64(be64(b)), size: int32(be32(b[8:])), tags: int64(be64(b[12:]))}
}

func (u cqUnit) valid() bool { return u.size > 0 && u.phys >= 0 }

func (cq *consumeQueue) bounds() (int64, int64) {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	return cq.min, cq.max
}

func (cq *consumeQueue) closeFiles() {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	for _, f := range cq.files {
		if !f.closed.Swap(true) {
			f.f.Close()
		}
	}
	cq.files = nil
	cq.dropPendLocked()
}

// fileForLocked returns the file holding logical offset q.
func (cq *consumeQueue) fileForLocked(q int64) *cqFile {
	if len(cq.files) == 0 || q < cq.files[0].start {
		return nil
	}
	i := (q - cq.files[0].start) / cq.per
	if i >= int64(len(cq.files)) {
		return nil
	}
	return cq.files[i]
}

// readUnits reads up to n units from q, stopping at the end of q's file and
// at max. It returns the raw unit bytes.
func (cq *consumeQueue) readUnits(q int64, n int) ([]byte, error) {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	return cq.readUnitsLocked(q, n)
}

// readUnitsLocked is readUnits with cq.mu held (shared or exclusive).
func (cq *consumeQueue) readUnitsLocked(q int64, n int) ([]byte, error) {
	if q < cq.min || q >= cq.max {
		return nil, nil
	}
	f := cq.fileForLocked(q)
	if f == nil {
		return nil, nil
	}
	lim := f.start + cq.per
	if cq.max < lim {
		lim = cq.max
	}
	if int64(n) > lim-q {
		n = int(lim - q)
	}
	// Units from pendQ on are pending (they end at max, in the newest file).
	fileN := n
	if len(cq.pend) > 0 && cq.pendQ < q+int64(n) {
		fileN = int(max(cq.pendQ-q, 0))
	}
	b := make([]byte, n*CQUnitSize)
	if fileN > 0 {
		k, err := f.f.ReadAt(b[:fileN*CQUnitSize], (q-f.start)*CQUnitSize)
		if got := k / CQUnitSize; got < fileN {
			if got == 0 && err != nil {
				return nil, fmt.Errorf("commitlog: read %s: %w", f.name, err)
			}
			return b[:got*CQUnitSize], nil
		}
	}
	if fileN < n {
		copy(b[fileN*CQUnitSize:], cq.pend[(q+int64(fileN)-cq.pendQ)*CQUnitSize:])
	}
	return b, nil
}

func (cq *consumeQueue) unitAt(q int64) (cqUnit, bool) {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	return cq.unitAtLocked(q)
}

// unitAtLocked reads the unit at q; cq.mu held (shared or exclusive).
func (cq *consumeQueue) unitAtLocked(q int64) (cqUnit, bool) {
	b, err := cq.readUnitsLocked(q, 1)
	if err != nil || len(b) < CQUnitSize {
		return cqUnit{}, false
	}
	return getUnit(b), true
}

func (s *Store) cqFileName(dir string, start int64) string {
	return filepath.Join(dir, segName(start*CQUnitSize))
}

// ensureFileLocked returns the file that holds q, creating it (and any
// missing file before it) when needed.
func (s *Store) cqEnsureFileLocked(cq *consumeQueue, q int64) (*cqFile, error) {
	if f := cq.fileForLocked(q); f != nil {
		return f, nil
	}
	start := q - q%cq.per
	if len(cq.files) > 0 {
		last := cq.files[len(cq.files)-1]
		if start < last.start {
			return nil, fmt.Errorf("internal: consume queue %s/%d file for %d precedes %d", cq.topic, cq.qid, q, last.start)
		}
		start = last.start + cq.per
	}
	if err := s.fs.MkdirAll(cq.dir); err != nil {
		return nil, err
	}
	for {
		name := s.cqFileName(cq.dir, start)
		f, err := s.fs.Create(name)
		if err != nil {
			return nil, err
		}
		cf := &cqFile{start: start, f: f, name: name}
		cq.files = append(cq.files, cf)
		if q < start+cq.per {
			if err := s.fs.SyncDir(cq.dir); err != nil {
				return nil, err
			}
			return cf, nil
		}
		start += cq.per
	}
}

// cqPut writes units for logical offsets [q0, q0+len(units)) (dispatcher
// only). A q0 behind max rewrites the tail; a q0 ahead of an empty queue
// starts the queue there; a gap in a non-empty queue is filled with blank units.
func (s *Store) cqPut(cq *consumeQueue, q0 int64, units []byte) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if q0 < cq.max {
		if err := s.cqTruncateLocked(cq, q0); err != nil {
			return err
		}
	}
	if q0 > cq.max {
		if cq.max == cq.min || q0-cq.max > cq.per {
			if cq.max != cq.min {
				// Records do not skip queue offsets; a large jump means the
				// queue was rebuilt elsewhere. Start it again at q0.
				s.log.WithField("topic", cq.topic).WithField("queue", cq.qid).WithField("from", cq.max).WithField("to", q0).Error("consume queue restarted at a far queue offset")
			}
			s.cqDropFilesLocked(cq, 0)
			cq.min, cq.max = q0, q0
		} else {
			// A small gap is filled with blank (zero) units: files extend
			// with zeros when written past their end.
			s.log.WithField("topic", cq.topic).WithField("queue", cq.qid).WithField("from", cq.max).WithField("to", q0).Warn("gap in consume queue filled with blank units")
		}
	}
	gap := q0 > cq.max
	if gap {
		// The blank units of the gap are the zeros a write past the file's end leaves: what
		// is pending goes first.
		if err := s.flushPendLocked(cq); err != nil {
			return err
		}
	}
	for p := 0; p < len(units); {
		q := q0 + int64(p/CQUnitSize)
		f, err := s.cqEnsureFileLocked(cq, q)
		if err != nil {
			return err
		}
		k := int((f.start + cq.per - q) * CQUnitSize)
		if rest := len(units) - p; rest < k {
			k = rest
		}
		if gap {
			if err := s.writeUnits(f, q, units[p:p+k]); err != nil {
				return err
			}
			gap = false
		} else if err := s.stageLocked(cq, f, q, units[p:p+k]); err != nil {
			return err
		}
		p += k
	}
	cq.max = q0 + int64(len(units)/CQUnitSize)
	return nil
}

func (s *Store) markDirty(f *cqFile) {
	s.dirtyMu.Lock()
	s.dirtyCQ[f] = struct{}{}
	s.dirtyMu.Unlock()
}

func (s *Store) syncDirtyCQ() error {
	s.dirtyMu.Lock()
	set := s.dirtyCQ
	s.dirtyCQ = map[*cqFile]struct{}{}
	s.dirtyMu.Unlock()
	for f := range set {
		if f.closed.Load() {
			continue
		}
		if err := f.f.Sync(); err != nil {
			if f.closed.Load() {
				continue
			}
			s.dirtyMu.Lock()
			for g := range set {
				s.dirtyCQ[g] = struct{}{}
			}
			s.dirtyMu.Unlock()
			return fmt.Errorf("sync %s: %w", f.name, err)
		}
	}
	return nil
}

// cqDropFilesLocked closes and removes files from index i on (the pending units, in the
// newest file, with them).
func (s *Store) cqDropFilesLocked(cq *consumeQueue, i int) {
	if i < len(cq.files) {
		cq.dropPendLocked()
	}
	for _, f := range cq.files[i:] {
		if !f.closed.Swap(true) {
			f.f.Close()
		}
		if err := s.fs.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.WithError(err).WithField("file", f.name).Warn("consume queue file not removed")
		}
	}
	cq.files = cq.files[:i]
}

// cqTruncateLocked cuts the queue so that q is its next logical offset.
func (s *Store) cqTruncateLocked(cq *consumeQueue, q int64) error {
	if q >= cq.max {
		return nil
	}
	if q <= cq.min {
		s.cqDropFilesLocked(cq, 0)
		cq.min, cq.max = q, q
		return nil
	}
	if len(cq.pend) > 0 && q >= cq.pendQ {
		// The cut falls in the pending units: the file holds none of them.
		cq.pend = cq.pend[:(q-cq.pendQ)*CQUnitSize]
		cq.max = q
		return nil
	}
	cq.dropPendLocked() // all above the cut
	keep := 0
	for keep < len(cq.files) && cq.files[keep].start < q {
		keep++
	}
	s.cqDropFilesLocked(cq, keep)
	last := cq.files[len(cq.files)-1]
	if err := last.f.Truncate((q - last.start) * CQUnitSize); err != nil {
		return fmt.Errorf("truncate %s: %w", last.name, err)
	}
	if err := last.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", last.name, err)
	}
	cq.max = q
	return nil
}

// cqSearch returns the first logical offset in [min,max) whose unit
// satisfies pred (pred must be monotonic), or max.
func (cq *consumeQueue) search(pred func(cqUnit) bool) int64 {
	lo, hi := cq.bounds()
	for lo < hi {
		mid := lo + (hi-lo)/2
		u, ok := cq.unitAt(mid)
		if ok && pred(u) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func (s *Store) getCQ(topic string, qid int32) *consumeQueue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	return s.cqs[topic][qid]
}

func (s *Store) getOrCreateCQ(topic []byte, qid int32) *consumeQueue {
	s.cqMu.RLock()
	cq := s.cqs[string(topic)][qid]
	s.cqMu.RUnlock()
	if cq != nil {
		return cq
	}
	t := string(topic)
	s.cqMu.Lock()
	defer s.cqMu.Unlock()
	if cq = s.cqs[t][qid]; cq != nil {
		return cq
	}
	cq = &consumeQueue{topic: t, qid: qid, dir: filepath.Join(s.cqDir, t, strconv.Itoa(int(qid))), per: int64(s.cfg.CQUnitsPerFile)}
	if s.cqs[t] == nil {
		s.cqs[t] = map[int32]*consumeQueue{}
	}
	s.cqs[t][qid] = cq
	return cq
}

// loadCQ opens the files of one queue and finds its bounds. Files before the
// last must be full; units must be valid with strictly increasing CommitLog
// offsets (checked for every file when validateAll, else for the
// last file only). Blank units are allowed only before the first valid one.
// At the first bad unit the queue is cut; resume is then the CommitLog offset
// from which dispatching rebuilds it (-1: from the start of the log).
func (s *Store) loadCQ(topic string, qid int32, dir string, validateAll bool) (cq *consumeQueue, damaged bool, resume int64, err error) {
	cq = &consumeQueue{topic: topic, qid: qid, dir: dir, per: int64(s.cfg.CQUnitsPerFile)}
	names, err := s.fs.List(dir)
	if err != nil {
		return nil, false, 0, err
	}
	var starts []int64
	for _, n := range names {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || len(n) != 20 || v%(cq.per*CQUnitSize) != 0 {
			continue
		}
		starts = append(starts, v/CQUnitSize)
	}
	// Keep the contiguous run of files starting at the first one.
	for i := 1; i < len(starts); i++ {
		if starts[i-1]+cq.per != starts[i] {
			for _, st := range starts[i:] {
				_ = s.fs.Remove(s.cqFileName(dir, st))
			}
			starts = starts[:i]
			damaged = true
			break
		}
	}
	for _, st := range starts {
		name := s.cqFileName(dir, st)
		f, err := s.fs.Open(name)
		if err != nil {
			return nil, false, 0, err
		}
		cq.files = append(cq.files, &cqFile{start: st, f: f, name: name})
	}
	if len(cq.files) == 0 {
		return cq, damaged, -1, nil
	}
	seenValid := false
	prevEnd := int64(-1) // CommitLog end of the previous valid unit
	cutAt := int64(-1)   // logical offset of the first bad unit
	end := cq.files[0].start
	cq.min = -1
	var buf []byte
	for i, f := range cq.files {
		size, err := f.f.Size()
		if err != nil {
			return nil, false, 0, err
		}
		n := size / CQUnitSize
		if n > cq.per {
			n = cq.per
		}
		last := i == len(cq.files)-1
		if !last && n != cq.per {
			cutAt = f.start + n
		}
		if !validateAll && !last {
			// Trust the interior of older files; look at their last unit only
			// to continue the ordering check.
			if n > 0 && cutAt < 0 {
				b := make([]byte, CQUnitSize)
				if k, _ := f.f.ReadAt(b, (n-1)*CQUnitSize); k == CQUnitSize {
					if u := getUnit(b); u.valid() {
						seenValid = true
						if cq.min < 0 {
							cq.min = f.start // refined below by search
						}
						prevEnd = u.phys + int64(u.size)
					}
				}
			}
			end = f.start + n
			if cutAt >= 0 {
				break
			}
			continue
		}
		if int64(cap(buf)) < n*CQUnitSize {
			buf = make([]byte, n*CQUnitSize)
		}
		b := buf[:n*CQUnitSize]
		k, _ := f.f.ReadAt(b, 0)
		n = int64(k / CQUnitSize)
		for u := int64(0); u < n; u++ {
			x := getUnit(b[u*CQUnitSize:])
			q := f.start + u
			if !x.valid() {
				if !seenValid {
					continue // blank prefix
				}
				if last && allZero(b[u*CQUnitSize:n*CQUnitSize]) {
					n = u // unwritten tail
					break
				}
				cutAt = q
				break
			}
			// Units beyond clMax are ordered like the rest; cqCutFrom drops them.
			if x.phys < prevEnd {
				cutAt = q
				break
			}
			if !seenValid {
				seenValid = true
				cq.min = q
			}
			prevEnd = x.phys + int64(x.size)
		}
		if cutAt >= 0 {
			break
		}
		end = f.start + n
	}
	if cutAt >= 0 {
		damaged = true
		end = cutAt
	}
	cq.max = end
	if cq.min < 0 || cq.min > cq.max {
		cq.min = cq.max
	}
	if !validateAll && seenValid {
		cq.min = cq.search(func(u cqUnit) bool { return u.valid() })
	}
	// Physically cut everything from end on.
	keep := 0
	for keep < len(cq.files) && (cq.files[keep].start < end || keep == 0) {
		keep++
	}
	s.cqDropFilesLocked(cq, keep)
	lastF := cq.files[len(cq.files)-1]
	if size, err := lastF.f.Size(); err == nil && size != (end-lastF.start)*CQUnitSize {
		if err := lastF.f.Truncate((end - lastF.start) * CQUnitSize); err != nil {
			return nil, false, 0, err
		}
	}
	resume = -1
	if damaged {
		// Resume after the newest unit that still points at its own record.
		for q := cq.max - 1; q >= cq.min && q >= cq.max-64; q-- {
			if u, ok := cq.unitAt(q); ok && s.unitMatches(cq, q, u) {
				resume = u.phys + int64(u.size)
				break
			}
		}
	}
	return cq, damaged, resume, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// loadAllCQ opens every consume queue under consumequeue/ and returns the damaged ones with
// the CommitLog offset each must be rebuilt from (-1: from the start of the log).
func (s *Store) loadAllCQ(validateAll bool) (map[qkey]int64, error) {
	damagedAt := map[qkey]int64{}
	topics, err := s.fs.List(s.cqDir)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if ValidateTopic(t) != nil {
			continue
		}
		qs, err := s.fs.List(filepath.Join(s.cqDir, t))
		if err != nil {
			continue
		}
		for _, qn := range qs {
			q, err := strconv.ParseInt(qn, 10, 32)
			if err != nil || strconv.Itoa(int(q)) != qn {
				continue
			}
			cq, damaged, resume, err := s.loadCQ(t, int32(q), filepath.Join(s.cqDir, t, qn), validateAll)
			if err != nil {
				return nil, fmt.Errorf("commitlog: load consume queue %s/%s: %w", t, qn, err)
			}
			if damaged {
				s.log.WithField("topic", t).WithField("queue", q).WithField("resume", resume).Warn("consume queue damaged; rebuilding from the CommitLog")
				damagedAt[qkey{t, int32(q)}] = resume
			}
			if s.cqs[t] == nil {
				s.cqs[t] = map[int32]*consumeQueue{}
			}
			s.cqs[t][int32(q)] = cq
		}
	}
	return damagedAt, nil
}

// cqCutFrom removes every unit whose CommitLog offset is at or above phys.
func (s *Store) cqCutFrom(cq *consumeQueue, phys int64) (int64, error) {
	// Units are ordered by phys; blank units only precede valid ones, so the
	// predicate is monotonic over [min, max).
	q := cq.search(func(u cqUnit) bool { return u.valid() && u.phys >= phys })
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cut := cq.max - q
	if cut > 0 {
		if err := s.cqTruncateLocked(cq, q); err != nil {
			return 0, err
		}
	}
	return cut, nil
}

// cqCorrectMin moves the queue's min past units whose CommitLog bytes were
// deleted by retention and removes files that hold only such units.
func (s *Store) cqCorrectMin(cq *consumeQueue, clMin int64) {
	q := cq.search(func(u cqUnit) bool { return u.valid() && u.phys >= clMin })
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if q > cq.min {
		cq.min = q
	}
	drop := 0
	for drop < len(cq.files)-1 && cq.files[drop].start+cq.per <= cq.min {
		drop++
	}
	if drop > 0 {
		for _, f := range cq.files[:drop] {
			if !f.closed.Swap(true) {
				f.f.Close()
			}
			_ = s.fs.Remove(f.name)
		}
		cq.files = append([]*cqFile(nil), cq.files[drop:]...)
	}
}

// unitMatches reports whether unit u at logical offset q points at a valid
// record of this queue with that queue offset.
func (s *Store) unitMatches(cq *consumeQueue, q int64, u cqUnit) bool {
	if !u.valid() || int64(u.size) > s.maxRecordBytes() || u.phys < s.minOffset.Load() || u.phys+int64(u.size) > s.maxOffset.Load() || u.phys+int64(u.size) > s.segEnd(u.phys) {
		return false
	}
	b := make([]byte, u.size)
	if err := s.readAt(b, u.phys); err != nil {
		return false
	}
	m, n, err := s.checkRecord(b, u.phys)
	return err == nil && !m.blank && n == int(u.size) && m.queueID == cq.qid && m.queueOffset == q && string(m.topic) == cq.topic
}

package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"sort"
)

// # Consume-queue coverage manifest
//
// A consume queue that loses a file, or the tail of one, reads like a shorter queue, and a
// queue whose whole folder is gone reads like a queue that never existed: without a record of
// what the queues held, a clean start cannot tell, and the messages behind the loss become
// unreachable. The manifest is that record. It lists, for every non-empty queue, the logical
// range it held and the CommitLog offsets of its first and last unit, as of a dispatched
// offset D: every record below D has its unit in the queue the manifest names.
//
// File <Dir>/cqmanifest, big-endian, written whole to cqmanifest.tmp, fsynced, renamed over
// the old one and the folder fsynced (a torn write leaves the previous manifest):
//
//	header (32 bytes)
//	 0      4         8            16           24       28      32
//	+------+---------+------------+------------+--------+-------+
//	|"RMCQ"| version | dispatched | minOffset  | count  | zero  |
//	|      | = 1     | D, int64   | CL min     | uint32 |       |
//	+------+---------+------------+------------+--------+-------+
//	count entries, one per queue, sorted by topic then queue id
//	+--------+---------+--------+---------+---------+-----------+---------+
//	|topicLen| topic   | queueId| min     | max     | firstPhys | lastEnd |
//	| uint8  | 1..127 B| int32  | int64   | int64   | int64     | int64   |
//	+--------+---------+--------+---------+---------+-----------+---------+
//	trailer
//	+----------------------------------+
//	| crc32 (IEEE) of every byte before|
//	+----------------------------------+
//
//	min, max   the queue's logical range [min, max), min < max
//	firstPhys  CommitLog offset of the unit at min
//	lastEnd    CommitLog offset + size of the unit at max-1 (units are ordered by offset)
//
// An unknown version, a bad magic or CRC, a count the bytes cannot hold, an invalid topic, a
// negative queue id or an inconsistent range makes the whole file invalid (ErrManifest);
// the start then treats it as missing. A new version would be a new magic or version number;
// readers refuse what they do not know.
//
// When it is written: with the checkpoint every CQManifestInterval, and at once after
// recovery, retention, Truncate, Reset, DeleteTopic and Close. The queue ranges are taken
// before the dirty consume-queue files are fsynced, so everything the manifest names is on
// disk when the manifest is.
//
// # The start-up check
//
// At every start, clean or not, after the queues are loaded: every record at or after
// min(D, the checkpoint's dispatched offset) is dispatched again (as after any restart), and
// every queue of the manifest whose records below that point still exist must hold them:
//
//   - missing: the queue has no file, or only empty ones;
//   - truncated: it ends before the manifest's max (its last unit ends before lastEnd);
//   - head missing: it starts after the manifest's min while the log still holds records
//     from firstPhys on;
//   - last entry: its last unit does not point at a record of this queue with that queue
//     offset (checked for every loaded queue, one record header read each).
//
// Files that do not follow each other, short files before the last and bad units are found
// by the loader as before ("damaged file"). Each incomplete queue is rebuilt from the
// CommitLog: cut back to its last good unit and refilled from the records of that queue
// from there on (a targeted pass over the log from the earliest such point, no other queue
// touched), then reported in RecoveryReport.CQRepairs and logged with topic, queue, the
// ranges and how many entries came back. With the manifest present and the queues intact
// the check costs one manifest read and, per queue, three small reads: it never re-reads
// the log. Without a manifest (a store written before it existed, or the file lost) every
// queue is rebuilt from the whole log once, reported in RecoveryReport.CQCheck.

const (
	manifestFile       = "cqmanifest"
	manifestMagic      = 0x524D4351 // "RMCQ"
	manifestVersion    = 1
	manifestHeaderSize = 32
	manifestEntryFixed = 1 + 4 + 8*4 // topicLen, queueId, min, max, firstPhys, lastEnd
)

// queueCoverage is one manifest entry.
type queueCoverage struct {
	topic     string
	qid       int32
	min, max  int64
	firstPhys int64
	lastEnd   int64
}

// manifest is the decoded coverage manifest.
type manifest struct {
	dispatched int64
	minOffset  int64
	queues     []queueCoverage
}

// appendManifest encodes m after dst.
func appendManifest(dst []byte, m *manifest) []byte {
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint32(dst, manifestMagic)
	dst = be.AppendUint32(dst, manifestVersion)
	dst = be.AppendUint64(dst, uint64(m.dispatched))
	dst = be.AppendUint64(dst, uint64(m.minOffset))
	dst = be.AppendUint32(dst, uint32(len(m.queues)))
	dst = be.AppendUint32(dst, 0)
	for _, q := range m.queues {
		dst = append(dst, byte(len(q.topic)))
		dst = append(dst, q.topic...)
		dst = be.AppendUint32(dst, uint32(q.qid))
		dst = be.AppendUint64(dst, uint64(q.min))
		dst = be.AppendUint64(dst, uint64(q.max))
		dst = be.AppendUint64(dst, uint64(q.firstPhys))
		dst = be.AppendUint64(dst, uint64(q.lastEnd))
	}
	return be.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// decodeManifest decodes and validates a whole manifest file.
func decodeManifest(b []byte) (*manifest, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrManifest, fmt.Sprintf(format, a...))
	}
	if len(b) < manifestHeaderSize+4 {
		return nil, bad("%d bytes, shorter than header and checksum", len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, bad("checksum mismatch")
	}
	d := decoder{b: body}
	if magic := d.u32(); magic != manifestMagic {
		return nil, bad("magic %#x", magic)
	}
	if v := d.u32(); v != manifestVersion {
		return nil, bad("version %d, this store reads %d", v, manifestVersion)
	}
	m := &manifest{dispatched: int64(d.u64()), minOffset: int64(d.u64())}
	count := int(d.u32())
	d.u32()
	if m.dispatched < 0 || m.minOffset < 0 || m.minOffset > m.dispatched {
		return nil, bad("dispatched %d, min offset %d", m.dispatched, m.minOffset)
	}
	if count < 0 || count > (len(body)-manifestHeaderSize)/(manifestEntryFixed+1) {
		return nil, bad("%d entries cannot fit in %d bytes", count, len(body))
	}
	m.queues = make([]queueCoverage, 0, count)
	for i := 0; i < count; i++ {
		var q queueCoverage
		q.topic = string(d.bytes(int(d.u8())))
		q.qid = int32(d.u32())
		q.min, q.max = int64(d.u64()), int64(d.u64())
		q.firstPhys, q.lastEnd = int64(d.u64()), int64(d.u64())
		if d.err != nil {
			return nil, bad("entry %d: %v", i, d.err)
		}
		if err := ValidateTopic(q.topic); err != nil {
			return nil, bad("entry %d: %v", i, err)
		}
		if q.qid < 0 || q.min < 0 || q.min >= q.max || q.firstPhys < 0 || q.lastEnd <= q.firstPhys {
			return nil, bad("entry %d (%s/%d): range [%d,%d) offsets %d..%d", i, q.topic, q.qid, q.min, q.max, q.firstPhys, q.lastEnd)
		}
		m.queues = append(m.queues, q)
	}
	if d.pos != len(body) {
		return nil, bad("%d bytes after the last entry", len(body)-d.pos)
	}
	return m, nil
}

// snapshotCoverage returns the coverage of every non-empty queue now.
func (s *Store) snapshotCoverage() []queueCoverage {
	cqs := s.allCQs()
	out := make([]queueCoverage, 0, len(cqs))
	for _, cq := range cqs {
		if c, ok := cq.coverage(); ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].qid < out[j].qid
	})
	return out
}

// coverage is the queue's manifest entry; false for an empty queue or unreadable units.
func (cq *consumeQueue) coverage() (queueCoverage, bool) {
	cq.mu.RLock()
	defer cq.mu.RUnlock()
	if cq.min >= cq.max {
		return queueCoverage{}, false
	}
	first, ok1 := cq.unitAtLocked(cq.min)
	last, ok2 := cq.unitAtLocked(cq.max - 1)
	if !ok1 || !ok2 || !first.valid() || !last.valid() || last.phys+int64(last.size) <= first.phys {
		return queueCoverage{}, false
	}
	return queueCoverage{topic: cq.topic, qid: cq.qid, min: cq.min, max: cq.max, firstPhys: first.phys, lastEnd: last.phys + int64(last.size)}, true
}

// writeManifest replaces the manifest atomically.
func (s *Store) writeManifest(m *manifest) error {
	name := filepath.Join(s.cfg.Dir, manifestFile)
	tmp := name + ".tmp"
	f, err := s.fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	data := appendManifest(nil, m)
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	f.Close()
	if err := s.fs.Rename(tmp, name); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return s.fs.SyncDir(s.cfg.Dir)
}

// readManifest returns the manifest; fs.ErrNotExist when there is none.
func (s *Store) readManifest() (*manifest, error) {
	f, err := s.fs.Open(filepath.Join(s.cfg.Dir, manifestFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > 1<<30 {
		return nil, fmt.Errorf("%w: %d bytes", ErrManifest, size)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); int64(n) != size {
		return nil, fmt.Errorf("%w: read %d of %d bytes: %v", ErrManifest, n, size, err)
	}
	return decodeManifest(b)
}

func (s *Store) removeManifest() error {
	err := s.fs.Remove(filepath.Join(s.cfg.Dir, manifestFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CQRepair is one consume queue the start-up check found incomplete and rebuilt.
type CQRepair struct {
	Topic   string
	QueueID int32
	// Problem is "missing", "truncated", "head missing", "last entry" or "damaged file".
	Problem string
	// ExpectedMin/Max is the range the manifest names (-1 when the loader found the damage).
	ExpectedMin, ExpectedMax int64
	// FoundMin/Max is what the files held at start (after the loader's cut).
	FoundMin, FoundMax int64
	// RebuiltMin/Max is the queue's range after the rebuild.
	RebuiltMin, RebuiltMax int64
	// From is the CommitLog offset the queue was refilled from.
	From int64
	// Restored is the number of entries the rebuild wrote from the CommitLog (from From on;
	// entries it replaced included).
	Restored int64
	// Missing is the number of entries of the expected range still absent: their records
	// are no longer in the CommitLog (or could not be read).
	Missing int64
}

// cqTarget is a queue to rebuild from a CommitLog offset.
type cqTarget struct {
	cq   *consumeQueue
	from int64
	rep  CQRepair
	exp  bool // ExpectedMin/Max are the manifest's
}

// checkCoverage compares the loaded queues with the manifest. damaged are the queues the
// loader found damaged, with the CommitLog offset to rebuild each from (-1: the log's start).
// It returns the global redispatch point (d lowered to the manifest's dispatched offset, or
// to clMin without a manifest) and the queues to rebuild below it.
func (s *Store) checkCoverage(rep *RecoveryReport, d, clMin, clMax int64, damaged map[qkey]int64) (int64, []*cqTarget) {
	if clMax <= clMin {
		rep.CQCheck = "empty log"
		return d, nil
	}
	m, err := s.readManifest()
	if err != nil {
		why := "no manifest"
		if !errors.Is(err, fs.ErrNotExist) {
			why = "manifest unusable: " + err.Error()
		}
		rep.CQCheck = why + ": every consume queue rebuilt from the whole CommitLog"
		if len(damaged) == 0 && d <= clMin {
			rep.CQCheck = why
		}
		s.log.WithError(err).WithField("from", clMin).Warn("consume-queue coverage manifest missing or unusable: rebuilding every consume queue from the CommitLog")
		return clMin, nil
	}
	rep.CQCheck = "checked against the manifest"
	if m.dispatched < d {
		d = max(m.dispatched, clMin)
	}
	var targets []*cqTarget
	seen := map[qkey]bool{}
	for _, e := range m.queues {
		k := qkey{e.topic, e.qid}
		seen[k] = true
		if e.lastEnd <= clMin {
			continue // every record of it was removed by retention
		}
		cq := s.cqs[e.topic][e.qid]
		var fmin, fmax int64
		if cq != nil {
			fmin, fmax = cq.bounds()
		}
		t := &cqTarget{cq: cq, exp: true, rep: CQRepair{Topic: e.topic, QueueID: e.qid, ExpectedMin: e.min, ExpectedMax: e.max, FoundMin: fmin, FoundMax: fmax}}
		resume, hurt := damaged[k]
		switch {
		case hurt:
			t.rep.Problem, t.from = "damaged file", max(resume, clMin)
		case cq == nil || fmin >= fmax:
			t.rep.Problem, t.from = "missing", max(e.firstPhys, clMin)
		case fmax < e.max:
			t.rep.Problem = "truncated"
			end := s.lastGoodEnd(cq)
			if end < 0 {
				end = max(e.firstPhys, clMin)
			}
			if end >= e.lastEnd || end >= d {
				continue // what is missing is dispatched again anyway
			}
			t.from = end
		case fmin > e.min:
			first, ok := cq.unitAt(fmin)
			from := max(e.firstPhys, clMin)
			if !ok || from >= first.phys {
				continue // the records before its first entry are gone from the log
			}
			t.rep.Problem, t.from = "head missing", from
		default:
			if t.from = s.lastEntryMismatch(cq, d, clMax); t.from < 0 {
				continue
			}
			t.rep.Problem = "last entry"
		}
		if t.from >= d {
			continue
		}
		targets = append(targets, t)
	}
	// Queues the manifest does not know (created after it was written) still get their last
	// entry checked against the log.
	for topic, qs := range s.cqs {
		for qid, cq := range qs {
			if seen[qkey{topic, qid}] {
				continue
			}
			if resume, hurt := damaged[qkey{topic, qid}]; hurt {
				if from := max(resume, clMin); from < d {
					fmin, fmax := cq.bounds()
					targets = append(targets, &cqTarget{cq: cq, from: from, rep: CQRepair{Topic: topic, QueueID: qid, Problem: "damaged file", ExpectedMin: -1, ExpectedMax: -1, FoundMin: fmin, FoundMax: fmax}})
				}
				continue
			}
			from := s.lastEntryMismatch(cq, d, clMax)
			if from < 0 || from >= d {
				continue
			}
			fmin, fmax := cq.bounds()
			targets = append(targets, &cqTarget{cq: cq, from: from, rep: CQRepair{Topic: topic, QueueID: qid, Problem: "last entry", ExpectedMin: -1, ExpectedMax: -1, FoundMin: fmin, FoundMax: fmax}})
		}
	}
	return d, targets
}

// lastEntryMismatch returns -1 when the queue's last entry points at a record of this queue
// with that queue offset (or lies in the part of the log dispatched again anyway), else the
// CommitLog offset to rebuild it from.
func (s *Store) lastEntryMismatch(cq *consumeQueue, d, clMax int64) int64 {
	qmin, qmax := cq.bounds()
	if qmin >= qmax {
		return -1
	}
	u, ok := cq.unitAt(qmax - 1)
	if ok && u.valid() && (u.phys >= d || u.phys+int64(u.size) > clMax) {
		return -1 // cut and dispatched again from d
	}
	if ok && s.unitHeaderMatches(cq, qmax-1, u) {
		return -1
	}
	if end := s.lastGoodEnd(cq); end >= 0 {
		return end
	}
	return s.minOffset.Load()
}

// lastGoodEnd is the CommitLog end of the newest of the queue's last 64 units that points at
// its own record, or -1.
func (s *Store) lastGoodEnd(cq *consumeQueue) int64 {
	qmin, qmax := cq.bounds()
	for q := qmax - 1; q >= qmin && q >= qmax-64; q-- {
		if u, ok := cq.unitAt(q); ok && s.unitHeaderMatches(cq, q, u) {
			return u.phys + int64(u.size)
		}
	}
	return -1
}

// unitHeaderMatches reports whether unit u at logical offset q points at a record of the
// queue with that queue offset, reading only the record's header and topic (not its body).
func (s *Store) unitHeaderMatches(cq *consumeQueue, q int64, u cqUnit) bool {
	if !u.valid() || int64(u.size) > s.maxRecordBytes() || u.phys < s.minOffset.Load() ||
		u.phys+int64(u.size) > s.maxOffset.Load() || u.phys+int64(u.size) > s.segEnd(u.phys) || u.size < minRecordSize {
		return false
	}
	var hdr [96]byte
	n := min(int(u.size), len(hdr))
	if err := s.readAt(hdr[:n], u.phys); err != nil || n < 84 {
		return false
	}
	be := binary.BigEndian
	magic := int32(be.Uint32(hdr[4:]))
	if int32(be.Uint32(hdr[0:])) != u.size || (magic != MagicV1 && magic != MagicV2) ||
		int32(be.Uint32(hdr[12:])) != cq.qid || int64(be.Uint64(hdr[20:])) != q || int64(be.Uint64(hdr[28:])) != u.phys {
		return false
	}
	sys := int32(be.Uint32(hdr[36:]))
	pos := 36 + 4 + 8 + 8 + 8 // sysflag, born timestamp, born host (IPv4), store timestamp
	if sys&SysFlagBornHostV6 != 0 {
		pos += 12
	}
	pos += 8 // store host
	if sys&SysFlagStoreHostV6 != 0 {
		pos += 12
	}
	pos += 4 + 8 // reconsume times, prepared transaction offset
	if pos+4 > n {
		return false
	}
	bodyLen := int64(int32(be.Uint32(hdr[pos:])))
	tpos := int64(pos) + 4 + bodyLen
	tlenSize := int64(1)
	if magic == MagicV2 {
		tlenSize = 2
	}
	if bodyLen < 0 || tpos+tlenSize+int64(len(cq.topic)) > int64(u.size) {
		return false
	}
	t := make([]byte, tlenSize+int64(len(cq.topic)))
	if err := s.readAt(t, u.phys+tpos); err != nil {
		return false
	}
	tl := int(t[0])
	if magic == MagicV2 {
		tl = int(be.Uint16(t))
	}
	return tl == len(cq.topic) && string(t[tlenSize:]) == cq.topic
}

// rebuildTargets refills each target queue from the records of that queue in
// [target.from, to): one pass over the log from the earliest target, no other queue touched.
func (s *Store) rebuildTargets(targets []*cqTarget, to int64) error {
	if len(targets) == 0 {
		return nil
	}
	byKey := map[qkey]*cqTarget{}
	from := to
	for _, t := range targets {
		k := qkey{t.rep.Topic, t.rep.QueueID}
		if byKey[k] != nil {
			t.cq = nil // one target per queue; reported once
			continue
		}
		if t.cq == nil {
			t.cq = s.getOrCreateCQ([]byte(t.rep.Topic), t.rep.QueueID)
		}
		if _, err := s.cqCutFrom(t.cq, t.from); err != nil {
			return err
		}
		t.rep.From = t.from
		byKey[k] = t
		from = min(from, t.from)
	}
	pend := map[*consumeQueue]*pendingUnits{}
	flush := func() error {
		for cq, pu := range pend {
			if len(pu.units) > 0 {
				if err := s.cqPut(cq, pu.q0, pu.units); err != nil {
					return err
				}
			}
			delete(pend, cq)
		}
		return nil
	}
	err := s.walkRecords(from, to, func(m *recordMeta, phys int64) error {
		if !isDispatchable(m.sysFlag) {
			return nil
		}
		t := byKey[qkey{string(m.topic), m.queueID}]
		if t == nil || phys < t.from {
			return nil
		}
		pu := pend[t.cq]
		if pu != nil && pu.q0+int64(len(pu.units)/CQUnitSize) != m.queueOffset {
			if err := s.cqPut(t.cq, pu.q0, pu.units); err != nil {
				return err
			}
			pu = nil
		}
		if pu == nil {
			pu = &pendingUnits{cq: t.cq, q0: m.queueOffset}
			pend[t.cq] = pu
		}
		var u [CQUnitSize]byte
		putUnit(u[:], cqUnit{phys: phys, size: m.size, tags: s.tagsCode(t.cq.topic, m)})
		pu.units = append(pu.units, u[:]...)
		t.rep.Restored++
		if len(pu.units) >= 1<<16*CQUnitSize {
			if err := s.cqPut(t.cq, pu.q0, pu.units); err != nil {
				return err
			}
			delete(pend, t.cq)
		}
		return nil
	}, nil)
	if ferr := flush(); err == nil {
		err = ferr
	}
	return err
}

// walkRecords calls fn for every record (blank padding skipped) in [from, to), reading the
// log in chunks, and chunkDone (when not nil) with the offset after each chunk's last whole
// record. It stops at the first record that does not parse and returns that error.
func (s *Store) walkRecords(from, to int64, fn func(m *recordMeta, phys int64) error, chunkDone func(next int64) error) error {
	buf := make([]byte, dispatchChunk)
	d := from
	for d < to {
		end := min(s.segEnd(d), to)
		if end-d > dispatchChunk {
			end = d + dispatchChunk
		}
		b := buf[:end-d]
		if err := s.readAt(b, d); err != nil {
			return err
		}
		p := 0
		for p < len(b) {
			m, err := parseMeta(b[p:])
			if errors.Is(err, ErrIncomplete) {
				if p == 0 && len(b) >= 8 {
					size := int64(int32(be32(b)))
					if size > int64(len(b)) && d+size <= to && d+size <= s.segEnd(d) && size <= s.maxRecordBytes() {
						big := make([]byte, size)
						if err := s.readAt(big, d); err != nil {
							return err
						}
						b = big
						continue
					}
				}
				if p == 0 {
					return s.corruptAt(d, "record runs past the end of the range")
				}
				break
			}
			if err != nil {
				return s.corruptAt(d+int64(p), err.Error())
			}
			if m.blank {
				p = int(s.segEnd(d+int64(p)) - d)
				break
			}
			if err := fn(&m, d+int64(p)); err != nil {
				return err
			}
			p += int(m.size)
		}
		d += int64(p)
		if chunkDone != nil {
			if err := chunkDone(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishRepairs fills in the rebuilt ranges, logs each repaired queue and returns the report
// entries (queues the rebuild wrote nothing to and that lack nothing are left out).
func (s *Store) finishRepairs(targets []*cqTarget) []CQRepair {
	var out []CQRepair
	for _, t := range targets {
		if t.cq == nil {
			continue
		}
		r := t.rep
		r.RebuiltMin, r.RebuiltMax = t.cq.bounds()
		if t.exp {
			if r.RebuiltMax > r.RebuiltMin {
				r.Missing = max(0, r.ExpectedMax-r.RebuiltMax)
			} else {
				r.Missing = r.ExpectedMax - r.ExpectedMin
			}
		}
		if r.Restored == 0 && r.Missing == 0 {
			continue
		}
		f := s.log.WithField("topic", r.Topic).WithField("queue", r.QueueID).WithField("problem", r.Problem).
			WithField("found", fmt.Sprintf("[%d,%d)", r.FoundMin, r.FoundMax)).WithField("rebuilt", fmt.Sprintf("[%d,%d)", r.RebuiltMin, r.RebuiltMax)).
			WithField("from", r.From).WithField("restored", r.Restored)
		if t.exp {
			f = f.WithField("expected", fmt.Sprintf("[%d,%d)", r.ExpectedMin, r.ExpectedMax))
		}
		if r.Missing > 0 {
			f.WithField("missing", r.Missing).Error("consume queue incomplete and not fully rebuilt: the CommitLog no longer holds some of its messages")
		} else {
			f.Warn("consume queue incomplete at start: rebuilt from the CommitLog")
		}
		out = append(out, r)
	}
	return out
}

func overlap(a0, a1, b0, b1 int64) int64 {
	lo, hi := max(a0, b0), min(a1, b1)
	if hi <= lo {
		return 0
	}
	return hi - lo
}

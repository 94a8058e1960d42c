package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// Property names the index reads (RocketMQ's MessageConst).
const (
	PropertyKeys    = "KEYS"
	PropertyUniqKey = "UNIQ_KEY"
)

// indexFile is one index file. Only the newest (active) one is written; its
// slots are kept in memory and written when it is finished, its entries are
// written once per dispatch pass, so a put costs no system call.
type indexFile struct {
	start   int64 // CommitLog offset the file indexes from (its name)
	name    string
	f       vfs.File
	hdr     indexHeader
	slotNum int32
	maxNum  int32
	// indexedTo is set for finished (sealed) files.
	indexedTo int64
	sealed    bool
	// verified: the whole file passed verifyIndexFile (a file this store wrote, or one the
	// background verifier read); an open checks only the header and trailer
	// (checkIndexFileShape). Guarded by mu.
	verified  bool
	slots     []int32 // active file only
	pending   []byte  // entries not yet written (active file, up to indexPendingFlush bytes)
	pendFirst int32   // entry number of pending[0:20]
}

func (f *indexFile) entriesAt() int64 {
	return indexHeaderSize + int64(f.slotNum)*indexSlotSize
}

// indexService keeps the index files of a store. Its methods run under
// dispatchMu (writes) or take mu shared (queries).
type indexService struct {
	s   *Store
	dir string
	mu  sync.RWMutex
	// files are ordered by start; the last one is active unless it is sealed.
	files []*indexFile
	// indexedTo is the CommitLog offset below which every record was indexed.
	indexedTo int64
	// err stops indexing after a write failure until the next Open.
	err error
	// werr is the first write error of the running put sequence.
	werr error
	// check is what the background verifier did (indexverify.go); guarded by mu.
	check IndexCheck
}

// IndexQueryResult is what QueryIndex finds.
type IndexQueryResult struct {
	// Records are whole stored records, oldest first, carrying the key in KEYS or
	// UNIQ_KEY and stored within the time range.
	Records [][]byte
	// Offsets are the records' CommitLog offsets.
	Offsets []int64
	// LastUpdateTimestamp and LastUpdatePhyOffset are the newest index file's
	// endTimestamp and endPhyOffset (QueryMessageResponseHeader).
	LastUpdateTimestamp int64
	LastUpdatePhyOffset int64
}

func parseIndexName(n string) (int64, bool) {
	if len(n) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(n, 10, 64)
	return v, err == nil && v >= 0
}

// openIndex loads the index files and returns the offset from which records
// must be indexed again. The first file whose header and trailer fail their
// check (or the unfinished active file after a crash) is reported, removed and
// rebuilt with every newer one; the whole of every other file is verified in the
// background once the store is open (indexverify.go).
func (s *Store) openIndex(rep *RecoveryReport) (*indexService, error) {
	ix := &indexService{s: s, dir: filepath.Join(s.cfg.Dir, "index")}
	if err := s.fs.MkdirAll(ix.dir); err != nil {
		return nil, fmt.Errorf("commitlog: create %s: %w", ix.dir, err)
	}
	names, err := s.fs.List(ix.dir)
	if err != nil {
		return nil, err
	}
	var starts []int64
	for _, n := range names {
		if v, ok := parseIndexName(n); ok {
			starts = append(starts, v)
		} else if strings.HasSuffix(n, rebuildSuffix) {
			// A replacement the background verifier had not finished: built again if needed.
			if err := s.fs.Remove(filepath.Join(ix.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	resume := int64(-1)
	for i, st := range starts {
		name := filepath.Join(ix.dir, segName(st))
		if resume >= 0 {
			// After a damaged file: every newer one is rebuilt too.
			if err := s.fs.Remove(name); err != nil {
				return nil, err
			}
			continue
		}
		bad := func(reason error) error {
			if rep.IndexCheck == "" {
				rep.IndexCheck = fmt.Sprintf("%s: %v; rebuilt from CommitLog offset %d", name, reason, st)
			}
			s.log.WithError(reason).WithField("file", name).WithField("offset", st).Warn("index file rebuilt from the CommitLog")
			resume = st
			return s.fs.Remove(name)
		}
		if i > 0 && len(ix.files) > 0 && ix.files[len(ix.files)-1].indexedTo != st {
			if err := bad(fmt.Errorf("%w: starts at %d, the previous file ends at %d", ErrIndexCorrupt, st, ix.files[len(ix.files)-1].indexedTo)); err != nil {
				return nil, err
			}
			continue
		}
		f, err := s.fs.Open(name)
		if err != nil {
			return nil, err
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return nil, err
		}
		info, verr := checkIndexFileShape(f, size, st)
		if verr != nil {
			f.Close()
			if err := bad(verr); err != nil {
				return nil, err
			}
			continue
		}
		// A file without entries has nothing a query reads but its header: verified by its shape.
		ix.files = append(ix.files, &indexFile{start: st, name: name, f: f, hdr: info.header,
			slotNum: int32(info.trailer.slotNum), maxNum: int32(info.trailer.maxIndexNum),
			indexedTo: info.trailer.indexedTo, sealed: true, verified: info.header.indexCount <= 1})
	}
	switch {
	case resume >= 0:
	case len(ix.files) > 0:
		resume = ix.files[len(ix.files)-1].indexedTo
	default:
		resume = -1 // nothing indexed yet: from the dispatch point or the log's start
	}
	if len(starts) > 0 || resume >= 0 {
		_ = s.fs.SyncDir(ix.dir)
	}
	ix.indexedTo = resume
	return ix, nil
}

// cutTo drops what the index holds at or above offset: newer files go, the file
// holding offset is rebuilt from its start. It returns the new indexedTo.
func (ix *indexService) cutTo(offset int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.cutToLocked(offset)
}

func (ix *indexService) cutToLocked(offset int64) error {
	if ix.indexedTo <= offset {
		return nil
	}
	for len(ix.files) > 0 {
		last := ix.files[len(ix.files)-1]
		if last.sealed && last.indexedTo <= offset {
			// Records in [last.indexedTo, indexedTo) carry no keys.
			ix.indexedTo = offset
			return nil
		}
		last.f.Close()
		if err := ix.s.fs.Remove(last.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		ix.files = ix.files[:len(ix.files)-1]
		ix.indexedTo = last.start
		if last.start <= offset {
			break
		}
	}
	if len(ix.files) == 0 && ix.indexedTo > offset {
		ix.indexedTo = offset
	}
	return ix.s.fs.SyncDir(ix.dir)
}

// reset drops every file; indexing starts again at offset.
func (ix *indexService) reset(offset int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, f := range ix.files {
		f.f.Close()
		if err := ix.s.fs.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	ix.files = nil
	ix.indexedTo = offset
	ix.err = nil
	return ix.s.fs.SyncDir(ix.dir)
}

// active returns the file to put into, creating it when the newest one is
// finished. A new file starts where the previous one ends; an empty finished
// file (written by a clean close to remember the indexed offset) is replaced.
// A finished file is never written again, so after a crash only the unfinished
// newest file is rebuilt.
func (ix *indexService) active(at int64) (*indexFile, error) {
	start := at
	if last := ix.last(); last != nil {
		if !last.sealed {
			return last, nil
		}
		start = last.indexedTo
		if last.hdr.indexCount <= 1 {
			if err := ix.removeLast(); err != nil {
				return nil, err
			}
			start = last.start
		}
	} else if ix.indexedTo >= 0 && ix.indexedTo < at {
		start = ix.indexedTo
	}
	name := filepath.Join(ix.dir, segName(start))
	f, err := ix.s.fs.Create(name)
	if err != nil {
		return nil, err
	}
	nf := &indexFile{start: start, name: name, f: f, hdr: indexHeader{indexCount: 1},
		slotNum: int32(ix.s.cfg.MaxHashSlotNum), maxNum: int32(ix.s.cfg.MaxIndexNum)}
	nf.slots = make([]int32, nf.slotNum)
	if err := ix.s.fs.SyncDir(ix.dir); err != nil {
		f.Close()
		return nil, err
	}
	ix.mu.Lock()
	ix.files = append(ix.files, nf)
	ix.mu.Unlock()
	return nf, nil
}

// last is the newest file, nil when there is none. The dispatcher reads the slice under mu
// like queries do: the background verifier may put a replacement in a finished file's place.
func (ix *indexService) last() *indexFile {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if n := len(ix.files); n > 0 {
		return ix.files[n-1]
	}
	return nil
}

func (ix *indexService) removeLast() error {
	last := ix.last()
	last.f.Close()
	if err := ix.s.fs.Remove(last.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ix.mu.Lock()
	ix.files = ix.files[:len(ix.files)-1]
	ix.mu.Unlock()
	return nil
}

func (f *indexFile) trailerAt() int64 {
	return f.entriesAt() + int64(f.hdr.indexCount-1)*indexEntrySize
}

// finish writes the header and trailer of f and fsyncs it.
func (ix *indexService) finish(f *indexFile, indexedTo int64) error {
	if err := ix.flushPending(f); err != nil {
		return err
	}
	// The active file's slots live in memory (it is never read back after a crash, so
	// they need not reach the file before it is finished); they go in one write.
	if f.slots != nil {
		sb := make([]byte, len(f.slots)*indexSlotSize)
		for i, v := range f.slots {
			binary.BigEndian.PutUint32(sb[i*indexSlotSize:], uint32(v))
		}
		if _, err := f.f.WriteAt(sb, indexHeaderSize); err != nil {
			return err
		}
	}
	hb := appendIndexHeader(nil, f.hdr)
	if _, err := f.f.WriteAt(hb, 0); err != nil {
		return err
	}
	// The checksum covers header, slots and entries as they are on disk.
	crc := crc32.ChecksumIEEE(hb)
	buf := make([]byte, 64<<10)
	end := f.trailerAt()
	if size, err := f.f.Size(); err != nil {
		return err
	} else if size != end {
		// Slots never written are zeros.
		if err := f.f.Truncate(end); err != nil {
			return err
		}
	}
	for pos := int64(indexHeaderSize); pos < end; {
		n := int64(len(buf))
		if end-pos < n {
			n = end - pos
		}
		if _, err := f.f.ReadAt(buf[:n], pos); err != nil {
			return fmt.Errorf("read back %s at %d: %w", f.name, pos, err)
		}
		crc = crc32.Update(crc, crc32.IEEETable, buf[:n])
		pos += n
	}
	t := indexTrailer{slotNum: uint32(f.slotNum), maxIndexNum: uint32(f.maxNum), indexedTo: indexedTo}
	tb := appendIndexTrailer(nil, t)
	t.crc = crc32.Update(crc, crc32.IEEETable, tb[:indexTrailerSize-4])
	if _, err := f.f.WriteAt(appendIndexTrailer(nil, t), end); err != nil {
		return err
	}
	if err := f.f.Sync(); err != nil {
		return err
	}
	ix.mu.Lock()
	f.sealed, f.indexedTo, f.slots, f.verified = true, indexedTo, nil, true
	ix.mu.Unlock()
	return nil
}

// flushPending writes the entries put since the last flush.
func (ix *indexService) flushPending(f *indexFile) error {
	if len(f.pending) == 0 {
		return nil
	}
	at := f.entriesAt() + int64(f.pendFirst-1)*indexEntrySize
	if _, err := f.f.WriteAt(f.pending, at); err != nil {
		return err
	}
	ix.mu.Lock()
	f.pending = f.pending[:0]
	ix.mu.Unlock()
	return nil
}

// indexRecord adds the record's keys (UNIQ_KEY, then each of KEYS); phy is its
// CommitLog offset. A record's keys never straddle two files.
func (ix *indexService) indexRecord(m *recordMeta, phy int64) error {
	if ix.err != nil {
		return ix.err
	}
	if ix.indexedTo > phy {
		return nil // already indexed (catch-up overlap)
	}
	uniq, keys := recordKeys(m)
	need := 0
	if len(uniq) > 0 {
		need++
	}
	forEachKey(keys, func([]byte) { need++ })
	if need == 0 {
		return nil
	}
	f, err := ix.active(phy)
	if err != nil {
		return ix.fail(err)
	}
	full := int64(f.hdr.indexCount-1)+int64(need) > int64(f.maxNum)
	// A file also ends with its CommitLog segment, so that a crash rebuilds at most one
	// segment's records and retention can drop files with their segments.
	rolled := phy/ix.s.segSize != f.start/ix.s.segSize
	if (full || rolled) && f.hdr.indexCount > 1 {
		// Finish it below this record; the next file starts here.
		if err := ix.finish(f, phy); err != nil {
			return ix.fail(err)
		}
		if f, err = ix.active(phy); err != nil {
			return ix.fail(err)
		}
	}
	// One hash of the topic and one lock for all of the record's keys: recovery indexes
	// every record of a crashed segment again.
	ix.mu.Lock()
	if ix.werr == nil {
		f.putRecord(m, uniq, keys, phy)
	}
	ix.mu.Unlock()
	if ix.werr == nil && len(f.pending) >= indexPendingFlush {
		ix.werr = ix.flushPending(f)
	}
	if ix.werr != nil {
		return ix.fail(ix.werr)
	}
	return nil
}

// indexPendingFlush is how many bytes of entries a file being written gathers before they
// are written (at the latest when the file is finished).
const indexPendingFlush = 64 << 10

// forEachKey calls fn for every non-empty space-separated key.
func forEachKey(keys []byte, fn func([]byte)) {
	for len(keys) > 0 {
		k := keys
		if i := indexByte(keys, ' '); i >= 0 {
			k, keys = keys[:i], keys[i+1:]
		} else {
			keys = nil
		}
		if len(k) > 0 {
			fn(k)
		}
	}
}

func (ix *indexService) fail(err error) error {
	ix.err = fmt.Errorf("commitlog: index: %w", err)
	ix.s.log.WithError(err).Error("message index stopped; it is rebuilt at the next start")
	return ix.err
}

// recordKeys returns the keys the index takes from a record: its UNIQ_KEY and its KEYS
// (space separated), none for a rolled-back half message.
func recordKeys(m *recordMeta) (uniq, keys []byte) {
	if m.sysFlag&SysFlagTxMask == SysFlagTxRollback {
		return nil, nil
	}
	if m.propsRead {
		return m.uniq, m.keys
	}
	uniq, _ = lookupPropertyBytes(m.props, PropertyUniqKey)
	keys, _ = lookupPropertyBytes(m.props, PropertyKeys)
	return uniq, keys
}

// putRecord adds the entries of a record's keys (recordKeys) at CommitLog offset phy to f:
// the active file with ix.mu held, or a replacement only its builder sees. One hash of the
// topic serves all of them: recovery indexes every record of a crashed segment again.
func (f *indexFile) putRecord(m *recordMeta, uniq, keys []byte, phy int64) {
	th := indexTopicHash(m.topic)
	if len(uniq) > 0 {
		f.put(th, uniq, phy, m.storeTimestamp)
	}
	forEachKey(keys, func(k []byte) { f.put(th, k, phy, m.storeTimestamp) })
}

// put is RocketMQ's IndexFile.putKey; th is the key's topic part of the hash
// (indexTopicHash). A record with more keys than the file can take keeps its first ones.
func (f *indexFile) put(th int32, key []byte, phy int64, storeTs int64) {
	if f.hdr.indexCount-1 >= f.maxNum {
		return
	}
	h := indexKeyHashFrom(th, key)
	slot := h % f.slotNum
	prev := f.slots[slot]
	if prev < 0 || prev >= f.hdr.indexCount {
		prev = 0
	}
	var diff int64
	if f.hdr.beginTimestamp > 0 {
		diff = (storeTs - f.hdr.beginTimestamp) / 1000
		if diff < 0 {
			diff = 0
		}
		if diff > 1<<31-1 {
			diff = 1<<31 - 1
		}
	}
	no := f.hdr.indexCount
	if len(f.pending) == 0 {
		f.pendFirst = no
	}
	f.pending = appendIndexEntry(f.pending, h, phy, int32(diff), prev)
	f.slots[slot] = no
	if no <= 1 {
		f.hdr.beginPhyOffset, f.hdr.beginTimestamp = phy, storeTs
	}
	if prev == 0 {
		f.hdr.hashSlotCount++
	}
	f.hdr.indexCount++
	f.hdr.endPhyOffset, f.hdr.endTimestamp = phy, storeTs
}

// advance records that every record below offset went through indexRecord.
//
// The entries it put stay pending, where queries read them, until indexPendingFlush bytes
// gather or the file is finished. The file being written is never read back after a crash (it
// has no trailer, so it is rebuilt from the CommitLog), so writing them at the end of every
// dispatch pass bought nothing but a write per pass: at one keyed send at a time (UNIQ_KEY, as
// rocketmq-client-go sets it), one pwrite per message, 4.6 CPU µs of the master's.
func (ix *indexService) advance(offset int64) error {
	ix.mu.Lock()
	if offset > ix.indexedTo {
		ix.indexedTo = offset
	}
	ix.mu.Unlock()
	return nil
}

// close finishes the active file at indexedTo (clean shutdown). Without one,
// an empty finished file remembers how far the log was indexed.
func (ix *indexService) close() error {
	var err error
	if ix.err == nil && ix.indexedTo >= 0 {
		n := len(ix.files)
		switch {
		case n > 0 && !ix.files[n-1].sealed:
			err = ix.finish(ix.files[n-1], ix.indexedTo)
		case n == 0 || ix.files[n-1].indexedTo < ix.indexedTo:
			var f *indexFile
			if f, err = ix.active(ix.indexedTo); err == nil {
				err = ix.finish(f, ix.indexedTo)
			}
		}
	}
	for _, f := range ix.files {
		f.f.Close()
	}
	ix.files = nil
	return err
}

// dropBelow removes finished files that only index records below min (retention).
func (ix *indexService) dropBelow(min int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	removed := false
	for len(ix.files) > 1 && ix.files[0].sealed && ix.files[0].indexedTo <= min {
		f := ix.files[0]
		f.f.Close()
		if err := ix.s.fs.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		ix.files = ix.files[1:]
		removed = true
		ix.s.log.WithField("file", f.name).Info("index file deleted with its CommitLog segments")
	}
	if removed {
		return ix.s.fs.SyncDir(ix.dir)
	}
	return nil
}

// lookup walks the key's chains, newest file first, and returns at most limit
// candidate offsets whose entry time lies in [begin, end] (RocketMQ's
// selectPhyOffset; hash collisions are removed by the caller).
func (ix *indexService) lookup(topic, key string, limit int, begin, end int64) (offs []int64, lastTs, lastPhy int64, err error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(ix.files) > 0 {
		last := ix.files[len(ix.files)-1]
		lastTs, lastPhy = last.hdr.endTimestamp, last.hdr.endPhyOffset
	}
	h := indexKeyHash([]byte(topic), []byte(key))
	var eb [indexEntrySize]byte
	for i := len(ix.files) - 1; i >= 0 && len(offs) < limit; i-- {
		f := ix.files[i]
		if f.hdr.indexCount <= 1 || f.hdr.endTimestamp < begin || f.hdr.beginTimestamp > end {
			continue
		}
		slot := h % f.slotNum
		var no int32
		if f.slots != nil {
			no = f.slots[slot]
		} else {
			var sb [4]byte
			if _, err := f.f.ReadAt(sb[:], indexHeaderSize+int64(slot)*indexSlotSize); err != nil {
				return offs, lastTs, lastPhy, fmt.Errorf("%w: %s: read slot: %v", ErrIndexCorrupt, f.name, err)
			}
			no = int32(binary.BigEndian.Uint32(sb[:]))
		}
		for no > 0 && no < f.hdr.indexCount && len(offs) < limit {
			var e []byte
			if !f.sealed && len(f.pending) > 0 && no >= f.pendFirst {
				k := int(no-f.pendFirst) * indexEntrySize
				if k+indexEntrySize > len(f.pending) {
					break
				}
				e = f.pending[k : k+indexEntrySize]
			} else {
				if _, err := f.f.ReadAt(eb[:], f.entriesAt()+int64(no-1)*indexEntrySize); err != nil {
					return offs, lastTs, lastPhy, fmt.Errorf("%w: %s: read entry %d: %v", ErrIndexCorrupt, f.name, no, err)
				}
				e = eb[:]
			}
			eh, phy, diff, prev := decodeIndexEntry(e)
			ts := f.hdr.beginTimestamp + int64(diff)*1000
			if eh == h && ts >= begin && ts <= end {
				offs = append(offs, phy)
			}
			if ts < begin || prev >= no {
				break // older entries are older still; a bad link ends the walk
			}
			no = prev
		}
	}
	return offs, lastTs, lastPhy, nil
}

// catchUp indexes the records in [from, to) (recovery: what the index lost
// while the consume queues kept it).
func (s *Store) indexCatchUp(from, to int64) error {
	ix := s.idx
	if from < s.minOffset.Load() {
		from = s.minOffset.Load()
	}
	ix.indexedTo = from
	return s.walkRecords(from, to, ix.indexRecord, ix.advance)
}

// QueryIndex finds the stored messages of topic carrying key in KEYS or
// UNIQ_KEY, stored within [begin, end] (ms), at most maxNum, oldest first, and
// at most maxBytes in total (at least one). ErrIndexDisabled when
// MessageIndexEnable is off.
func (s *Store) QueryIndex(topic, key string, maxNum int, begin, end int64, maxBytes int) (IndexQueryResult, error) {
	var res IndexQueryResult
	if err := s.openErr(); err != nil {
		return res, err
	}
	if s.idx == nil {
		return res, ErrIndexDisabled
	}
	if maxNum <= 0 {
		return res, nil
	}
	// Candidates may collide in hash; read a bounded number more than asked.
	offs, lastTs, lastPhy, err := s.idx.lookup(topic, key, maxNum*2+16, begin, end)
	res.LastUpdateTimestamp, res.LastUpdatePhyOffset = lastTs, lastPhy
	if err != nil && len(offs) == 0 {
		return res, err
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	total := 0
	for i, off := range offs {
		if i > 0 && offs[i-1] == off {
			continue
		}
		rec, err := s.ReadRecord(off)
		if err != nil {
			continue // deleted by retention or cut since it was indexed
		}
		m, err := parseMeta(rec)
		if err != nil || string(m.topic) != topic || !hasIndexKey(m.props, key) {
			continue
		}
		if len(res.Records) > 0 && total+len(rec) > maxBytes {
			break
		}
		res.Records = append(res.Records, rec)
		res.Offsets = append(res.Offsets, off)
		total += len(rec)
		if len(res.Records) >= maxNum {
			break
		}
	}
	return res, nil
}

// hasIndexKey reports whether props carry key as UNIQ_KEY or among KEYS.
func hasIndexKey(props []byte, key string) bool {
	if u, ok := lookupPropertyBytes(props, PropertyUniqKey); ok && string(u) == key {
		return true
	}
	keys, ok := lookupPropertyBytes(props, PropertyKeys)
	for ok && len(keys) > 0 {
		k := keys
		if i := indexByte(keys, ' '); i >= 0 {
			k, keys = keys[:i], keys[i+1:]
		} else {
			keys = nil
		}
		if string(k) == key {
			return true
		}
	}
	return false
}

// IndexedOffset is the CommitLog offset below which every record is in the
// message index (-1 with MessageIndexEnable off).
func (s *Store) IndexedOffset() int64 {
	if s.idx == nil {
		return -1
	}
	s.idx.mu.RLock()
	defer s.idx.mu.RUnlock()
	return s.idx.indexedTo
}

// recoverIndex opens the index and brings it to the dispatch point d: what it
// holds at or above d is cut (the log or the queues were cut there), what it
// lacks below d is indexed from the CommitLog.
func (s *Store) recoverIndex(rep *RecoveryReport, d int64) error {
	if !s.cfg.MessageIndexEnable {
		return nil
	}
	ix, err := s.openIndex(rep)
	if err != nil {
		return err
	}
	s.idx = ix
	if err := ix.dropBelow(s.minOffset.Load()); err != nil {
		return err
	}
	if ix.indexedTo < 0 {
		// No index yet: start at the dispatch point (older records are not indexed).
		ix.indexedTo = d
		return nil
	}
	if ix.indexedTo > d {
		if err := ix.cutTo(d); err != nil {
			return err
		}
	}
	if rep.IndexCheck != "" || ix.indexedTo < d {
		rep.IndexFrom = max(ix.indexedTo, s.minOffset.Load())
	}
	if ix.indexedTo < d {
		// What it lacks below d is indexed by the recovery pass (recoveryFeed) or indexTo.
		ix.indexedTo = max(ix.indexedTo, s.minOffset.Load())
	}
	return nil
}

// indexTo indexes from the CommitLog what the index lacks below d (recovery).
func (s *Store) indexTo(d int64) error {
	if ix := s.idx; ix != nil && ix.err == nil && ix.indexedTo < d {
		if err := s.indexCatchUp(ix.indexedTo, d); err != nil {
			_ = ix.fail(err)
		}
	}
	return nil
}

// truncateIndex follows Truncate: the index drops what it holds at or above
// offset and indexes again what it lost below (appendMu and dispatchMu held).
func (s *Store) truncateIndex(offset int64) {
	if s.idx == nil {
		return
	}
	if err := s.idx.cutTo(offset); err != nil {
		_ = s.idx.fail(err)
		return
	}
	if s.idx.indexedTo < offset {
		if err := s.indexCatchUp(s.idx.indexedTo, offset); err != nil {
			_ = s.idx.fail(err)
		}
	}
}

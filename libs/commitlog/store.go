package commitlog

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/sirupsen/logrus"
)

// Message is what a producer hands to Append.
type Message struct {
	Topic                     string
	QueueID                   int32
	Flag                      int32
	Body                      []byte
	Properties                string // RocketMQ properties string (name\x01value\x02 ...), stored as given
	SysFlag                   int32
	BornTimestamp             int64 // ms
	BornHost                  netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// AppendResult describes one stored message.
type AppendResult struct {
	WroteOffset    int64  // physical offset of the record
	WroteBytes     int32  // record length
	QueueOffset    int64  // logical offset in (topic, queue)
	MsgID          string // offset message id
	StoreTimestamp int64  // ms
	EndOffset      int64  // WroteOffset + WroteBytes: what flush/replication waits for
}

// Stats is a snapshot of the store's counters.
type Stats struct {
	MinOffset        int64
	MaxOffset        int64
	FlushedOffset    int64
	DispatchedOffset int64
	Segments         int
	Queues           int
	Appends          int64 // records appended (Append, AppendBatch)
	AppendedBytes    int64 // bytes appended, raw appends included
	RawAppends       int64
	Fsyncs           int64 // CommitLog fsync rounds
	FlushedWaiters   int64 // WaitFlush waiters completed by an fsync
	FlushTimeouts    int64 // WaitFlush waiters that hit their deadline
	Readers          int
	ReadOnly         bool
}

type qkey struct {
	topic string
	qid   int32
}

type segment struct {
	start   int64
	f       vfs.File
	name    string
	written int64 // bytes in the file that belong to the log (appendMu)
}

// Store is a CommitLog with its consume queues.
type Store struct {
	cfg     Config
	fs      vfs.FS
	log     logrus.FieldLogger
	clDir   string
	cqDir   string
	segSize int64

	// appendMu serialises writers (Append, AppendRaw, Truncate, Reset, DeleteTopic).
	appendMu     sync.Mutex
	queueOffsets map[qkey]int64
	encBuf       []byte
	rawUpd       []queueUpdate // appendRaw's queue updates, kept for the next call
	rawTopics    topicNames    // appendRaw's recent topic strings
	wbuf         []byte        // buffered appends not yet in the file (WriteBuffer)
	// Grouped writes (group.go; WriteBuffer 0), all under appendMu: gbuf holds records
	// encoded while a leader writes, gspare the leader's last batch for reuse, gpending the
	// bytes encoded and not yet published in maxOffset (gbuf plus the batch being written),
	// gwriting whether a leader is writing; gcond (on appendMu) wakes the appenders waiting
	// for their bytes, and those waiting for the group to drain.
	gbuf, gspare []byte
	gpending     int64
	gwriting     bool
	gcond        *sync.Cond
	gwrites      atomic.Int64 // group writes issued, for tests
	// gwaiters are the AppendAsync records queued, in offset order; gcalled a spare slice for
	// the ones a write covered; gsyncEnd the end of the last sync appender's records (one
	// waits to lead while it lies beyond maxOffset and gsyncWaiters counts one); gkick wakes
	// writerLoop.
	gwaiters, gcalled []groupWaiter
	gsyncEnd          int64
	gsyncWaiters      int // sync appenders in awaitGroupLocked
	gkick             chan struct{}
	// gqueued is len(gwaiters), for the flusher's count of the senders it is about to cover
	// (pendingWaiters) without taking appendMu.
	gqueued atomic.Int64
	// flushing is set while the flusher runs a round (flushOnce); holdTimer, armed
	// (holdArmed) by a FlushQueued during one, writes the queue if the round holds on
	// (holdExpired).
	flushing  atomic.Bool
	holdArmed atomic.Bool
	holdTimer *time.Timer

	// segMu guards segs; readers hold it shared across a pread.
	segMu sync.RWMutex
	segs  []*segment
	// tail holds the newest bytes written, for reads that follow the log's end (nil with
	// TailCacheBytes 0, and until EnableTailCache with TailCacheDeferred).
	tail atomic.Pointer[tailCache]

	minOffset  atomic.Int64
	maxOffset  atomic.Int64
	flushed    atomic.Int64
	dispatched atomic.Int64

	roErr  atomic.Pointer[error]
	closed atomic.Bool

	// flushRunMu is held across an fsync round and by anything that closes
	// or cuts segment files.
	flushRunMu sync.Mutex
	waitMu     sync.Mutex
	byOffset   offsetHeap
	byDeadline deadlineHeap
	flushReq   chan struct{}
	sweepReq   chan struct{}
	cpMu       sync.Mutex // guards cpSeq, lastCP, cpFile
	cpSeq      uint64
	lastCP     time.Time
	cpFile     vfs.File
	// lastManifest is when the coverage manifest was last written (cpMu).
	lastManifest time.Time

	dispatchMu  sync.Mutex
	dispatchReq chan struct{}
	dispatchBuf []byte
	// dpend and dbyCQ are dispatchBytes's scratch runs and their index by queue, kept for
	// the next pass (dispatchMu).
	dpend   []pendingUnits
	dbyCQ   map[*consumeQueue]int
	drun    dispatchRun // the pass under way (startRun)
	cqMu    sync.RWMutex
	cqs     map[string]map[int32]*consumeQueue
	dirtyMu sync.Mutex
	dirtyCQ map[*cqFile]struct{}

	cbMu       sync.RWMutex
	onAppend   []func(int64)
	onDispatch []func(string, int32, int64)

	readersMu sync.Mutex
	readers   map[*Reader]struct{}

	stopCh chan struct{}
	wg     sync.WaitGroup

	recovery RecoveryReport

	// idx is the message index (index.go); nil with MessageIndexEnable off.
	idx *indexService

	nAppends, nBytes, nRaw, nFsyncs, nFlushedW, nTimeouts atomic.Int64
}

// ReadOnlyError says why the store stopped accepting writes.
type ReadOnlyError struct{ Cause error }

func (e *ReadOnlyError) Error() string { return "commitlog: store is read-only: " + e.Cause.Error() }

// Unwrap lets errors.Is match both ErrReadOnly and the cause.
func (e *ReadOnlyError) Unwrap() []error { return []error{ErrReadOnly, e.Cause} }

func (s *Store) setReadOnly(cause error) error {
	e := error(&ReadOnlyError{Cause: cause})
	if s.roErr.CompareAndSwap(nil, &e) {
		s.log.WithError(cause).Error("commitlog turned read-only")
	}
	err := *s.roErr.Load()
	s.failAllWaiters(err)
	return err
}

// Err is non-nil once the store is read-only after a write or fsync failure.
func (s *Store) Err() error {
	if p := s.roErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Store) writable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.Err()
}

// SegmentSize is the configured CommitLog file size.
func (s *Store) SegmentSize() int64 { return s.segSize }

// MinOffset is the first physical offset still stored.
func (s *Store) MinOffset() int64 { return s.minOffset.Load() }

// StoreHost is the address offset message ids name (Config.StoreHost).
func (s *Store) StoreHost() netip.AddrPort { return s.cfg.StoreHost }

// MaxOffset is the next physical offset to be written.
func (s *Store) MaxOffset() int64 { return s.maxOffset.Load() }

// FlushedOffset is the offset below which every byte is fsynced.
func (s *Store) FlushedOffset() int64 { return s.flushed.Load() }

// DispatchedOffset is the offset below which every record is in the consume queues.
func (s *Store) DispatchedOffset() int64 { return s.dispatched.Load() }

// Recovery reports what Open found and repaired.
func (s *Store) Recovery() RecoveryReport { return s.recovery }

// Config returns the configuration in effect.
func (s *Store) Config() Config { return s.cfg }

// OnAppend registers fn, called after every append or raw append with the new
// max offset (no lock held).
func (s *Store) OnAppend(fn func(maxOffset int64)) {
	s.cbMu.Lock()
	s.onAppend = append(s.onAppend, fn)
	s.cbMu.Unlock()
}

// OnDispatch registers fn, called when the dispatcher adds consume-queue
// units for a queue (long-polling wake-ups).
func (s *Store) OnDispatch(fn func(topic string, queueID int32, maxQueueOffset int64)) {
	s.cbMu.Lock()
	s.onDispatch = append(s.onDispatch, fn)
	s.cbMu.Unlock()
}

func (s *Store) fireAppend(max int64) {
	s.cbMu.RLock()
	fns := s.onAppend
	s.cbMu.RUnlock()
	for _, fn := range fns {
		fn(max)
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func segName(start int64) string { return fmt.Sprintf("%020d", start) }

// Open opens or creates the store under cfg.Dir and recovers it: from the
// checkpoint after a clean shutdown, by validating records from the last safe
// point after a crash.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		cfg:          cfg,
		fs:           cfg.FS,
		log:          cfg.Logger.WithField("component", "commitlog"),
		clDir:        filepath.Join(cfg.Dir, "commitlog"),
		cqDir:        filepath.Join(cfg.Dir, "consumequeue"),
		segSize:      cfg.SegmentSize,
		queueOffsets: map[qkey]int64{},
		flushReq:     make(chan struct{}, 1),
		sweepReq:     make(chan struct{}, 1),
		dispatchReq:  make(chan struct{}, 1),
		gkick:        make(chan struct{}, 1),
		cqs:          map[string]map[int32]*consumeQueue{},
		dirtyCQ:      map[*cqFile]struct{}{},
		readers:      map[*Reader]struct{}{},
		stopCh:       make(chan struct{}),
	}
	s.gcond = sync.NewCond(&s.appendMu)
	s.holdTimer = time.AfterFunc(time.Hour, s.holdExpired)
	s.holdTimer.Stop()
	if !cfg.TailCacheDeferred {
		s.tail.Store(newTailCache(cfg.TailCacheBytes))
	}
	for _, d := range []string{cfg.Dir, s.clDir, s.cqDir} {
		if err := s.fs.MkdirAll(d); err != nil {
			return nil, fmt.Errorf("commitlog: create %s: %w", d, err)
		}
	}
	if err := s.recover(); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.wg.Add(5)
	go s.writerLoop()
	if cfg.WriteBuffer > 0 {
		s.wg.Add(1)
		go s.commitLoop()
	}
	go s.flushLoop()
	go s.sweepLoop()
	go s.dispatchLoop()
	go s.retentionLoop()
	if s.idx != nil {
		s.wg.Add(1)
		go s.indexVerifyLoop()
	}
	return s, nil
}

// Close flushes, writes the checkpoint and the clean-shutdown marker, and
// releases every file. Waiters not yet flushed get ErrClosed.
func (s *Store) Close() error {
	s.appendMu.Lock()
	s.drainGroupLocked()
	if s.closed.Swap(true) {
		s.appendMu.Unlock()
		return ErrClosed
	}
	end, _ := s.commitLocked()
	s.appendMu.Unlock()
	if end >= 0 {
		s.afterAppend(end)
	}
	close(s.stopCh)
	s.holdTimer.Stop()
	s.wg.Wait()
	var firstErr error
	if s.Err() == nil {
		if err := s.dispatchAvailable(); err != nil {
			firstErr = err
		}
		s.flushOnce()
		if s.idx != nil {
			if err := s.idx.close(); err != nil {
				s.log.WithError(err).Warn("index not finished at close; it is rebuilt at the next start")
			}
		}
		if s.Err() == nil {
			if err := s.writeCheckpoint(true); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		if s.Err() == nil && firstErr == nil {
			if err := s.fs.Remove(filepath.Join(s.cfg.Dir, abortFile)); err != nil && firstErr == nil {
				firstErr = err
			} else {
				_ = s.fs.SyncDir(s.cfg.Dir)
			}
		}
	}
	s.failAllWaiters(ErrClosed)
	s.closeFiles()
	if firstErr == nil {
		if err := s.Err(); err != nil {
			firstErr = err
		}
	}
	return firstErr
}

func (s *Store) closeFiles() {
	s.segMu.Lock()
	for _, sg := range s.segs {
		sg.f.Close()
	}
	s.segs = nil
	s.segMu.Unlock()
	s.cqMu.Lock()
	for _, qs := range s.cqs {
		for _, cq := range qs {
			cq.closeFiles()
		}
	}
	s.cqMu.Unlock()
	if s.idx != nil {
		for _, f := range s.idx.files {
			f.f.Close()
		}
		s.idx.files = nil
	}
	if s.cpFile != nil {
		s.cpFile.Close()
		s.cpFile = nil
	}
	s.readersMu.Lock()
	for r := range s.readers {
		r.markRemoved()
	}
	s.readersMu.Unlock()
}

// Stats returns a snapshot of counters.
func (s *Store) Stats() Stats {
	st := Stats{
		MinOffset:        s.MinOffset(),
		MaxOffset:        s.MaxOffset(),
		FlushedOffset:    s.FlushedOffset(),
		DispatchedOffset: s.DispatchedOffset(),
		Appends:          s.nAppends.Load(),
		AppendedBytes:    s.nBytes.Load(),
		RawAppends:       s.nRaw.Load(),
		Fsyncs:           s.nFsyncs.Load(),
		FlushedWaiters:   s.nFlushedW.Load(),
		FlushTimeouts:    s.nTimeouts.Load(),
		ReadOnly:         s.Err() != nil,
	}
	s.segMu.RLock()
	st.Segments = len(s.segs)
	s.segMu.RUnlock()
	s.cqMu.RLock()
	for _, qs := range s.cqs {
		st.Queues += len(qs)
	}
	s.cqMu.RUnlock()
	s.readersMu.Lock()
	st.Readers = len(s.readers)
	s.readersMu.Unlock()
	return st
}

// Queues lists every topic with its queue ids (sorted).
func (s *Store) Queues() map[string][]int32 {
	set := map[string]map[int32]bool{}
	add := func(t string, q int32) {
		if set[t] == nil {
			set[t] = map[int32]bool{}
		}
		set[t][q] = true
	}
	s.cqMu.RLock()
	for t, qs := range s.cqs {
		for q := range qs {
			add(t, q)
		}
	}
	s.cqMu.RUnlock()
	s.appendMu.Lock()
	for k := range s.queueOffsets {
		add(k.topic, k.qid)
	}
	s.appendMu.Unlock()
	out := make(map[string][]int32, len(set))
	for t, qs := range set {
		ids := make([]int32, 0, len(qs))
		for q := range qs {
			ids = append(ids, q)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		out[t] = ids
	}
	return out
}

// segmentFor returns the segment holding off (segMu held).
func (s *Store) segmentForLocked(off int64) *segment {
	if len(s.segs) == 0 || off < s.segs[0].start {
		return nil
	}
	i := (off - s.segs[0].start) / s.segSize
	if i >= int64(len(s.segs)) {
		return nil
	}
	return s.segs[i]
}

// readAt fills p from the CommitLog at off; the range must lie in
// [MinOffset, MaxOffset) and within one segment.
func (s *Store) readAt(p []byte, off int64) error {
	if off < s.minOffset.Load() {
		return fmt.Errorf("%w: %d < %d", ErrOffsetTooOld, off, s.minOffset.Load())
	}
	if end := off + int64(len(p)); end > s.maxOffset.Load() || off < 0 {
		return fmt.Errorf("%w: [%d,%d) max %d", ErrOffsetBeyondEnd, off, end, s.maxOffset.Load())
	}
	s.segMu.RLock()
	defer s.segMu.RUnlock()
	sg := s.segmentForLocked(off)
	if sg == nil {
		if off < s.minOffset.Load() {
			return fmt.Errorf("%w: %d", ErrOffsetTooOld, off)
		}
		return fmt.Errorf("%w: no segment for %d", ErrOffsetBeyondEnd, off)
	}
	if off+int64(len(p)) > sg.start+s.segSize {
		return fmt.Errorf("%w: read [%d,+%d) crosses segment end", ErrBadOffset, off, len(p))
	}
	if s.tail.Load().read(p, off, &s.maxOffset) {
		return nil
	}
	n, err := sg.f.ReadAt(p, off-sg.start)
	if n == len(p) {
		return nil
	}
	if err == nil {
		err = errors.New("short read")
	}
	return fmt.Errorf("commitlog: read %s at %d: %w", sg.name, off, err)
}

// maxRecordBytes bounds a stored record's size before anything is allocated
// for it: generous enough for a master configured with a larger
// MaxMessageSize.
func (s *Store) maxRecordBytes() int64 {
	m := int64(s.cfg.MaxMessageSize)
	if m < 4<<20 {
		m = 4 << 20
	}
	return 4*m + 1<<20
}

func (s *Store) segEnd(off int64) int64 { return (off/s.segSize + 1) * s.segSize }

// ReadRecord returns one whole stored record (validated, CRC checked).
func (s *Store) ReadRecord(offset int64) ([]byte, error) {
	if err := s.openErr(); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if err := s.readAt(hdr[:], offset); err != nil {
		return nil, err
	}
	size := int64(int32(be32(hdr[:])))
	if size < BlankMinLength || offset+size > s.segEnd(offset) || size > s.maxRecordBytes() {
		return nil, s.corruptAt(offset, fmt.Sprintf("record size %d out of bounds", size))
	}
	buf := make([]byte, size)
	if err := s.readAt(buf, offset); err != nil {
		return nil, err
	}
	if _, _, err := s.checkRecord(buf, offset); err != nil {
		return nil, err
	}
	return buf, nil
}

func (s *Store) openErr() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *Store) corruptAt(off int64, reason string) error {
	name := ""
	s.segMu.RLock()
	if sg := s.segmentForLocked(off); sg != nil {
		name = sg.name
	}
	s.segMu.RUnlock()
	return &CorruptError{File: name, Offset: off, Reason: reason}
}

// checkRecord validates a stored record at physical offset off.
func (s *Store) checkRecord(b []byte, off int64) (recordMeta, int, error) {
	return s.checkRecordCRC(b, off, true)
}

// checkFraming validates a record like checkRecord but skips its body CRC: for
// bytes whose integrity something else already proved (the CRC of the HA Data
// frame they arrived in) or that this store verified when it took them.
func (s *Store) checkFraming(b []byte, off int64) (recordMeta, int, error) {
	return s.checkRecordCRC(b, off, false)
}

func (s *Store) checkRecordCRC(b []byte, off int64, crc bool) (recordMeta, int, error) {
	m, err := parseMeta(b)
	if err != nil {
		if errors.Is(err, ErrIncomplete) {
			return m, 0, err
		}
		var ce *CorruptError
		if errors.As(err, &ce) {
			return m, 0, s.corruptAt(off, ce.Reason)
		}
		return m, 0, err
	}
	if m.blank {
		if int(m.size) > len(b) {
			return m, 0, ErrIncomplete
		}
		if off+int64(m.size) != s.segEnd(off) {
			return m, 0, s.corruptAt(off, fmt.Sprintf("blank record of %d bytes does not end the segment", m.size))
		}
		return m, int(m.size), nil
	}
	if m.queueID < 0 || m.queueOffset < 0 {
		return m, 0, s.corruptAt(off, fmt.Sprintf("negative queue id %d or queue offset %d", m.queueID, m.queueOffset))
	}
	if m.physOffset != off {
		return m, 0, s.corruptAt(off, fmt.Sprintf("physical offset field %d", m.physOffset))
	}
	if off+int64(m.size)+BlankMinLength > s.segEnd(off) {
		return m, 0, s.corruptAt(off, "record crosses segment end")
	}
	if crc && BodyCRC(m.body) != m.bodyCRC {
		return m, 0, s.corruptAt(off, "body crc mismatch")
	}
	if !validTopicBytes(m.topic) {
		return m, 0, s.corruptAt(off, "invalid topic bytes")
	}
	if !validProps(m.props) {
		return m, 0, s.corruptAt(off, "malformed properties")
	}
	return m, int(m.size), nil
}

// ReadRaw returns whole records (BLANK padding included) starting at offset,
// at most maxBytes (but always at least one record), never crossing a segment
// end. Records are validated; a corrupt first record yields ErrCorrupt.
func (s *Store) ReadRaw(offset int64, maxBytes int) ([]byte, error) {
	return s.readRaw(nil, offset, maxBytes, true)
}

// ReadRawInto is ReadRaw into dst (grown when too small; the result aliases it)
// that checks the records' framing, physical offsets and segment bounds but not
// their body CRCs: every record was verified when this store took it (Append
// computes the CRC, AppendRaw and recovery check it), and the HA sender that
// calls this covers the next hop with the CRC of its Data frame. It is how a
// master streams its log without one allocation and one CRC pass per batch.
func (s *Store) ReadRawInto(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	return s.readRaw(dst, offset, maxBytes, false)
}

func (s *Store) readRaw(dst []byte, offset int64, maxBytes int, crc bool) ([]byte, error) {
	if err := s.openErr(); err != nil {
		return nil, err
	}
	max := s.maxOffset.Load()
	if offset < s.minOffset.Load() {
		return nil, fmt.Errorf("%w: %d < %d", ErrOffsetTooOld, offset, s.minOffset.Load())
	}
	if offset >= max {
		return nil, fmt.Errorf("%w: %d >= %d", ErrOffsetBeyondEnd, offset, max)
	}
	end := s.segEnd(offset)
	if end > max {
		end = max
	}
	n := end - offset
	if maxBytes > 0 && int64(maxBytes) < n {
		n = int64(maxBytes)
	}
	if n < BlankMinLength && end-offset >= BlankMinLength {
		n = BlankMinLength
	}
	buf := grow(dst, int(n))
	if err := s.readAt(buf, offset); err != nil {
		return nil, err
	}
	p := 0
	for p < len(buf) {
		if len(buf)-p < 8 {
			break
		}
		size := int(int32(be32(buf[p:])))
		if p == 0 && size > len(buf) && int64(size) <= end-offset && int64(size) <= s.maxRecordBytes() {
			// The first record is larger than maxBytes: return it whole.
			buf = grow(buf, size)
			if err := s.readAt(buf, offset); err != nil {
				return nil, err
			}
		}
		_, k, err := s.checkRecordCRC(buf[p:], offset+int64(p), crc)
		if err != nil {
			if p == 0 {
				return nil, err
			}
			if !errors.Is(err, ErrIncomplete) {
				s.log.WithError(err).WithField("offset", offset+int64(p)).Warn("ReadRaw stopped at a corrupt record")
			}
			break
		}
		p += k
	}
	return buf[:p], nil
}

// grow returns b resized to n bytes, reusing its array when it is large enough.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

package timer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/sirupsen/logrus"
)

// Store is the part of the message store the Service reads: *commitlog.Store implements it.
type Store interface {
	GetMessages(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int, match func(tagsCode int64) bool) commitlog.GetResult
	QueueMaxOffset(topic string, queueID int32) int64
	MaxOffset() int64
	DispatchedOffset() int64
}

// Putter stores a fired message in its real topic (the broker's plain append, as for delay
// levels). A nil error means stored; any error makes the Service retry the same message.
type Putter interface {
	Put(m *commitlog.Message) error
}

// LatenessBounds are the upper bounds (ms) of the lateness histogram's buckets: how long
// after its due time (the end of its slot) a timer was delivered.
var LatenessBounds = []int64{10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 60000}

// Stats describes the Service.
type Stats struct {
	Delivering bool  `json:"delivering"`
	Pending    int64 `json:"pending"`       // timers not yet delivered: indexed ones (approximate after a restart) plus the queue not yet indexed
	InMemory   int64 `json:"inMemory"`      // timers of the bucket in memory
	Delivered  int64 `json:"delivered"`     // timers delivered since start
	Skipped    int64 `json:"skipped"`       // index entries or records that could not be delivered (logged)
	Cancelled  int64 `json:"cancelled"`     // timers not delivered because a delete marker of their slot named them, since start
	Markers    int64 `json:"markers"`       // delete markers (TIMER_DEL_UNIQKEY) whose slot was reached, since start
	Retries    int64 `json:"retries"`       // failed delivery attempts
	Enqueue    int64 `json:"enqueueOffset"` // next rmq_sys_wheel_timer queue offset to index
	Cursor     int64 `json:"cursorMs"`      // every slot before it is delivered (ms)
	// Lateness counts deliveries per LatenessBounds bucket (one more for larger values);
	// LatenessSumMs is their total lateness.
	Lateness      []int64 `json:"latenessHistogram"`
	LatenessSumMs int64   `json:"latenessSumMs"`
}

// Service indexes rmq_sys_wheel_timer and, while delivering (on a writable master), fires due
// timers into their real topics. Its loop runs from Start to Stop on every role: a replica
// indexes what it replicates and follows its master's progress through the delivered copies
// (Observe), so that after a promotion it delivers from where the master stopped.
type Service struct {
	cfg   Config
	store Store
	put   Putter
	log   logrus.FieldLogger
	idx   *index
	core  *Core // loop goroutine only

	enqueue int64 // loop goroutine only; published in enqueueA
	// Loop goroutine only: synced is the enqueue offset of the last full index sync; below
	// replayUntil entries may be in their bucket already (replay caches their queue offsets).
	synced, replayUntil int64
	replay              map[int64]map[int64]struct{}
	lastIndexSync       time.Time
	syncDone            chan syncResult // the background index sync in flight, nil for none
	loadedDropped       int64           // entries of the loaded bucket's file not held (delivered before the cursor, twice indexed)
	loadedDelivered     int64           // deliveries from the loaded bucket since it was loaded
	loadedBucket        int64           // the bucket loadedDropped and loadedDelivered are about, -1 for none
	delivering          atomic.Bool
	obsMu               sync.Mutex
	obsSlot, obsQoff    int64 // the latest delivered entry seen in the log (Observe)
	wake                chan struct{}

	mu      sync.Mutex
	running bool
	stop    chan struct{}
	wg      sync.WaitGroup
	noFinal atomic.Bool

	enqueueA, cursorA, inMem    atomic.Int64
	writtenA                    atomic.Int64
	indexed, delivered, skipped atomic.Int64 // indexed: pending in the index files, as of the last persist
	retries, latSum             atomic.Int64
	cancelled, markersSeen      atomic.Int64
	indexedStoreMs              int64 // loop goroutine only: latest store time of a record indexed (or passed over as indexed)
	// Loop goroutine only: the CommitLog end when delivery last began. Nothing is delivered
	// until the dispatcher has reached it (dispatchCaughtUp).
	startLogMax int64
	// Loop goroutine only: the keys the markers of delSlot name (delN markers read).
	delSlot      int64
	delN         int
	delKeys      map[string]struct{}
	lat          []atomic.Int64
	isDelivering atomic.Bool
}

// New validates cfg, reads the checkpoint and builds a stopped Service.
func New(cfg Config, store Store, put Putter) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	idx, err := newIndex(cfg.FS, cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, store: store, put: put, idx: idx, log: cfg.Logger.WithField("component", "timer"),
		wake: make(chan struct{}, 1), lat: make([]atomic.Int64, len(LatenessBounds)+1)}
	cp, damaged, err := idx.readCheckpoint()
	if err != nil {
		return nil, err
	}
	if damaged {
		s.log.Warn("timer checkpoint damaged: the index is rebuilt from the timer topic in the CommitLog")
	}
	s.enqueue, s.synced, s.replayUntil = cp.SyncedOffset, cp.SyncedOffset, cp.WrittenOffset
	s.lastIndexSync = cfg.Now()
	s.loadedBucket = -1
	s.core = NewCore(cfg.PrecisionMs, cfg.BucketSpan.Milliseconds(), cp.Cursor, cp.Done)
	s.obsQoff = -1
	s.enqueueA.Store(s.enqueue)
	s.writtenA.Store(s.written())
	s.cursorA.Store(s.core.Cursor())
	s.countPending()
	return s, nil
}

// Rules are the send-side settings (Transform).
func (s *Service) Rules() Rules { return s.cfg.Rules() }

// Observe feeds a dispatched record's properties (the store's TagsCode hook): a delivered
// copy tells how far delivery got. A slot later than now is ignored (no delivery fires
// early, so such a copy was not written by one).
func (s *Service) Observe(topic string, props commitlog.Props) {
	if topic == Topic || !props.Has(PropertyDequeueMs) {
		return // not a delivered timer copy: no map for the records that are not
	}
	slot, qoff, ok := DeliveredSource(topic, props.Map())
	if !ok || slot > s.cfg.Now().UnixMilli() {
		return
	}
	s.obsMu.Lock()
	if slot > s.obsSlot || (slot == s.obsSlot && qoff > s.obsQoff) {
		s.obsSlot, s.obsQoff = slot, qoff
	}
	s.obsMu.Unlock()
}

// OnDispatch has the signature of commitlog.Store.OnDispatch's callback: a new timer record
// wakes the loop.
func (s *Service) OnDispatch(topic string, _ int32, _ int64) {
	if topic == Topic {
		s.notify()
	}
}

func (s *Service) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start starts the loop (indexing only until StartDelivery).
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return
	}
	s.running = true
	s.stop = make(chan struct{})
	s.noFinal.Store(false)
	s.wg.Add(1)
	go s.run(s.stop)
}

// Stop stops the loop, then fsyncs the index and writes the checkpoint.
func (s *Service) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	close(s.stop)
	s.wg.Wait()
	s.running = false
	err := s.persist(true)
	if cerr := s.idx.close(); err == nil {
		err = cerr
	}
	return err
}

// halt stops the loop without persisting: what a kill -9 leaves (tests).
func (s *Service) halt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return
	}
	s.noFinal.Store(true)
	close(s.stop)
	s.wg.Wait()
	s.running = false
	if s.syncDone != nil {
		<-s.syncDone // its fsyncs are harmless; just do not leave it running
		s.syncDone = nil
	}
	s.idx.closeAll()
}

// StartDelivery makes the loop fire due timers (a writable master). With timers disabled it
// does nothing.
func (s *Service) StartDelivery() {
	if !s.cfg.Enabled {
		return
	}
	s.delivering.Store(true)
	s.notify()
}

// StopDelivery stops firing (demotion); the loop keeps indexing. A delivery in progress
// completes or fails on its own (a fenced store refuses it).
func (s *Service) StopDelivery() {
	s.delivering.Store(false)
	s.notify()
}

// Stats returns the current counters.
func (s *Service) Stats() Stats {
	st := Stats{
		Delivering: s.isDelivering.Load(),
		InMemory:   s.inMem.Load(),
		Delivered:  s.delivered.Load(), Skipped: s.skipped.Load(), Retries: s.retries.Load(),
		Cancelled: s.cancelled.Load(), Markers: s.markersSeen.Load(),
		Enqueue: s.enqueueA.Load(), Cursor: s.cursorA.Load(),
		LatenessSumMs: s.latSum.Load(),
	}
	st.Pending = max(s.indexed.Load(), 0) + max(s.store.QueueMaxOffset(Topic, 0)-max(st.Enqueue, s.writtenA.Load()), 0)
	for i := range s.lat {
		st.Lateness = append(st.Lateness, s.lat[i].Load())
	}
	return st
}

// Read sizes of one indexing round and one delivery round.
const (
	enqueueBatch = 64
	enqueueBytes = 1 << 20
	deliverBatch = 64
)

func (s *Service) run(stop <-chan struct{}) {
	defer s.wg.Done()
	lastPersist := s.cfg.Now()
	was := false
	for {
		select {
		case <-stop:
			if !s.noFinal.Load() {
				s.core.Unload()
			}
			return
		default:
		}
		on := s.delivering.Load()
		if !on || !was {
			// A replica follows the copies it replicates; a master trusts its own progress
			// once delivering (a client could forge a copy's properties).
			s.obsMu.Lock()
			slot, qoff := s.obsSlot, s.obsQoff
			s.obsMu.Unlock()
			s.core.Observe(slot, qoff)
		}
		busy := s.enqueueRound()
		if was && !on {
			s.core.Unload() // the bucket is read again at the next promotion
		}
		if on && !was {
			s.startLogMax = s.store.MaxOffset()
			s.log.WithFields(logrus.Fields{"cursor": s.core.Cursor(), "enqueue": s.enqueue}).Info("timer delivery started")
		}
		was = on
		s.isDelivering.Store(on)
		if on && s.dispatchCaughtUp() {
			if !s.deliverRound(stop) {
				continue
			}
		}
		s.enqueueA.Store(s.enqueue)
		s.writtenA.Store(s.written())
		s.cursorA.Store(s.core.Cursor())
		s.inMem.Store(int64(s.core.InMemory()))
		if now := s.cfg.Now(); now.Sub(lastPersist) >= s.cfg.FlushInterval {
			if s.noFinal.Load() {
				return
			}
			if err := s.persist(false); err != nil {
				s.log.WithError(err).Warn("timer checkpoint not written; retried at the next interval")
			}
			lastPersist = now
		}
		if busy {
			continue
		}
		wait := time.Duration(s.cfg.PrecisionMs) * time.Millisecond / 4
		if d := s.core.NextDue(); d >= 0 && on {
			if until := time.Duration(d-s.cfg.Now().UnixMilli()) * time.Millisecond; until < wait {
				wait = max(until, time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-stop:
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// persist writes the checkpoint (every FlushInterval) after, every IndexSyncInterval and at
// Stop, fsyncing the index files written since the last sync; then it removes buckets
// wholly before the cursor and counts what is pending. Order matters: the checkpoint's
// synced offset may only cover durable entries.
func (s *Service) persist(final bool) error {
	s.collectIndexSync(final)
	if final {
		if err := s.idx.sync(); err != nil {
			return err
		}
		s.synced = s.enqueue
	} else if now := s.cfg.Now(); now.Sub(s.lastIndexSync) >= s.cfg.IndexSyncInterval {
		s.startIndexSync(now)
	}
	cur := s.core.Cursor()
	if err := s.idx.writeCheckpoint(Checkpoint{SyncedOffset: s.synced, WrittenOffset: s.written(), Cursor: cur, Done: s.core.Done()}); err != nil {
		return err
	}
	bs, _, err := s.idx.buckets()
	if err == nil {
		span := s.cfg.BucketSpan.Milliseconds()
		for _, b := range bs {
			if b+span <= s.core.BucketOf(cur) && b != s.core.Loaded() {
				if err := s.idx.remove(b); err != nil {
					s.log.WithError(err).WithField("bucket", b).Warn("removing a delivered timer bucket failed")
				}
			}
		}
	}
	s.countPending()
	return nil
}

// syncResult is what a background index sync reports.
type syncResult struct {
	upTo    int64 // enqueue offset whose entries it made durable
	buckets []int64
	dir     bool
	err     error
}

// startIndexSync hands the buckets written since the last sync to a goroutine that fsyncs
// them while the loop goes on (thousands of buckets can be dirty: one fsync each).
func (s *Service) startIndexSync(now time.Time) {
	if s.syncDone != nil {
		return
	}
	buckets, dir := s.idx.takeDirty()
	upTo := s.enqueue
	done := make(chan syncResult, 1)
	s.syncDone = done
	s.lastIndexSync = now
	go func() {
		done <- syncResult{upTo: upTo, buckets: buckets, dir: dir, err: s.idx.syncFiles(buckets, dir)}
	}()
}

// collectIndexSync takes the result of a finished background sync; wait blocks for it.
func (s *Service) collectIndexSync(wait bool) {
	if s.syncDone == nil {
		return
	}
	var r syncResult
	if wait {
		r = <-s.syncDone
	} else {
		select {
		case r = <-s.syncDone:
		default:
			return
		}
	}
	s.syncDone = nil
	if r.err != nil {
		s.log.WithError(r.err).Warn("timer index sync failed; retried at the next interval")
		s.idx.redirty(r.buckets, r.dir)
		return
	}
	s.synced = max(s.synced, r.upTo)
}

// written is the queue offset up to which entries may be in the index files.
func (s *Service) written() int64 { return max(s.enqueue, s.replayUntil) }

// countPending counts the timers the index files hold from the cursor's bucket on, less
// those of the cursor's bucket known delivered since it was last loaded (on a replica, which
// loads nothing, the cursor's bucket counts whole).
func (s *Service) countPending() {
	bs, sizes, err := s.idx.buckets()
	if err != nil {
		return
	}
	var n int64
	from := s.core.BucketOf(s.core.Cursor())
	for i, b := range bs {
		if b >= from {
			n += sizes[i] / EntrySize
		}
	}
	if s.loadedBucket == from {
		n -= s.loadedDropped + s.loadedDelivered
	}
	s.indexed.Store(max(n, 0))
}

// inBucket reports whether a replayed record's entry is in its bucket already.
func (s *Service) inBucket(bucket, qoff int64) bool {
	if s.replay == nil {
		s.replay = map[int64]map[int64]struct{}{}
	}
	set, ok := s.replay[bucket]
	if !ok {
		entries, _, _, err := s.idx.read(bucket)
		if err != nil {
			return false // written again: at worst delivered twice
		}
		set = make(map[int64]struct{}, len(entries))
		for _, e := range entries {
			set[e.QueueOffset] = struct{}{}
		}
		s.replay[bucket] = set
	}
	_, ok = set[qoff]
	return ok
}

// enqueueRound indexes the next timer records; it reports whether it read any.
func (s *Service) enqueueRound() bool {
	res := s.store.GetMessages(Topic, 0, s.enqueue, enqueueBatch, enqueueBytes, nil)
	switch res.Status {
	case commitlog.Found:
	case commitlog.NoMessageInQueue, commitlog.OffsetOverflowOne:
		return false
	case commitlog.OffsetOverflowBadly, commitlog.NoMatchedLogicQueue:
		// Beyond the queue: the dispatcher may still be building it (just promoted); once it
		// has caught up, the log really is shorter (truncated, copied again).
		if s.enqueue > res.MaxOffset && s.store.DispatchedOffset() >= s.store.MaxOffset() {
			s.log.WithFields(logrus.Fields{"offset": s.enqueue, "max": res.MaxOffset}).Warn("timer enqueue offset beyond the timer queue; moved to its end")
			s.enqueue = res.MaxOffset
		}
		return false
	default:
		if res.NextBeginOffset > s.enqueue {
			s.log.WithFields(logrus.Fields{"offset": s.enqueue, "next": res.NextBeginOffset, "status": res.Status.String()}).
				Error("timer queue entries unreadable or removed; skipped")
			s.skipped.Add(res.NextBeginOffset - s.enqueue)
			s.enqueue = res.NextBeginOffset
			return true
		}
		return false
	}
	for _, raw := range res.Records {
		rec, _, err := commitlog.DecodeRecord(raw)
		if err != nil {
			s.log.WithError(err).WithField("offset", s.enqueue).Error("timer record undecodable; skipped")
			s.skipped.Add(1)
			s.enqueue++
			continue
		}
		s.indexedStoreMs = max(s.indexedStoreMs, rec.StoreTimestamp)
		props := commitlog.ParseProperties(rec.Properties)
		out, ok := OutMs(props)
		if !ok {
			s.log.WithField("offset", rec.QueueOffset).Error("timer record without TIMER_OUT_MS; skipped")
			s.skipped.Add(1)
			s.enqueue = rec.QueueOffset + 1
			continue
		}
		_, marker := props[PropertyDelUniqKey]
		e := Entry{Slot: s.core.OwnSlot(out), QueueOffset: rec.QueueOffset, PhysOffset: rec.PhysicalOffset, Size: rec.TotalSize, Marker: marker}
		// A record indexed before a restart is in its bucket already (the file is read when
		// the bucket loads), or its bucket was delivered and removed. Only an entry missing
		// from its bucket (an index write lost with the machine) is written again.
		if rec.QueueOffset < s.replayUntil {
			own := s.core.BucketOf(e.Slot)
			if own < s.core.BucketOf(s.core.Cursor()) || s.inBucket(own, rec.QueueOffset) {
				s.enqueue = rec.QueueOffset + 1
				continue
			}
		}
		e.Slot = s.core.Slot(out)
		if err := s.idx.append(s.core.BucketOf(e.Slot), e); err != nil {
			s.log.WithError(err).WithField("offset", rec.QueueOffset).Error("indexing a timer failed; retried")
			return false
		}
		s.core.Add(e)
		s.enqueue = rec.QueueOffset + 1
		if s.enqueue >= s.replayUntil {
			s.replay = nil
		}
	}
	s.enqueue = max(s.enqueue, res.NextBeginOffset)
	return len(res.Records) > 0 // a short read (a segment end, a byte cap) is no sign of the end
}

// dispatchCaughtUp reports whether the dispatcher has put every record stored before delivery
// began into its consume queue. Until then the timer queue can end short of records already
// stored (a restart, a promotion: the dispatcher rebuilds the queues from the log), and its
// end would pass for "every timer record indexed" (deliverNow) while delete markers are
// still missing from it. Records stored afterwards reach the queue within the dispatcher's
// pacing, well inside a slot: a marker is stored before its own slot.
func (s *Service) dispatchCaughtUp() bool {
	if s.startLogMax <= 0 {
		return true
	}
	if s.store.DispatchedOffset() < s.startLogMax {
		return false
	}
	s.startLogMax = 0
	return true
}

// deliverNow is the time delivery may go up to: now once every timer record in the queue is
// indexed, else no further than the store time of the last record indexed. A delete marker
// for slot K was stored before its deliver time, which is at most K+precision, so a slot is
// only delivered once every record stored before its end is indexed, its markers included
// (RocketMQ's dequeue waits for its enqueue in the same way: currReadTimeMs <
// currWriteTimeMs). While the index is behind (a restart, a promotion) delivery follows it.
func (s *Service) deliverNow() int64 {
	now := s.cfg.Now().UnixMilli()
	if s.enqueue >= s.store.QueueMaxOffset(Topic, 0) {
		return now
	}
	return min(now, s.indexedStoreMs)
}

// deliverRound loads the cursor's bucket if needed and fires what is due; false when stopped
// or demoted mid-round.
func (s *Service) deliverRound(stop <-chan struct{}) bool {
	for range 1000 { // buckets passed in one round (catching up after downtime)
		b, need := s.core.NeedLoad()
		if !need {
			break
		}
		now := s.deliverNow()
		entries, exists, bad, err := s.idx.read(b)
		if err != nil {
			s.log.WithError(err).WithField("bucket", b).Error("timer bucket unreadable; retried")
			return true
		}
		if bad > 0 {
			s.log.WithFields(logrus.Fields{"bucket": b, "bad": bad}).Warn("timer index entries with a bad CRC skipped; the record stays in the timer topic")
			s.skipped.Add(int64(bad))
		}
		if !exists {
			next := int64(1<<62 - 1)
			if bs, _, err := s.idx.buckets(); err == nil {
				for _, nb := range bs {
					if nb > b {
						next = nb
						break
					}
				}
			}
			s.core.SkipTo(next, now)
			if nb, _ := s.core.NeedLoad(); nb != b {
				continue
			}
		}
		kept := s.core.Load(b, entries)
		s.loadedDropped, s.loadedDelivered, s.loadedBucket = int64(len(entries)-kept), 0, b
		s.core.Advance(now)
	}
	for {
		now := s.deliverNow()
		due := s.core.Due(now, deliverBatch)
		for _, e := range due {
			if e.Marker {
				// Never stored (RocketMQ's doPut refuses a delete message); its key was read
				// before the first timer of its slot was.
				s.markersSeen.Add(1)
				s.loadedDelivered++
				s.core.Delivered(e)
				continue
			}
			if !s.fire(e, stop) {
				s.core.Unload()
				return false
			}
			s.core.Delivered(e)
		}
		s.core.Advance(now)
		if len(due) < deliverBatch {
			return true
		}
	}
}

// fire delivers one timer, retrying a failed Put; false when stopped or demoted first.
func (s *Service) fire(e Entry, stop <-chan struct{}) bool {
	log := s.log.WithField("offset", e.QueueOffset)
	backoff := s.cfg.RetryBackoff
	for {
		res := s.store.GetMessages(Topic, 0, e.QueueOffset, 1, 0, nil)
		var msg *commitlog.Message
		var out int64
		switch {
		case res.Status == commitlog.Found:
			rec, _, err := commitlog.DecodeRecord(res.Records[0])
			if err == nil && rec.QueueOffset != e.QueueOffset {
				err = ErrNotTimer
			}
			var props map[string]string
			if err == nil {
				props = commitlog.ParseProperties(rec.Properties)
				out, _ = OutMs(props)
				msg, err = restore(rec, s.cfg.Now().UnixMilli(), sourceOf(e))
			}
			if err != nil {
				log.WithError(err).Error("timer record cannot be delivered; skipped")
				s.skip()
				return true
			}
			if _, del := props[PropertyDelUniqKey]; del {
				s.markersSeen.Add(1) // indexed without its flag: still never stored
				s.loadedDelivered++
				return true
			}
			keys, ok := s.deleteKeys(e.Slot, stop)
			if !ok {
				return false
			}
			if _, gone := keys[DeleteKey(props[PropertyRealTopic], props[PropertyUniqKey])]; gone && props[PropertyUniqKey] != "" {
				log.WithFields(logrus.Fields{"topic": props[PropertyRealTopic], "key": props[PropertyUniqKey], "slot": e.Slot}).Debug("timer cancelled by a delete marker")
				s.cancelled.Add(1)
				s.loadedDelivered++
				return true
			}
		case res.Status == commitlog.OffsetFoundNull && e.QueueOffset >= res.MinOffset:
			// An I/O problem reading the queue: try again.
		default:
			log.WithField("status", res.Status.String()).Warn("timer record gone from the timer topic (retention, truncation); skipped")
			s.skip()
			return true
		}
		if msg != nil {
			err := s.put.Put(msg)
			if err == nil {
				s.delivered.Add(1)
				s.loadedDelivered++
				late := max(s.cfg.Now().UnixMilli()-(out+s.cfg.PrecisionMs), 0)
				s.latSum.Add(late)
				i := 0
				for i < len(LatenessBounds) && late > LatenessBounds[i] {
					i++
				}
				s.lat[i].Add(1)
				return true
			}
			s.retries.Add(1)
			log.WithError(err).WithField("topic", msg.Topic).WithField("retry_in", backoff.String()).Warn("delivering a timer failed; retrying the same message")
		}
		t := time.NewTimer(backoff)
		select {
		case <-stop:
			t.Stop()
			return false
		case <-t.C:
		}
		if !s.delivering.Load() {
			return false
		}
		backoff = min(backoff*2, s.cfg.MaxRetryBackoff)
	}
}

// deleteKeys returns the keys (TIMER_DEL_UNIQKEY) the delete markers of slot name, reading
// the marker records again when the slot or its number of markers changed. A marker record
// that cannot be read for an I/O error is retried (better late than delivering a cancelled
// timer); one gone from the timer topic cancels nothing. False when stopped or demoted.
func (s *Service) deleteKeys(slot int64, stop <-chan struct{}) (map[string]struct{}, bool) {
	n := s.core.MarkerCount(slot)
	if n == 0 {
		return nil, true
	}
	if s.delKeys != nil && s.delSlot == slot && s.delN == n {
		return s.delKeys, true
	}
	keys := make(map[string]struct{}, n)
	for _, m := range s.core.Markers(slot) {
		backoff := s.cfg.RetryBackoff
		for {
			res := s.store.GetMessages(Topic, 0, m.QueueOffset, 1, 0, nil)
			if res.Status == commitlog.Found {
				if rec, _, err := commitlog.DecodeRecord(res.Records[0]); err == nil && rec.QueueOffset == m.QueueOffset {
					if k, ok := commitlog.ParseProperties(rec.Properties)[PropertyDelUniqKey]; ok {
						keys[k] = struct{}{}
					}
				}
				break
			}
			if res.Status != commitlog.OffsetFoundNull || m.QueueOffset < res.MinOffset {
				s.log.WithFields(logrus.Fields{"offset": m.QueueOffset, "status": res.Status.String()}).Warn("timer delete marker gone from the timer topic; it cancels nothing")
				break
			}
			t := time.NewTimer(backoff)
			select {
			case <-stop:
				t.Stop()
				return nil, false
			case <-t.C:
			}
			if !s.delivering.Load() {
				return nil, false
			}
			backoff = min(backoff*2, s.cfg.MaxRetryBackoff)
		}
	}
	s.delSlot, s.delN, s.delKeys = slot, n, keys
	return keys, true
}

func (s *Service) skip() {
	s.skipped.Add(1)
	s.loadedDelivered++
}

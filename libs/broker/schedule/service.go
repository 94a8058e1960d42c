package schedule

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/sirupsen/logrus"
)

// Store is the part of the message store the Service reads:
// *commitlog.Store implements it.
type Store interface {
	GetMessages(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int, match func(tagsCode int64) bool) commitlog.GetResult
	QueueMaxOffset(topic string, queueID int32) int64
	Queues() map[string][]int32
	MaxOffset() int64
	DispatchedOffset() int64
}

// Offsets holds the per-level delivery progress: *meta.DelayOffsetTable
// implements it.
type Offsets interface {
	Get(level int32) (offset int64, found bool)
	Update(level int32, offset int64) bool
	Persist() error
}

// Putter stores a due message in its real topic. The broker implements it
// with its normal internal append (no flush or replication wait). A nil
// error means the message is stored; any error makes the Service retry the
// same message later.
type Putter interface {
	Put(m *commitlog.Message) error
}

// Service delivers due messages of SCHEDULE_TOPIC_XXXX to their real topics.
type Service struct {
	cfg     Config
	store   Store
	offsets Offsets
	put     Putter
	log     logrus.FieldLogger

	wake  []chan struct{} // per level index, capacity 1
	stats []levelStats

	mu      sync.Mutex
	running bool
	stop    chan struct{}
	noFinal atomic.Bool // set by halt: exit without the final persist
	wg      sync.WaitGroup
}

type levelStats struct {
	offset    atomic.Int64
	delivered atomic.Int64
	retries   atomic.Int64
	skipped   atomic.Int64
	refused   atomic.Int64
	nextDue   atomic.Int64
}

// LevelStats describes one level.
type LevelStats struct {
	Level     int
	Delay     time.Duration
	Offset    int64 // next queue offset to deliver
	Delivered int64 // messages delivered since New
	Retries   int64 // failed Put attempts since New
	Skipped   int64 // unreadable or unrestorable entries passed over since New
	Refused   int64 // entries without a real topic (none, or SCHEDULE_TOPIC_XXXX) delivered nowhere since New; counted in Skipped too
	NextDue   int64 // ms delivery time of the head being waited for, 0 when idle
}

// New validates cfg and builds a stopped Service.
func New(cfg Config, store Store, offsets Offsets, put Putter) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, store: store, offsets: offsets, put: put,
		log:   cfg.Logger.WithField("component", "schedule"),
		wake:  make([]chan struct{}, len(cfg.Levels)),
		stats: make([]levelStats, len(cfg.Levels)),
	}
	for i := range s.wake {
		s.wake[i] = make(chan struct{}, 1)
	}
	return s, nil
}

// Levels returns the level table in use.
func (s *Service) Levels() Levels { return s.cfg.Levels }

// Notify wakes a level whose queue may have a new entry. Cheap and
// non-blocking; unknown levels are ignored. Call it once the entry is in the
// consume queue (see OnDispatch); a call made earlier is not lost forever,
// IdleRecheck picks the entry up.
func (s *Service) Notify(level int) {
	if level < 1 || level > len(s.wake) {
		return
	}
	select {
	case s.wake[level-1] <- struct{}{}:
	default:
	}
}

// OnDispatch has the signature of commitlog.Store.OnDispatch's callback:
// register it there (store.OnDispatch(svc.OnDispatch)) and every new unit of
// a schedule queue wakes its level.
func (s *Service) OnDispatch(topic string, queueID int32, _ int64) {
	if topic == Topic {
		s.Notify(int(queueID) + 1)
	}
}

// Running reports whether the delivery loops run.
func (s *Service) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Start starts one delivery loop per level, each from the level's offset in
// the Offsets table (0 when none), and the persist ticker. Starting a running
// Service does nothing.
func (s *Service) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	s.warnOrphans()
	s.running = true
	s.stop = make(chan struct{})
	s.noFinal.Store(false)
	for i := range s.cfg.Levels {
		off, _ := s.offsets.Get(int32(i + 1))
		if seen := s.cfg.Delivered.Next(i + 1); seen > off {
			// The log holds deliveries the offsets table does not know (a promoted slave
			// whose synced table is older than what it replicated).
			s.log.WithFields(logrus.Fields{"level": i + 1, "table": off, "log": seen}).Warn("delay progress taken from the delivered copies in the log")
			off = seen
			s.advance(i+1, off)
		}
		s.wg.Add(1)
		go s.runLevel(i+1, off, s.stop)
	}
	s.wg.Add(1)
	go s.persistLoop(s.stop)
	s.log.WithField("levels", s.cfg.Levels.String()).Info("delay delivery started")
	return nil
}

// Stop stops the loops, waits for them (a Put in progress completes first)
// and persists the offsets; it returns the persist error. Stopping a stopped
// Service does nothing.
func (s *Service) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	close(s.stop)
	s.wg.Wait()
	s.running = false
	err := s.offsets.Persist()
	if err != nil {
		s.log.WithError(err).Error("persisting delay offsets at stop failed")
	}
	s.log.Info("delay delivery stopped")
	return err
}

// halt stops the loops without any further persist: what a kill -9 leaves.
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
}

// Stats returns one entry per level.
func (s *Service) Stats() []LevelStats {
	out := make([]LevelStats, len(s.stats))
	for i := range s.stats {
		st := &s.stats[i]
		out[i] = LevelStats{
			Level: i + 1, Delay: s.cfg.Levels[i],
			Offset: st.offset.Load(), Delivered: st.delivered.Load(),
			Retries: st.retries.Load(), Skipped: st.skipped.Load(), Refused: st.refused.Load(), NextDue: st.nextDue.Load(),
		}
	}
	return out
}

// warnOrphans logs schedule queues beyond the level table that still hold
// undelivered entries: they stay where they are until their level returns.
func (s *Service) warnOrphans() {
	for _, q := range s.store.Queues()[Topic] {
		level := int(q) + 1
		if level <= len(s.cfg.Levels) {
			continue
		}
		off, _ := s.offsets.Get(int32(level))
		if max := s.store.QueueMaxOffset(Topic, q); max > off {
			s.log.WithField("level", level).WithField("offset", off).WithField("pending", max-off).
				Warn("schedule queue of a level missing from the level table holds undelivered messages; they stay until the level is configured again")
		}
	}
}

func (s *Service) persistLoop(stop <-chan struct{}) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.PersistInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// A halt may race with the tick; a kill -9 could equally land
			// after this write, so either order is a faithful crash.
			if s.noFinal.Load() {
				return
			}
			if err := s.offsets.Persist(); err != nil {
				s.log.WithError(err).Warn("persisting delay offsets failed; retried at the next tick")
			}
		}
	}
}

// sleep waits d or until stop; it reports false on stop.
func sleep(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

func (s *Service) advance(level int, off int64) {
	s.stats[level-1].offset.Store(off)
	s.offsets.Update(int32(level), off)
}

// Read sizes of one delivery round: a round reads up to readBatch entries of
// a level (at most about readBytes) with one consume-queue read and one
// CommitLog read per contiguous run.
const (
	// dispatchLagPoll is how often a level whose offset lies beyond its
	// queue looks again while the store's dispatcher is behind.
	dispatchLagPoll = 50 * time.Millisecond
	readBatch       = 32
	readBytes       = 256 << 10
)

// fetch reads the next entries of a queue with the tags code of each. The
// store reports tags codes through the match callback, one call per unit it
// considers; when the calls and the returned records do not pair up (a unit
// was skipped after its call), it reads a single entry instead, for which
// the last call is the returned record's. single asks for that at once.
func (s *Service) fetch(qid int32, off int64, single bool) (commitlog.GetResult, []int64) {
	var tags []int64
	match := func(tc int64) bool { tags = append(tags, tc); return true }
	if !single {
		res := s.store.GetMessages(Topic, qid, off, readBatch, readBytes, match)
		if res.Status != commitlog.Found || len(res.Records) == len(tags) {
			return res, tags
		}
		tags = tags[:0]
	}
	res := s.store.GetMessages(Topic, qid, off, 1, 0, match)
	if res.Status == commitlog.Found && len(tags) > 0 {
		tags = tags[len(tags)-1:]
	}
	return res, tags
}

// runLevel delivers level's queue in order from off.
func (s *Service) runLevel(level int, off int64, stop <-chan struct{}) {
	defer s.wg.Done()
	st := &s.stats[level-1]
	st.offset.Store(off)
	qid := int32(level - 1)
	delay := s.cfg.Levels[level-1]
	log := s.log.WithField("level", level)
	idle := func() bool {
		st.nextDue.Store(0)
		t := time.NewTimer(s.cfg.IdleRecheck)
		defer t.Stop()
		select {
		case <-stop:
			return false
		case <-s.wake[level-1]:
		case <-t.C:
		}
		return true
	}
	single := false
	mark := int64(-1) // CommitLog end when the offset was first seen beyond its queue
	for {
		select {
		case <-stop:
			return
		default:
		}
		res, tags := s.fetch(qid, off, single)
		single = false
		if res.Status != commitlog.NoMessageInQueue && res.Status != commitlog.NoMatchedLogicQueue && res.Status != commitlog.OffsetOverflowBadly {
			mark = -1
		}
		switch res.Status {
		case commitlog.Found:
		case commitlog.OffsetOverflowOne:
			if !idle() {
				return
			}
			continue
		case commitlog.NoMessageInQueue, commitlog.NoMatchedLogicQueue, commitlog.OffsetOverflowBadly:
			end := res.MaxOffset
			if res.Status != commitlog.OffsetOverflowBadly {
				end = 0 // an empty or missing queue
			}
			if off == end {
				mark = -1
				if !idle() {
					return
				}
				continue
			}
			// The queue is shorter than our progress. Right after a
			// promotion that is usually the dispatcher still building the
			// consume queues from replicated records: never move the offset
			// back before every record stored when this was first seen is
			// dispatched and the queue still looks short (moving back early
			// would re-deliver in bulk). Then the store really is shorter
			// (truncated or copied again): continue at the queue's end so
			// that new entries are not skipped.
			if mark < 0 || s.store.DispatchedOffset() < mark {
				if mark < 0 {
					mark = s.store.MaxOffset()
				}
				if !sleep(stop, dispatchLagPoll) {
					return
				}
				continue
			}
			mark = -1
			log.WithField("offset", off).WithField("max", end).Warn("delivery offset beyond the schedule queue; moved to its end")
			off = end
			s.advance(level, off)
			continue
		case commitlog.OffsetFoundNull:
			// The consume queue could not be read at an offset it should
			// hold: an I/O problem. Skipping would jump to the next queue
			// file and lose its entries, so try again later.
			if off >= res.MinOffset {
				log.WithField("offset", off).Error("schedule queue unreadable; retrying")
				if !sleep(stop, s.cfg.MaxRetryBackoff) {
					return
				}
				continue
			}
			log.WithField("offset", off).WithField("next", res.MinOffset).Warn("schedule queue entries removed; skipped")
			st.skipped.Add(res.MinOffset - off)
			off = res.MinOffset
			s.advance(level, off)
			continue
		default:
			// OffsetTooSmall (retention removed entries), MessageWasRemoving,
			// NoMatchedMessage (invalid or unreadable entries): move on
			// to where the store says the next readable entry is.
			if res.NextBeginOffset > off {
				log.WithField("offset", off).WithField("next", res.NextBeginOffset).WithField("status", res.Status.String()).
					Error("schedule queue entries unreadable or removed; skipped")
				st.skipped.Add(res.NextBeginOffset - off)
				off = res.NextBeginOffset
				s.advance(level, off)
				continue
			}
			if !idle() {
				return
			}
			continue
		}
		for i, raw := range res.Records {
			rec, _, err := commitlog.DecodeRecord(raw)
			if err != nil {
				// Validated by the store a moment ago, so this is not
				// expected. Read the entry alone; if it still fails, pass
				// over it.
				if len(res.Records) > 1 {
					single = true
					break
				}
				log.WithError(err).WithField("offset", off).Error("schedule record undecodable; skipped")
				st.skipped.Add(max(res.NextBeginOffset-off, 1))
				off = max(res.NextBeginOffset, off+1)
				s.advance(level, off)
				break
			}
			next := rec.QueueOffset + 1
			if i == len(res.Records)-1 {
				next = max(next, res.NextBeginOffset)
			}
			if rec.QueueOffset > off {
				st.skipped.Add(rec.QueueOffset - off)
			}
			// A delivery time before the store time is not one: the unit was
			// written without the TagsCode hook (a TAGS hash). Fall back to
			// what the hook would have computed.
			due := int64(math.MinInt64)
			if i < len(tags) {
				due = tags[i]
			}
			if due < rec.StoreTimestamp {
				due = rec.StoreTimestamp + delay.Milliseconds()
			}
			// Entries behind the head are due no earlier (same delay, later
			// store time), so the level waits on its first entry.
			if !s.waitDue(st, s.wake[level-1], due, delay, stop) {
				return
			}
			msg, err := restore(rec, level)
			if errors.Is(err, ErrNoRealTopic) {
				// Never delivered, never scheduled again: a loop stops here, records already
				// on disk from before this check included.
				st.skipped.Add(1)
				if n := st.refused.Add(1); n&(n-1) == 0 { // logged the 1st, 2nd, 4th, 8th, ... time
					log.WithError(err).WithFields(logrus.Fields{"offset": rec.QueueOffset, "refused": n}).
						Error("scheduled record has no real topic to deliver to (none, or the schedule topic itself); dropped")
				}
			} else if err != nil {
				log.WithError(err).WithField("offset", rec.QueueOffset).Error("scheduled message cannot be restored; skipped")
				st.skipped.Add(1)
			} else {
				if !s.putWithRetry(st, log, msg, rec.QueueOffset, stop) {
					return
				}
				st.delivered.Add(1)
			}
			off = next
			s.advance(level, off)
		}
	}
}

// waitDue blocks until the clock reaches the delivery time due (ms). A
// delivery time further away than the level's delay (a clock that stepped
// back, a level shortened since the message was stored) is treated as due
// now, as RocketMQ corrects it. The wait is a real timer; a Notify makes it
// look at the clock again (a test clock that jumped).
func (s *Service) waitDue(st *levelStats, wake <-chan struct{}, due int64, delay time.Duration, stop <-chan struct{}) bool {
	for {
		now := s.cfg.Now()
		nowMs := now.UnixMilli()
		if due <= nowMs || due > nowMs+delay.Milliseconds() {
			st.nextDue.Store(0)
			return true
		}
		st.nextDue.Store(due)
		t := time.NewTimer(time.UnixMilli(due).Sub(now))
		select {
		case <-stop:
			t.Stop()
			return false
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Service) putWithRetry(st *levelStats, log logrus.FieldLogger, msg *commitlog.Message, qoff int64, stop <-chan struct{}) bool {
	backoff := s.cfg.RetryBackoff
	for {
		m := *msg
		err := s.put.Put(&m)
		if err == nil {
			return true
		}
		st.retries.Add(1)
		log.WithError(err).WithField("offset", qoff).WithField("topic", msg.Topic).WithField("retry_in", backoff.String()).
			Warn("delivering a due message failed; retrying the same message")
		if !sleep(stop, backoff) {
			return false
		}
		backoff = min(backoff*2, s.cfg.MaxRetryBackoff)
	}
}

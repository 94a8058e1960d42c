package timer

import (
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
)

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// recorder is the Putter: it appends like the broker and remembers when each key arrived.
type recorder struct {
	store *commitlog.Store
	mu    sync.Mutex
	got   map[string][]time.Time
	early []string
	late  []int64 // ms after the end of the slot (TIMER_OUT_MS + precision 100 ms)
}

func (r *recorder) Put(m *commitlog.Message) error {
	p := commitlog.ParseProperties(m.Properties)
	now := time.Now()
	want, _ := strconv.ParseInt(p["WANT"], 10, 64)
	r.mu.Lock()
	if now.UnixMilli() < want {
		r.early = append(r.early, p["KEYS"])
	}
	r.got[p["KEYS"]] = append(r.got[p["KEYS"]], now)
	if out, ok := OutMs(p); ok {
		r.late = append(r.late, now.UnixMilli()-out-100)
	}
	r.mu.Unlock()
	_, err := r.store.Append(m)
	return err
}

func (r *recorder) counts() (distinct, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.got {
		total += len(v)
	}
	return len(r.got), total
}

type tenv struct {
	t     testing.TB
	dir   string
	store *commitlog.Store
	rec   *recorder
	lag   *atomic.Int64 // how far the store's clock runs behind (ns): the store times of a backlog
}

func openTenv(t testing.TB) *tenv {
	dir := t.TempDir()
	cfg := commitlog.DefaultConfig()
	cfg.Dir = dir
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 1000
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	cfg.Logger = quiet()
	lag := new(atomic.Int64)
	cfg.Now = func() time.Time { return time.Now().Add(-time.Duration(lag.Load())) }
	st, err := commitlog.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return &tenv{t: t, dir: dir, store: st, rec: &recorder{store: st, got: map[string][]time.Time{}}, lag: lag}
}

func (e *tenv) service() *Service { return e.serviceOver(e.store) }

// serviceOver is service reading the store through st.
func (e *tenv) serviceOver(st Store) *Service {
	cfg := DefaultConfig()
	cfg.Dir = filepath.Join(e.dir, "timer")
	cfg.PrecisionMs = 100
	cfg.BucketSpan = time.Second
	cfg.FlushInterval = 100 * time.Millisecond
	cfg.Logger = quiet()
	s, err := New(cfg, st, e.rec)
	require.NoError(e.t, err)
	e.store.OnDispatch(s.OnDispatch)
	return s
}

// send stores a timer message the way the broker's send path does.
func (e *tenv) send(key string, delay time.Duration) {
	now := time.Now().UnixMilli()
	props := map[string]string{PropertyDelayMs: strconv.FormatInt(delay.Milliseconds(), 10), "KEYS": key, "WANT": strconv.FormatInt(now+delay.Milliseconds(), 10)}
	m := &commitlog.Message{Topic: "T", QueueID: 1, Body: []byte(key), Properties: string(commitlog.AppendProperties(nil, props)), BornHost: netip.MustParseAddrPort("127.0.0.1:5000")}
	moved, err := Rules{Enabled: true, PrecisionMs: 100, MaxDelayMs: 3600_000}.Transform(m, commitlog.ParseProperties(m.Properties), now)
	require.NoError(e.t, err)
	require.True(e.t, moved)
	_, err = e.store.Append(m)
	require.NoError(e.t, err)
}

func TestServiceDeliversOnTimeOnce(t *testing.T) {
	e := openTenv(t)
	s := e.service()
	s.Start()
	s.StartDelivery()
	const n = 300
	for i := range n {
		e.send("k"+strconv.Itoa(i), time.Duration(100+(i*37)%1400)*time.Millisecond)
	}
	require.Eventually(t, func() bool { d, _ := e.rec.counts(); return d == n }, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, s.Stop())
	d, total := e.rec.counts()
	require.Equal(t, n, d)
	require.Equal(t, n, total, "each timer once")
	require.Empty(t, e.rec.early, "never delivered before the time asked")
	st := s.Stats()
	require.Equal(t, int64(n), st.Delivered)
	require.Zero(t, st.Pending)
	var hist int64
	for _, c := range st.Lateness {
		hist += c
	}
	require.Equal(t, int64(n), hist)
	t.Logf("lateness histogram (<=%v ms, more): %v, mean %d ms", LatenessBounds, st.Lateness, st.LatenessSumMs/n)

	// Stop then start: nothing more is delivered.
	s2 := e.service()
	s2.Start()
	s2.StartDelivery()
	// The restarted service has read the whole timer queue and moved its cursor past every
	// slot: had it anything to deliver again, it would have by then.
	last := time.Now().UnixMilli()
	require.Eventually(t, func() bool { st := s2.Stats(); return st.Enqueue == n && st.Cursor > last }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s2.Stop())
	_, total = e.rec.counts()
	require.Equal(t, n, total)
}

func TestServiceCrashLosesNothing(t *testing.T) {
	e := openTenv(t)
	s := e.service()
	s.Start()
	s.StartDelivery()
	const n = 400
	for i := range n {
		e.send("k"+strconv.Itoa(i), time.Duration(200+(i*53)%2000)*time.Millisecond)
	}
	require.Eventually(t, func() bool { d, _ := e.rec.counts(); return d >= n/3 }, 20*time.Second, 5*time.Millisecond)
	s.halt() // kill -9: neither the index sync nor the checkpoint of the stop
	before, _ := e.rec.counts()

	s2 := e.service()
	s2.Start()
	s2.StartDelivery()
	require.Eventually(t, func() bool { d, _ := e.rec.counts(); return d == n }, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, s2.Stop())
	d, total := e.rec.counts()
	require.Equal(t, n, d, "nothing lost")
	require.Empty(t, e.rec.early)
	t.Logf("crash after %d deliveries: %d duplicates", before, total-d)
	require.LessOrEqual(t, total-d, n/2, "duplicates bounded by the deliveries since the last checkpoint")
}

func TestServiceRebuildsFromTheLog(t *testing.T) {
	e := openTenv(t)
	s := e.service()
	s.Start() // indexing only: not a master
	const n = 50
	for i := range n {
		e.send("k"+strconv.Itoa(i), 300*time.Millisecond)
	}
	require.Eventually(t, func() bool { return s.Stats().Enqueue == n }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Stop())
	d, _ := e.rec.counts()
	require.Zero(t, d, "a replica never delivers")
	require.NoError(t, os.RemoveAll(filepath.Join(e.dir, "timer")))

	s2 := e.service()
	s2.Start()
	s2.StartDelivery()
	require.Eventually(t, func() bool { d, _ := e.rec.counts(); return d == n }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, s2.Stop())
}

func TestServiceFollowsObservedCopies(t *testing.T) {
	e := openTenv(t)
	s := e.service()
	s.Start()
	e.send("old", 100*time.Millisecond)
	require.Eventually(t, func() bool { return s.Stats().Enqueue == 1 }, 10*time.Second, 10*time.Millisecond)
	res := e.store.GetMessages(Topic, 0, 0, 1, 0, nil)
	require.Equal(t, commitlog.Found, res.Status)
	rec, _, err := commitlog.DecodeRecord(res.Records[0])
	require.NoError(t, err)
	out, _ := OutMs(commitlog.ParseProperties(rec.Properties))
	// A copy is only believed once its slot has passed (deliveries never fire early).
	require.Eventually(t, func() bool { return time.Now().UnixMilli() > out+100 }, 5*time.Second, 10*time.Millisecond)
	cp, err := restore(rec, time.Now().UnixMilli(), sourceOf(Entry{Slot: out, QueueOffset: 0}))
	require.NoError(t, err)
	// The master delivered it: the replica sees the copy, and a forged one from the future
	// changes nothing.
	s.Observe(cp.Topic, commitlog.Props(cp.Properties))
	s.Observe("T", commitlog.Props(commitlog.AppendProperties(nil, map[string]string{PropertySource: "99999999999999:5", PropertyDequeueMs: "1"})))
	require.Eventually(t, func() bool { return s.Stats().Cursor == out }, 5*time.Second, 10*time.Millisecond)
	s.StartDelivery() // promoted
	e.send("new", 100*time.Millisecond)
	require.Eventually(t, func() bool { d, _ := e.rec.counts(); return d == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Stop())
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	require.Contains(t, e.rec.got, "new")
	require.NotContains(t, e.rec.got, "old", "delivered by the old master already")
}

// sendAt stores a timer for topic T due at deliverMs with UNIQ_KEY uniq; a non-empty del
// makes it a delete marker for that key (TIMER_DEL_UNIQKEY).
func (e *tenv) sendAt(key, uniq, del string, deliverMs int64) {
	now := time.Now().UnixMilli()
	props := map[string]string{PropertyDeliverMs: strconv.FormatInt(deliverMs, 10), "KEYS": key, "WANT": strconv.FormatInt(deliverMs, 10), PropertyUniqKey: uniq}
	if del != "" {
		props[PropertyDelUniqKey] = del
	}
	m := &commitlog.Message{Topic: "T", QueueID: 1, Body: []byte(key), Properties: string(commitlog.AppendProperties(nil, props)), BornHost: netip.MustParseAddrPort("127.0.0.1:5000")}
	moved, err := Rules{Enabled: true, PrecisionMs: 100, MaxDelayMs: 3600_000}.Transform(m, commitlog.ParseProperties(m.Properties), now)
	require.NoError(e.t, err)
	require.True(e.t, moved)
	_, err = e.store.Append(m)
	require.NoError(e.t, err)
}

// TestServiceCancels: of two timers of one slot, the one a delete marker names is never
// delivered and the other is; the marker is never delivered either. Variants: the service
// stopped, or killed, between the marker and the slot; the marker before its timer; a marker
// for another slot cancels nothing.
func TestServiceCancels(t *testing.T) {
	for _, v := range []string{"running", "restart", "kill", "marker first", "other slot"} {
		t.Run(v, func(t *testing.T) {
			e := openTenv(t)
			s := e.service()
			s.Start()
			s.StartDelivery()
			due := time.Now().UnixMilli() + 1500
			if v == "marker first" {
				e.sendAt("marker", "um", DeleteKey("T", "ua"), due)
			}
			e.sendAt("a", "ua", "", due)
			e.sendAt("b", "ub", "", due)
			switch v {
			case "other slot":
				e.sendAt("marker", "um", DeleteKey("T", "ua"), due+500)
			case "marker first":
			default:
				e.sendAt("marker", "um", DeleteKey("T", "ua"), due)
			}
			require.Eventually(t, func() bool { return s.Stats().Enqueue == 3 }, 10*time.Second, 5*time.Millisecond)
			switch v {
			case "restart":
				require.NoError(t, s.Stop())
				s = e.service()
				s.Start()
				s.StartDelivery()
			case "kill":
				s.halt()
				s = e.service()
				s.Start()
				s.StartDelivery()
			}
			require.Eventually(t, func() bool { return s.Stats().Cursor > due+600 }, 10*time.Second, 10*time.Millisecond)
			st := s.Stats()
			require.NoError(t, s.Stop())
			e.rec.mu.Lock()
			defer e.rec.mu.Unlock()
			require.Len(t, e.rec.got["b"], 1)
			require.NotContains(t, e.rec.got, "marker", "a marker is never delivered")
			if v == "other slot" {
				require.Len(t, e.rec.got["a"], 1, "a marker cancels only in its own slot")
				require.Zero(t, st.Cancelled)
				return
			}
			require.NotContains(t, e.rec.got, "a", "cancelled")
			if v == "running" {
				require.Equal(t, int64(1), st.Cancelled)
				require.Equal(t, int64(1), st.Markers)
				require.Zero(t, st.Pending)
			}
		})
	}
}

// TestServiceCancelsWithABacklog: timers already due and their markers, stored before the
// service starts (the index far behind, as after a restart or a promotion): a slot is only
// delivered once its markers are indexed, so every named timer is cancelled.
func TestServiceCancelsWithABacklog(t *testing.T) {
	_, st := deliverBacklog(t, 20, 100, 10, true)
	require.Equal(t, int64(200), st.Cancelled)
	require.Equal(t, int64(1800), st.Delivered)
	require.Equal(t, int64(200), st.Markers)
}

// TestServiceWaitsForTheDispatcher: the same backlog while the dispatcher is still putting it
// into the timer queue (a restart, a promotion: the queues are rebuilt from the log). The end
// of the short queue is not the end of the timer records: nothing is delivered until the
// dispatcher has reached the log's end as of delivery's start, and every named timer is
// cancelled.
func TestServiceWaitsForTheDispatcher(t *testing.T) {
	var lag *laggingStore
	_, st := deliverBacklogOver(t, 20, 100, 10, true, func(s *commitlog.Store) Store {
		lag = &laggingStore{Store: s, visible: 64}
		time.AfterFunc(500*time.Millisecond, func() { lag.release.Store(true) })
		return lag
	})
	require.True(t, lag.release.Load())
	require.Equal(t, int64(200), st.Cancelled)
	require.Equal(t, int64(1800), st.Delivered)
}

// laggingStore shows the first visible entries of the timer queue, and a dispatcher that has
// not reached the log's end, until release.
type laggingStore struct {
	*commitlog.Store
	visible int64
	release atomic.Bool
}

func (l *laggingStore) QueueMaxOffset(topic string, qid int32) int64 {
	n := l.Store.QueueMaxOffset(topic, qid)
	if !l.release.Load() && topic == Topic {
		n = min(n, l.visible)
	}
	return n
}

func (l *laggingStore) DispatchedOffset() int64 {
	if !l.release.Load() {
		return 0
	}
	return l.Store.DispatchedOffset()
}

func (l *laggingStore) GetMessages(topic string, qid int32, off int64, maxMsgs, maxBytes int, match func(int64) bool) commitlog.GetResult {
	if !l.release.Load() && topic == Topic {
		if off >= l.visible {
			return commitlog.GetResult{Status: commitlog.OffsetOverflowOne, NextBeginOffset: off, MaxOffset: l.visible}
		}
		maxMsgs = int(min(int64(maxMsgs), l.visible-off))
	}
	return l.Store.GetMessages(topic, qid, off, maxMsgs, maxBytes, match)
}

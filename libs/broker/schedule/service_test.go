package schedule

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
)

func mustLevels(t *testing.T, s string) Levels {
	t.Helper()
	l, err := ParseLevels(s)
	require.NoError(t, err)
	return l
}

func TestDeliveryTimingAndContent(t *testing.T) {
	levels := mustLevels(t, testLevels)
	e := openEnv(t, t.TempDir(), levels, &recorder{})
	defer e.close()
	svc := e.newService(testConfig(), nil)
	v0 := e.tables.Delay.DataVersion()
	require.NoError(t, svc.Start())

	var all []sent
	for i := 0; i < 45; i++ {
		lvl := i%3 + 1
		all = append(all, e.send("RealTopic", int32(i%4), lvl, fmt.Sprintf("k%d", i)))
		time.Sleep(time.Duration(i%5) * 7 * time.Millisecond) // spread store times
	}
	waitDeliveries(t, e.rec, len(all))

	byKey := map[string]delivery{}
	for _, d := range e.rec.deliveries() {
		_, dup := byKey[d.key]
		require.False(t, dup, "duplicate delivery of %s", d.key)
		byKey[d.key] = d
	}
	slack := map[int][]time.Duration{}
	var every []time.Duration
	for _, s := range all {
		d, ok := byKey[s.key]
		require.True(t, ok, s.key)
		due := s.storeTs + levels[s.level-1].Milliseconds()
		// No earlier than the level: the delivered copy's store time and the
		// moment Put returned are both at or after the due time.
		require.GreaterOrEqual(t, d.storeTs, due, "%s delivered early", s.key)
		late := d.at.Sub(time.UnixMilli(due))
		require.GreaterOrEqual(t, late, time.Duration(0))
		// Generous: a missed wake-up would show as IdleRecheck (1 min).
		require.Less(t, late, 20*time.Second, "%s", s.key)
		slack[s.level] = append(slack[s.level], late)
		every = append(every, late)

		m := d.msg
		require.Equal(t, s.topic, m.Topic)
		require.Equal(t, s.qid, m.QueueID)
		require.Equal(t, s.body, string(m.Body))
		require.Equal(t, int32(7), m.Flag)
		require.Equal(t, int32(2), m.ReconsumeTimes)
		require.Equal(t, bornHost, m.BornHost)
		p := commitlog.ParseProperties(m.Properties)
		require.NotContains(t, p, PropertyDelay)
		require.Equal(t, s.topic, p[PropertyRealTopic])
		require.Equal(t, strconv.Itoa(int(s.qid)), p[PropertyRealQID])
		for k, v := range s.props {
			require.Equal(t, v, p[k], k)
		}
	}
	for lvl := 1; lvl <= 3; lvl++ {
		t.Logf("level %d (%s) slack after due time: %s", lvl, levels[lvl-1], percentiles(slack[lvl]))
	}
	t.Logf("all levels slack: %s", percentiles(every))
	// The delivered copies are in the real topic queues.
	require.NoError(t, e.store.WaitDispatched(e.store.MaxOffset(), time.Now().Add(30*time.Second)))
	var n int64
	for q := int32(0); q < 4; q++ {
		n += e.store.QueueMaxOffset("RealTopic", q)
	}
	require.Equal(t, int64(len(all)), n)
	require.Greater(t, e.tables.Delay.DataVersion().Counter, v0.Counter, "delay progress moves the table's DataVersion")
	for _, st := range svc.Stats() {
		require.Equal(t, int64(15), st.Delivered)
		require.Equal(t, int64(15), st.Offset)
		off, ok := e.tables.Delay.Get(int32(st.Level))
		require.True(t, ok)
		require.Equal(t, int64(15), off)
	}
}

func TestOrderPerLevel(t *testing.T) {
	levels := mustLevels(t, testLevels)
	e := openEnv(t, t.TempDir(), levels, &recorder{})
	defer e.close()
	svc := e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	const perLevel = 150
	for i := 0; i < perLevel; i++ {
		e.send("OrderTopic", 0, 1, fmt.Sprintf("a-%04d", i))
		e.send("OrderTopic", 1, 2, fmt.Sprintf("b-%04d", i))
	}
	waitDeliveries(t, e.rec, 2*perLevel)
	next := map[int]int{}
	for _, d := range e.rec.deliveries() {
		want := fmt.Sprintf("%c-%04d", 'a'+d.level-1, next[d.level])
		require.Equal(t, want, d.key, "level %d out of order", d.level)
		next[d.level]++
	}
	require.Equal(t, perLevel, next[1])
	require.Equal(t, perLevel, next[2])
}

func TestRestartAfterStopDeliversPendingExactlyOnce(t *testing.T) {
	levels := mustLevels(t, testLevels)
	dir := t.TempDir()
	rec := &recorder{}
	e := openEnv(t, dir, levels, rec)
	svc := e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	var keys []string
	for i := 0; i < 60; i++ {
		keys = append(keys, e.send("RestartTopic", 0, i%3+1, fmt.Sprintf("r%d", i)).key)
	}
	// Stop in the middle: level 1 mostly delivered, level 3 not yet due.
	require.Eventually(t, func() bool { return rec.count() >= 10 }, 30*time.Second, time.Millisecond)
	require.NoError(t, svc.Stop())
	before := rec.count()
	require.Less(t, before, 60, "everything delivered before the stop; the test proves nothing")
	require.False(t, svc.Running())
	e.close()

	e2 := openEnv(t, dir, levels, rec)
	defer e2.close()
	persisted := e2.tables.Delay.All()
	t.Logf("delivered before stop: %d, persisted offsets %v", before, persisted)
	svc2 := e2.newService(testConfig(), nil)
	require.NoError(t, svc2.Start())
	waitDeliveries(t, rec, len(keys))
	// Give a would-be duplicate time to show up: every level's queue is drained.
	require.Eventually(t, func() bool {
		for q := int32(0); q < 3; q++ {
			if off, _ := e2.tables.Delay.Get(q + 1); off != e2.store.QueueMaxOffset(Topic, q) {
				return false
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond)
	counts := map[string]int{}
	for _, d := range rec.deliveries() {
		counts[d.key]++
	}
	for _, k := range keys {
		require.Equal(t, 1, counts[k], "key %s", k)
	}
	require.Len(t, counts, len(keys))
	require.NoError(t, e2.store.WaitDispatched(e2.store.MaxOffset(), time.Now().Add(30*time.Second)))
	require.Equal(t, int64(len(keys)), e2.store.QueueMaxOffset("RestartTopic", 0))
}

// persistSpy wraps the delay table and remembers when the last successful
// persist started.
type persistSpy struct {
	Offsets
	mu        sync.Mutex
	lastStart time.Time
	ok        int
}

func (p *persistSpy) Persist() error {
	start := time.Now()
	err := p.Offsets.Persist()
	if err == nil {
		p.mu.Lock()
		p.lastStart, p.ok = start, p.ok+1
		p.mu.Unlock()
	}
	return err
}

func TestCrashRedeliversAtMostOnePersistInterval(t *testing.T) {
	levels := mustLevels(t, testLevels)
	dir := t.TempDir()
	rec := &recorder{}
	e := openEnv(t, dir, levels, rec)
	cfg := testConfig()
	cfg.PersistInterval = 200 * time.Millisecond
	spy := &persistSpy{Offsets: e.tables.Delay}
	svc := e.newService(cfg, spy)
	require.NoError(t, svc.Start())

	// A steady stream on levels 1 and 2 so that deliveries are going on when
	// the process dies.
	const n = 240
	stopSend := time.Now().Add(10 * time.Second)
	for i := 0; i < n && time.Now().Before(stopSend); i++ {
		e.send("CrashTopic", 0, i%2+1, fmt.Sprintf("c%03d", i))
		time.Sleep(3 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return rec.count() >= n/2 }, 30*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { spy.mu.Lock(); defer spy.mu.Unlock(); return spy.ok >= 2 }, 30*time.Second, time.Millisecond)

	// Die late in a persist interval, the worst case for duplicates.
	require.Eventually(t, func() bool {
		spy.mu.Lock()
		defer spy.mu.Unlock()
		return time.Since(spy.lastStart) >= cfg.PersistInterval*3/4
	}, 30*time.Second, time.Millisecond)
	// kill -9: the loops and the persist ticker vanish, nothing more is
	// written; the disk holds what was written so far.
	killAt := time.Now()
	svc.halt()
	inMemory := e.tables.Delay.All()
	firstRun := rec.deliveries()
	spy.mu.Lock()
	lastPersist := spy.lastStart
	spy.mu.Unlock()
	crashDir := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashDir)
	e.svc.Store(nil)
	require.NoError(t, e.store.Close())

	e2 := openEnv(t, crashDir, levels, rec)
	defer e2.close()
	require.False(t, e2.store.Recovery().Clean, "the copy must look like a crash")
	persisted := e2.tables.Delay.All()
	svc2 := e2.newService(cfg, nil)
	require.NoError(t, svc2.Start())
	waitDeliveries(t, rec, n)
	require.Eventually(t, func() bool {
		for q := int32(0); q < 2; q++ {
			if off, _ := e2.tables.Delay.Get(q + 1); off != e2.store.QueueMaxOffset(Topic, q) {
				return false
			}
		}
		return true
	}, 30*time.Second, 5*time.Millisecond)

	all := rec.deliveries()
	counts := map[string]int{}
	for _, d := range all {
		counts[d.key]++
	}
	require.Len(t, counts, n, "every message delivered")
	for lvl := 1; lvl <= 2; lvl++ {
		dups := 0
		for k, c := range counts {
			if c > 1 && firstLevel(all, k) == lvl {
				require.Equal(t, 2, c, "key %s delivered %d times", k, c)
				dups++
			}
		}
		// Duplicates are exactly the progress not yet persisted.
		require.Equal(t, int(inMemory[int32(lvl)]-persisted[int32(lvl)]), dups, "level %d", lvl)
		// Bound: deliveries since the last persist started, plus one in flight.
		since, window := 0, 0
		for _, d := range firstRun {
			if d.level != lvl {
				continue
			}
			if !d.at.Before(lastPersist) {
				since++
			}
			if d.at.After(killAt.Add(-cfg.PersistInterval)) {
				window++
			}
		}
		require.LessOrEqual(t, dups, since+1, "level %d", lvl)
		t.Logf("level %d: duplicates after kill -9 = %d; deliveries since last persist start = %d (%.0f ms before the kill); deliveries in the last PersistInterval (%s) = %d; first run delivered %d",
			lvl, dups, since, float64(killAt.Sub(lastPersist))/float64(time.Millisecond), cfg.PersistInterval, window, inMemory[int32(lvl)])
	}
	// The real topic holds every message, duplicates included.
	require.NoError(t, e2.store.WaitDispatched(e2.store.MaxOffset(), time.Now().Add(30*time.Second)))
	require.Equal(t, int64(len(all)), e2.store.QueueMaxOffset("CrashTopic", 0))
}

func firstLevel(ds []delivery, key string) int {
	for _, d := range ds {
		if d.key == key {
			return d.level
		}
	}
	return 0
}

func TestPutFailuresAreRetriedWithoutLoss(t *testing.T) {
	levels := mustLevels(t, testLevels)
	rec := &recorder{}
	injected := errors.New("store busy")
	rec.fail = func(call int, m *commitlog.Message) error {
		if call%3 != 0 { // two failures out of three attempts
			return injected
		}
		return nil
	}
	e := openEnv(t, t.TempDir(), levels, rec)
	defer e.close()
	svc := e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	for i := 0; i < 40; i++ {
		e.send("RetryTopic", 0, i%2+1, fmt.Sprintf("p%03d", i))
	}
	waitDeliveries(t, rec, 40)
	next := map[int]int{}
	seen := map[string]bool{}
	for _, d := range rec.deliveries() {
		require.False(t, seen[d.key], "duplicate %s", d.key)
		seen[d.key] = true
		i, _ := strconv.Atoi(d.key[1:])
		require.Equal(t, d.level, i%2+1)
		require.Equal(t, next[d.level], i/2, "order of level %d", d.level)
		next[d.level]++
	}
	var retries int64
	for _, st := range svc.Stats() {
		retries += st.Retries
	}
	require.GreaterOrEqual(t, retries, int64(80))
}

func TestStopDuringRetryKeepsTheMessage(t *testing.T) {
	levels := mustLevels(t, testLevels)
	dir := t.TempDir()
	rec := &recorder{}
	var mu sync.Mutex
	failing := true
	rec.fail = func(int, *commitlog.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errors.New("down")
		}
		return nil
	}
	e := openEnv(t, dir, levels, rec)
	svc := e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	e.send("T", 0, 1, "only")
	require.Eventually(t, func() bool { return svc.Stats()[0].Retries >= 3 }, 30*time.Second, time.Millisecond)
	require.NoError(t, svc.Stop())
	off, _ := e.tables.Delay.Get(1)
	require.Equal(t, int64(0), off, "offset must not pass an undelivered message")
	mu.Lock()
	failing = false
	mu.Unlock()
	require.NoError(t, svc.Start())
	waitDeliveries(t, rec, 1)
	require.NoError(t, svc.Stop())
	e.close()
}

func TestRemovedLevelStaysUntilConfiguredAgain(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	three := mustLevels(t, testLevels)
	e := openEnv(t, dir, three, rec)
	e.send("T", 0, 3, "lvl3")
	e.send("T", 0, 1, "lvl1")
	e.close()

	two := mustLevels(t, "100ms 300ms")
	e2 := openEnv(t, dir, two, rec)
	svc := e2.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	waitDeliveries(t, rec, 1)
	require.NoError(t, svc.Stop())
	require.Equal(t, "lvl1", rec.deliveries()[0].key)
	_, found := e2.tables.Delay.Get(3)
	require.False(t, found)
	e2.close()

	e3 := openEnv(t, dir, three, rec)
	defer e3.close()
	svc3 := e3.newService(testConfig(), nil)
	require.NoError(t, svc3.Start())
	waitDeliveries(t, rec, 2)
	require.Equal(t, "lvl3", rec.deliveries()[1].key)
}

func TestNewValidates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PersistInterval = 0
	_, err := New(cfg, nil, nil, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "PersistInterval")
	require.NoError(t, DefaultConfig().Validate())
}

func TestStoreWithoutHookStillWaits(t *testing.T) {
	levels := mustLevels(t, testLevels)
	e := openEnvWith(t, t.TempDir(), levels, &recorder{}, nil)
	defer e.close()
	svc := e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	var all []sent
	for i := 0; i < 6; i++ {
		all = append(all, e.send("NoHook", 0, i%3+1, fmt.Sprintf("h%d", i)))
	}
	waitDeliveries(t, e.rec, len(all))
	got := map[string]delivery{}
	for _, d := range e.rec.deliveries() {
		got[d.key] = d
	}
	for _, s := range all {
		require.GreaterOrEqual(t, got[s.key].storeTs, s.storeTs+levels[s.level-1].Milliseconds(), s.key)
	}
}

// skewStore makes every batched read report one extra tags code first, as if
// a unit had been considered and then skipped, so the service must fall back
// to single reads.
type skewStore struct {
	*commitlog.Store
	batched, single int
	mu              sync.Mutex
}

func (s *skewStore) GetMessages(topic string, q int32, off int64, maxMsgs, maxBytes int, match func(int64) bool) commitlog.GetResult {
	s.mu.Lock()
	if maxMsgs > 1 {
		s.batched++
	} else {
		s.single++
	}
	s.mu.Unlock()
	if maxMsgs > 1 && match != nil {
		match(1)
	}
	return s.Store.GetMessages(topic, q, off, maxMsgs, maxBytes, match)
}

func TestTagsCodesThatDoNotPairUpFallBackToSingleReads(t *testing.T) {
	levels := mustLevels(t, testLevels)
	e := openEnv(t, t.TempDir(), levels, &recorder{})
	defer e.close()
	skew := &skewStore{Store: e.store}
	svc, err := New(func() Config { c := testConfig(); c.Levels = levels; return c }(), skew, e.tables.Delay, e.rec)
	require.NoError(t, err)
	e.svc.Store(svc)
	var all []sent
	for i := 0; i < 20; i++ {
		all = append(all, e.send("Skew", 0, 1, fmt.Sprintf("s%02d", i)))
	}
	require.NoError(t, e.store.WaitDispatched(e.store.MaxOffset(), time.Now().Add(30*time.Second)))
	require.NoError(t, svc.Start())
	waitDeliveries(t, e.rec, len(all))
	for i, d := range e.rec.deliveries() {
		require.Equal(t, all[i].key, d.key)
		require.GreaterOrEqual(t, d.storeTs, all[i].storeTs+100)
	}
	skew.mu.Lock()
	defer skew.mu.Unlock()
	require.Positive(t, skew.single)
}

// lagStore pretends the dispatcher is behind the CommitLog while lag is set.
type lagStore struct {
	*commitlog.Store
	lag atomic.Bool
}

func (s *lagStore) MaxOffset() int64 {
	if s.lag.Load() {
		return s.Store.DispatchedOffset() + 1
	}
	return s.Store.MaxOffset()
}

func TestOffsetBeyondQueueWaitsForDispatchBeforeMovingBack(t *testing.T) {
	levels := mustLevels(t, testLevels)
	e := openEnv(t, t.TempDir(), levels, &recorder{})
	defer e.close()
	// Progress copied from an old master: level 1 delivered 3 entries,
	// level 2 none yet; this store's schedule queues are not built yet.
	e.tables.Delay.Update(1, 3)
	for i := 0; i < 2; i++ {
		e.send("Lag", 0, 2, fmt.Sprintf("l%d", i))
	}
	require.NoError(t, e.store.WaitDispatched(e.store.MaxOffset(), time.Now().Add(30*time.Second)))
	ls := &lagStore{Store: e.store}
	ls.lag.Store(true)
	cfg := testConfig()
	cfg.Levels = levels
	svc, err := New(cfg, ls, e.tables.Delay, e.rec)
	require.NoError(t, err)
	e.svc.Store(svc)
	require.NoError(t, svc.Start())
	require.Never(t, func() bool { off, _ := e.tables.Delay.Get(1); return off != 3 }, 300*time.Millisecond, 10*time.Millisecond,
		"offset moved while the consume queues were still being built")
	waitDeliveries(t, e.rec, 2) // level 2 is unaffected
	ls.lag.Store(false)
	require.Eventually(t, func() bool { off, _ := e.tables.Delay.Get(1); return off == 0 }, 30*time.Second, 5*time.Millisecond)
	e.send("Lag", 0, 1, "after")
	waitDeliveries(t, e.rec, 3)
	require.Equal(t, "after", e.rec.deliveries()[2].key)
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestInjectedClockDecidesWhenDue(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_800_000_000_000)}
	levels := mustLevels(t, "1h 2h")
	dir := t.TempDir()
	rec := &recorder{}
	cfg := commitlog.DefaultConfig()
	cfg.Dir = dir
	cfg.SegmentSize = 256 << 10
	cfg.CQUnitsPerFile = 1000
	cfg.TagsCode = TagsCode(levels)
	cfg.Logger = quietLogger()
	cfg.Now = clock.Now
	st, err := commitlog.Open(cfg)
	require.NoError(t, err)
	defer st.Close()
	rec.setStore(st)
	mcfg := meta.DefaultConfig()
	mcfg.Logger = quietLogger()
	tables, err := meta.Open(mcfg)
	require.NoError(t, err)
	scfg := testConfig()
	scfg.Levels = levels
	scfg.Now = clock.Now
	svc, err := New(scfg, st, tables.Delay, rec)
	require.NoError(t, err)
	st.OnDispatch(svc.OnDispatch)
	require.NoError(t, svc.Start())
	defer svc.Stop()

	e := &env{t: t, levels: levels, store: st, tables: tables, rec: rec}
	e.send("Clocked", 0, 1, "one")
	require.Eventually(t, func() bool { return svc.Stats()[0].NextDue != 0 }, 30*time.Second, time.Millisecond)
	require.Equal(t, clock.Now().Add(time.Hour).UnixMilli(), svc.Stats()[0].NextDue)
	clock.Advance(59 * time.Minute)
	svc.Notify(1)
	require.Never(t, func() bool { return rec.count() > 0 }, 100*time.Millisecond, 5*time.Millisecond)
	clock.Advance(time.Minute)
	svc.Notify(1)
	waitDeliveries(t, rec, 1)
	require.Equal(t, clock.Now().UnixMilli(), rec.deliveries()[0].storeTs)
}

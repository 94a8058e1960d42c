package brokerstats

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newManager(t *testing.T, mut func(*Config)) *Manager {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ClusterName = "C"
	cfg.Location = time.UTC
	cfg.IsSystemTopic = func(topic string) bool { return strings.HasPrefix(topic, "SYS_") }
	if mut != nil {
		mut(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// tickUntil ticks every second from from (exclusive) to to (inclusive), as the driver does.
func tickUntil(m *Manager, from, to time.Time) {
	for at := from.Add(time.Second); !at.After(to); at = at.Add(time.Second) {
		m.Tick(at)
	}
}

func TestMinuteWindow(t *testing.T) {
	m := newManager(t, nil)
	m.Tick(t0)
	// 100 messages of 10 bytes in 50 requests before the first sample of the item.
	for i := 0; i < 50; i++ {
		m.Put("T", 2, 20)
	}
	_, ok := m.Lookup(TopicPutNums, "T")
	require.True(t, ok, "the item exists once counted")
	it, _ := m.Lookup(TopicPutNums, "T")
	assert.Equal(t, Snapshot{}, it.Minute(), "not sampled yet")
	tickUntil(m, t0, t0.Add(10*time.Second))
	// First sample: a zero sample 10 s earlier, so 100 messages over 10 s.
	assert.Equal(t, Snapshot{Sum: 100, Tps: 10, Avgpt: 2, Times: 50}, it.Minute())
	size, _ := m.Lookup(TopicPutSize, "T")
	assert.Equal(t, Snapshot{Sum: 1000, Tps: 100, Avgpt: 20, Times: 50}, size.Minute())

	// 60 more messages spread over the next minute: the window slides over 7 samples (60 s).
	for s := 1; s <= 6; s++ {
		m.Put("T", 10, 100)
		m.Tick(t0.Add(time.Duration(10+10*s) * time.Second))
	}
	assert.Equal(t, Snapshot{Sum: 60, Tps: 1, Avgpt: 10, Times: 6}, it.Minute())
	// Quiet for a minute: the window empties.
	tickUntil(m, t0.Add(70*time.Second), t0.Add(130*time.Second))
	assert.Equal(t, Snapshot{Sum: 0, Tps: 0, Avgpt: 0, Times: 0}, it.Minute())
	assert.Equal(t, int64(160), it.Value())
}

func TestHourAndDayWindows(t *testing.T) {
	m := newManager(t, nil)
	m.Tick(t0)
	m.Put("T", 600, 6000)
	m.Get("T", "G", 300, 3000)
	// The hour ring samples 10 min after start (its first sample of the item), the day ring
	// an hour after.
	tickUntil(m, t0, t0.Add(10*time.Minute))
	it, _ := m.Lookup(TopicPutNums, "T")
	assert.Equal(t, Snapshot{Sum: 600, Tps: 1, Avgpt: 600, Times: 1}, it.Hour())
	assert.Equal(t, Snapshot{}, it.Day())
	tickUntil(m, t0.Add(10*time.Minute), t0.Add(time.Hour))
	day := it.Day()
	assert.Equal(t, int64(600), day.Sum)
	assert.InDelta(t, 600.0/3600, day.Tps, 1e-9)
	g, ok := m.Lookup(GroupGetNums, "T@G")
	require.True(t, ok)
	assert.Equal(t, int64(300), g.Hour().Sum)
	_, ok = m.Lookup(GroupGetNums, "T@other")
	assert.False(t, ok)
	_, ok = m.Lookup(GroupGetNums, "TG")
	assert.False(t, ok, "a key without @")
	_, ok = m.Lookup("NO_SUCH_NAME", "T")
	assert.False(t, ok)
}

func TestGroupTpsBrokerTotalsAndMornings(t *testing.T) {
	m := newManager(t, nil)
	_, ok := m.Lookup(BrokerPutNums, "C")
	assert.False(t, ok, "no broker item before a put, as in RocketMQ")
	m.Tick(t0)
	m.Put("T", 5, 50)
	m.Put("SYS_X", 7, 70)
	m.Get("T", "G", 4, 40)
	m.Get("SYS_X", "G", 1, 10)
	m.Miss()
	m.SendBack("T", "G")
	tickUntil(m, t0, t0.Add(10*time.Second))
	assert.InDelta(t, 0.4, m.GroupGetTps("T", "G"), 1e-9)
	assert.Zero(t, m.GroupGetTps("T", "nobody"))
	bp, ok := m.Lookup(BrokerPutNums, "C")
	require.True(t, ok)
	assert.Equal(t, int64(12), bp.Minute().Sum, "every topic")
	assert.Zero(t, bp.Minute().Avgpt, "the broker items count no requests")
	_, ok = m.Lookup(BrokerPutNums, "other-cluster")
	assert.False(t, ok)
	sb, ok := m.Lookup(SndbckPutNums, "T@G")
	require.True(t, ok)
	assert.Equal(t, int64(1), sb.Minute().Sum)
	put, get := m.Totals()
	assert.Equal(t, [2]int64{5, 4}, [2]int64{put, get}, "without system topics")

	// Rates over 10 s: 12 puts, 2 found, 1 miss, 5 transferred in the first 10 s.
	r := m.Rates()
	assert.Equal(t, Rates{PutTps: "1.2  ", GetFoundTps: "0.2  ", GetMissTps: "0.1  ", GetTotalTps: "0.30000000000000004  ", GetTransferredTps: "0.5  "}, r)

	// Midnight: today's morning totals are the totals then; a day later they move to yesterday.
	midnight := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	m.Tick(midnight)
	assert.Equal(t, Mornings{PutToday: 5, GetToday: 4}, m.Mornings())
	m.Put("T", 1, 1)
	m.Tick(midnight.Add(24 * time.Hour))
	assert.Equal(t, Mornings{PutYesterday: 5, PutToday: 6, GetYesterday: 4, GetToday: 4}, m.Mornings())
}

func TestRatesSpans(t *testing.T) {
	m := newManager(t, nil)
	m.Tick(t0)
	for s := 1; s <= 600; s++ {
		m.Put("T", 2, 2)
		m.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	assert.Equal(t, "2.0 2.0 2.0", m.Rates().PutTps)
	assert.Equal(t, "0.0 0.0 0.0", m.Rates().GetMissTps)
}

func TestBoundAndDeletes(t *testing.T) {
	m := newManager(t, func(c *Config) { c.MaxKeys = 2 })
	m.Tick(t0)
	m.Put("A", 1, 1)
	m.Put("B", 1, 1)
	m.Put("C", 1, 1) // past the bound: only the broker totals
	m.Put("A", 1, 1)
	topics, _, _, refused := m.Keys()
	assert.Equal(t, 2, topics)
	assert.Equal(t, int64(1), refused)
	_, ok := m.Lookup(TopicPutNums, "C")
	assert.False(t, ok)
	put, _ := m.Totals()
	assert.Equal(t, int64(4), put)
	a, _ := m.Lookup(TopicPutNums, "A")
	assert.Equal(t, int64(2), a.Value())

	m.Get("A", "G", 1, 1)
	m.Get("B", "G", 1, 1)
	m.SendBack("A", "G")
	m.OnTopicDeleted("A")
	_, ok = m.Lookup(TopicPutNums, "A")
	assert.False(t, ok)
	_, ok = m.Lookup(GroupGetNums, "A@G")
	assert.False(t, ok)
	_, ok = m.Lookup(GroupGetNums, "B@G")
	assert.True(t, ok)
	m.OnGroupDeleted("G")
	_, ok = m.Lookup(GroupGetNums, "B@G")
	assert.False(t, ok)
	_, ok = m.Lookup(SndbckPutNums, "A@G")
	assert.False(t, ok)
	m.Put("C", 1, 1)
	_, ok = m.Lookup(TopicPutNums, "C")
	assert.True(t, ok, "room again after the delete")
}

func TestIdleKeysDropped(t *testing.T) {
	m := newManager(t, func(c *Config) { c.MaxIdle = time.Minute })
	m.Tick(t0)
	m.Put("Idle", 1, 1)
	m.Put("Busy", 1, 1)
	for s := 10; s <= 120; s += 10 {
		m.Put("Busy", 1, 1)
		m.Tick(t0.Add(time.Duration(s) * time.Second))
	}
	_, ok := m.Lookup(TopicPutNums, "Idle")
	assert.False(t, ok, "unchanged for over MaxIdle")
	_, ok = m.Lookup(TopicPutNums, "Busy")
	assert.True(t, ok)
}

func TestTickBehindScheduleAndConfig(t *testing.T) {
	m := newManager(t, nil)
	m.Tick(t0)
	m.Put("T", 10, 10)
	// A process paused for an hour: one sample, then the schedule restarts from now.
	m.Tick(t0.Add(time.Hour))
	it, _ := m.Lookup(TopicPutNums, "T")
	assert.Equal(t, int64(10), it.Minute().Sum)
	m.Tick(t0.Add(time.Hour + time.Second))
	assert.Equal(t, int64(10), it.Minute().Sum, "not due again a second later")

	for _, bad := range []Config{{}, {ClusterName: "C", MaxKeys: -1}, {ClusterName: "C", MaxIdle: -time.Second}} {
		_, err := New(bad)
		assert.ErrorIs(t, err, ErrInvalidConfig, "%+v", bad)
	}
}

func TestPutAllocatesNothing(t *testing.T) {
	m := newManager(t, nil)
	m.Put("T", 1, 1)
	m.Get("T", "G", 1, 1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		m.Put("T", 1, 100)
		m.Get("T", "G", 1, 100)
	}))
}

// BenchmarkPut is the per-request cost of counting a send into a known topic among 1000, from
// parallel callers (the broker-level ratio is BenchmarkSendStats in libs/broker).
func BenchmarkPut(b *testing.B) {
	cfg := DefaultConfig()
	cfg.ClusterName = "C"
	m, _ := New(cfg)
	for i := 0; i < 1000; i++ {
		m.Put("topic-"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), 1, 1)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Put("topic-xa", 1, 1024)
		}
	})
}

// Counting, sampling, lookups and deletes at once: every put is in the totals (run with -race).
func TestConcurrentCountAndSample(t *testing.T) {
	m := newManager(t, func(c *Config) { c.MaxKeys = 50 })
	m.Tick(t0)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				topic := "T" + strconv.Itoa(i%80)
				m.Put(topic, 1, 10)
				m.Get(topic, "G"+strconv.Itoa(g), 1, 10)
				if i%500 == 0 {
					m.OnTopicDeleted("T1")
				}
			}
		}(g)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := 1; s <= 200; s++ {
			m.Tick(t0.Add(time.Duration(s) * time.Second))
			if it, ok := m.Lookup(TopicPutNums, "T2"); ok {
				_ = it.Minute()
			}
			_ = m.Rates()
		}
	}()
	wg.Wait()
	<-done
	put, get := m.Totals()
	assert.Equal(t, int64(8000), put)
	assert.Equal(t, int64(8000), get)
	topics, _, _, refused := m.Keys()
	assert.LessOrEqual(t, topics, 50)
	assert.Positive(t, refused)
}

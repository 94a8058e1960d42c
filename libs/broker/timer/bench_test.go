package timer

import (
	"bufio"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// vmRSS is the process's resident set size in bytes (Linux), 0 when unknown.
func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func heapInuse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestMemoryMillionPending indexes 1,000,000 pending timers spread over three days and reports
// RSS and Go heap against the same process before the timers were enqueued (the store open,
// the service started). Behind RMQHA_TIMER_RSS=1: it writes about 250 MB.
func TestMemoryMillionPending(t *testing.T) {
	env := os.Getenv("RMQHA_TIMER_RSS")
	if env == "" {
		t.Skip("set RMQHA_TIMER_RSS=1 to index a million timers and measure memory (or =N for N timers)")
	}
	n := 1_000_000
	if v, err := strconv.Atoi(env); err == nil && v > 1 {
		n = v
	}
	e := openTenv(t)
	cfg := DefaultConfig() // production slots and buckets: 1 s, 60 s
	cfg.Dir = e.dir + "/timer"
	cfg.Logger = quiet()
	s, err := New(cfg, e.store, e.rec)
	require.NoError(t, err)
	e.store.OnDispatch(s.OnDispatch)
	s.Start()
	s.StartDelivery()
	defer s.Stop()
	rss0, heap0 := vmRSS(), heapInuse()
	now := time.Now().UnixMilli()
	spread := int64(259_000_000) / int64(n) // over three days less a minute
	batch := make([]*commitlog.Message, 0, 1000)
	born := netip.MustParseAddrPort("127.0.0.1:5000")
	for i := range n {
		out := (now + 60_000 + int64(i)*spread) / 1000 * 1000 // +1 min .. +3 days
		props := map[string]string{PropertyOutMs: strconv.FormatInt(out, 10), PropertyRealTopic: "T", PropertyRealQID: "0", "KEYS": strconv.Itoa(i)}
		batch = append(batch, &commitlog.Message{Topic: Topic, Body: []byte("0123456789abcdef"), Properties: string(commitlog.AppendProperties(nil, props)), BornHost: born})
		if len(batch) == cap(batch) {
			_, err := e.store.AppendBatch(batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
	appended := time.Now()
	require.Eventually(t, func() bool { return s.Stats().Enqueue == int64(n) }, 10*time.Minute, 100*time.Millisecond)
	t.Logf("appended in %v, indexed %v later", appended.Sub(time.UnixMilli(now)), time.Since(appended))
	require.Eventually(t, func() bool { return s.Stats().Pending == int64(n) }, time.Minute, 100*time.Millisecond)
	rss1, heap1 := vmRSS(), heapInuse()
	st := s.Stats()
	t.Logf("%d pending timers: RSS %d MiB -> %d MiB (+%d MiB), Go heap in use %d MiB -> %d MiB (+%d MiB), %d timers in memory",
		n, rss0>>20, rss1>>20, (rss1-rss0)>>20, heap0>>20, heap1>>20, (heap1-heap0)>>20, st.InMemory)
}

// BenchmarkLateness delivers timers due over about two seconds and reports how late they
// fired after their due time (p50, p99 in ms), beside the lateness of Go's own time.AfterFunc
// for the same due times measured in the same run, and the ratio of the p99s.
func BenchmarkLateness(b *testing.B) {
	for range b.N {
		e := openTenv(b)
		s := e.service()
		s.Start()
		s.StartDelivery()
		const n = 400
		var mu sync.Mutex
		var base []int64
		var wg sync.WaitGroup
		for i := range n {
			d := time.Duration(200+(i*5)%2000) * time.Millisecond
			e.send("k"+strconv.Itoa(i), d)
			// The baseline: a Go timer for the end of the same slot.
			now := time.Now()
			due := time.UnixMilli((now.UnixMilli()+d.Milliseconds()-1)/100*100 + 100)
			wg.Add(1)
			time.AfterFunc(due.Sub(now), func() {
				mu.Lock()
				base = append(base, time.Since(due).Milliseconds())
				mu.Unlock()
				wg.Done()
			})
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if d, _ := e.rec.counts(); d == n {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		wg.Wait()
		_ = s.Stop()
		e.rec.mu.Lock()
		late := append([]int64(nil), e.rec.late...)
		e.rec.mu.Unlock()
		if len(late) < n {
			b.Fatalf("%d of %d delivered", len(late), n)
		}
		p := func(v []int64, q float64) float64 {
			sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
			return float64(v[min(len(v)-1, int(q*float64(len(v))))])
		}
		b.ReportMetric(p(late, 0.5), "p50_late_ms")
		b.ReportMetric(p(late, 0.99), "p99_late_ms")
		b.ReportMetric(p(base, 0.5), "afterfunc_p50_ms")
		b.ReportMetric(p(base, 0.99), "afterfunc_p99_ms")
		// +1 ms on both sides: both are often 0.
		b.ReportMetric((p(late, 0.99)+1)/(p(base, 0.99)+1), "p99_ratio_vs_afterfunc")
	}
}

// BenchmarkCancelOverhead delivers 2000 timers already due (20 slots of 100) and reports the
// time per timer with one timer in ten of every slot cancelled by a delete marker, beside the
// same 2000 timers without markers measured in the same run, and the ratio.
func BenchmarkCancelOverhead(b *testing.B) {
	const slots, perSlot, cancelPerSlot = 20, 100, 10
	run := func(markers bool) time.Duration {
		took, st := deliverBacklog(b, slots, perSlot, cancelPerSlot, markers)
		if markers {
			require.Equal(b, int64(slots*cancelPerSlot), st.Cancelled)
		}
		return took
	}
	for range b.N {
		plain := run(false)
		with := run(true)
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / (slots * perSlot) }
		b.ReportMetric(per(plain), "plain_us/timer")
		b.ReportMetric(per(with), "markers_us/timer")
		b.ReportMetric(float64(with)/float64(plain), "ratio_markers_vs_plain")
	}
}

// deliverBacklog appends slots*perSlot timers already due (a backlog the index has to catch
// up with, as after a restart or a promotion) and, with markers, cancelPerSlot delete markers
// per slot stored after its timers; it starts a service and returns how long it took to
// deliver or cancel them all, and its stats.
func deliverBacklog(tb testing.TB, slots, perSlot, cancelPerSlot int, markers bool) (time.Duration, Stats) {
	return deliverBacklogOver(tb, slots, perSlot, cancelPerSlot, markers, nil)
}

// deliverBacklogOver is deliverBacklog with the service reading the store through over(store)
// when over is not nil.
func deliverBacklogOver(tb testing.TB, slots, perSlot, cancelPerSlot int, markers bool, over func(*commitlog.Store) Store) (time.Duration, Stats) {
	e := openTenv(tb)
	born := netip.MustParseAddrPort("127.0.0.1:5000")
	base := (time.Now().UnixMilli() - 60_000) / 100 * 100
	var batch []*commitlog.Message
	for sl := range slots {
		out := strconv.FormatInt(base+int64(sl)*100, 10)
		for i := range perSlot {
			uniq := "u" + strconv.Itoa(sl) + "-" + strconv.Itoa(i)
			props := map[string]string{PropertyOutMs: out, PropertyRealTopic: "T", PropertyRealQID: "0", PropertyUniqKey: uniq, "KEYS": uniq}
			batch = append(batch, &commitlog.Message{Topic: Topic, Body: []byte(uniq), Properties: string(commitlog.AppendProperties(nil, props)), BornHost: born})
		}
		for i := range cancelPerSlot {
			if !markers {
				break
			}
			props := map[string]string{PropertyOutMs: out, PropertyRealTopic: "T", PropertyRealQID: "0",
				PropertyDelUniqKey: DeleteKey("T", "u"+strconv.Itoa(sl)+"-"+strconv.Itoa(i*perSlot/cancelPerSlot))}
			batch = append(batch, &commitlog.Message{Topic: Topic, Body: []byte("0"), Properties: string(commitlog.AppendProperties(nil, props)), BornHost: born})
		}
	}
	// Stored two minutes ago, before every slot, as markers must be (one for a time already
	// passed is refused): the index is what is behind, not the markers.
	e.lag.Store(int64(2 * time.Minute))
	_, err := e.store.AppendBatch(batch)
	e.lag.Store(0)
	require.NoError(tb, err)
	var s *Service
	if over != nil {
		s = e.serviceOver(over(e.store))
	} else {
		s = e.service()
	}
	t0 := time.Now()
	s.StartDelivery() // delivering from the first round: the index is behind
	s.Start()
	require.Eventually(tb, func() bool { st := s.Stats(); return st.Delivered+st.Cancelled == int64(slots*perSlot) }, time.Minute, time.Millisecond)
	took := time.Since(t0)
	st := s.Stats()
	require.NoError(tb, s.Stop())
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	for sl := range slots {
		for i := range perSlot {
			key := "u" + strconv.Itoa(sl) + "-" + strconv.Itoa(i)
			cancelled := markers && i%(perSlot/cancelPerSlot) == 0 && i/(perSlot/cancelPerSlot) < cancelPerSlot
			if cancelled {
				require.NotContains(tb, e.rec.got, key)
			} else {
				require.Len(tb, e.rec.got[key], 1, key)
			}
		}
	}
	return took, st
}

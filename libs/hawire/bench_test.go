package hawire_test

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

// catchUpBytes is how far behind the slave starts: 256 MiB held in memory
// twice (master and slave) stands in for the 1 GiB on-disk case.
const catchUpBytes = 256 << 20

// loopbackBandwidth measures one TCP stream over 127.0.0.1 in bytes/s.
func loopbackBandwidth(b *testing.B, total int) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	start := time.Now()
	for sent := 0; sent < total; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	_ = c.Close()
	<-done
	return float64(total) / time.Since(start).Seconds()
}

// loopbackRTT measures the median round trip of a 16-byte ping over 127.0.0.1.
func loopbackRTT(b *testing.B, n int) time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 16)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetNoDelay(true)
	buf := make([]byte, 16)
	d := make([]time.Duration, n)
	for i := range d {
		t := time.Now()
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		d[i] = time.Since(t)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[n/2]
}

// fillFast appends mixed-size records (1–16 KiB) from a few templates.
func fillFast(b *testing.B, l *memlog.Log, total int64) {
	var tmpl [][]byte
	for i, sz := range hawiretest.Sizes(64, 1<<10, 16<<10, 11) {
		tmpl = append(tmpl, hawiretest.Record(sz, uint64(i)))
	}
	for i := 0; l.MaxOffset() < total; i++ {
		r := tmpl[i%len(tmpl)]
		binary.BigEndian.PutUint64(r[8:], uint64(i))
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCatchUp: a slave 256 MiB behind copies the master's log; the
// rate is reported against one raw loopback TCP stream measured in the same run.
func BenchmarkCatchUp(b *testing.B) {
	ml := memlog.New(64 << 20)
	fillFast(b, ml, catchUpBytes)
	cfg := hawiretest.MasterConfig("")
	if v := os.Getenv("HAWIRE_BENCH_BATCH"); v != "" {
		cfg.TransferBatchSize, _ = strconv.Atoi(v)
	}
	m := hawiretest.StartMaster(b, cfg, ml)
	// The slave's memory is touched once before timing (see RecycleSegments):
	// first-touch page faults of fresh RAM are not replication cost.
	sl := memlog.New(64 << 20)
	sl.RecycleSegments(true)
	fillFast(b, sl, catchUpBytes)
	b.SetBytes(ml.MaxOffset())
	b.ResetTimer()
	var elapsed time.Duration
	var rawSum float64
	for i := 0; i < b.N; i++ {
		// The baseline is measured next to every copy: the machine is shared.
		b.StopTimer()
		rawSum += loopbackBandwidth(b, catchUpBytes)
		b.StartTimer()
		if err := sl.Reset(0); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		s, err := hawire.NewSlave(hawiretest.SlaveConfig(""), sl, hawire.StaticDiscovery(m.Addr().String()))
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Start()
		for sl.MaxOffset() < ml.MaxOffset() {
			time.Sleep(time.Millisecond)
		}
		elapsed += time.Since(start)
		_ = s.Close()
	}
	b.StopTimer()
	rate := float64(ml.MaxOffset()) * float64(b.N) / elapsed.Seconds()
	raw := rawSum / float64(b.N)
	b.ReportMetric(rate/(1<<20), "catchup-MiB/s")
	b.ReportMetric(raw/(1<<20), "loopback-MiB/s")
	b.ReportMetric(rate/raw, "ratio-to-loopback")
}

type syncRig struct {
	ml *memlog.Log
	m  *hawire.Master
	mu sync.Mutex // one appender at a time, like the store's append lock
}

func newSyncRig(b *testing.B) *syncRig {
	ml := memlog.New(64 << 20)
	m := hawiretest.StartMaster(b, hawiretest.MasterConfig(""), ml)
	sl := memlog.New(64 << 20)
	hawiretest.StartSlave(b, hawiretest.SlaveConfig(""), sl, m.Addr().String())
	hawiretest.Eventually(b, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "slave in sync")
	return &syncRig{ml: ml, m: m}
}

// send appends one record and, when sync, waits for its replication.
func (r *syncRig) send(b *testing.B, rec []byte, sync bool) time.Duration {
	t := time.Now()
	r.mu.Lock()
	off, err := r.ml.Append(rec)
	r.mu.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	if sync {
		if st := <-r.m.WaitReplicated(off+int64(len(rec)), t.Add(2*time.Second)); st != hawire.ReplOK {
			b.Fatalf("sync send: %v", st)
		}
	}
	return time.Since(t)
}

// BenchmarkWaitReplicatedLatency: one sender, 1 KiB records, SYNC wait
// latency as a multiple of the loopback round trip measured in the same run.
func BenchmarkWaitReplicatedLatency(b *testing.B) {
	r := newSyncRig(b)
	rtt := loopbackRTT(b, 2000)
	rec := hawiretest.Record(1024, 1)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lat = append(lat, r.send(b, rec, true))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(rtt.Microseconds()), "rtt-µs")
	b.ReportMetric(float64(p50)/float64(rtt), "p50/rtt")
}

// BenchmarkSyncVsAsync: 1 KiB sends from 1, 16 and 64 concurrent senders;
// SYNC (wait for the slave) throughput as a ratio of ASYNC (append only)
// measured in the same run, plus p99 latencies.
func BenchmarkSyncVsAsync(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		b.Run(itoa(conc), func(b *testing.B) {
			r := newSyncRig(b)
			rec := hawiretest.Record(1024, 2)
			run := func(wait bool, n int) (float64, time.Duration) {
				lat := make([]time.Duration, n)
				var wg sync.WaitGroup
				per := n / conc
				start := time.Now()
				for g := 0; g < conc; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := g * per; i < (g+1)*per; i++ {
							lat[i] = r.send(b, rec, wait)
						}
					}()
				}
				wg.Wait()
				el := time.Since(start)
				lat = lat[:per*conc]
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				return float64(len(lat)) / el.Seconds(), lat[len(lat)*99/100]
			}
			n := max(b.N, conc*4)
			b.ResetTimer()
			asyncRate, asyncP99 := run(false, n)
			syncRate, syncP99 := run(true, n)
			b.StopTimer()
			b.ReportMetric(syncRate, "sync-sends/s")
			b.ReportMetric(asyncRate, "async-sends/s")
			b.ReportMetric(syncRate/asyncRate, "sync/async")
			b.ReportMetric(float64(syncP99.Microseconds()), "sync-p99-µs")
			b.ReportMetric(float64(asyncP99.Microseconds()), "async-p99-µs")
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

package broker

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// storeAppendRate measures single-goroutine commitlog appends of 1 KiB messages per second,
// the baseline the broker's send rates are compared with.
func storeAppendRate(b *testing.B) float64 {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.SegmentSize = 64 << 20
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	s, err := commitlog.Open(cfg)
	require.NoError(b, err)
	defer s.Close()
	body := make([]byte, 1024)
	const n = 20000
	start := time.Now()
	for i := 0; i < n; i++ {
		_, err := s.Append(&commitlog.Message{Topic: "Bench", Body: body, Properties: "TAGS\x01a\x02"})
		require.NoError(b, err)
	}
	return n / time.Since(start).Seconds()
}

// echoRate measures a bodyless-answer request with a 1 KiB body over one loopback connection
// with conc concurrent callers: the remoting round-trip ceiling the sends run under.
func echoRate(b *testing.B, conc int) float64 {
	m := startBroker(b, testConfig(b))
	m.srv.HandleFunc(9998, func(w remoting.ResponseWriter, req *remoting.Command) {
		_ = w.Write(remoting.NewResponse(req, remoting.Success, ""))
	})
	c := newTestClient(b)
	req := remoting.NewRequest(9998, sendExt("Bench", 0, "TAGS\x01a\x02"), make([]byte, 1024))
	const n = 10000
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= n {
				_, _ = c.Invoke(context.Background(), m.Addr(), req)
			}
		}()
	}
	wg.Wait()
	return n / time.Since(start).Seconds()
}

// BenchmarkSend: 1 KiB SEND_MESSAGE over loopback with 1 and 64 concurrent senders, ASYNC_MASTER
// and SYNC_MASTER (one in-process slave), reported as msgs/s and as a ratio to the store-level
// append rate measured in the same run.
func BenchmarkSend(b *testing.B) {
	base := storeAppendRate(b)
	echo := map[int]float64{1: echoRate(b, 1), 64: echoRate(b, 64)}
	b.Logf("same-run baselines: store append %.0f msgs/s, remoting echo %.0f msgs/s (1 caller), %.0f msgs/s (64 callers)", base, echo[1], echo[64])
	for _, mode := range []struct {
		name string
		sync bool
		conc int
	}{{"async-1", false, 1}, {"async-64", false, 64}, {"sync-1", true, 1}, {"sync-64", true, 64}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := testConfig(b)
			cfg.MappedFileSizeCommitLog = 64 << 20
			if mode.sync {
				cfg = syncMasterConfig(b)
				cfg.MappedFileSizeCommitLog = 64 << 20
			}
			m := startBroker(b, cfg)
			if mode.sync {
				scfg := slaveConfig(b, m.HAAddr())
				scfg.MappedFileSizeCommitLog = 64 << 20
				startBroker(b, scfg)
				require.Eventually(b, func() bool { return m.master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
			}
			c := newTestClient(b)
			body := make([]byte, 1024)
			ext := sendExt("Bench", 0, "TAGS\x01a\x02")
			req := remoting.NewRequest(remoting.SendMessage, ext, body)
			_, err := c.Invoke(context.Background(), m.Addr(), req) // create the topic
			require.NoError(b, err)
			var bad atomic.Int64
			b.SetParallelism((mode.conc + 1) / 2) // GOMAXPROCS=2 on the test machine
			if mode.conc == 1 {
				b.SetParallelism(1)
			}
			b.SetBytes(1024)
			b.ResetTimer()
			start := time.Now()
			run := func() {
				resp, err := c.Invoke(context.Background(), m.Addr(), req)
				if err != nil || resp.Code != remoting.Success {
					bad.Add(1)
				}
			}
			if mode.conc == 1 {
				for i := 0; i < b.N; i++ {
					run()
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						run()
					}
				})
			}
			rate := float64(b.N) / time.Since(start).Seconds()
			b.StopTimer()
			require.Zero(b, bad.Load(), "failed sends")
			b.ReportMetric(rate, "msgs/s")
			b.ReportMetric(rate/base, "ratio_to_store")
			b.ReportMetric(rate/echo[mode.conc], "ratio_to_echo")
		})
	}
}

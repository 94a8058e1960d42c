package broker

import (
	"context"
	"encoding/binary"
	"net/netip"
	"strconv"
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
				require.Eventually(b, func() bool { return m.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
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

// BenchmarkPull: PULL_MESSAGE of 32 x 1 KiB messages over loopback from a master and from
// its slave, as msgs/s and as a ratio to the store's own GetMessages rate on the same data,
// measured in the same run.
func BenchmarkPull(b *testing.B) {
	cfg := testConfig(b)
	cfg.MappedFileSizeCommitLog = 64 << 20
	m := startBroker(b, cfg)
	scfg := slaveConfig(b, m.HAAddr())
	scfg.MappedFileSizeCommitLog = 64 << 20
	s := startBroker(b, scfg)
	c := newTestClient(b)
	resp := invoke(b, c, m.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "PB", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	require.Equal(b, remoting.Success, resp.Code)
	body := make([]byte, 1024)
	const n = 20000
	msgs := make([]*commitlog.Message, 0, 64)
	for i := 0; i < n; i += 64 {
		msgs = msgs[:0]
		for j := 0; j < 64; j++ {
			msgs = append(msgs, &commitlog.Message{Topic: "PB", Body: body, Properties: "TAGS\x01a\x02"})
		}
		_, err := m.store.AppendBatch(msgs)
		require.NoError(b, err)
	}
	total := int64(n + (64-n%64)%64)
	require.Eventually(b, func() bool {
		return m.store.QueueMaxOffset("PB", 0) == total && s.store.QueueMaxOffset("PB", 0) == total
	}, 30*time.Second, 5*time.Millisecond)
	base := 0.0
	for pass := 0; pass < 3; pass++ { // best of three passes over warm data
		start := time.Now()
		read := int64(0)
		for off := int64(0); off < total; {
			g := m.store.GetMessages("PB", 0, off, 32, maxPullBytes, nil)
			read += int64(len(g.Records))
			off = g.NextBeginOffset
		}
		base = max(base, float64(read)/time.Since(start).Seconds())
	}
	b.Logf("same-run baseline: store GetMessages %.0f msgs/s", base)
	for _, target := range []struct {
		name string
		br   *Broker
	}{{"master", m}, {"slave", s}} {
		b.Run(target.name, func(b *testing.B) {
			invoke(b, c, target.br.Addr(), remoting.HeartBeat, nil, heartbeatBody("bench@1", "pbg", map[string]string{"PB": "*"}))
			b.SetBytes(32 * 1024)
			b.ResetTimer()
			start := time.Now()
			got := 0
			off := int64(0)
			for i := 0; i < b.N; i++ {
				resp, err := c.Invoke(context.Background(), target.br.Addr(), remoting.NewRequest(remoting.PullMessage, pullExt("pbg", "PB", 0, off, 0, 0), nil))
				require.NoError(b, err)
				require.Equal(b, remoting.Success, resp.Code, resp.Remark)
				got += countRecords(resp.Body)
				off, _ = strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
				if off >= total {
					off = 0
				}
			}
			rate := float64(got) / time.Since(start).Seconds()
			b.StopTimer()
			b.ReportMetric(rate, "msgs/s")
			b.ReportMetric(rate/base, "ratio_to_store")
		})
	}
}

func countRecords(body []byte) int {
	n := 0
	for len(body) >= 4 {
		size := int(binary.BigEndian.Uint32(body))
		if size <= 0 || size > len(body) {
			break
		}
		body = body[size:]
		n++
	}
	return n
}

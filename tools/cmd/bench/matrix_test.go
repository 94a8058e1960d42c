package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/stretchr/testify/require"
)

// storeRates are libs/commitlog's own numbers on this machine and disk, measured in the same
// run as the broker numbers they are the baseline of.
type storeRates struct {
	append1, append64 float64 // 1 KiB appends/s, ASYNC_FLUSH, 1 and 64 appenders
	scan              float64 // messages/s read back through GetMessages, 32 per call
}

func measureStore(t *testing.T, size int, d time.Duration) storeRates {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.SegmentSize = 64 << 20
	s, err := commitlog.Open(cfg)
	require.NoError(t, err)
	defer s.Close()
	body := make([]byte, size)
	appendFor := func(workers int) float64 {
		var n int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := time.Now().Add(d)
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				m := &commitlog.Message{Topic: "StoreBase", QueueID: int32(w % 8), Body: body, BornTimestamp: time.Now().UnixMilli(),
					BornHost: netip.MustParseAddrPort("127.0.0.1:5555"), Properties: "UNIQ_KEY\x01" + strings.Repeat("A", 32) + "\x02"}
				c := int64(0)
				for time.Now().Before(stop) {
					if _, err := s.Append(m); err != nil {
						t.Error(err)
						return
					}
					c++
				}
				mu.Lock()
				n += c
				mu.Unlock()
			}(w)
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	var r storeRates
	r.append1 = appendFor(1)
	r.append64 = appendFor(64)
	// Read queue 0 back from the start once it is dispatched.
	require.Eventually(t, func() bool { return s.Stats().DispatchedOffset >= s.MaxOffset() }, time.Minute, 10*time.Millisecond)
	start := time.Now()
	var n int
	for off := int64(0); ; {
		res := s.GetMessages("StoreBase", 0, off, 32, 1<<20, nil)
		if res.Status != commitlog.Found {
			break
		}
		n += len(res.Records)
		off = res.NextBeginOffset
	}
	r.scan = float64(n) / time.Since(start).Seconds()
	return r
}

// TestBenchMatrix is the closing-note benchmark: 1 KiB messages against SYNC_MASTER and
// ASYNC_MASTER groups, 1 and 64 concurrent producers (rocketmq-client-go and lean frames),
// consumption from master and from slave, each as a ratio to the store-level rate of
// libs/commitlog measured in the same run. It takes about two minutes, so it runs only with
// RMQHA_BENCH=1 (make bench).
func TestBenchMatrix(t *testing.T) {
	if os.Getenv("RMQHA_BENCH") == "" {
		t.Skip("set RMQHA_BENCH=1 to run the benchmark matrix")
	}
	const size = 1024
	d := 5 * time.Second
	store := measureStore(t, size, d)
	var report strings.Builder
	fmt.Fprintf(&report, "store (libs/commitlog, same run): append 1 writer %.0f msg/s, 64 writers %.0f msg/s, read %.0f msg/s\n",
		store.append1, store.append64, store.scan)
	fmt.Fprintf(&report, "%-12s %-4s %-5s %9s %7s %9s %9s %9s %8s\n", "role", "cli", "prod", "msg/s", "MB/s", "p50", "p99", "p99.9", "x_store")
	for _, role := range []string{"SYNC_MASTER", "ASYNC_MASTER"} {
		gc := e2e.DefaultGroupConfig()
		gc.MasterRole = role
		gc.MappedFileSizeCommitLog = 64 << 20
		g := e2e.StartGroup(t, gc)
		base := DefaultConfig()
		base.Namesrv, base.Size, base.Consumers, base.Progress = g.NamesrvAddr, size, 0, 0
		base.RegistrationSecretFile = g.RegistrationSecretFile
		base.Topic = "BenchMatrix" + strings.ReplaceAll(role, "_", "")
		var stored int64
		for _, client := range []string{ClientGo, ClientRaw} {
			for _, prod := range []int{1, 64} {
				cfg := base
				cfg.Client, cfg.Producers, cfg.Duration = client, prod, d
				res, err := Run(context.Background(), cfg, io.Discard)
				require.NoError(t, err)
				stored += res.Sent
				m, mb := res.SendRate()
				ref := store.append1
				if prod > 1 {
					ref = store.append64
				}
				fmt.Fprintf(&report, "%-12s %-4s %-5d %9.0f %7.2f %9v %9v %9v %8.3f  %v\n", role, client, prod, m, mb,
					round(Percentile(res.SendLatency, 50)), round(Percentile(res.SendLatency, 99)), round(Percentile(res.SendLatency, 99.9)), m/ref, res.Statuses)
			}
		}
		g.WaitSlaveCaughtUp(t)
		for _, from := range []string{"master", "slave"} {
			cfg := base
			cfg.Client, cfg.Producers, cfg.Consumers, cfg.PullFrom, cfg.N, cfg.Duration = ClientRaw, 0, 1, from, int(stored), 0
			cfg.Drain = 2 * time.Minute
			res, err := Run(context.Background(), cfg, io.Discard)
			require.NoError(t, err)
			m, mb := res.ConsumeRate()
			fmt.Fprintf(&report, "%-12s consume from %-6s %d messages: %.0f msg/s, %.2f MB/s, x_store_read %.3f\n", role, from, res.Consumed, m, mb, m/store.scan)
		}
	}
	t.Log("\n" + report.String())
}

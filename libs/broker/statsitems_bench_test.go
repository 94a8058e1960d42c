package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// BenchmarkSendStats: SEND_MESSAGE of 1 KiB over loopback (async master, 64 callers) with the
// stats items counting, against the same broker with the counting turned off, in alternating
// rounds of the same run. ratio_on_to_off is the throughput kept with stats on.
func BenchmarkSendStats(b *testing.B) {
	cfg := testConfig(b)
	cfg.MappedFileSizeCommitLog = 64 << 20
	m := startBroker(b, cfg)
	c := newTestClient(b)
	req := remoting.NewRequest(remoting.SendMessage, sendExt("BenchStats", 0, "TAGS\x01a\x02"), make([]byte, 1024))
	_, err := c.Invoke(context.Background(), m.Addr(), req) // create the topic
	require.NoError(b, err)
	const callers, rounds = 64, 10
	round := func(n int) time.Duration {
		var wg sync.WaitGroup
		var failed sync.Once
		var bad error
		start := time.Now()
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				for i := k; i < n; i += callers {
					resp, err := c.Invoke(context.Background(), m.Addr(), req)
					if err == nil && resp.Code != remoting.Success {
						err = fmt.Errorf("send answered %d: %s", resp.Code, resp.Remark)
					}
					if err != nil {
						failed.Do(func() { bad = err })
					}
				}
			}(g)
		}
		wg.Wait()
		require.NoError(b, bad)
		return time.Since(start)
	}
	per := max(b.N/(2*rounds), callers)
	var on, off time.Duration
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		// Alternate which goes first so that drift (page cache, segment rolls) hits both.
		first := r%2 == 0
		m.noStats.Store(!first)
		d1 := round(per)
		m.noStats.Store(first)
		d2 := round(per)
		if first {
			on, off = on+d1, off+d2
		} else {
			on, off = on+d2, off+d1
		}
	}
	b.StopTimer()
	onRate, offRate := float64(rounds*per)/on.Seconds(), float64(rounds*per)/off.Seconds()
	b.ReportMetric(onRate, "on_msgs/s")
	b.ReportMetric(offRate, "off_msgs/s")
	b.ReportMetric(onRate/offRate, "ratio_on_to_off")
}

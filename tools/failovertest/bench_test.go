package failovertest

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

var sendRateRe = regexp.MustCompile(`send:\s+\d+ messages in [0-9.]+s = ([0-9.]+) msg/s`)
var p50Re = regexp.MustCompile(`latency: p50 (\S+)`)

// benchSend runs the bench tool (raw frames, SYNC sends of 1 KiB, no consumer) against a
// name server for d and returns its send rate and p50 latency.
func benchSend(t *testing.T, namesrv, topic string, producers int, d time.Duration) (float64, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, harness.Binary(t, "bench"), "-namesrv", namesrv, "-topic", topic,
		"-client", "raw", "-mode", "sync", "-producers", strconv.Itoa(producers), "-consumers", "0",
		"-size", "1024", "-duration", d.String(), "-progress", "0").CombinedOutput()
	out := string(b)
	require.NoError(t, err, out)
	m := sendRateRe.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	rate, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	p50 := ""
	if l := p50Re.FindStringSubmatch(out); l != nil {
		p50 = l[1]
	}
	return rate, p50
}

// TestLeadershipCostBench (RMQHA_BENCH=1) compares SYNC sends to a statically configured
// SYNC_MASTER and slave with sends to a failover group's elected master (same binaries, same
// store settings), alternating twice: the election runs beside the send path, which only
// reads an atomic fence flag, so the ratio should be about 1.
func TestLeadershipCostBench(t *testing.T) {
	if os.Getenv("RMQHA_BENCH") != "1" {
		t.Skip("set RMQHA_BENCH=1")
	}
	static := e2e.StartGroup(t, e2e.DefaultGroupConfig())
	fg := startGroup(t, 2)
	m := fg.waitMaster(2)
	require.NoError(t, fg.createTopic(m.addr))
	static.CreateTopic(t, topic, queues)
	for _, producers := range []int{1, 64} {
		var s, f float64
		var sp, fp string
		for i := 0; i < 2; i++ {
			r, p := benchSend(t, static.NamesrvAddr, topic, producers, 3*time.Second)
			s += r
			sp = p
			r, p = benchSend(t, fg.nsAddr, topic, producers, 3*time.Second)
			f += r
			fp = p
		}
		t.Logf("SYNC 1 KiB, %d producers: static group %.0f msg/s (p50 %s), failover group %.0f msg/s (p50 %s), ratio %.2f",
			producers, s/2, sp, f/2, fp, f/s)
	}
}

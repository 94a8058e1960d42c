package acltest

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/stretchr/testify/require"
)

var (
	rateRe = regexp.MustCompile(`send: +(\d+) messages in [0-9.]+s = (\d+) msg/s`)
	p50Re  = regexp.MustCompile(`latency: p50 (\S+)`)
)

// TestACLSendCost measures what ACL costs a send: two ASYNC_MASTER groups in the same run, one
// with aclEnable=true (the producer signs, the broker and name server verify) and one without,
// driven alternately by the bench tool with the raw client and with rocketmq-client-go: unsigned
// against ACL off, signed against ACL off (the client's share of the cost, on the same 2 cores)
// and signed against ACL on. It reports msg/s and p50 per round and the medians; it asserts
// nothing about speed. The master's CPU time per send (from /proc) is reported too: it is
// steadier than throughput on a shared machine.
// RMQHA_ACL_BENCH=1 runs it; RMQHA_ACL_BENCH_ROUND sets the round length (default 8s) and
// RMQHA_ACL_BENCH_ROUNDS the number of rounds (default 3).
func TestACLSendCost(t *testing.T) {
	if os.Getenv("RMQHA_ACL_BENCH") == "" {
		t.Skip("set RMQHA_ACL_BENCH=1 to measure the ACL's cost on sends")
	}
	round := 8 * time.Second
	if d, err := time.ParseDuration(os.Getenv("RMQHA_ACL_BENCH_ROUND")); err == nil {
		round = d
	}
	cfg := e2e.DefaultGroupConfig()
	cfg.MasterRole, cfg.NoSlave = "ASYNC_MASTER", true
	cfg.MappedFileSizeCommitLog = 64 << 20
	on := startACLGroup(t, true, cfg)
	off := startACLGroup(t, false, cfg)
	for _, g := range []*aclGroup{on, off} {
		g.CreateTopic(t, topic, 8)
	}
	bench := toolBin(t, "bench")
	type sample struct{ rate, p50, cpu float64 }
	results := map[string][]sample{}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("RMQHA_ACL_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for r := 0; r < rounds; r++ {
		for _, client := range []string{"raw", "go"} {
			for _, mode := range []string{"off", "signed", "on"} {
				g, creds := off, []string(nil)
				switch mode {
				case "signed": // the client signs, the broker (ACL off) ignores it: the client's share
					creds = []string{"-ak", appAK, "-sk", appSK}
				case "on":
					g, creds = on, []string{"-ak", appAK, "-sk", appSK}
				}
				args := append([]string{"-namesrv", g.NamesrvAddr, "-topic", topic, "-client", client, "-producers", "16",
					"-consumers", "0", "-size", "1024", "-mode", "sync", "-duration", round.String(), "-progress", "0"}, creds...)
				cpu0 := procCPU(t, g.Master.PID())
				code, out := runTool(t, bench, nil, args...)
				cpu1 := procCPU(t, g.Master.PID())
				require.Equal(t, 0, code, out)
				rm, pm := rateRe.FindStringSubmatch(out), p50Re.FindStringSubmatch(out)
				require.NotNil(t, rm, out)
				require.NotNil(t, pm, out)
				require.NotContains(t, out, "first error", out)
				sent, _ := strconv.ParseFloat(rm[1], 64)
				rate, _ := strconv.ParseFloat(rm[2], 64)
				cpuPerMsg := (cpu1 - cpu0).Seconds() * 1e6 / sent // the master's CPU µs per send
				p50, err := time.ParseDuration(pm[1])
				require.NoError(t, err)
				key := client + "/" + mode
				results[key] = append(results[key], sample{rate, float64(p50.Microseconds()), cpuPerMsg})
				t.Logf("round %d %-10s %8.0f msg/s  p50 %-8v master CPU %.1f µs/send", r+1, key, rate, p50, cpuPerMsg)
			}
		}
	}
	median := func(xs []float64) float64 {
		sort.Float64s(xs)
		return xs[len(xs)/2]
	}
	var lines []string
	for _, client := range []string{"raw", "go"} {
		med := func(mode string) (rate, p50, cpu float64) {
			var rs, ps, cs []float64
			for _, s := range results[client+"/"+mode] {
				rs, ps, cs = append(rs, s.rate), append(ps, s.p50), append(cs, s.cpu)
			}
			return median(rs), median(ps), median(cs)
		}
		rOff, pOff, cOff := med("off")
		rSig, pSig, cSig := med("signed")
		rOn, pOn, cOn := med("on")
		lines = append(lines, fmt.Sprintf("%s client, 16 producers, 1 KiB sync sends: off %.0f msg/s p50 %.0fµs master %.1fµs/send; "+
			"client signing, ACL off %.0f msg/s p50 %.0fµs master %.1fµs/send; ACL on %.0f msg/s p50 %.0fµs master %.1fµs/send; "+
			"on vs signed: %+.1f%% msg/s, %+.1f%% p50, %+.1f%% master CPU per send; on vs off: %+.1f%% msg/s, %+.1f%% p50",
			client, rOff, pOff, cOff, rSig, pSig, cSig, rOn, pOn, cOn, (rOn/rSig-1)*100, (pOn/pSig-1)*100, (cOn/cSig-1)*100, (rOn/rOff-1)*100, (pOn/pOff-1)*100))
	}
	t.Logf("ACL cost (medians of %d alternating rounds of %v):\n  %s", rounds, round, strings.Join(lines, "\n  "))
}

// procCPU is the user+system CPU time a process has used (Linux /proc/<pid>/stat).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	require.NoError(t, err1)
	require.NoError(t, err2)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

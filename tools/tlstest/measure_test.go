package tlstest

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// Measurements for the closing note: they log numbers and assert only memory budgets, never
// speed.

func sendReq(topic string, queue int, body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "measure-pg", "topic": topic, "queueId": strconv.Itoa(queue), "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "reconsumeTimes": "0",
		"unitMode": "false", "maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"batch": "false", "properties": "", "bname": e2e.BrokerName,
	}, body)
}

// sendRun sends n 1 KiB messages from callers goroutines over cl and returns the rate and p50.
func sendRun(t *testing.T, cl *remoting.Client, addr, topic string, n, callers int) (float64, time.Duration) {
	t.Helper()
	body := make([]byte, 1024)
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	start := time.Now()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += callers {
				t0 := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := cl.Invoke(ctx, addr, sendReq(topic, i%4, body))
				cancel()
				if err == nil && resp.Code != remoting.Success {
					err = fmt.Errorf("send: code %d %s", resp.Code, resp.Remark)
				}
				if err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		}(g)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return float64(n) / elapsed.Seconds(), all[len(all)/2]
}

// TLS on vs off, same broker, same run, alternating rounds (SYNC_MASTER with a slave, 1 KiB
// sends, 32 callers pipelining on one connection).
func TestMeasureSendTLSvsPlain(t *testing.T) {
	g := e2e.StartGroup(t, e2e.DefaultGroupConfig())
	const topic = "TLSMeasure"
	g.CreateTopic(t, topic, 4)
	plain := remoting.NewClient(remoting.DefaultClientConfig())
	defer plain.Close()
	cc := remoting.DefaultClientConfig()
	cc.TLS = &tls.Config{InsecureSkipVerify: true}
	secure := remoting.NewClient(cc)
	defer secure.Close()
	sendRun(t, plain, g.MasterAddr, topic, 500, 32) // warm up both
	sendRun(t, secure, g.MasterAddr, topic, 500, 32)
	var pr, sr []float64
	var pp, sp []time.Duration
	for round := 0; round < 3; round++ {
		r, p50 := sendRun(t, plain, g.MasterAddr, topic, 5000, 32)
		pr, pp = append(pr, r), append(pp, p50)
		r, p50 = sendRun(t, secure, g.MasterAddr, topic, 5000, 32)
		sr, sp = append(sr, r), append(sp, p50)
		t.Logf("round %d: plain %.0f msg/s p50 %v | TLS %.0f msg/s p50 %v", round, pr[round], pp[round], sr[round], sp[round])
	}
	med := func(v []float64) float64 { s := append([]float64(nil), v...); sort.Float64s(s); return s[len(s)/2] }
	medD := func(v []time.Duration) time.Duration {
		s := append([]time.Duration(nil), v...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	t.Logf("median: plain %.0f msg/s p50 %v, TLS %.0f msg/s p50 %v: TLS throughput cost %.1f%%, p50 +%.1f%%",
		med(pr), medD(pp), med(sr), medD(sp), 100*(1-med(sr)/med(pr)), 100*(float64(medD(sp))/float64(medD(pp))-1))
}

// rssKiB reads a process's resident set size.
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// The broker's memory under 2,000 idle connections and under held frames: 24 connections
// each holding an almost complete 16 MiB frame (the attack that took a master from 25 to 425
// MiB), and 200 connections each announcing 16 MiB and trickling 64 KiB. Budgets: the byte
// budget (256 MiB) plus 96 MiB while almost complete frames are held; 64 MiB for the others.
func TestMeasureBrokerRSSUnderConnectionsAndHeldFrames(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.NoSlave, cfg.MasterRole = true, "ASYNC_MASTER"
	g := e2e.StartGroup(t, cfg)
	pid := g.Master.PID()
	base := rssKiB(t, pid)
	t.Logf("master RSS at start: %d MiB", base>>10)

	dial := func() net.Conn {
		nc, err := net.DialTimeout("tcp", g.MasterAddr, 5*time.Second)
		require.NoError(t, err)
		return nc
	}
	// 2,000 idle connections, each established by one answered request.
	probe := remoting.AppendFrame(nil, remoting.NewRequest(4321, nil, nil))
	var idle []net.Conn
	for i := 0; i < 2000; i++ {
		nc := dial()
		_, err := nc.Write(probe)
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = remoting.ReadFrame(nc, nil, 1<<20)
		require.NoError(t, err)
		idle = append(idle, nc)
	}
	withIdle := rssKiB(t, pid)
	t.Logf("master RSS with 2000 idle connections: %d MiB (+%d KiB per connection)", withIdle>>10, (withIdle-base)/2000)
	require.Less(t, withIdle-base, int64(64<<10), "2000 idle connections")
	for _, nc := range idle {
		_ = nc.Close()
	}

	// hold opens conns connections, each announcing a 16 MiB frame and sending sent bytes of
	// it. A write may fail: past the byte budget the broker drops such frames, and one whose
	// header cannot be answered closes its connection.
	hold := func(conns, sent int) []net.Conn {
		prefix := binary.BigEndian.AppendUint32(nil, 16<<20-16)
		chunk := make([]byte, 256<<10)
		var out []net.Conn
		for i := 0; i < conns; i++ {
			nc := dial()
			out = append(out, nc)
			_ = nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Write(prefix); err != nil {
				continue
			}
			for left := sent; left > 0; left -= len(chunk) {
				if _, err := nc.Write(chunk[:min(left, len(chunk))]); err != nil {
					break
				}
			}
		}
		return out
	}
	inFlight := func() float64 { return metric(t, g.MasterHTTP, "rmqha_broker_remoting_bytes_in_flight") }
	// settle waits until the broker has taken in at least want bytes (read buffers grown).
	settle := func(want float64) {
		harness.Eventually(t, 30*time.Second, func() error {
			if v := inFlight(); v < want {
				return fmt.Errorf("bytes in flight %.0f < %.0f", v, want)
			}
			return nil
		})
	}

	held := hold(24, 16<<20-64<<10)
	settle(200 << 20)
	during := rssKiB(t, pid)
	t.Logf("master RSS holding 24 almost complete 16 MiB frames: %d MiB (+%d MiB; bytes in flight %.0f MiB, overload closes %.0f, busy %.0f)",
		during>>10, (during-base)>>10, inFlight()/(1<<20), metric(t, g.MasterHTTP, "rmqha_broker_remoting_overload_closes_total"),
		metric(t, g.MasterHTTP, `rmqha_broker_remoting_busy_total{reason="bytes_in_flight"}`))
	require.Less(t, during-base, int64((256+96)<<10), "held frames beyond the byte budget")
	for _, nc := range held {
		_ = nc.Close()
	}

	// The memory comes back (the server returns it once its bytes in flight fell from a peak).
	returned := func() int64 {
		var after int64
		harness.Eventually(t, 60*time.Second, func() error {
			if v := inFlight(); v != 0 {
				return fmt.Errorf("bytes in flight %.0f after close", v)
			}
			if after = rssKiB(t, pid); after-base > 64<<10 {
				return fmt.Errorf("RSS %d MiB, %d MiB above start", after>>10, (after-base)>>10)
			}
			return nil
		})
		return after
	}
	t.Logf("master RSS after the attackers closed: %d MiB", returned()>>10)
	base = rssKiB(t, pid)
	trickle := hold(200, 64<<10)
	settle(200 * (64<<10 - 4<<10))
	duringTrickle := rssKiB(t, pid)
	t.Logf("master RSS with 200 connections announcing 16 MiB, 64 KiB sent each: %d MiB (+%d MiB)", duringTrickle>>10, (duringTrickle-base)>>10)
	require.Less(t, duringTrickle-base, int64(64<<10), "trickled frames: memory follows the bytes sent (200 x 64 KiB)")
	for _, nc := range trickle {
		_ = nc.Close()
	}
	t.Logf("master RSS after the trickling attackers closed: %d MiB", returned()>>10)
	require.True(t, g.Master.Running())
	resp, err := g.Admin.Invoke(context.Background(), g.MasterAddr, sendReq("TBW102x", 0, []byte("after")))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

package broker

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

// scrape reads b's /metrics and returns every sample keyed by its series ("name{labels}").
func scrape(t *testing.T, b *Broker) map[string]float64 {
	t.Helper()
	text := httpGet(t, "http://"+b.HTTPAddr()+"/metrics", 200)
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// metric returns one series' value (0 when absent).
func metric(t *testing.T, b *Broker, series string) float64 {
	t.Helper()
	return scrape(t, b)[series]
}

// withPrefix returns the series starting with prefix.
func withPrefix(m map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func metricsConfig(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.HTTPPort = freePort(t)
	return cfg
}

func TestMetricsSendsPullsAndLongPolling(t *testing.T) {
	m := startBroker(t, metricsConfig(t))
	c := newTestClient(t)

	before := scrape(t, m)
	require.Equal(t, 1.0, before[`rmqha_broker_info{broker="broker-a",broker_id="0",cluster="DefaultCluster",role="ASYNC_MASTER"}`])
	require.Equal(t, 1.0, before["rmqha_broker_running"])
	require.Equal(t, 0.0, before[`rmqha_broker_send_total{status="SEND_OK"}`])
	require.Contains(t, before, "go_goroutines")
	require.Contains(t, before, "process_cpu_seconds_total")
	topicsV := before[`rmqha_broker_metadata_version{table="topics"}`]
	require.Contains(t, before, `rmqha_broker_metadata_version{table="subscriptionGroups"}`)
	require.Contains(t, before, `rmqha_broker_metadata_version{table="delayOffset"}`)

	for i := 0; i < 3; i++ {
		require.Equal(t, remoting.Success, send(t, c, m.Addr(), "M", 0, "", "m"+strconv.Itoa(i)).Code)
	}
	// A refused send (topic name not allowed) is counted under its response code.
	resp := invoke(t, c, m.Addr(), remoting.SendMessage, sendExt("TBW102", 0, ""), []byte("x"))
	require.Equal(t, remoting.NoPermission, resp.Code)

	after := scrape(t, m)
	require.Equal(t, 3.0, after[`rmqha_broker_send_total{status="SEND_OK"}`])
	require.Equal(t, 3.0, after[`rmqha_broker_send_latency_seconds_count{status="SEND_OK"}`])
	require.Equal(t, 1.0, after[`rmqha_broker_send_total{status="NO_PERMISSION"}`])
	require.Equal(t, 4.0, after["rmqha_broker_send_requests_total"])
	require.Equal(t, 3.0, after["rmqha_broker_store_appended_messages_total"])
	require.Greater(t, after["rmqha_broker_store_appended_bytes_total"], 3.0*2)
	require.Equal(t, after["rmqha_broker_store_appended_bytes_total"], after["rmqha_broker_store_max_offset"])
	require.Greater(t, after[`rmqha_broker_metadata_version{table="topics"}`], topicsV, "auto-creating M moves the topic table's version")
	require.Eventually(t, func() bool {
		return metric(t, m, "rmqha_broker_store_flushed_offset") == after["rmqha_broker_store_max_offset"]
	}, 10*time.Second, 10*time.Millisecond)
	require.Positive(t, metric(t, m, "rmqha_broker_store_fsync_seconds_count"))

	// Pulls: one that finds the messages, one parked by long polling and woken by a send, one
	// parked until its hold time runs out.
	invoke(t, c, m.Addr(), remoting.HeartBeat, nil, heartbeatBody("c1", "g", map[string]string{"M": "*"}))
	pr := invoke(t, c, m.Addr(), remoting.PullMessage, pullExt("g", "M", 0, 0, 2, 1000), nil)
	require.Equal(t, remoting.Success, pr.Code)
	s := scrape(t, m)
	require.Equal(t, 1.0, s[`rmqha_broker_pull_total{status="FOUND"}`])
	require.Equal(t, 1.0, s[`rmqha_broker_pull_latency_seconds_count{held="false"}`])
	require.Equal(t, 0.0, s["rmqha_broker_long_poll_held"])

	held := make(chan *remoting.Command, 1)
	go func() {
		r, err := c.Invoke(context.Background(), m.Addr(), remoting.NewRequest(remoting.PullMessage, pullExt("g", "M", 0, 3, 2, 10000), nil))
		if err == nil {
			held <- r
		}
		close(held)
	}()
	require.Eventually(t, func() bool { return metric(t, m, "rmqha_broker_long_poll_held") == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, metric(t, m, "rmqha_broker_long_poll_holds_total"))
	require.Equal(t, remoting.Success, send(t, c, m.Addr(), "M", 0, "", "wake").Code)
	r := <-held
	require.NotNil(t, r)
	require.Equal(t, remoting.Success, r.Code)
	s = scrape(t, m)
	require.Equal(t, 0.0, s["rmqha_broker_long_poll_held"])
	require.Equal(t, 1.0, s[`rmqha_broker_long_poll_wakeups_total{reason="message"}`])
	require.Equal(t, 2.0, s[`rmqha_broker_pull_total{status="FOUND"}`])
	require.Equal(t, 1.0, s[`rmqha_broker_pull_latency_seconds_count{held="true"}`])

	r = invoke(t, c, m.Addr(), remoting.PullMessage, pullExt("g", "M", 0, 4, 2, 100), nil)
	require.Equal(t, remoting.PullNotFound, r.Code)
	s = scrape(t, m)
	require.Equal(t, 1.0, s[`rmqha_broker_long_poll_wakeups_total{reason="timeout"}`])
	require.Equal(t, 1.0, s[`rmqha_broker_pull_total{status="NO_NEW_MSG"}`])
	require.Equal(t, 2.0, s[`rmqha_broker_pull_latency_seconds_count{held="true"}`])
	require.Equal(t, 3.0, s["rmqha_broker_pull_requests_total"])
	require.Equal(t, 1.0, s[`rmqha_broker_client_channels{kind="consumer"}`])
	require.Greater(t, s[`rmqha_broker_metadata_version{table="subscriptionGroups"}`],
		before[`rmqha_broker_metadata_version{table="subscriptionGroups"}`], "auto-creating group g moves the group table's version")
}

func TestMetricsDisabledKeepsState(t *testing.T) {
	cfg := metricsConfig(t)
	cfg.MetricsEnable = false
	m := startBroker(t, cfg)
	c := newTestClient(t)
	require.Equal(t, remoting.Success, send(t, c, m.Addr(), "M", 0, "", "x").Code)
	s := scrape(t, m)
	require.Positive(t, s["rmqha_broker_store_max_offset"])
	require.Equal(t, 1.0, s["rmqha_broker_send_requests_total"])
	require.Empty(t, withPrefix(s, "rmqha_broker_send_total"))
	require.Empty(t, withPrefix(s, "rmqha_broker_send_latency_seconds"))
	require.Empty(t, withPrefix(s, "rmqha_broker_store_fsync_seconds"))
}

func TestMetricsReplication(t *testing.T) {
	mcfg := syncMasterConfig(t)
	mcfg.HTTPPort = freePort(t)
	m := startBroker(t, mcfg)
	c := newTestClient(t)

	// No slave: stored on the master only.
	require.Equal(t, remoting.SlaveNotAvailable, send(t, c, m.Addr(), "R", 0, "", "alone").Code)
	s := scrape(t, m)
	require.Equal(t, 1.0, s[`rmqha_broker_send_total{status="SLAVE_NOT_AVAILABLE"}`])
	require.Equal(t, 1.0, s[`rmqha_broker_ha_acks_total{result="slave_not_available"}`])
	require.Equal(t, 1.0, s["rmqha_broker_ha_in_sync_replicas"])
	require.Equal(t, 0.0, s["rmqha_broker_ha_in_sync_slaves"])
	require.Equal(t, 2.0, s["rmqha_broker_ha_required_replicas"])
	require.Empty(t, withPrefix(s, "rmqha_broker_ha_slave_lag_bytes"))

	proxy := startStallProxy(t, m.HAAddr())
	scfg := slaveConfig(t, proxy.addr())
	scfg.HTTPPort = freePort(t)
	sl, err := New(scfg, testLogger())
	require.NoError(t, err)
	require.NoError(t, sl.Start())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sl.Shutdown(context.Background())
		}
	})
	require.Eventually(t, func() bool { return metric(t, m, "rmqha_broker_ha_in_sync_slaves") == 1 }, 10*time.Second, 10*time.Millisecond)

	require.Equal(t, remoting.Success, send(t, c, m.Addr(), "R", 0, "", "replicated").Code)
	s = scrape(t, m)
	require.Equal(t, 2.0, s["rmqha_broker_ha_in_sync_replicas"])
	require.Equal(t, 1.0, s["rmqha_broker_ha_connected_slaves"])
	require.Equal(t, 1.0, s[`rmqha_broker_send_total{status="SEND_OK"}`])
	require.Equal(t, 1.0, s[`rmqha_broker_ha_acks_total{result="ok"}`])
	require.Equal(t, 2.0, s["rmqha_broker_send_replication_wait_seconds_count"])
	inSync := withPrefix(s, "rmqha_broker_ha_slave_in_sync{")
	require.Len(t, inSync, 1)
	for k, v := range inSync {
		require.Contains(t, k, `slave_id="1"`)
		require.Equal(t, 1.0, v)
	}
	for k, v := range withPrefix(s, "rmqha_broker_ha_slave_ack_offset{") {
		require.Equal(t, s["rmqha_broker_store_max_offset"], v, k)
	}
	for k, v := range withPrefix(s, "rmqha_broker_ha_slave_lag_bytes{") {
		require.Equal(t, 0.0, v, k)
	}
	ss := scrape(t, sl)
	require.Equal(t, 0.0, ss["rmqha_broker_ha_replication_failed"])
	require.Len(t, withPrefix(ss, "rmqha_broker_ha_replication_connected{"), 1)
	for k, v := range withPrefix(ss, "rmqha_broker_ha_replication_connected{") {
		require.Equal(t, 1.0, v, k)
	}
	require.Equal(t, s["rmqha_broker_store_max_offset"], ss["rmqha_broker_store_max_offset"])

	// A stalled link: the slave falls behind (lag in bytes and seconds), then catches up.
	proxy.setPaused(true)
	require.Equal(t, remoting.FlushSlaveTimeout, send(t, c, m.Addr(), "R", 0, "", "stalled").Code)
	s = scrape(t, m)
	require.Equal(t, 1.0, s[`rmqha_broker_send_total{status="FLUSH_SLAVE_TIMEOUT"}`])
	require.Equal(t, 1.0, s[`rmqha_broker_ha_acks_total{result="timeout"}`])
	lag := withPrefix(s, "rmqha_broker_ha_slave_lag_bytes{")
	require.Len(t, lag, 1)
	for k, v := range lag {
		require.Positive(t, v, k)
	}
	for k, v := range withPrefix(s, "rmqha_broker_ha_slave_lag_seconds{") {
		require.Positive(t, v, k)
	}
	proxy.setPaused(false)
	require.Eventually(t, func() bool {
		s := scrape(t, m)
		for _, v := range withPrefix(s, "rmqha_broker_ha_slave_lag_bytes{") {
			return v == 0 && s["rmqha_broker_ha_in_sync_replicas"] == 2
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		return metric(t, sl, "rmqha_broker_store_max_offset") == metric(t, m, "rmqha_broker_store_max_offset")
	}, 10*time.Second, 10*time.Millisecond)

	// The slave stops: the master's in-sync count drops and its per-slave series go.
	stopped = true
	require.NoError(t, sl.Shutdown(context.Background()))
	require.Eventually(t, func() bool {
		s := scrape(t, m)
		return s["rmqha_broker_ha_in_sync_replicas"] == 1 && s["rmqha_broker_ha_connected_slaves"] == 0 &&
			len(withPrefix(s, "rmqha_broker_ha_slave_lag_bytes{")) == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, remoting.SlaveNotAvailable, send(t, c, m.Addr(), "R", 0, "", "alone again").Code)
	require.Equal(t, 2.0, metric(t, m, `rmqha_broker_send_total{status="SLAVE_NOT_AVAILABLE"}`))
}

// manualClock is a test clock moved by hand.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *manualClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *manualClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// entries returns the hook's entries at level lvl whose message contains s.
func entries(h *test.Hook, lvl logrus.Level, s string) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range h.AllEntries() {
		if e.Level == lvl && strings.Contains(e.Message, s) {
			out = append(out, e)
		}
	}
	return out
}

func TestClaimWarningSyncMasterWithoutSlave(t *testing.T) {
	logger, hook := test.NewNullLogger()
	clock := newManualClock()
	cfg := syncMasterConfig(t)
	b, err := New(cfg, logger)
	require.NoError(t, err)
	b.claimEvery = time.Hour // the test drives checkClaims itself
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })

	const msg = "SYNC_MASTER without enough slaves in sync"
	b.checkClaims(clock.now())
	clock.advance(9 * time.Second)
	b.checkClaims(clock.now())
	require.Empty(t, entries(hook, logrus.WarnLevel, msg), "no warning before 10 s")
	clock.advance(2 * time.Second)
	b.checkClaims(clock.now())
	w := entries(hook, logrus.WarnLevel, msg)
	require.Len(t, w, 1)
	require.Equal(t, 1, w[0].Data["inSync"])
	require.Equal(t, 2, w[0].Data["inSyncReplicas"])
	require.Equal(t, "SYNC_MASTER", w[0].Data["role"])
	require.Equal(t, "DefaultCluster", w[0].Data["cluster"])
	require.Equal(t, "broker-a", w[0].Data["broker"])
	for i := 0; i < 5; i++ {
		clock.advance(10 * time.Second)
		b.checkClaims(clock.now())
	}
	require.Len(t, entries(hook, logrus.WarnLevel, msg), 1, "repeated at most once a minute")
	clock.advance(15 * time.Second)
	b.checkClaims(clock.now())
	require.Len(t, entries(hook, logrus.WarnLevel, msg), 2)

	// A slave in sync ends it.
	startBroker(t, slaveConfig(t, b.HAAddr()))
	require.Eventually(t, func() bool { return b.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	clock.advance(time.Second)
	b.checkClaims(clock.now())
	require.Len(t, entries(hook, logrus.InfoLevel, "enough slaves in sync again"), 1)
	clock.advance(time.Hour)
	b.checkClaims(clock.now())
	require.Len(t, entries(hook, logrus.WarnLevel, msg), 2)
}

func TestClaimWarningSlaveReplicationStopped(t *testing.T) {
	logger, hook := test.NewNullLogger()
	clock := newManualClock()
	// A master address nobody listens on.
	cfg := slaveConfig(t, "127.0.0.1:"+strconv.Itoa(freePort(t)))
	b, err := New(cfg, logger)
	require.NoError(t, err)
	b.claimEvery = time.Hour
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })

	const msg = "slave replication has stopped"
	b.checkClaims(clock.now())
	clock.advance(11 * time.Second)
	b.checkClaims(clock.now())
	w := entries(hook, logrus.WarnLevel, msg)
	require.Len(t, w, 1)
	require.Equal(t, cfg.HAMasterAddress, w[0].Data["peer"])
	require.Contains(t, w[0].Data, "offset")
	require.Equal(t, "SLAVE", w[0].Data["role"])
	clock.advance(30 * time.Second)
	b.checkClaims(clock.now())
	require.Len(t, entries(hook, logrus.WarnLevel, msg), 1)
	clock.advance(31 * time.Second)
	b.checkClaims(clock.now())
	require.Len(t, entries(hook, logrus.WarnLevel, msg), 2)
}

// The claim loop runs on its own: a SYNC_MASTER alone warns within the (shortened) period.
func TestClaimLoopWarns(t *testing.T) {
	logger, hook := test.NewNullLogger()
	b, err := New(syncMasterConfig(t), logger)
	require.NoError(t, err)
	b.claimAfter, b.claimEvery = 50*time.Millisecond, 10*time.Millisecond
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	require.Eventually(t, func() bool {
		return len(entries(hook, logrus.WarnLevel, "SYNC_MASTER without enough slaves in sync")) == 1
	}, 10*time.Second, 10*time.Millisecond)
}

// nopWriter is a ResponseWriter that drops the answer.
type nopWriter struct{}

func (nopWriter) Write(*remoting.Command) error { return nil }
func (nopWriter) Conn() *remoting.ServerConn    { return nil }

// BenchmarkSendInstrumentation is the cost the per-request instrumentation adds to one send
// (wrapping the writer, two clock reads, a counter and a histogram), against the same answer
// written without it in the same run.
func BenchmarkSendInstrumentation(b *testing.B) {
	br, err := New(testConfig(b), testLogger())
	require.NoError(b, err)
	resp := remoting.NewResponse(remoting.NewRequest(remoting.SendMessage, nil, nil), remoting.Success, "")
	var base time.Duration
	{
		t0 := time.Now()
		var w remoting.ResponseWriter = nopWriter{}
		for i := 0; i < b.N; i++ {
			_ = w.Write(resp)
		}
		base = time.Since(t0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = br.metrics.instrumentSend(nopWriter{}).Write(resp)
	}
	b.StopTimer()
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "ns/op-uninstrumented")
}

// BenchmarkSendMetricsOverhead sends 1 KiB messages through a remoting client to two ASYNC
// masters, one with metricsEnable=true and one with false, alternating rounds in the same run
// so drift hits both alike, with 8 concurrent senders. It reports both rates and their ratio.
func BenchmarkSendMetricsOverhead(b *testing.B) {
	start := func(on bool) *Broker {
		cfg := testConfig(b)
		cfg.MappedFileSizeCommitLog = 64 << 20
		cfg.MetricsEnable = on
		return startBroker(b, cfg)
	}
	brokers := [2]*Broker{start(true), start(false)}
	c := newTestClient(b)
	body := make([]byte, 1024)
	req := remoting.NewRequest(remoting.SendMessage, sendExt("Bench", 0, "TAGS\x01a\x02"), body)
	for _, br := range brokers {
		_, err := c.Invoke(context.Background(), br.Addr(), req) // create the topic
		require.NoError(b, err)
	}
	const conc, round = 8, 2000
	var elapsed [2]time.Duration
	var sent [2]int
	var bad atomic.Int64
	runRound := func(i, n int) {
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for g := 0; g < conc; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					resp, err := c.Invoke(context.Background(), brokers[i].Addr(), req)
					if err != nil || resp.Code != remoting.Success {
						bad.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		elapsed[i] += time.Since(t0)
		sent[i] += n
	}
	b.SetBytes(1024)
	b.ResetTimer()
	for r, left := 0, b.N; left > 0; r, left = r+1, left-round {
		n := min(round, left)
		// Alternate which broker goes first, so neither always runs on a warmer machine.
		runRound(r%2, n)
		runRound(1-r%2, n)
	}
	b.StopTimer()
	require.Zero(b, bad.Load())
	on := float64(sent[0]) / elapsed[0].Seconds()
	off := float64(sent[1]) / elapsed[1].Seconds()
	b.ReportMetric(on, "msgs/s-metrics-on")
	b.ReportMetric(off, "msgs/s-metrics-off")
	b.ReportMetric(on/off, "on/off")
}

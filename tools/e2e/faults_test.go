package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestOffsetsSurviveMasterRestart: a group consumes and commits, the master stops cleanly
// (SIGTERM) and starts again, and a new member of the group resumes after the committed
// offsets: nothing it committed comes back. The first consumer is shut down before the
// restart, which commits its offsets, so the client's at-least-once window (messages consumed
// since the last 5 s commit) is empty here and the test expects no repeat at all.
func TestOffsetsSurviveMasterRestart(t *testing.T) {
	g := StartGroup(t, DefaultGroupConfig())
	const topic, group, queues = "E2EOffsets", "cg-offsets", 4
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g, "pg-offsets")
	var hist History
	var first []string
	for i := 0; i < 40; i++ {
		body := fmt.Sprintf("offsets-first-%d", i)
		mustSend(t, p, &hist, primitive.NewMessage(topic, []byte(body)))
		first = append(first, body)
	}
	col1 := newCollector()
	c1 := startConsumer(t, g, group, topic, sel("*"), col1.handler("c1"))
	// A second group keeps its consumer running across the restart: it must get everything
	// once, the client's in-memory offsets carrying it over the outage.
	const liveGroup = "cg-offsets-live"
	live := newCollector()
	startConsumer(t, g, liveGroup, topic, sel("*"), live.handler("live"))
	col1.waitAll(t, first, 60*time.Second)
	live.waitAll(t, first, 60*time.Second)
	// Committed by the client's periodic persist (every 5 s) before it stops: the offsets it
	// sends while shutting down are oneway and can be lost with its connection.
	before := waitCommitted(t, g, group, topic, queues, 30*time.Second)
	require.NoError(t, c1.Shutdown())
	t.Logf("committed before restart: %v", before)

	require.NoError(t, g.Master.Stop(30*time.Second), "master did not stop cleanly on SIGTERM")
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	for q := 0; q < queues; q++ {
		off, err := g.ConsumerOffset(g.MasterAddr, group, topic, q)
		require.NoError(t, err)
		require.Equal(t, before[q], off, "queue %d: committed offset after restart", q)
	}
	g.WaitSlaveInSync(t)

	var second []string
	for i := 0; i < 20; i++ {
		body := fmt.Sprintf("offsets-second-%d", i)
		mustSend(t, p, &hist, primitive.NewMessage(topic, []byte(body)))
		second = append(second, body)
	}
	col2 := newCollector()
	startConsumer(t, g, group, topic, sel("*"), col2.handler("c2"))
	col2.waitAll(t, second, 60*time.Second)
	waitCommitted(t, g, group, topic, queues, 30*time.Second)
	for _, m := range col2.messages() {
		require.True(t, strings.HasPrefix(string(m.Body), "offsets-second-"), "committed message %q delivered again after the restart", m.Body)
		require.Equal(t, 1, col2.count(string(m.Body)), "message %q delivered twice", m.Body)
	}
	live.waitAll(t, second, 60*time.Second)
	waitCommitted(t, g, liveGroup, topic, queues, 30*time.Second)
	for _, b := range append(first, second...) {
		require.Equal(t, 1, live.count(b), "running consumer got %q %d times across the restart", b, live.count(b))
	}
	g.WaitSlaveCaughtUp(t)
	checkHistory(t, g, &hist, g.MasterAddr, g.SlaveAddr)
}

// TestMasterKilled: with the master killed (SIGKILL) a running push consumer keeps reading
// every replicated message from the slave, and a producer gets an error within its send
// timeout and retries rather than hanging. After the master comes back every message it
// acknowledged is on both brokers.
func TestMasterKilled(t *testing.T) {
	g := StartGroup(t, DefaultGroupConfig())
	const topic, group, queues = "E2EMasterKilled", "cg-killed", 4
	g.CreateTopic(t, topic, queues)
	sendTimeout := 3 * time.Second
	p := newProducer(t, g, "pg-killed", producer.WithSendMsgTimeout(sendTimeout), producer.WithRetry(2))
	var hist History
	send := func(prefix string, n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			body := fmt.Sprintf("%s-%d", prefix, i)
			mustSend(t, p, &hist, primitive.NewMessage(topic, []byte(body)))
			out = append(out, body)
		}
		return out
	}
	col := newCollector()
	// One message per pull, so that while the consumer is suspended at most the pull already
	// held at the master per queue takes a backlog message; the rest stays on the brokers.
	c := startConsumer(t, g, group, topic, sel("*"), col.handler("c"), consumer.WithPullBatchSize(1))
	first := send("killed-first", 20)
	col.waitAll(t, first, 60*time.Second)

	c.Suspend()
	backlog := send("killed-backlog", 40)
	g.WaitSlaveCaughtUp(t)
	slaveBefore, err := g.SlaveStatus()
	require.NoError(t, err)

	masterSt, err := g.MasterStatus()
	require.NoError(t, err)
	t.Logf("before the kill: master served %d pulls, slave %d; %d messages delivered", masterSt.PullRequests, slaveBefore.PullRequests, len(col.messages()))
	g.Master.Kill()
	c.Resume() // a suspended client sleeps 30 s before its next pull; the route refresh overlaps

	// The producer's only master is gone: an error, bounded by the send timeout per attempt.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msg := primitive.NewMessage(topic, []byte("killed-after"))
	start := time.Now()
	res, err := p.SendSync(ctx, msg)
	elapsed := time.Since(start)
	hist.Add(msg, res, err)
	require.Error(t, err, "send with the master down answered %+v", res)
	t.Logf("send with the master down failed after %v: %v", elapsed.Round(time.Millisecond), err)
	require.Less(t, elapsed, 3*(sendTimeout+5*time.Second), "send hung")

	// The consumer drains the backlog from the slave once its route drops the master.
	col.waitAll(t, backlog, 90*time.Second)
	slaveAfter, err := g.SlaveStatus()
	require.NoError(t, err)
	require.Greater(t, slaveAfter.PullRequests, slaveBefore.PullRequests, "the slave served no pulls")
	for _, b := range append(first, backlog...) {
		if n := col.count(b); n != 1 {
			t.Logf("message %q delivered %d times (at-least-once across the failover)", b, n)
		}
	}
	ctxc, cancelc := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelc()
	require.NoError(t, hist.Check(ctxc, g.Admin, g.SlaveAddr), "acknowledged messages on the slave")

	// The master returns with everything it acknowledged.
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	checkHistory(t, g, &hist, g.MasterAddr, g.SlaveAddr)
}

// TestSyncMasterContract: a SYNC_MASTER answers FLUSH_SLAVE_TIMEOUT when the slave's acks do
// not arrive within slaveTimeout (a slowed link), SLAVE_NOT_AVAILABLE when no slave is in sync
// (a cut link, a killed slave), SEND_OK again once the slave is back; every message it stored
// is on master and slave at the end, each at its own offset.
func TestSyncMasterContract(t *testing.T) {
	cfg := DefaultGroupConfig()
	cfg.ProxyHA = true
	g := StartGroup(t, cfg)
	const topic = "E2ESyncMaster"
	g.CreateTopic(t, topic, 4)
	p := newProducer(t, g, "pg-sync", producer.WithRetry(0))
	var hist History
	seq := 0
	send := func() (primitive.SendStatus, time.Duration) {
		t.Helper()
		seq++
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("sync-%d", seq)))
		msg.WithTag("S")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		res, err := p.SendSync(ctx, msg)
		elapsed := time.Since(start)
		hist.Add(msg, res, err)
		require.NoError(t, err, "send %d", seq)
		return res.Status, elapsed
	}
	for i := 0; i < 10; i++ {
		st, _ := send()
		require.Equal(t, primitive.SendOK, st, StatusName(st))
	}

	// Slowed link: acks come 4 s late, past slaveTimeout (2 s).
	g.HAProxy.SetDelay(4 * time.Second)
	st, elapsed := send()
	require.Equal(t, primitive.SendFlushSlaveTimeout, st, "slowed link: %s after %v", StatusName(st), elapsed)
	require.GreaterOrEqual(t, elapsed, cfg.SlaveTimeout/2, "FLUSH_SLAVE_TIMEOUT without waiting")
	t.Logf("slowed link: FLUSH_SLAVE_TIMEOUT after %v", elapsed.Round(time.Millisecond))
	g.HAProxy.SetDelay(0)
	g.WaitSlaveInSync(t)
	g.WaitSlaveCaughtUp(t)
	waitStatus(t, send, primitive.SendOK)

	// Cut link: the master loses its only slave.
	g.HAProxy.Cut()
	st, elapsed = waitStatus(t, send, primitive.SendSlaveNotAvailable)
	t.Logf("cut link: SLAVE_NOT_AVAILABLE after %v", elapsed.Round(time.Millisecond))
	g.HAProxy.Heal()
	g.WaitSlaveInSync(t)
	waitStatus(t, send, primitive.SendOK)

	// Killed slave.
	g.Slave.Kill()
	waitStatus(t, send, primitive.SendSlaveNotAvailable)
	for i := 0; i < 5; i++ {
		st, elapsed = send()
		require.Equal(t, primitive.SendSlaveNotAvailable, st, "slave killed: %s", StatusName(st))
		t.Logf("slave killed: SLAVE_NOT_AVAILABLE after %v", elapsed.Round(time.Millisecond))
	}
	require.NoError(t, g.Slave.Restart())
	g.WaitSlaveInSync(t)
	waitStatus(t, send, primitive.SendOK)

	// Paused (SIGSTOP) master: the connection stays open and nothing answers; the send must
	// fail by its own timeout, not hang. What it sent may still be stored after the resume.
	require.NoError(t, g.Master.Pause())
	msg := primitive.NewMessage(topic, []byte("sync-paused"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	start := time.Now()
	res, err := p.SendSync(ctx, msg)
	elapsed = time.Since(start)
	cancel()
	hist.Add(msg, res, err)
	require.NoError(t, g.Master.Resume())
	require.Error(t, err, "send to a paused master answered %+v after %v", res, elapsed)
	require.Less(t, elapsed, 30*time.Second, "send to a paused master hung")
	t.Logf("paused master: send failed after %v: %v", elapsed.Round(time.Millisecond), err)
	g.WaitSlaveInSync(t)
	waitStatus(t, send, primitive.SendOK)

	g.WaitSlaveCaughtUp(t)
	checkHistory(t, g, &hist, g.MasterAddr, g.SlaveAddr)
	counts := hist.Counts()
	require.Positive(t, counts["FLUSH_SLAVE_TIMEOUT"])
	require.Positive(t, counts["SLAVE_NOT_AVAILABLE"])
}

// waitStatus sends until a send answers want (other stored statuses are allowed while the
// master notices the change) and returns that answer's status and latency.
func waitStatus(t *testing.T, send func() (primitive.SendStatus, time.Duration), want primitive.SendStatus) (primitive.SendStatus, time.Duration) {
	t.Helper()
	var st primitive.SendStatus
	var elapsed time.Duration
	var seen []string
	harness.Eventually(t, 60*time.Second, func() error {
		st, elapsed = send()
		if st != want {
			seen = append(seen, StatusName(st))
			return fmt.Errorf("send answered %s, waiting for %s (so far %v)", StatusName(st), StatusName(want), seen)
		}
		return nil
	})
	return st, elapsed
}

// TestAsyncMasterIgnoresSlave: an ASYNC_MASTER answers SEND_OK without waiting for a slave,
// with the slave killed too; the restarted slave catches up on everything.
func TestAsyncMasterIgnoresSlave(t *testing.T) {
	cfg := DefaultGroupConfig()
	cfg.MasterRole = "ASYNC_MASTER"
	g := StartGroup(t, cfg)
	const topic = "E2EAsyncMaster"
	g.CreateTopic(t, topic, 4)
	p := newProducer(t, g, "pg-async-master")
	var hist History
	for i := 0; i < 20; i++ {
		mustSend(t, p, &hist, primitive.NewMessage(topic, []byte(fmt.Sprintf("async-master-%d", i))))
	}
	g.Slave.Kill()
	for i := 20; i < 40; i++ {
		mustSend(t, p, &hist, primitive.NewMessage(topic, []byte(fmt.Sprintf("async-master-%d", i))))
	}
	require.NoError(t, g.Slave.Restart())
	g.WaitSlaveInSync(t)
	g.WaitSlaveCaughtUp(t)
	checkHistory(t, g, &hist, g.MasterAddr, g.SlaveAddr)
}

package delaytest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// maxSlack bounds how late a due message may reach the consumer. Delivery is driven by a timer
// on the head entry and a dispatch wake-up of the held pull, so the measured slack is a few
// milliseconds; the bound is far above that so a busy machine does not fail the test, yet
// below the delay service's 5 s idle recheck, so a missing wake-up does.
const maxSlack = 4 * time.Second

// arrival is one delivery seen by a push consumer.
type arrival struct {
	at  time.Time
	msg *primitive.MessageExt
}

// recorder keeps what a push consumer received, by body, and answers with result.
type recorder struct {
	mu     sync.Mutex
	by     map[string][]arrival
	result consumer.ConsumeResult
}

func newRecorder(result consumer.ConsumeResult) *recorder {
	return &recorder{by: map[string][]arrival{}, result: result}
}

func (r *recorder) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.by[string(m.Body)] = append(r.by[string(m.Body)], arrival{now, m})
	}
	return r.result, nil
}

func (r *recorder) get(body string) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.by[body])
}

// waitCount waits until body was received at least n times.
func (r *recorder) waitCount(t *testing.T, body string, n int, timeout time.Duration) []arrival {
	t.Helper()
	harness.Eventually(t, timeout, func() error {
		if got := len(r.get(body)); got < n {
			return fmt.Errorf("%q received %d times, want %d", body, got, n)
		}
		return nil
	})
	return r.get(body)
}

// summary formats the minimum, median, 90th percentile and maximum of ds.
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[int(p*float64(len(s)-1))] }
	return fmt.Sprintf("n=%d min=%v p50=%v p90=%v max=%v", len(s), s[0], at(0.5), at(0.9), s[len(s)-1])
}

// TestDelayedSendsArriveAfterTheirLevel: messages sent with DELAY levels 1..3 reach a push
// consumer no earlier than the level's delay after the send, and within maxSlack after it.
func TestDelayedSendsArriveAfterTheirLevel(t *testing.T) {
	g := startGroup(t)
	const topic = "DelayTopic"
	g.createTopic(t, topic, 1)
	p := newProducer(t, g, "pg-delay")
	rec := newRecorder(consumer.ConsumeSuccess)
	startConsumer(t, g, "cg-delay", topic, rec.handle)

	// The consumer pulls the queue once an undelayed probe reaches it.
	sendSync(t, p, primitive.NewMessage(topic, []byte("probe")))
	rec.waitCount(t, "probe", 1, readyTimeout)

	const rounds = 10
	sentAt := map[string]time.Time{}
	levelOf := map[string]int{}
	for r := 0; r < rounds; r++ {
		for level := 1; level <= 3; level++ {
			body := fmt.Sprintf("delayed-L%d-%d", level, r)
			msg := primitive.NewMessage(topic, []byte(body))
			msg.WithDelayTimeLevel(level)
			sentAt[body], levelOf[body] = time.Now(), level
			sendSync(t, p, msg)
		}
	}
	slack := map[int][]time.Duration{}       // consumer receipt - (send start + delay)
	brokerSlack := map[int][]time.Duration{} // delivered store time - (born time + delay)
	for body, at := range sentAt {
		level := levelOf[body]
		delay := levelDelay(level)
		got := rec.waitCount(t, body, 1, readyTimeout)
		require.Len(t, got, 1, "%s delivered more than once", body)
		a := got[0]
		// Store timestamps and delivery times are whole milliseconds, so a message stored in
		// the millisecond its send began may be due up to 1 ms before send start + delay. Due
		// times are wall-clock times, so the receipt is compared on the wall clock too (Round(0)
		// drops the monotonic reading, which the VM's clock adjustments move apart from it).
		require.GreaterOrEqual(t, a.at.Round(0).Sub(at.Round(0)), delay-time.Millisecond, "%s (level %d) arrived early", body, level)
		stored := time.Duration(a.msg.StoreTimestamp-a.msg.BornTimestamp) * time.Millisecond
		require.GreaterOrEqual(t, stored, delay, "%s (level %d) stored in its topic early", body, level)
		require.Equal(t, topic, a.msg.Topic)
		require.Empty(t, a.msg.GetProperty("DELAY"), "the delivered copy must not be delayed again")
		require.Equal(t, topic, a.msg.GetProperty("REAL_TOPIC"))
		slack[level] = append(slack[level], a.at.Sub(at)-delay)
		brokerSlack[level] = append(brokerSlack[level], stored-delay)
	}
	var all []time.Duration
	for level := 1; level <= 3; level++ {
		t.Logf("level %d (%v): receipt slack %s; broker store slack %s", level, levelDelay(level), summary(slack[level]), summary(brokerSlack[level]))
		all = append(all, slack[level]...)
	}
	t.Logf("all levels: receipt slack %s", summary(all))
	require.Less(t, slices.Max(all), maxSlack, "a due message reached the consumer late")
}

// TestRetryLaterThenDeadLetter: a consumer that always answers ConsumeRetryLater gets the
// message again after the delay of level 3 + reconsumeTimes, with a growing reconsume count;
// past MaxReconsumeTimes it lands in %DLQ%<group>, readable by a consumer of that topic, with
// its original id and topic in properties.
func TestRetryLaterThenDeadLetter(t *testing.T) {
	g := startGroup(t)
	const (
		topic  = "RetryTopic"
		cg     = "cg-retry"
		maxRe  = 2
		retryT = "%RETRY%" + cg
		dlqT   = "%DLQ%" + cg
	)
	g.createTopic(t, topic, 1)

	// The broker creates the group's retry topic on the consumer's heartbeat and registers it.
	// The client reads routes at start and then every 30 s, so a first consumer makes the
	// broker create it and the one under test finds its route at start.
	stop := startConsumer(t, g, cg, topic, newRecorder(consumer.ConsumeSuccess).handle)
	rq := g.waitRoute(t, retryT)
	require.Equal(t, 1, rq.ReadQueueNums)
	require.Equal(t, 6, rq.Perm&6, "retry topic must be readable and writable")
	stop()
	// The stopped client must have left the group before the one under test starts: a
	// heartbeat it sent while shutting down can register it again on a connection it leaves
	// open, and the broker then keeps it (and the topic's only queue) until it expires.
	g.waitGroupEmpty(t, cg)

	rec := newRecorder(consumer.ConsumeRetryLater)
	startConsumer(t, g, cg, topic, rec.handle, consumer.WithMaxReconsumeTimes(maxRe))
	p := newProducer(t, g, "pg-retry")
	msg := primitive.NewMessage(topic, []byte("poison"))
	msg.WithTag("T1")
	res := sendSync(t, p, msg)

	// Deliveries at reconsumeTimes 0..maxRe; the last failure sends it to the DLQ.
	got := rec.waitCount(t, "poison", maxRe+1, readyTimeout)
	var slack []time.Duration
	for i, a := range got[:maxRe+1] {
		require.Equal(t, int32(i), a.msg.ReconsumeTimes, "delivery %d", i)
		require.Equal(t, topic, a.msg.Topic, "the client restores the original topic from RETRY_TOPIC")
		require.Equal(t, res.MsgID, a.msg.MsgId, "delivery %d keeps the message id", i)
		require.Equal(t, "T1", a.msg.GetTags())
		if i == 0 {
			continue
		}
		delay := levelDelay(3 + i - 1)
		gap := a.at.Sub(got[i-1].at)
		// The broker keeps time in whole milliseconds, as RocketMQ does: a send-back stored
		// 0.9 ms into a millisecond is due at the start of that millisecond plus the level, so
		// the gap seen from here may fall short of the level by less than one millisecond (one
		// run: 3.9998 s at 4 s).
		require.GreaterOrEqual(t, gap, delay-time.Millisecond, "retry %d came back before its delay level %d", i, 3+i-1)
		require.Equal(t, res.MsgID, a.msg.GetProperty("ORIGIN_MESSAGE_ID"))
		require.Equal(t, topic, a.msg.GetProperty("RETRY_TOPIC"))
		slack = append(slack, gap-delay)
	}
	t.Logf("retry gaps beyond their level (3, 4): %v", slack)

	dq := g.waitRoute(t, dlqT)
	require.Equal(t, 1, dq.ReadQueueNums, "the DLQ has one queue")
	require.NotZero(t, dq.Perm&4, "the DLQ must be readable (perm %d)", dq.Perm)
	dlq := newRecorder(consumer.ConsumeSuccess)
	startConsumer(t, g, "cg-dlq-reader", dlqT, dlq.handle)
	d := dlq.waitCount(t, "poison", 1, readyTimeout)[0].msg
	require.Equal(t, dlqT, d.Topic)
	require.Equal(t, res.MsgID, d.GetProperty("ORIGIN_MESSAGE_ID"))
	require.Equal(t, topic, d.GetProperty("RETRY_TOPIC"))
	require.Equal(t, int32(maxRe+1), d.ReconsumeTimes)
	require.Equal(t, "T1", d.GetTags())
	require.Len(t, rec.get("poison"), maxRe+1, "no delivery after the message went to the DLQ")
	n, err := g.maxOffset(dlqT, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "one dead letter")
}

// TestKillMasterWithPendingDelays: a master killed with -9 while level-2 messages are being
// delivered (just before delayOffset.json is rewritten, the worst moment) and level-5 messages
// are pending delivers every one after the restart. Copies delivered twice are only among the
// deliveries the last delayOffset.json written before the kill did not include (the restarted
// master skips those it finds in the log tail it re-indexes, by their DELAY_SOURCE), and no
// more than package schedule's bound: per level, the deliveries since that write started (at
// most a PersistInterval plus one write before the kill) plus one.
func TestKillMasterWithPendingDelays(t *testing.T) {
	g := startGroup(t)
	const (
		topic    = "KillTopic"
		nFast    = 60 // level 2, one every 50 ms: being delivered at the kill
		nSlow    = 20 // level 5: all pending at the kill
		fast     = 2
		slow     = 5
		killFrom = 10 // kill once level 2 delivered this many
		// killAge is how old delayOffset.json must be at the kill: most of the service's 1 s
		// PersistInterval.
		killAge = 800 * time.Millisecond
	)
	g.createTopic(t, topic, 1)
	p := newProducer(t, g, "pg-kill")
	levelOf := map[string]int{}
	sendDelayed(t, p, topic, slow, nSlow, 0, levelOf)
	sendDelayed(t, p, topic, fast, nFast, 50*time.Millisecond, levelOf)

	// Kill at the worst moment: level 2 delivering and delayOffset.json about to be rewritten,
	// so nearly a whole PersistInterval of deliveries is missing from it.
	var (
		atKill map[int32]int64
		path   string
	)
	require.NoError(t, pollFast(readyTimeout, func() error {
		if path == "" {
			if path = lookFile(g.storeDir, "delayOffset.json"); path == "" {
				return fmt.Errorf("no delayOffset.json yet")
			}
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if atKill, err = g.delayOffsets(); err != nil {
			return err
		}
		if atKill[fast] < killFrom {
			return fmt.Errorf("level %d delivered %d, waiting for %d", fast, atKill[fast], killFrom)
		}
		if age := time.Since(st.ModTime()); age < killAge {
			return fmt.Errorf("delayOffset.json is %v old, waiting for %v", age, killAge)
		}
		return nil
	}))
	killAt := time.Now()
	g.master.Kill()
	t.Logf("killed at level offsets %v (just before the kill)", atKill)
	require.Less(t, atKill[slow], int64(nSlow), "level %d messages must still be pending at the kill", slow)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	persisted, err := decodeDelayOffsets(data)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	writtenAt := st.ModTime()
	t.Logf("delayOffset.json at the kill: %v, written %v before the kill", persisted, killAt.Sub(writtenAt))

	restartAt := time.Now()
	require.NoError(t, g.master.Restart())
	g.waitMaster(t)
	waitDelayOffsets(t, g, map[int32]int64{fast: nFast, slow: nSlow})
	copies := readAllCopies(t, g, topic)
	perID := map[string]int{}
	preKill := map[int]int64{}    // copies stored before the restart, by level
	sinceWrite := map[int]int{}   // of those, first copies stored since the last write began
	firstAt := map[string]int64{} // store time of each message's first copy
	for _, m := range copies {
		level, ok := levelOf[m.MsgId]
		require.True(t, ok, "unknown message %s in %s", m.MsgId, topic)
		perID[m.MsgId]++
		if m.StoreTimestamp < restartAt.UnixMilli() {
			preKill[level]++
			if f, seen := firstAt[m.MsgId]; !seen || m.StoreTimestamp < f {
				firstAt[m.MsgId] = m.StoreTimestamp
			}
		}
	}
	require.Len(t, perID, nFast+nSlow, "every message is delivered")
	for id, at := range firstAt {
		if at >= writtenAt.Add(-writeAllowance).UnixMilli() {
			sinceWrite[levelOf[id]]++
		}
	}
	for _, level := range []int{fast, slow} {
		dups := 0
		for id, n := range perID {
			if levelOf[id] == level {
				require.LessOrEqual(t, n, 2, "%s stored %d times", id, n)
				dups += n - 1
			}
		}
		t.Logf("level %d: %d copies delivered before the kill, %d in delayOffset.json, %d delivered twice; %d deliveries since the last write began",
			level, preKill[level], persisted[int32(level)], dups, sinceWrite[level])
		require.LessOrEqual(t, persisted[int32(level)], preKill[level], "an offset passed an undelivered message")
		require.LessOrEqual(t, int64(dups), preKill[level]-persisted[int32(level)],
			"copies delivered twice beyond the deliveries delayOffset.json did not hold")
		require.LessOrEqual(t, dups, sinceWrite[level]+1, "more duplicates than the documented bound")
	}
}

// TestStopMasterWithPendingDelays: a master stopped cleanly (SIGTERM) while level-1 messages
// are being delivered and level-4 messages are pending delivers every message exactly once
// after the restart: the delay service writes its progress when it stops.
func TestStopMasterWithPendingDelays(t *testing.T) {
	g := startGroup(t)
	const topic = "StopTopic"
	g.createTopic(t, topic, 1)
	p := newProducer(t, g, "pg-stop")
	levelOf := map[string]int{}
	sendDelayed(t, p, topic, 4, 20, 0, levelOf)
	sendDelayed(t, p, topic, 1, 40, 50*time.Millisecond, levelOf)
	var atStop map[int32]int64
	require.NoError(t, pollFast(readyTimeout, func() error {
		var err error
		if atStop, err = g.delayOffsets(); err != nil {
			return err
		}
		if atStop[1] < 10 {
			return fmt.Errorf("level 1 delivered %d, waiting for 10", atStop[1])
		}
		return nil
	}))
	require.NoError(t, g.master.Stop(30*time.Second))
	t.Logf("stopped at level offsets %v (just before the stop)", atStop)
	require.NoError(t, g.master.Restart())
	g.waitMaster(t)
	waitDelayOffsets(t, g, map[int32]int64{1: 40, 4: 20})
	perID := map[string]int{}
	for _, m := range readAllCopies(t, g, topic) {
		_, ok := levelOf[m.MsgId]
		require.True(t, ok, "unknown message %s in %s", m.MsgId, topic)
		perID[m.MsgId]++
	}
	require.Len(t, perID, len(levelOf), "every message is delivered")
	for id, n := range perID {
		require.Equal(t, 1, n, "%s (level %d) delivered %d times across a clean restart", id, levelOf[id], n)
	}
}

// sendDelayed sends n messages at level to topic, every apart (0: back to back), and records
// their ids in levelOf.
func sendDelayed(t *testing.T, p rocketmq.Producer, topic string, level, n int, every time.Duration, levelOf map[string]int) {
	t.Helper()
	var tick <-chan time.Time
	if every > 0 {
		tk := time.NewTicker(every)
		defer tk.Stop()
		tick = tk.C
	}
	for i := 0; i < n; i++ {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("L%d-%d", level, i)))
		msg.WithDelayTimeLevel(level)
		levelOf[sendSync(t, p, msg).MsgID] = level
		if tick != nil {
			<-tick
		}
	}
}

// waitDelayOffsets waits until GET_ALL_DELAY_OFFSET reports want for each of its levels.
func waitDelayOffsets(t *testing.T, g *group, want map[int32]int64) {
	t.Helper()
	harness.Eventually(t, readyTimeout, func() error {
		got, err := g.delayOffsets()
		if err != nil {
			return err
		}
		for l, n := range want {
			if got[l] != n {
				return fmt.Errorf("delay offsets %v, want %v", got, want)
			}
		}
		return nil
	})
}

// readAllCopies reads every message stored in topic queue 0 with a fresh consumer group, keyed
// by queue offset (so a consumer-side redelivery is not mistaken for a second stored copy).
func readAllCopies(t *testing.T, g *group, topic string) map[int64]*primitive.MessageExt {
	t.Helper()
	total, err := g.maxOffset(topic, 0)
	require.NoError(t, err)
	var mu sync.Mutex
	copies := map[int64]*primitive.MessageExt{}
	stop := startConsumer(t, g, "cg-count-"+topic, topic, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			copies[m.QueueOffset] = m
		}
		return consumer.ConsumeSuccess, nil
	})
	harness.Eventually(t, readyTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		if int64(len(copies)) < total {
			return fmt.Errorf("read %d of %d stored copies", len(copies), total)
		}
		return nil
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(copies)
}

// writeAllowance is how long before delayOffset.json's modification time its snapshot may have
// been taken: the file's data is written right after the snapshot is encoded (the fsync and the
// rename come later and do not move the time), so this covers encoding, a scheduling pause and
// the coarse file-time clock.
const writeAllowance = 200 * time.Millisecond

// pollFast polls cond every 5 ms until it returns nil or timeout passes (the kill must land at a
// chosen moment, so the usual coarser poll is too slow here).
func pollFast(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lookFile returns the path of the first file called name under root, or "".
func lookFile(root, name string) string {
	var found string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name && found == "" {
			found = path
		}
		return nil
	})
	return found
}

package timertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

const (
	queues       = 4
	readyTimeout = 60 * time.Second
)

var instanceSeq atomic.Int64

func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func newProducer(t *testing.T, g *e2e.Group) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName("pg-timer"),
		producer.WithInstanceName(instance("pg-timer")),
		producer.WithRetry(2),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// sentMsg is one acknowledged send: its key, body and the earliest time it may arrive (ms).
type sentMsg struct {
	key, body string
	want      int64
}

// send sends one message; timer sets its timer (WithDelayTimestamp or a property).
func send(t *testing.T, p rocketmq.Producer, topic, key string, want int64, timer func(*primitive.Message)) sentMsg {
	t.Helper()
	body := key + "-" + strconv.FormatInt(want, 10)
	msg := primitive.NewMessage(topic, []byte(body))
	msg.WithKeys([]string{key})
	timer(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, msg)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status, res.String())
	return sentMsg{key: key, body: body, want: want}
}

// received is what the consumer saw, per key.
type received struct {
	mu   sync.Mutex
	msgs map[string][]*primitive.MessageExt
}

func (r *received) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.msgs[m.GetKeys()] = append(r.msgs[m.GetKeys()], m)
	}
	return consumer.ConsumeSuccess, nil
}

func (r *received) has(keys []sentMsg) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range keys {
		if len(r.msgs[s.key]) == 0 {
			return false
		}
	}
	return true
}

func startConsumer(t *testing.T, g *e2e.Group, group, topic string) *received {
	t.Helper()
	r := &received{msgs: map[string][]*primitive.MessageExt{}}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{g.NamesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, r.handle))
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Shutdown() })
	return r
}

// checkDelivered holds every sent message to: received, body intact, never early; it returns
// the lateness of each (TIMER_DEQUEUE_MS - the time asked, ms).
func checkDelivered(t *testing.T, r *received, sent []sentMsg) []int64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var late []int64
	for _, s := range sent {
		got := r.msgs[s.key]
		require.NotEmpty(t, got, "timer message %s lost", s.key)
		for _, m := range got {
			require.Equal(t, s.body, string(m.Body), "body of %s", s.key)
			deq, err := strconv.ParseInt(m.GetProperty("TIMER_DEQUEUE_MS"), 10, 64)
			require.NoError(t, err, "%s has no TIMER_DEQUEUE_MS: %v", s.key, m.GetProperties())
			require.GreaterOrEqual(t, deq, s.want, "%s delivered %d ms early", s.key, s.want-deq)
			require.GreaterOrEqual(t, m.StoreTimestamp, s.want, "%s stored before its time", s.key)
			require.Empty(t, m.GetProperty("REAL_TOPIC"))
		}
		late = append(late, mustInt(t, got[0].GetProperty("TIMER_DEQUEUE_MS"))-s.want)
	}
	return late
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

func percentiles(v []int64) (p50, p99, maxV int64) {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) int64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

// stored is the number of records in topic's queues on the broker at addr.
func stored(t *testing.T, g *e2e.Group, addr, topic string) int64 {
	t.Helper()
	var n int64
	for q := range queues {
		off, err := g.MaxOffset(addr, topic, q)
		require.NoError(t, err)
		n += off
	}
	return n
}

// timerStatus is the timer part of a broker's /status.
type timerStatus struct {
	Timer *struct {
		Delivering bool    `json:"delivering"`
		Pending    int64   `json:"pending"`
		Delivered  int64   `json:"delivered"`
		Skipped    int64   `json:"skipped"`
		Cancelled  int64   `json:"cancelled"`
		Markers    int64   `json:"markers"`
		Lateness   []int64 `json:"latenessHistogram"`
		LateSumMs  int64   `json:"latenessSumMs"`
	} `json:"timer"`
}

func status(hostport string) (timerStatus, error) {
	var st timerStatus
	resp, err := http.Get("http://" + hostport + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func startGroup(t *testing.T) *e2e.Group {
	cfg := e2e.DefaultGroupConfig()
	cfg.ReadyTimeout = readyTimeout
	cfg.ExtraMaster = []string{"messageDelayLevel=1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"}
	cfg.ExtraSlave = cfg.ExtraMaster
	return e2e.StartGroup(t, cfg)
}

func TestTimerMessages(t *testing.T) {
	g := startGroup(t)
	const topic = "TimerTopic"
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g)
	r := startConsumer(t, g, "cg-timer", topic)

	var sent, delayLevel []sentMsg
	now := time.Now()
	for i := range 20 {
		want := now.Add(3 * time.Second).Add(time.Duration(i*37) * time.Millisecond)
		sent = append(sent, send(t, p, topic, "ts3-"+strconv.Itoa(i), want.UnixMilli(), func(m *primitive.Message) { m.WithDelayTimestamp(want) }))
	}
	for i := range 10 {
		want := now.Add(12 * time.Second)
		sent = append(sent, send(t, p, topic, "ts12-"+strconv.Itoa(i), want.UnixMilli(), func(m *primitive.Message) { m.WithDelayTimestamp(want) }))
	}
	for i := range 10 {
		// TIMER_DELAY_SEC counts from the broker's receive time, after this clock reading.
		want := time.Now().Add(5 * time.Second).UnixMilli()
		sent = append(sent, send(t, p, topic, "sec5-"+strconv.Itoa(i), want, func(m *primitive.Message) { m.WithProperty("TIMER_DELAY_SEC", "5") }))
	}
	for i := range 5 {
		want := time.Now().Add(2 * time.Second).UnixMilli() // level 2 is 2s
		delayLevel = append(delayLevel, send(t, p, topic, "lvl2-"+strconv.Itoa(i), want, func(m *primitive.Message) { m.WithDelayTimeLevel(2) }))
	}
	// A time already past arrives at once.
	past := send(t, p, topic, "past", time.Now().Add(-time.Hour).UnixMilli(), func(m *primitive.Message) { m.WithDelayTimestamp(time.Now().Add(-time.Hour)) })

	// Nothing timed arrives before its time: right now only the past one and nothing else
	// of the timer batch should be there.
	require.Eventually(t, func() bool { return r.has([]sentMsg{past}) }, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return r.has(sent) && r.has(delayLevel) }, 60*time.Second, 50*time.Millisecond, "timer messages not all delivered\n%s", g.Logs(4096))

	late := checkDelivered(t, r, sent)
	p50, p99, mx := percentiles(late)
	t.Logf("lateness of %d timer messages against the time asked (TIMER_DEQUEUE_MS): p50 %d ms, p99 %d ms, max %d ms (precision 1000 ms: up to 1000 ms is the slot)", len(late), p50, p99, mx)
	r.mu.Lock()
	for _, s := range delayLevel {
		m := r.msgs[s.key][0]
		require.GreaterOrEqual(t, m.StoreTimestamp, s.want-50, "delay level 2 delivered early") // the level counts from the store time
		require.Equal(t, s.body, string(m.Body))
	}
	dups := 0
	for _, v := range r.msgs {
		dups += len(v) - 1
	}
	r.mu.Unlock()
	require.Zero(t, dups, "no fault, no repeat")

	// The delivered copies are on the slave.
	want := stored(t, g, g.MasterAddr, topic)
	require.Equal(t, int64(len(sent)+len(delayLevel)+1), want)
	require.NoError(t, harness.WaitFor(30*time.Second, func() error {
		if n := stored(t, g, g.SlaveAddr, topic); n != want {
			return fmt.Errorf("slave holds %d of %d", n, want)
		}
		return nil
	}))
	var st timerStatus
	// Pending is counted at each checkpoint (every timerFlushIntervalMs).
	require.NoError(t, harness.WaitFor(10*time.Second, func() error {
		var err error
		if st, err = status(g.MasterHTTP); err != nil {
			return err
		}
		if st.Timer == nil || st.Timer.Pending != 0 {
			return fmt.Errorf("timer status %+v", st.Timer)
		}
		return nil
	}))
	require.True(t, st.Timer.Delivering)
	require.Equal(t, int64(len(sent)), st.Timer.Delivered)
	t.Logf("broker lateness histogram (<=10,50,100,250,500,1000,2500,5000,10000,60000 ms, more; against the end of the slot): %v", st.Timer.Lateness)
	sst, err := status(g.SlaveHTTP)
	require.NoError(t, err)
	require.False(t, sst.Timer.Delivering, "a slave never delivers")
	require.Zero(t, sst.Timer.Delivered)
}

func TestTimerRefusals(t *testing.T) {
	g := startGroup(t)
	const topic = "TimerRefused"
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g)
	msg := primitive.NewMessage(topic, []byte("far"))
	msg.WithProperty("TIMER_DELAY_SEC", strconv.Itoa(4*24*3600))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, msg)
	require.Error(t, err)
	require.Contains(t, err.Error(), "timer message illegal")
	require.Zero(t, stored(t, g, g.MasterAddr, topic))
}

func TestTimerMasterKilled(t *testing.T) {
	g := startGroup(t)
	const topic = "TimerCrash"
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g)
	var sent []sentMsg
	start := time.Now()
	const n = 120
	for i := range n {
		want := start.Add(2*time.Second + time.Duration(i)*100*time.Millisecond) // 2 s .. 14 s
		sent = append(sent, send(t, p, topic, "k"+strconv.Itoa(i), want.UnixMilli(), func(m *primitive.Message) { m.WithDelayTimestamp(want) }))
	}
	// Kill the master while about half the timers are delivered.
	require.NoError(t, harness.WaitFor(30*time.Second, func() error {
		if d := stored(t, g, g.MasterAddr, topic); d < n/3 {
			return fmt.Errorf("%d delivered", d)
		}
		return nil
	}))
	g.Master.Kill()
	<-g.Master.Done()
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)

	r := startConsumer(t, g, "cg-timer-crash", topic)
	require.Eventually(t, func() bool { return r.has(sent) }, 90*time.Second, 50*time.Millisecond, "timer messages lost after kill -9\n%s", g.Logs(4096))
	late := checkDelivered(t, r, sent)
	total := stored(t, g, g.MasterAddr, topic)
	dups := total - n
	p50, p99, mx := percentiles(late)
	t.Logf("kill -9 with timers pending: %d sent, %d copies stored, %d duplicates; lateness p50 %d ms, p99 %d ms, max %d ms (includes the restart)", n, total, dups, p50, p99, mx)
	require.GreaterOrEqual(t, dups, int64(0))
	// At most what a checkpoint interval (1 s) plus the slot being delivered holds: 10 timers
	// a second here; allow several intervals for a slow machine's last checkpoint.
	require.LessOrEqual(t, dups, int64(40), "duplicates beyond a few checkpoint intervals")
	require.True(t, g.Slave.Running() && g.Master.Running())
}

// TestTimerCancel: of two timers for the same time, the one a delete marker (RocketMQ 5's
// TIMER_DEL_UNIQKEY = topic+"+"+message id, sent for the same time) names never arrives, the
// other does, across a kill -9 and restart of the master between the marker and the due time;
// the marker itself never arrives, on the master nor on the slave.
func TestTimerCancel(t *testing.T) {
	g := startGroup(t)
	const topic = "TimerCancel"
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g)
	want := time.Now().Add(8 * time.Second)
	sendTimer := func(key string, extra func(*primitive.Message)) *primitive.SendResult {
		msg := primitive.NewMessage(topic, []byte(key))
		msg.WithKeys([]string{key})
		msg.WithDelayTimestamp(want)
		extra(msg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, msg)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status, res.String())
		return res
	}
	cancelled := sendTimer("cancelled", func(*primitive.Message) {})
	sendTimer("kept", func(*primitive.Message) {})
	sendTimer("marker", func(m *primitive.Message) { m.WithProperty("TIMER_DEL_UNIQKEY", topic+"+"+cancelled.MsgID) })

	g.Master.Kill()
	<-g.Master.Done()
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)

	r := startConsumer(t, g, "cg-timer-cancel", topic)
	require.Eventually(t, func() bool { return r.has([]sentMsg{{key: "kept"}}) }, 60*time.Second, 50*time.Millisecond, "the timer not cancelled is lost\n%s", g.Logs(4096))
	var st timerStatus
	require.NoError(t, harness.WaitFor(30*time.Second, func() error {
		var err error
		if st, err = status(g.MasterHTTP); err != nil {
			return err
		}
		if st.Timer == nil || st.Timer.Pending != 0 || st.Timer.Cancelled != 1 {
			return fmt.Errorf("timer status %+v", st.Timer)
		}
		return nil
	}))
	require.Equal(t, int64(1), st.Timer.Markers)
	require.Equal(t, int64(1), stored(t, g, g.MasterAddr, topic), "only the timer not cancelled is stored")
	require.NoError(t, harness.WaitFor(30*time.Second, func() error {
		if n := stored(t, g, g.SlaveAddr, topic); n != 1 {
			return fmt.Errorf("slave holds %d", n)
		}
		return nil
	}))
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.msgs["kept"], 1)
	require.Equal(t, "kept", string(r.msgs["kept"][0].Body))
	require.NotContains(t, r.msgs, "cancelled")
	require.NotContains(t, r.msgs, "marker")
	require.True(t, g.Slave.Running() && g.Master.Running())
}

package filtertest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
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

// clientLog receives rocketmq-client-go's log (rlog is process-wide): warnings and errors are
// kept, so a test can check what the client tells its user.
type clientLog struct {
	mu    sync.Mutex
	lines []string
}

var clog = &clientLog{}

func TestMain(m *testing.M) {
	rlog.SetLogger(clog)
	os.Exit(m.Run())
}

func (l *clientLog) record(level, msg string, fields map[string]interface{}) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(level + " " + msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, fields[k])
	}
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
}

func (l *clientLog) Debug(string, map[string]interface{}) {}
func (l *clientLog) Info(string, map[string]interface{})  {}
func (l *clientLog) Warning(msg string, fields map[string]interface{}) {
	l.record("WARN", msg, fields)
}
func (l *clientLog) Error(msg string, fields map[string]interface{}) { l.record("ERROR", msg, fields) }
func (l *clientLog) Fatal(msg string, fields map[string]interface{}) { l.record("FATAL", msg, fields) }
func (l *clientLog) Level(string)                                    {}
func (l *clientLog) OutputPath(string) error                         { return nil }

// matching returns the kept lines containing every one of parts.
func (l *clientLog) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// readyTimeout bounds each wait for the group or the clients (2 cores shared with builds).
const readyTimeout = 60 * time.Second

// disabledRemark is RocketMQ's answer to a SQL92 pull when enablePropertyFilter is off.
const disabledRemark = "The broker does not support consumer to filter message by SQL92"

var instanceSeq atomic.Int64

// instance gives every client its own instance name (distinct client ids at the broker).
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func newProducer(t *testing.T, g *e2e.Group) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName("pg-filter"),
		producer.WithInstanceName(instance("pg-filter")),
		producer.WithRetry(2),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// sent is one message the test sent: its body, its property a ("" for none), its id.
type sent struct {
	body, a, id string
}

// sendBacklog sends a0..a9 (a = 0..9), then "none" (no a) and "text" (a = 'x'), to topic's
// single queue, each with SEND_OK.
func sendBacklog(t *testing.T, p rocketmq.Producer, topic string) []sent {
	t.Helper()
	var out []sent
	send := func(body, a string) {
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithProperty("n", strconv.Itoa(len(out)))
		if a != "" {
			msg.WithProperty("a", a)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, msg)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status, res.String())
		out = append(out, sent{body, a, res.MsgID})
	}
	for i := 0; i < 10; i++ {
		send(fmt.Sprintf("a%d-%s", i, strings.Repeat("x", i*100)), strconv.Itoa(i))
	}
	send("none", "")
	send("text", "x")
	return out
}

// recorder keeps what a push consumer received.
type recorder struct {
	mu   sync.Mutex
	msgs []*primitive.MessageExt
}

func (r *recorder) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	r.mu.Lock()
	r.msgs = append(r.msgs, msgs...)
	r.mu.Unlock()
	return consumer.ConsumeSuccess, nil
}

func (r *recorder) got() []*primitive.MessageExt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*primitive.MessageExt(nil), r.msgs...)
}

func startSQLConsumer(t *testing.T, g *e2e.Group, group, topic, expr string, r *recorder) {
	t.Helper()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{g.NamesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: expr}, r.handle))
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Shutdown() })
}

func startPullConsumer(t *testing.T, g *e2e.Group, group, topic, expr string) rocketmq.PullConsumer {
	t.Helper()
	c, err := rocketmq.NewPullConsumer(
		consumer.WithNameServer([]string{g.NamesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumerModel(consumer.Clustering),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: expr}))
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

// TestSQL92PushAndPullConsumers: with enablePropertyFilter=true a push consumer with
// "a > 5" receives exactly a6..a9, byte for byte and once each, and its committed offset moves
// past the messages it was not sent ("none" has no a; "text" is not a number). A pull
// consumer's PullFrom is filtered the same way; a selector that does not compile is refused.
func TestSQL92PushAndPullConsumers(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.ExtraMaster = []string{"enablePropertyFilter=true"}
	cfg.ExtraSlave = []string{"enablePropertyFilter=true"}
	g := e2e.StartGroup(t, cfg)
	const topic = "SqlTopic"
	g.CreateTopic(t, topic, 1)
	p := newProducer(t, g)
	all := sendBacklog(t, p, topic)

	rec := &recorder{}
	startSQLConsumer(t, g, "cg-sql", topic, "a > 5", rec)
	want := map[string]sent{}
	for _, s := range all {
		if n, err := strconv.Atoi(s.a); err == nil && n > 5 {
			want[s.id] = s
		}
	}
	require.Len(t, want, 4)
	// The group's offset reaches the queue's end: every message was passed on or delivered.
	harness.Eventually(t, readyTimeout, func() error {
		off, err := g.ConsumerOffset(g.MasterAddr, "cg-sql", topic, 0)
		if err != nil {
			return err
		}
		if off < int64(len(all)) || len(rec.got()) < len(want) {
			return fmt.Errorf("committed offset %d of %d, %d of %d delivered", off, len(all), len(rec.got()), len(want))
		}
		return nil
	})
	got := rec.got()
	require.Len(t, got, len(want), "delivered exactly once each: %v", bodiesOf(got))
	for _, m := range got {
		w, ok := want[m.MsgId]
		require.True(t, ok, "delivered %q (a=%q), which does not match a > 5", m.Body, m.GetProperty("a"))
		require.Equal(t, w.body, string(m.Body), "byte-exact body")
		require.Equal(t, w.a, m.GetProperty("a"))
		require.Equal(t, topic, m.Topic)
		delete(want, m.MsgId)
	}
	require.Empty(t, want)

	// The pull consumer's PullFrom carries its SQL92 selector on every pull.
	pc := startPullConsumer(t, g, "cg-sql-pull", topic, "a IS NULL OR a BETWEEN 2 AND 3")
	mq := &primitive.MessageQueue{Topic: topic, BrokerName: e2e.BrokerName, QueueId: 0}
	var res *primitive.PullResult
	harness.Eventually(t, readyTimeout, func() error {
		var err error
		res, err = pc.PullFrom(context.Background(), mq, 0, 32)
		if err != nil {
			return err
		}
		if res.Status != primitive.PullFound {
			return fmt.Errorf("pull status %v", res.Status)
		}
		return nil
	})
	require.Equal(t, []string{all[2].body, all[3].body, "none"}, bodiesOf(res.GetMessageExts()))
	require.Equal(t, int64(len(all)), res.NextBeginOffset)

	bad := startPullConsumer(t, g, "cg-sql-bad", topic, "a > ")
	_, err := bad.PullFrom(context.Background(), &primitive.MessageQueue{Topic: topic, BrokerName: e2e.BrokerName, QueueId: 0}, 0, 32)
	require.Error(t, err)
	require.Contains(t, err.Error(), "Response Code: 23")
	require.Contains(t, err.Error(), "invalid SQL92 expression at line 1, column 5")
	t.Logf("a selector that does not compile, as PullFrom returns it: %v", err)

	// A push consumer whose selector does not compile: its heartbeat is kept (so its
	// producer and other groups stay registered) and its pulls are FILTER_DATA_NOT_EXIST,
	// which the client's pull warning shows with the parse error.
	badRec := &recorder{}
	startSQLConsumer(t, g, "cg-sql-badpush", topic, "a > > 5", badRec)
	var warnings []string
	harness.Eventually(t, readyTimeout, func() error {
		warnings = clog.matching("pull message from broker error", "unknown Response Code: 27,", "Your expression may be wrong!", "invalid SQL92 expression at line 1, column 5")
		if len(warnings) == 0 {
			return fmt.Errorf("no pull warning with FILTER_DATA_NOT_EXIST yet")
		}
		return nil
	})
	t.Logf("a push consumer's selector that does not compile, as its user sees it: %s", warnings[0])
	require.Empty(t, badRec.got())
}

// TestSQL92RefusedWhenDisabled: with enablePropertyFilter=false the same push consumer starts
// and receives nothing; rocketmq-client-go surfaces the broker's refusal only in its log (its
// pull warning, every few seconds per queue), and PullFrom returns it as an error.
func TestSQL92RefusedWhenDisabled(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.NoSlave = true
	cfg.MasterRole = "ASYNC_MASTER"
	g := e2e.StartGroup(t, cfg)
	const topic = "SqlOff"
	g.CreateTopic(t, topic, 1)
	p := newProducer(t, g)
	all := sendBacklog(t, p, topic)

	rec := &recorder{}
	startSQLConsumer(t, g, "cg-off", topic, "a > 5", rec)
	var warnings []string
	harness.Eventually(t, readyTimeout, func() error {
		warnings = clog.matching("pull message from broker error", "unknown Response Code: 1,", disabledRemark)
		if len(warnings) == 0 {
			return fmt.Errorf("no pull warning with the refusal yet")
		}
		return nil
	})
	t.Logf("what the push consumer's user sees: %s", warnings[0])
	require.Empty(t, rec.got(), "nothing is delivered")
	off, err := g.ConsumerOffset(g.MasterAddr, "cg-off", topic, 0)
	require.NoError(t, err)
	require.LessOrEqual(t, off, int64(0), "the group did not move past the backlog")
	max, err := g.MaxOffset(g.MasterAddr, topic, 0)
	require.NoError(t, err)
	require.Equal(t, int64(len(all)), max)

	pc := startPullConsumer(t, g, "cg-off-pull", topic, "a > 5")
	_, err = pc.PullFrom(context.Background(), &primitive.MessageQueue{Topic: topic, BrokerName: e2e.BrokerName, QueueId: 0}, 0, 32)
	require.Error(t, err)
	require.Equal(t, "unknown Response Code: 1, remark: "+disabledRemark, err.Error())
}

func bodiesOf(msgs []*primitive.MessageExt) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, string(m.Body))
	}
	return out
}

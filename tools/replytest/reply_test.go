package replytest

import (
	"context"
	"fmt"
	"os"
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
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

// readyTimeout bounds each wait for the group or the clients (2 cores shared with builds).
const readyTimeout = 60 * time.Second

// replyTopic is the e2e cluster's request-reply topic.
const replyTopic = e2e.ClusterName + "_REPLY_TOPIC"

var instanceSeq atomic.Int64

// instance gives every client its own instance name (distinct client ids at the broker).
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func newProducer(t *testing.T, g *e2e.Group, group string, retries int) rocketmq.Producer {
	t.Helper()
	p, _ := newNamedProducer(t, g, group, retries)
	return p
}

// newNamedProducer also returns the producer's instance name (its client id is ip@name).
func newNamedProducer(t *testing.T, g *e2e.Group, group string, retries int) (rocketmq.Producer, string) {
	t.Helper()
	name := instance(group)
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName(group),
		producer.WithInstanceName(name),
		producer.WithRetry(retries),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p, name
}

// warmRequester makes the master know the requester as a producer before it sends requests.
// rocketmq-client-go heartbeats a broker only once it knows a route through it (its first
// heartbeat a second after start); a reply that arrives before then finds no requester, as
// with RocketMQ (the client's own example sleeps before replying). A send to another topic
// gives the client the route; the master's log shows the heartbeat.
func warmRequester(t *testing.T, g *e2e.Group, p rocketmq.Producer, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, primitive.NewMessage("WarmupTopic", []byte("warm-up")))
	require.NoError(t, err)
	waitLog(t, g.Master, "producer registered", "@"+name+" ")
}

// waitLog waits until one line of p's log holds every part.
func waitLog(t *testing.T, p *harness.Process, parts ...string) {
	t.Helper()
	harness.Eventually(t, readyTimeout, func() error {
		for _, line := range strings.Split(p.LogTail(1<<20), "\n") {
			all := true
			for _, part := range parts {
				all = all && strings.Contains(line, part)
			}
			if all {
				return nil
			}
		}
		return fmt.Errorf("no log line with %q yet", parts)
	})
}

// replyBody is what the replier answers to a request body.
func replyBody(req []byte) []byte { return append([]byte("reply:"), req...) }

// replier consumes topic and answers every request with CreateReplyMessage through its own
// producer; hold, when set, is waited on before each reply is sent.
type replier struct {
	t     *testing.T
	p     rocketmq.Producer
	hold  chan struct{}
	mu    sync.Mutex
	errs  []error
	sent  []*primitive.SendResult
	calls atomic.Int64
}

func startReplier(t *testing.T, g *e2e.Group, topic string, retries int, hold chan struct{}) *replier {
	t.Helper()
	r := &replier{t: t, p: newProducer(t, g, "pg-replier", retries), hold: hold}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{g.NamesrvAddr}),
		consumer.WithGroupName("cg-replier"),
		consumer.WithInstance(instance("cg-replier")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			if r.hold != nil {
				<-r.hold
			}
			r.calls.Add(1)
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err != nil {
				r.record(nil, err)
				continue
			}
			reply.Body = replyBody(m.Body) // CreateReplyMessage drops the body it is given
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			res, err := r.p.SendSync(sctx, reply)
			cancel()
			r.record(res, err)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Shutdown() })
	return r
}

func (r *replier) record(res *primitive.SendResult, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, err)
		return
	}
	r.sent = append(r.sent, res)
}

func (r *replier) results() ([]*primitive.SendResult, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*primitive.SendResult(nil), r.sent...), append([]error(nil), r.errs...)
}

// metric reads one series from a /metrics page (0 when absent).
func metric(t *testing.T, hostport, series string) float64 {
	t.Helper()
	m, err := harness.Metrics(hostport)
	require.NoError(t, err)
	return m[series]
}

// TestRequestReplyRoundTrip: Request and RequestAsync each get their own reply, byte for byte
// and once; every reply is stored in the reply topic on the master and replicated to the slave.
func TestRequestReplyRoundTrip(t *testing.T) {
	g := e2e.StartGroup(t, e2e.DefaultGroupConfig())
	const topic = "RequestTopic"
	g.CreateTopic(t, topic, 2)
	g.WaitRoute(t, replyTopic)
	r := startReplier(t, g, topic, 2, nil)
	req, name := newNamedProducer(t, g, "pg-requester", 2)
	warmRequester(t, g, req, name)

	const syncN, asyncN = 12, 8
	// Synchronous requests, one at a time: each returns its own reply.
	for i := 0; i < syncN; i++ {
		body := []byte(fmt.Sprintf("sync-%d-%s", i, strings.Repeat("b", i*37)))
		msg := primitive.NewMessage(topic, body)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		reply, err := req.Request(ctx, 20*time.Second, msg)
		cancel()
		require.NoError(t, err, "request %d\n%s", i, g.Logs(20))
		require.Equal(t, replyBody(body), reply.Body, "byte-exact reply to request %d", i)
		require.Equal(t, msg.GetProperty(primitive.PropertyCorrelationID), reply.GetProperty(primitive.PropertyCorrelationID))
		require.Equal(t, "reply", reply.GetProperty(primitive.PropertyMsgType))
		require.NotEmpty(t, reply.GetProperty("PUSH_REPLY_TIME"), "the broker stamps the push time")
	}
	// Asynchronous requests, all in flight at once. rocketmq-client-go calls a RequestAsync
	// callback twice for one reply (once on arrival, once more when it deletes the request from
	// its cache, whose eviction hook runs the callback again): the broker's single push is
	// checked on its metrics below, the callbacks are counted per request.
	type asyncResult struct {
		i   int
		msg *primitive.Message
		err error
	}
	done := make(chan asyncResult, asyncN)
	for i := 0; i < asyncN; i++ {
		i := i
		body := []byte(fmt.Sprintf("async-%d", i))
		err := req.RequestAsync(context.Background(), 20*time.Second, func(_ context.Context, m *primitive.Message, err error) {
			done <- asyncResult{i, m, err}
		}, primitive.NewMessage(topic, body))
		require.NoError(t, err)
	}
	seen := map[int]int{}
	deadline := time.After(readyTimeout)
	for len(seen) < asyncN {
		select {
		case res := <-done:
			require.NoError(t, res.err, "async request %d", res.i)
			require.Equal(t, replyBody([]byte(fmt.Sprintf("async-%d", res.i))), res.msg.Body)
			seen[res.i]++
		case <-deadline:
			t.Fatalf("async replies: %d of %d\n%s", len(seen), asyncN, g.Logs(40))
		}
	}

	calls := 0
	for _, n := range seen {
		calls += n
	}
	t.Logf("%d async requests, %d callbacks so far (the client may call one twice)", asyncN, calls)

	// Invariants: each reply sent was answered SEND_OK (stored, replicated), the reply topic holds
	// exactly those, on the master and on the slave, and the master counted every push.
	// (The replier's answer comes after the push: wait for the last ones.)
	var sent []*primitive.SendResult
	var errs []error
	harness.Eventually(t, readyTimeout, func() error {
		if sent, errs = r.results(); len(sent)+len(errs) < syncN+asyncN {
			return fmt.Errorf("%d of %d replies answered", len(sent)+len(errs), syncN+asyncN)
		}
		return nil
	})
	require.Empty(t, errs)
	require.Len(t, sent, syncN+asyncN)
	for _, s := range sent {
		require.Equal(t, primitive.SendOK, s.Status, s.String())
		require.Equal(t, replyTopic, s.MessageQueue.Topic)
	}
	max, err := g.MaxOffset(g.MasterAddr, replyTopic, 0)
	require.NoError(t, err)
	require.Equal(t, int64(syncN+asyncN), max)
	harness.Eventually(t, readyTimeout, func() error {
		smax, err := g.MaxOffset(g.SlaveAddr, replyTopic, 0)
		if err != nil {
			return err
		}
		if smax != max {
			return fmt.Errorf("slave holds %d replies of %d", smax, max)
		}
		return nil
	})
	require.Equal(t, float64(syncN+asyncN), metric(t, g.MasterHTTP, "rmqha_broker_reply_pushed_total"))
	require.Equal(t, float64(syncN+asyncN), metric(t, g.MasterHTTP, "rmqha_broker_reply_stored_total"))
	require.Equal(t, float64(0), metric(t, g.MasterHTTP, `rmqha_broker_reply_not_pushed_total{reason="requester_not_found"}`))
	require.True(t, g.Master.Running(), "master alive")
	require.True(t, g.Slave.Running(), "slave alive")
}

// TestRequestReplyRequesterGone: the requester shuts down before its reply is sent; the
// replier's send is answered SYSTEM_ERROR "channel of <id> not found" and the reply is stored.
func TestRequestReplyRequesterGone(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.NoSlave = true
	cfg.MasterRole = "ASYNC_MASTER"
	g := e2e.StartGroup(t, cfg)
	const topic = "RequestGone"
	g.CreateTopic(t, topic, 1)
	g.WaitRoute(t, replyTopic)
	hold := make(chan struct{})
	r := startReplier(t, g, topic, 0, hold) // no retries: one stored copy per reply

	req, name := newNamedProducer(t, g, "pg-gone", 2)
	warmRequester(t, g, req, name)
	msg := primitive.NewMessage(topic, []byte("who is there"))
	errc := make(chan error, 1)
	require.NoError(t, req.RequestAsync(context.Background(), 30*time.Second, func(_ context.Context, _ *primitive.Message, err error) {
		errc <- err
	}, msg))
	requester := msg.GetProperty(primitive.PropertyMessageReplyToClient)
	require.NotEmpty(t, requester)
	// The request is stored; the replier holds it. Shut the requester down: its connection
	// closes and the broker forgets it.
	harness.Eventually(t, readyTimeout, func() error {
		if n, err := g.MaxOffset(g.MasterAddr, topic, 0); err != nil || n != 1 {
			return fmt.Errorf("request stored: %d %v", n, err)
		}
		return nil
	})
	require.NoError(t, req.Shutdown())
	waitLog(t, g.Master, "producer removed", "@"+name+" ", "connection closed")
	close(hold)

	var sent []*primitive.SendResult
	var errs []error
	harness.Eventually(t, readyTimeout, func() error {
		sent, errs = r.results()
		if len(sent)+len(errs) == 0 {
			return fmt.Errorf("no reply sent yet")
		}
		return nil
	})
	require.Empty(t, sent, "a reply to a requester that is gone is not SEND_OK")
	require.Len(t, errs, 1)
	want := "CODE: 1, DESC: push reply message fail, channel of <" + requester + "> not found."
	require.Equal(t, want, errs[0].Error())
	t.Logf("what the replier sees: %v", errs[0])

	// Stored all the same (storeReplyMessageEnable), counted as not found, nothing pushed.
	max, err := g.MaxOffset(g.MasterAddr, replyTopic, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), max)
	require.Equal(t, float64(1), metric(t, g.MasterHTTP, `rmqha_broker_reply_not_pushed_total{reason="requester_not_found"}`))
	require.Equal(t, float64(0), metric(t, g.MasterHTTP, "rmqha_broker_reply_pushed_total"))
	require.True(t, g.Master.Running(), "master alive")
}

// rawReply is a SEND_REPLY_MESSAGE (or _V2, short names) for requester's client id.
func rawReply(code int32, requester, body string) *remoting.Command {
	props := "CORRELATION_ID\x01c-1\x02MSG_TYPE\x01reply\x02REPLY_TO_CLIENT\x01" + requester + "\x02"
	ext := map[string]string{
		"producerGroup": "pg-raw", "topic": replyTopic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": props, "reconsumeTimes": "0", "unitMode": "false",
	}
	if code == remoting.SendReplyMessageV2 {
		short := map[string]string{}
		for long, s := range map[string]string{
			"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
			"sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j", "unitMode": "k",
		} {
			short[s] = ext[long]
		}
		ext = short
	}
	return remoting.NewRequest(code, ext, []byte(body))
}

// rawRequesterID is the client id rawRequester heartbeats with.
const rawRequesterID = "127.0.0.1@raw-requester"

// rawRequester is a requester on a raw connection: it heartbeats master and slave as a producer
// and hands over every PUSH_REPLY_MESSAGE_TO_CLIENT it gets (answering SUCCESS).
func rawRequester(t *testing.T, g *e2e.Group) (*remoting.Client, chan *remoting.Command) {
	t.Helper()
	cli := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = cli.Close() })
	pushes := make(chan *remoting.Command, 8)
	cli.HandleRequest(remoting.PushReplyMessageToClient, func(req *remoting.Command) *remoting.Command {
		pushes <- req
		return remoting.NewResponse(req, remoting.Success, "")
	})
	hb := `{"clientID":"` + rawRequesterID + `","producerDataSet":[{"groupName":"pg-raw-req"}],"consumerDataSet":[]}`
	for _, addr := range []string{g.MasterAddr, g.SlaveAddr} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	return cli, pushes
}

// TestReplyOnSlaveRefused: replies sent straight to the slave are refused with
// SERVICE_NOT_AVAILABLE and pushed to nobody, in both header forms; the master takes the V2 form
// and pushes it to a requester registered over a raw connection.
func TestReplyOnSlaveRefused(t *testing.T) {
	g := e2e.StartGroup(t, e2e.DefaultGroupConfig())

	cli, pushes := rawRequester(t, g)
	requester := rawRequesterID

	for _, code := range []int32{remoting.SendReplyMessage, remoting.SendReplyMessageV2} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.Invoke(ctx, g.SlaveAddr, rawReply(code, requester, "to the slave"))
		cancel()
		require.NoError(t, err)
		require.Equal(t, remoting.ServiceNotAvailable, resp.Code, "code %d: %s", code, resp.Remark)
		require.Contains(t, resp.Remark, "slave is read-only")
		t.Logf("%s on the slave: %d %s", remoting.RequestName(code), resp.Code, resp.Remark)
	}
	max, err := g.MaxOffset(g.SlaveAddr, replyTopic, 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), max, "the slave stored nothing")
	require.Empty(t, pushes, "the slave pushed nothing")

	// The master takes the V2 form and pushes it with the requester's header fields.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	resp, err := cli.Invoke(ctx, g.MasterAddr, rawReply(remoting.SendReplyMessageV2, requester, "to the master"))
	cancel()
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "0", resp.ExtFields["queueOffset"])
	select {
	case push := <-pushes:
		require.Equal(t, "to the master", string(push.Body))
		require.Equal(t, replyTopic, push.ExtFields["topic"])
		require.Equal(t, "pg-raw", push.ExtFields["producerGroup"])
		require.Equal(t, g.MasterAddr, push.ExtFields["storeHost"])
		require.Contains(t, push.ExtFields["properties"], "PUSH_REPLY_TIME\x01")
		require.Contains(t, push.ExtFields["properties"], "CORRELATION_ID\x01c-1\x02")
	case <-time.After(readyTimeout):
		t.Fatal("no push reached the requester")
	}
	// Without REPLY_TO_CLIENT: RocketMQ's SYSTEM_ERROR.
	bad := rawReply(remoting.SendReplyMessage, requester, "x")
	bad.ExtFields["properties"] = "CORRELATION_ID\x01c-2\x02"
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	resp, err = cli.Invoke(ctx, g.MasterAddr, bad)
	cancel()
	require.NoError(t, err)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "reply message properties[REPLY_TO_CLIENT] is null", resp.Remark)
	require.True(t, g.Master.Running(), "master alive")
	require.True(t, g.Slave.Running(), "slave alive")
}

// TestReplyWithoutStore: with storeReplyMessageEnable=false nothing is stored, and a slave the
// requester heartbeats pushes the reply as a master does (RocketMQ's behaviour).
func TestReplyWithoutStore(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.ExtraMaster = []string{"storeReplyMessageEnable=false"}
	cfg.ExtraSlave = []string{"storeReplyMessageEnable=false"}
	g := e2e.StartGroup(t, cfg)
	cli, pushes := rawRequester(t, g)
	for _, addr := range []string{g.MasterAddr, g.SlaveAddr} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.Invoke(ctx, addr, rawReply(remoting.SendReplyMessage, rawRequesterID, "via "+addr))
		cancel()
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		require.Equal(t, "0", resp.ExtFields["msgId"], "not stored: RocketMQ's placeholder id")
		select {
		case push := <-pushes:
			require.Equal(t, "via "+addr, string(push.Body))
			require.Equal(t, addr, push.ExtFields["storeHost"])
		case <-time.After(readyTimeout):
			t.Fatalf("no push from %s", addr)
		}
		max, err := g.MaxOffset(addr, replyTopic, 0)
		require.NoError(t, err)
		require.Equal(t, int64(0), max, "nothing stored on %s", addr)
	}
	require.True(t, g.Master.Running(), "master alive")
	require.True(t, g.Slave.Running(), "slave alive")
}

package composetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
)

// ledger records every message the test sent and what the group answered.
type ledger struct {
	mu        sync.Mutex
	attempted map[string]bool
	stored    map[string]primitive.SendStatus // answered without error: on the master's log
	queue     map[string]int                  // queue id of each stored message
}

func newLedger() *ledger {
	return &ledger{attempted: map[string]bool{}, stored: map[string]primitive.SendStatus{}, queue: map[string]int{}}
}

// send sends one message and records the outcome.
func (l *ledger) send(p rocketmq.Producer, topic, body string) (primitive.SendStatus, time.Duration, error) {
	l.mu.Lock()
	l.attempted[body] = true
	l.mu.Unlock()
	start := time.Now()
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
	took := time.Since(start)
	if err != nil {
		return 0, took, err
	}
	l.mu.Lock()
	l.stored[body] = res.Status
	if res.MessageQueue != nil {
		l.queue[body] = res.MessageQueue.QueueId
	}
	l.mu.Unlock()
	return res.Status, took, nil
}

func newProducer(t testing.TB, namesrv, instance string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{namesrv}),
		producer.WithGroupName("compose-pg"),
		producer.WithInstanceName(instance),
		producer.WithRetry(2),
		// Longer than the brokers' syncFlushTimeout (5s): a SYNC_MASTER that cannot reach its
		// slave must answer with a status before the client gives up.
		producer.WithSendMsgTimeout(15*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// sink is a push consumer that counts deliveries by body. While paused, its callback blocks,
// so the client stops pulling once its small local cache (a few messages per queue) is full.
// The cache is bounded by the per-topic threshold: at every rebalance the client replaces
// the per-queue threshold by PullThresholdForTopic divided by the queues it holds (102400 by
// default, so about 25600 per queue of a 4-queue topic), and with that default a paused sink
// keeps pulling until only the client's internal channels hold it back (32 pull results per
// queue plus the blocked callbacks). Whether the messages a test leaves behind a paused sink
// are then still on the brokers depended on how many each pull returned.
type sink struct {
	c      rocketmq.PushConsumer
	mu     sync.Mutex
	got    map[string]int
	gate   chan struct{} // closed while delivering
	closed bool
}

func startSink(t testing.TB, namesrv, group, instance, topic string) *sink {
	t.Helper()
	// A push consumer refuses to start while the name server has no route for its topic, and
	// the master registers a topic it auto-created asynchronously (through Consul here).
	waitRoute(t, namesrv, topic)
	s := &sink{got: map[string]int{}, gate: make(chan struct{})}
	close(s.gate)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{namesrv}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullBatchSize(4),
		consumer.WithPullThresholdForQueue(8),
		// 8 per queue for the 4-queue topics of these tests (see above).
		consumer.WithPullThresholdForTopic(32),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			s.mu.Lock()
			gate := s.gate
			s.mu.Unlock()
			select {
			case <-gate:
			case <-time.After(5 * time.Minute):
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, m := range msgs {
				s.got[string(m.Body)]++
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s.c = c
	t.Cleanup(s.stop)
	return s
}

// pause makes the callback block until resume.
func (s *sink) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gate:
		s.gate = make(chan struct{})
	default:
	}
}

// resume lets the callback deliver again.
func (s *sink) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gate:
	default:
		close(s.gate)
	}
}

// stop shuts the consumer down, which commits its offsets.
func (s *sink) stop() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.resume() // a blocked callback would hold the shutdown
	_ = s.c.Shutdown()
}

// received returns a copy of what was delivered so far.
func (s *sink) received() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.got))
	for k, v := range s.got {
		m[k] = v
	}
	return m
}

// missing counts the bodies of want not delivered yet.
func (s *sink) missing(want []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range want {
		if s.got[b] == 0 {
			n++
		}
	}
	return n
}

// missingByQueue counts the bodies of want that s has not delivered, by the queue they were
// stored in: a failure report tells a queue the consumer stopped pulling from a slow one.
func (l *ledger) missingByQueue(s *sink, want []string) map[int]int {
	got := s.received()
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[int]int{}
	for _, b := range want {
		if got[b] == 0 {
			m[l.queue[b]]++
		}
	}
	return m
}

// storedBodies lists every message the group answered without error (in any status).
func (l *ledger) storedBodies() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.stored))
	for b := range l.stored {
		out = append(out, b)
	}
	return out
}

func (l *ledger) wasAttempted(body string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempted[body]
}

// waitSendOK sends numbered messages until the group answers SEND_OK: after a fault, clients
// refresh their routes on their own schedule (every 30 s).
func waitSendOK(t testing.TB, l *ledger, p rocketmq.Producer, topic, prefix string) {
	t.Helper()
	start := time.Now()
	var last string
	for i := 0; ; i++ {
		st, _, err := l.send(p, topic, prefix+"-"+strconv.Itoa(i))
		if err == nil && st == primitive.SendOK {
			t.Logf("%s: SEND_OK after %s (%d sends)", prefix, time.Since(start).Round(100*time.Millisecond), i+1)
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = sendStatus(st)
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("no SEND_OK within 2m; last answer: %s", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// sendStatus names a send status as the protocol does.
func sendStatus(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "status " + strconv.Itoa(int(s))
}

// routeBody is the name server's answer to a route lookup of topic, for failure reports.
func routeBody(namesrv, topic string) string {
	cli := remoting.NewClient(remoting.DefaultClientConfig())
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Invoke(ctx, namesrv, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("code %d %s %s", resp.Code, resp.Remark, resp.Body)
}

// waitRoute waits until the name server at namesrv answers a route for topic.
func waitRoute(t testing.TB, namesrv, topic string) {
	t.Helper()
	ccfg := remoting.DefaultClientConfig()
	cli := remoting.NewClient(ccfg)
	defer func() { _ = cli.Close() }()
	eventually(t, time.Minute, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, namesrv, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("route of %s: code %d %s", topic, resp.Code, resp.Remark)
		}
		return nil
	})
}

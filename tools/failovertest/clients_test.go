package failovertest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

const consumerGroup = "failover-consumers"

// delivery is one message handed to the push consumer.
type delivery struct {
	queue int
	off   int64
	at    time.Time
}

// TestRealClientsAcrossFailover drives unmodified rocketmq-client-go clients through two
// kill -9 failovers: a retrying producer (every fifth message delayed by level 1) and a push
// consumer. Afterwards: every SEND_OK message was consumed; the running consumer was never
// sent back to an offset it had passed (no message delivered twice); every delayed message is in the topic
// exactly once on both nodes; the history checker finds every SEND_OK message at its offset
// on both nodes. The committed offsets of the current master are sampled throughout; a sample
// below an earlier one (commits the new master had not synced yet) is counted and reported.
func TestRealClientsAcrossFailover(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))

	hist := &e2e.History{}       // every send
	offsetHist := &e2e.History{} // what the history checker verifies at its offsets
	p, err := rocketmq.NewProducer(
		rmqproducer.WithNameServer([]string{g.nsAddr}),
		rmqproducer.WithGroupName("failover-real-producer"),
		rmqproducer.WithInstanceName("fo-p-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		rmqproducer.WithRetry(2),
		rmqproducer.WithSendMsgTimeout(3*time.Second),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()

	var (
		mu        sync.Mutex
		delivered = map[string][]delivery{}
		rewinds   []string
		delayed   = map[string]bool{}
		okAt      []time.Time // SEND_OK answers
		storedAt  []time.Time // every answer (SLAVE_NOT_AVAILABLE: stored on the master only)
	)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{g.nsAddr}),
		consumer.WithGroupName(consumerGroup),
		consumer.WithInstance("fo-c-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				// The client consumes concurrently, so arrival order within a queue says nothing;
				// a rewind shows as a message delivered again.
				q := m.Queue.QueueId
				if prev := delivered[string(m.Body)]; len(prev) > 0 {
					rewinds = append(rewinds, fmt.Sprintf("queue %d offset %d again", q, m.QueueOffset))
				}
				delivered[string(m.Body)] = append(delivered[string(m.Body)], delivery{queue: q, off: m.QueueOffset, at: time.Now()})
			}
			return consumer.ConsumeSuccess, nil
		}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the producer: one sync send at a time, retried by the client
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprintf("real-%06d", i)
			msg := primitive.NewMessage(topic, []byte(body))
			if i%5 == 0 {
				msg.WithDelayTimeLevel(1)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := p.SendSync(ctx, msg)
			cancel()
			hist.Add(msg, res, err)
			if i%5 == 0 {
				// The answer of a delayed send names its SCHEDULE_TOPIC_XXXX record: the checker
				// counts its delivered copy as one possible entry; readTopic checks it.
				offsetHist.AddUnanswered(msg)
			} else {
				offsetHist.Add(msg, res, err)
			}
			if err == nil {
				mu.Lock()
				storedAt = append(storedAt, time.Now())
				if res.Status == primitive.SendOK {
					okAt = append(okAt, time.Now())
				}
				if i%5 == 0 {
					delayed[body] = true
				}
				mu.Unlock()
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()

	// The committed offsets on whichever node is master, sampled.
	var offRegress []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		high := map[int]int64{}
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			for _, n := range g.nodes {
				st, err := n.status()
				if err != nil || !st.serving() {
					continue
				}
				for q := 0; q < queues; q++ {
					off, err := e2e.QueryConsumerOffset(g.admin, n.addr, brokerName, consumerGroup, topic, q)
					if err != nil || off < 0 {
						continue
					}
					if off < high[q] {
						mu.Lock()
						offRegress = append(offRegress, fmt.Sprintf("%s queue %d: %d after %d (node %d)", time.Now().Format("15:04:05.000"), q, off, high[q], n.id))
						mu.Unlock()
					}
					high[q] = max(high[q], off)
				}
			}
		}
	}()

	okCount := func() int { mu.Lock(); defer mu.Unlock(); return len(okAt) }
	var resume []time.Duration
	for round := 0; round < 2; round++ {
		m = g.waitMaster(2)
		before := okCount()
		harness.Eventually(t, readyTimeout, func() error {
			if okCount() < before+30 {
				return errNotYet
			}
			return nil
		})
		m.proc.Kill()
		killed := time.Now()
		t.Logf("%s: node %d killed", killed.Format("15:04:05.000"), m.id)
		// The client refreshes its routes every 30 s: it finds the new master then. Alone, the
		// new SYNC_MASTER stores and answers SLAVE_NOT_AVAILABLE; SEND_OK once the killed node
		// is back in sync.
		harness.Eventually(t, 90*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(storedAt) > 0 && storedAt[len(storedAt)-1].After(killed) {
				resume = append(resume, storedAt[len(storedAt)-1].Sub(killed))
				return nil
			}
			return errNotYet
		})
		require.NoError(t, m.proc.Restart())
		harness.Eventually(t, readyTimeout, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(okAt) > 0 && okAt[len(okAt)-1].After(killed) {
				return nil
			}
			return errNotYet
		})
	}
	m = g.waitMaster(2)
	before := okCount()
	harness.Eventually(t, readyTimeout, func() error {
		if okCount() < before+30 {
			return errNotYet
		}
		return nil
	})
	close(stop)
	wg.Wait()

	// Every SEND_OK message consumed (delayed ones after their level's delay).
	var want []string
	for _, s := range hist.Sent() {
		if s.Stored() && s.Status == primitive.SendOK {
			want = append(want, string(s.Body))
		}
	}
	harness.Eventually(t, 2*readyTimeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range want {
			if len(delivered[b]) == 0 {
				return fmt.Errorf("%s not consumed yet", b)
			}
		}
		return nil
	})
	mu.Lock()
	dups := 0
	for _, d := range delivered {
		if len(d) > 1 {
			dups++
		}
	}
	rw := append([]string(nil), rewinds...)
	regress := append([]string(nil), offRegress...)
	nDelayed := len(delayed)
	mu.Unlock()
	require.Empty(t, rw, "the running consumer was sent back to offsets it had passed (messages delivered again)")

	// Both nodes hold the same topic, each delayed message exactly once, and every SEND_OK
	// message at its offsets.
	g.waitCaughtUp(t, m)
	for _, n := range g.nodes {
		bodies, err := g.readTopic(n.addr)
		require.NoError(t, err)
		count := map[string]int{}
		for _, b := range bodies {
			count[b]++
		}
		for b := range delayed {
			require.Equal(t, 1, count[b], "node %d: delayed message %s stored %d times in %s", n.id, b, count[b], topic)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, n := range g.nodes {
		require.NoError(t, offsetHist.Check(ctx, g.admin, n.addr), "node %d", n.id)
	}
	sort.Slice(resume, func(i, j int) bool { return resume[i] < resume[j] })
	t.Logf("rocketmq-client-go producer: first stored answer after kill -9 in %v (route refresh bound 30 s); sends %v; %d delayed messages stored, each delivered into the topic once",
		resume, hist.Counts(), nDelayed)
	t.Logf("push consumer: %d SEND_OK messages consumed, %d delivered more than once, no rewind; committed-offset samples below an earlier sample: %d %v",
		len(want), dups, len(regress), regress)
}

// readTopic pulls every message of the test topic from addr (all queues) and returns the bodies.
func (g *group) readTopic(addr string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const reader = "failover-reader"
	hb := fmt.Sprintf(`{"clientID":"127.0.0.1@fo-reader","producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"classFilterMode":false,"topic":%q,"subString":"*","tagsSet":[],"codeSet":[],`+
		`"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, reader, topic)
	if resp, err := g.admin.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb))); err != nil || resp.Code != remoting.Success {
		return nil, fmt.Errorf("heartbeat: %v %v", err, resp)
	}
	var out []string
	for q := 0; q < queues; q++ {
		for off := int64(0); ; {
			ext := map[string]string{"consumerGroup": reader, "topic": topic, "queueId": strconv.Itoa(q),
				"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "-1",
				"suspendTimeoutMillis": "0", "subscription": "", "subVersion": "0", "expressionType": "TAG", "bname": brokerName}
			resp, err := g.admin.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, ext, nil))
			if err != nil {
				return nil, err
			}
			if resp.Code != remoting.Success {
				break // PULL_NOT_FOUND: the end of the queue
			}
			msgs := primitive.DecodeMessage(resp.Body)
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				out = append(out, string(m.Body))
			}
			next, err := resp.ExtInt64("nextBeginOffset")
			if err != nil || next <= off {
				return nil, fmt.Errorf("queue %d: next offset %d after %d (%v)", q, next, off, err)
			}
			off = next
		}
	}
	return out, nil
}

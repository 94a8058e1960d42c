package broker

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// TestRealClient drives the unmodified rocketmq-client-go producer and push consumer against an
// in-process broker and name-server stub: sync, async, oneway and batch sends, one compressed
// body, tags/keys/properties intact, every message consumed exactly once, offsets committed.
func TestRealClient(t *testing.T) {
	rlog.SetLogLevel("error")
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	b := startBroker(t, cfg)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", "TBW102") }, 10*time.Second, 10*time.Millisecond)

	const topic = "RealTopic"
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{ns.addr()}),
		producer.WithGroupName("real-pg"),
		producer.WithRetry(2),
		producer.WithInstanceName("real-client-test-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()

	ctx := context.Background()
	want := map[string]string{}      // body -> tag
	big := strings.Repeat("z", 6000) // compressed by the client (> 4096)
	mk := func(body, tag string) *primitive.Message {
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag(tag)
		m.WithKeys([]string{"k-" + body[:min(len(body), 8)]})
		m.WithProperty("user", "u-"+tag)
		want[body] = tag
		return m
	}
	res, err := p.SendSync(ctx, mk("sync-0", "A"))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	require.NotEmpty(t, res.OffsetMsgID)
	for i := 1; i < 10; i++ {
		res, err := p.SendSync(ctx, mk("sync-"+strconv.Itoa(i), "A"))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	_, err = p.SendSync(ctx, mk(big, "B"))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			if err != nil || r.Status != primitive.SendOK {
				t.Errorf("async send: %v %v", r, err)
			}
		}, mk("async-"+strconv.Itoa(i), "B"))
		require.NoError(t, err)
	}
	wg.Wait()
	for i := 0; i < 3; i++ {
		require.NoError(t, p.SendOneWay(ctx, mk("oneway-"+strconv.Itoa(i), "C")))
	}
	batch := []*primitive.Message{mk("batch-0", "D"), mk("batch-1", "D"), mk("batch-2", "D")}
	res, err = p.SendSync(ctx, batch...)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)

	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", topic) }, 10*time.Second, 10*time.Millisecond)

	type got struct {
		tag, keys, user string
		count           int
	}
	var mu sync.Mutex
	received := map[string]*got{}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{ns.addr()}),
		consumer.WithGroupName("real-cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithInstance("real-client-test-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				g := received[string(m.Body)]
				if g == nil {
					g = &got{tag: m.GetTags(), keys: m.GetKeys(), user: m.GetProperty("user")}
					received[string(m.Body)] = g
				}
				g.count++
			}
			return consumer.ConsumeSuccess, nil
		}))
	require.NoError(t, c.Start())
	defer c.Shutdown()

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) == len(want)
	}, 40*time.Second, 20*time.Millisecond, "consumed %d of %d", func() int { mu.Lock(); defer mu.Unlock(); return len(received) }(), len(want))
	mu.Lock()
	for body, tag := range want {
		g := received[body]
		require.NotNil(t, g, body[:min(len(body), 10)])
		require.Equal(t, 1, g.count, "duplicate delivery of %s", body[:min(len(body), 10)])
		require.Equal(t, tag, g.tag)
		require.Equal(t, "u-"+tag, g.user)
		require.Equal(t, "k-"+body[:min(len(body), 8)], g.keys)
	}
	mu.Unlock()

	// The consumer commits its offsets (every 5 s and on shutdown) to the master.
	require.Eventually(t, func() bool {
		total := int64(0)
		for q := int32(0); q < 4; q++ {
			off, _ := b.tables.Offsets.Query("real-cg", topic, q)
			total += off
		}
		return total == int64(len(want))
	}, 20*time.Second, 50*time.Millisecond)
	ids, ok := b.clients.consumerIDs("real-cg")
	require.True(t, ok)
	require.Len(t, ids, 1)
	_, ok = b.tables.Topics.Get("%RETRY%real-cg")
	require.True(t, ok, "retry topic created on heartbeat")
}

// TestRealClientGroupSplitAndTags: two push consumers of one group split the queues (each
// message consumed once overall, both consumers get some), and a second group subscribed to
// one tag receives only that tag.
func TestRealClientGroupSplitAndTags(t *testing.T) {
	rlog.SetLogLevel("error")
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	b := startBroker(t, cfg)
	c := newTestClient(t)
	const topic = "SplitTopic"
	resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", topic) }, 10*time.Second, 10*time.Millisecond)

	// Client instances are process-wide in rocketmq-client-go: unique names per run.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var mu sync.Mutex
	counts := map[string]int{}
	per := map[string]int{}
	oddOnly := map[string]int{}
	start := func(group, instance, expr string, sink map[string]int) {
		pc, err := rocketmq.NewPushConsumer(
			consumer.WithNameServer([]string{ns.addr()}),
			consumer.WithGroupName(group),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithInstance(instance+"-"+run),
		)
		require.NoError(t, err)
		require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				mu.Lock()
				defer mu.Unlock()
				for _, m := range msgs {
					sink[string(m.Body)]++
					if group == "split-cg" {
						per[instance]++
					}
				}
				return consumer.ConsumeSuccess, nil
			}))
		require.NoError(t, pc.Start())
		t.Cleanup(func() { _ = pc.Shutdown() })
	}
	// Settle the group before any message exists, so no message is consumed under a stale
	// assignment: the first member holds pulls on all four queues, then the second joins
	// (the first is notified during the join) and holds pulls on its two.
	start("split-cg", "split-1", "*", counts)
	require.Eventually(t, func() bool { return len(heldByConn(b, "split-cg")) == 1 && sum(heldByConn(b, "split-cg")) == 4 }, 20*time.Second, 10*time.Millisecond)
	start("split-cg", "split-2", "*", counts)
	require.Eventually(t, func() bool { return len(heldByConn(b, "split-cg")) == 2 && sum(heldByConn(b, "split-cg")) >= 6 }, 20*time.Second, 10*time.Millisecond)
	start("odd-cg", "odd-1", "odd", oddOnly)
	require.Eventually(t, func() bool { return sum(heldByConn(b, "odd-cg")) == 4 }, 20*time.Second, 10*time.Millisecond)

	const n = 40
	for i := 0; i < n; i++ {
		tag := "even"
		if i%2 == 1 {
			tag = "odd"
		}
		require.Equal(t, remoting.Success, send(t, c, b.Addr(), topic, i%4, tag, "m"+strconv.Itoa(i)).Code)
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(counts) == n && len(oddOnly) == n/2
	}, 40*time.Second, 20*time.Millisecond)
	// Both members of the group are registered; the queues were split between them.
	require.Eventually(t, func() bool { ids, _ := b.clients.consumerIDs("split-cg"); return len(ids) == 2 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for body, k := range counts {
		require.Equal(t, 1, k, "duplicate of %s", body)
	}
	for body := range oddOnly {
		i, _ := strconv.Atoi(strings.TrimPrefix(body, "m"))
		require.Equal(t, 1, i%2, "tag filter let %s through", body)
	}
	require.Len(t, per, 2, "both members consumed: %v", per)
}

// heldByConn counts the pulls of group on SplitTopic held by long polling, per connection
// (the group's retry topic is left out: its route appears at a time of its own).
func heldByConn(b *Broker, group string) map[uint64]int {
	b.holds.mu.Lock()
	defer b.holds.mu.Unlock()
	out := map[uint64]int{}
	for _, list := range b.holds.held {
		for _, pr := range list {
			if pr.group == group && pr.topic == "SplitTopic" && pr.w.Conn() != nil {
				out[pr.w.Conn().ID()]++
			}
		}
	}
	return out
}

func sum(m map[uint64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestRealClientOrderly: messages sent with a hash queue selector are consumed in send order
// per sharding key by an orderly push consumer, which locks its queues with LOCK_BATCH_MQ.
func TestRealClientOrderly(t *testing.T) {
	if raceEnabled {
		t.Skip("rocketmq-client-go's orderly consumer has a data race of its own (processQueue tree map)")
	}
	rlog.SetLogLevel("error")
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	b := startBroker(t, cfg)
	c := newTestClient(t)
	const topic = "OrderTopic"
	resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", topic) }, 10*time.Second, 10*time.Millisecond)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{ns.addr()}),
		producer.WithGroupName("order-pg"),
		producer.WithQueueSelector(producer.NewHashQueueSelector()),
		producer.WithInstanceName("order-p-"+run),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()
	const perKey = 15
	keys := []string{"alpha", "beta", "gamma"}
	for i := 0; i < perKey; i++ {
		for _, k := range keys {
			m := primitive.NewMessage(topic, []byte(k+"-"+strconv.Itoa(i)))
			m.WithShardingKey(k)
			r, err := p.SendSync(context.Background(), m)
			require.NoError(t, err)
			require.Equal(t, primitive.SendOK, r.Status)
		}
	}

	var mu sync.Mutex
	seen := map[string][]int{}
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{ns.addr()}),
		consumer.WithGroupName("order-cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true),
		consumer.WithInstance("order-c-"+run),
	)
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				k, n, _ := strings.Cut(string(m.Body), "-")
				i, _ := strconv.Atoi(n)
				seen[k] = append(seen[k], i)
			}
			return consumer.ConsumeSuccess, nil
		}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, l := range seen {
			total += len(l)
		}
		return total >= perKey*len(keys)
	}, 40*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		require.Len(t, seen[k], perKey, k)
		for i, v := range seen[k] {
			require.Equal(t, i, v, "key %s out of order: %v", k, seen[k])
		}
	}
}

// TestRealClientRetry: a message the listener asks to retry comes back (through the retry
// topic, after its delay level) with its reconsume count raised.
func TestRealClientRetry(t *testing.T) {
	rlog.SetLogLevel("error")
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	b := startBroker(t, cfg)
	c := newTestClient(t)
	const topic = "RetryTopic"
	resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, remoting.Success, send(t, c, b.Addr(), topic, 0, "R", "again").Code)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", topic) }, 10*time.Second, 10*time.Millisecond)
	// Create the group's retry topic (as a heartbeat does) and let it reach the name server
	// before the consumer starts, so its first route lookup finds it.
	invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("warm@1", "retry-cg", map[string]string{topic: "*"}))
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", "%RETRY%retry-cg") }, 10*time.Second, 10*time.Millisecond)
	c.Close()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	var mu sync.Mutex
	var times []int32
	var topics []string
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{ns.addr()}),
		consumer.WithGroupName("retry-cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithInstance("retry-c-"+run),
	)
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				times = append(times, m.ReconsumeTimes)
				topics = append(topics, m.Topic)
			}
			if len(times) == 1 {
				return consumer.ConsumeRetryLater, nil
			}
			return consumer.ConsumeSuccess, nil
		}))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(times) >= 2
	}, 40*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int32{0, 1}, times[:2])
	require.Equal(t, []string{topic, topic}, topics[:2], "the client restores the original topic")
}

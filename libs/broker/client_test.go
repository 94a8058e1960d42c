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
		producer.WithInstanceName("real-client-test"),
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
		consumer.WithInstance("real-client-test"),
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

package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

var instanceSeq atomic.Int64

// instance gives every client its own instance name, so clients of one test process get
// distinct client ids (and their own connections) at the broker.
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func newProducer(t *testing.T, g *Group, group string, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName(group),
		producer.WithInstanceName(instance(group)),
		producer.WithRetry(2),
	}, opts...)
	p, err := rocketmq.NewProducer(all...)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// collector records what a push consumer delivered, in arrival order.
type collector struct {
	mu  sync.Mutex
	got []*primitive.MessageExt
	by  map[string][]string // body -> names of the consumers that got it
}

func newCollector() *collector { return &collector{by: map[string][]string{}} }

func (c *collector) handler(name string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, m := range msgs {
			c.got = append(c.got, m)
			c.by[string(m.Body)] = append(c.by[string(m.Body)], name)
		}
		return consumer.ConsumeSuccess, nil
	}
}

func (c *collector) count(body string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by[body])
}

func (c *collector) messages() []*primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.got...)
}

func (c *collector) receivers(body string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.by[body]...)
}

// waitAll waits until every body was delivered at least once.
func (c *collector) waitAll(t *testing.T, bodies []string, timeout time.Duration) {
	t.Helper()
	harness.Eventually(t, timeout, func() error {
		var missing []string
		for _, b := range bodies {
			if c.count(b) == 0 {
				missing = append(missing, b)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			if len(missing) > 10 {
				missing = append(missing[:10], fmt.Sprintf("... %d more", len(missing)-10))
			}
			return fmt.Errorf("%d of %d messages not delivered: %v", len(missing), len(bodies), missing)
		}
		return nil
	})
}

// startConsumer starts a clustering push consumer of group on topic.
func startConsumer(t *testing.T, g *Group, group, topic string, sel consumer.MessageSelector, h func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNameServer([]string{g.NamesrvAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(group)),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := rocketmq.NewPushConsumer(all...)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, sel, h))
	require.NoError(t, c.Start())
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { _ = c.Shutdown() }) })
	return c
}

// waitCommitted waits until the master holds, for every queue of topic, a committed offset of
// group equal to the queue's max offset: the group consumed and committed everything.
func waitCommitted(t *testing.T, g *Group, group, topic string, queues int, timeout time.Duration) map[int]int64 {
	t.Helper()
	out := map[int]int64{}
	harness.Eventually(t, timeout, func() error {
		for q := 0; q < queues; q++ {
			maxOff, err := g.MaxOffset(g.MasterAddr, topic, q)
			if err != nil {
				return err
			}
			got, err := g.ConsumerOffset(g.MasterAddr, group, topic, q)
			if err != nil {
				return err
			}
			if maxOff > 0 && got != maxOff {
				return fmt.Errorf("queue %d: committed %d, max %d", q, got, maxOff)
			}
			out[q] = maxOff
		}
		return nil
	})
	return out
}

func sel(expr string) consumer.MessageSelector {
	return consumer.MessageSelector{Type: consumer.TAG, Expression: expr}
}

func mustSend(t *testing.T, p rocketmq.Producer, h *History, msgs ...*primitive.Message) *primitive.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, msgs...)
	h.AddBatch(msgs, res, err)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status, "send status %s", StatusName(res.Status))
	return res
}

func checkHistory(t *testing.T, g *Group, h *History, addrs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, h.Check(ctx, g.Admin, addrs...))
	t.Logf("history: %v checked on %v", h.Counts(), addrs)
}

package failovertest

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
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// stored is the number of records in topic's queues on the broker at addr.
func (g *group) stored(addr string) (int64, error) {
	var n int64
	for q := 0; q < queues; q++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(q), "bname": brokerName}
		resp, err := g.admin.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset, ext, nil))
		cancel()
		if err != nil {
			return 0, err
		}
		if resp.Code != remoting.Success {
			return 0, fmt.Errorf("max offset: %d %s", resp.Code, resp.Remark)
		}
		off, err := resp.ExtInt64("offset")
		if err != nil {
			return 0, err
		}
		n += off
	}
	return n, nil
}

// TestTimersSurviveFailover sends timer messages with the unmodified rocketmq-client-go
// (WithDelayTimestamp), kills -9 the master once part of them is delivered, and requires the
// promoted slave to deliver the rest: every timer present on the new master, never early, and
// few repeated (the new master resumes after the last delivered copy it replicated). A timer
// cancelled by a delete marker before the kill stays cancelled on the new master.
func TestTimersSurviveFailover(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p, err := rocketmq.NewProducer(rmqproducer.WithNameServer([]string{g.nsAddr}), rmqproducer.WithGroupName("pg-timer-failover"), rmqproducer.WithRetry(2))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()

	const n = 40
	want := map[string]int64{}
	start := time.Now()
	send := func(key string, at time.Time, prop ...string) *primitive.SendResult {
		msg := primitive.NewMessage(topic, []byte(key))
		msg.WithKeys([]string{key})
		msg.WithDelayTimestamp(at)
		if len(prop) == 2 {
			msg.WithProperty(prop[0], prop[1])
		}
		var res *primitive.SendResult
		harness.Eventually(t, 20*time.Second, func() error { // the route appears after the topic is created
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			if res, err = p.SendSync(ctx, msg); err != nil {
				return err
			}
			if res.Status != primitive.SendOK {
				return fmt.Errorf("send: %s", res)
			}
			return nil
		})
		return res
	}
	for i := range n {
		key := "t" + strconv.Itoa(i)
		at := start.Add(4*time.Second + time.Duration(i)*150*time.Millisecond) // 4 s .. 10 s
		send(key, at)
		want[key] = at.UnixMilli()
	}
	// Two timers of one slot after the kill, and a delete marker (TIMER_DEL_UNIQKEY) for the
	// first: the promoted slave cancels it and delivers the other.
	late := start.Add(11 * time.Second)
	cancelled := send("cancelled", late)
	send("kept", late)
	send("marker", late, "TIMER_DEL_UNIQKEY", topic+"+"+cancelled.MsgID)
	want["kept"] = late.UnixMilli()
	harness.Eventually(t, 30*time.Second, func() error {
		if d, err := g.stored(m.addr); err != nil || d < n/4 {
			return fmt.Errorf("%d delivered (%v)", d, err)
		}
		return nil
	})
	m.proc.Kill()
	nm := g.waitMaster(1)
	require.NotEqual(t, m.id, nm.id)

	var mu sync.Mutex
	got := map[string][]*primitive.MessageExt{}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{g.nsAddr}), consumer.WithGroupName("cg-timer-failover"),
		consumer.WithConsumerModel(consumer.Clustering), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[m.GetKeys()] = append(got[m.GetKeys()], m)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()
	harness.Eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for k := range want {
			if len(got[k]) == 0 {
				return fmt.Errorf("%s not delivered yet (%d of %d keys)", k, len(got), len(want))
			}
		}
		return nil
	})
	total, err := g.stored(nm.addr)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	for k, at := range want {
		for _, m := range got[k] {
			require.Equal(t, k, string(m.Body))
			deq, err := strconv.ParseInt(m.GetProperty("TIMER_DEQUEUE_MS"), 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, deq, at, "%s delivered early", k)
		}
	}
	require.NotContains(t, got, "cancelled", "cancelled by its delete marker, across the failover")
	require.NotContains(t, got, "marker", "a delete marker is never delivered")
	sent := int64(len(want))
	t.Logf("failover with timers pending: %d delivered, 1 cancelled, %d copies on the new master (%d repeated)", sent, total, total-sent)
	require.LessOrEqual(t, total-sent, int64(10), "repeats beyond what the old master delivered unreplicated")
	require.True(t, nm.proc.Running())
}

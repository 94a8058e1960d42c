package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestClients runs the fault-free client scenarios against one group: every send kind comes
// back exactly once, two consumers split and rebalance the queues, tag filtering, per-queue
// order, and bad input on the socket.
func TestClients(t *testing.T) {
	g := StartGroup(t, DefaultGroupConfig())
	t.Run("SendKindsExactlyOnce", func(t *testing.T) { testSendKinds(t, g) })
	t.Run("TwoConsumersRebalance", func(t *testing.T) { testRebalance(t, g) })
	t.Run("TagFilter", func(t *testing.T) { testTagFilter(t, g) })
	t.Run("OrderPerQueue", func(t *testing.T) { testOrderPerQueue(t, g) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, g) })
	t.Run("SlaveServesOnlyReplicated", func(t *testing.T) { testSlavePull(t, g) })
}

// testSlavePull pulls from the slave directly: replicated messages are served, and an offset
// beyond what the slave holds is "not yet" (PULL_RETRY_IMMEDIATELY at the same offset), never
// an offset correction.
func testSlavePull(t *testing.T, g *Group) {
	const topic, group = "E2EOrder", "cg-raw-slave" // written by OrderPerQueue
	g.WaitSlaveCaughtUp(t)
	hb := fmt.Sprintf(`{"clientID":"127.0.0.1@raw-slave","producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"classFilterMode":false,"topic":%q,"subString":"*","tagsSet":[],"codeSet":[],`+
		`"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, group, topic)
	ctx := context.Background()
	resp, err := g.Admin.Invoke(ctx, g.SlaveAddr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb)))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	maxOff, err := g.MaxOffset(g.MasterAddr, topic, 0)
	require.NoError(t, err)
	require.Positive(t, maxOff)
	pull := func(off int64) *remoting.Command {
		ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(off, 10),
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "-1", "suspendTimeoutMillis": "0", "subscription": "",
			"subVersion": "0", "expressionType": "TAG", "bname": BrokerName}
		resp, err := g.Admin.Invoke(ctx, g.SlaveAddr, remoting.NewRequest(remoting.PullMessage, ext, nil))
		require.NoError(t, err)
		return resp
	}
	resp = pull(0)
	require.Equal(t, remoting.Success, resp.Code, "pull of replicated messages from the slave: %d %s", resp.Code, resp.Remark)
	msgs, err := decodeRecords(resp.Body)
	require.NoError(t, err)
	require.NotEmpty(t, msgs)
	require.Equal(t, int64(0), msgs[0].QueueOffset)

	beyond := maxOff + 100
	resp = pull(beyond)
	require.Equal(t, remoting.PullRetryImmediately, resp.Code, "pull beyond the slave's data: %d %s", resp.Code, resp.Remark)
	next, err := resp.ExtInt64("nextBeginOffset")
	require.NoError(t, err)
	require.Equal(t, beyond, next, "the slave corrected an offset it has not replicated yet")
}

func testSendKinds(t *testing.T, g *Group) {
	const topic = "E2ESendKinds"
	var hist History
	p := newProducer(t, g, "pg-kinds")
	ctx := context.Background()
	type want struct{ tag, keys, user string }
	wants := map[string]want{}
	var mu sync.Mutex
	mk := func(body, tag string) *primitive.Message {
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag(tag)
		keys := "key-" + body[:min(len(body), 12)]
		m.WithKeys([]string{keys, "second"})
		m.WithProperty("user", "u-"+body[:min(len(body), 12)])
		mu.Lock()
		wants[body] = want{tag, keys + " second", "u-" + body[:min(len(body), 12)]}
		mu.Unlock()
		return m
	}
	// The first send creates the topic from TBW102.
	for i := 0; i < 20; i++ {
		mustSend(t, p, &hist, mk("sync-"+strconv.Itoa(i), "A"))
	}
	big := "big-" + strings.Repeat("z", 6000) // the client compresses bodies over 4 KiB
	mustSend(t, p, &hist, mk(big, "B"))

	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		m := mk("async-"+strconv.Itoa(i), "B")
		err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			hist.Add(m, r, err)
		}, m)
		require.NoError(t, err)
	}
	wg.Wait()
	for i := 0; i < 5; i++ {
		m := mk("oneway-"+strconv.Itoa(i), "C")
		require.NoError(t, p.SendOneWay(ctx, m))
		hist.AddUnanswered(m)
	}
	for b := 0; b < 2; b++ {
		var batch []*primitive.Message
		for i := 0; i < 5; i++ {
			batch = append(batch, mk(fmt.Sprintf("batch-%d-%d", b, i), "D"))
		}
		mustSend(t, p, &hist, batch...)
	}
	for _, s := range hist.Sent() {
		if !s.Answered && s.Err == nil {
			continue // oneway
		}
		require.NoError(t, s.Err, "send of %q", s.Body)
		require.Equal(t, primitive.SendOK, s.Status, "send of %q: %s", s.Body, StatusName(s.Status))
	}

	r := g.WaitRoute(t, topic)
	col := newCollector()
	startConsumer(t, g, "cg-kinds", topic, sel("*"), col.handler("c1"))
	bodies := make([]string, 0, len(wants))
	for b := range wants {
		bodies = append(bodies, b)
	}
	col.waitAll(t, bodies, 60*time.Second)
	waitCommitted(t, g, "cg-kinds", topic, r.WriteQueues(), 30*time.Second)

	for _, m := range col.messages() {
		body := string(m.Body)
		w, ok := wants[body]
		require.True(t, ok, "unexpected message %q", body)
		require.Equal(t, 1, col.count(body), "message %q delivered %d times", body, col.count(body))
		require.Equal(t, topic, m.Topic)
		require.Equal(t, w.tag, m.GetTags(), "tag of %q", body)
		require.Equal(t, w.keys, m.GetKeys(), "keys of %q", body)
		require.Equal(t, w.user, m.GetProperty("user"), "user property of %q", body)
	}
	require.Len(t, col.messages(), len(wants))

	g.WaitSlaveCaughtUp(t)
	checkHistory(t, g, &hist, g.MasterAddr, g.SlaveAddr)
}

func testRebalance(t *testing.T, g *Group) {
	const topic, group, queues = "E2ERebalance", "cg-rebalance", 4
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g, "pg-rebalance", producer.WithQueueSelector(producer.NewManualQueueSelector()))
	var hist History
	col := newCollector()
	startConsumer(t, g, group, topic, sel("*"), col.handler("a"))
	b := startConsumer(t, g, group, topic, sel("*"), col.handler("b"))

	round := 0
	// sendRound puts one message on every queue and returns which consumer got each queue.
	sendRound := func() (map[int]string, error) {
		round++
		bodies := make([]string, queues)
		for q := 0; q < queues; q++ {
			bodies[q] = fmt.Sprintf("rebalance-r%d-q%d", round, q)
			m := primitive.NewMessage(topic, []byte(bodies[q]))
			m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: BrokerName, QueueId: q}
			mustSend(t, p, &hist, m)
		}
		col.waitAll(t, bodies, 60*time.Second)
		owner := map[int]string{}
		for q, body := range bodies {
			rs := col.receivers(body)
			if len(rs) != 1 {
				return owner, fmt.Errorf("message %q delivered to %v", body, rs)
			}
			owner[q] = rs[0]
		}
		return owner, nil
	}
	split := func(owner map[int]string) (a, b int) {
		for _, o := range owner {
			if o == "a" {
				a++
			} else {
				b++
			}
		}
		return a, b
	}
	// Both members hold queues once the broker told them about each other.
	var owner map[int]string
	harness.Eventually(t, 60*time.Second, func() error {
		var err error
		if owner, err = sendRound(); err != nil {
			return err
		}
		if na, nb := split(owner); na != queues/2 || nb != queues/2 {
			return fmt.Errorf("queues not split: %v", owner)
		}
		return nil
	})
	t.Logf("split after %d rounds: %v", round, owner)

	// b leaves: the broker sees its connection close and tells a, which takes every queue.
	require.NoError(t, b.Shutdown())
	start := round
	harness.Eventually(t, 60*time.Second, func() error {
		var err error
		if owner, err = sendRound(); err != nil {
			t.Logf("round %d: %v (allowed while the queues move)", round, err)
			return err
		}
		if na, _ := split(owner); na != queues {
			return fmt.Errorf("a holds %d queues: %v", na, owner)
		}
		return nil
	})
	t.Logf("a took every queue after %d rounds", round-start)
	// Nothing was lost on the way.
	var all []string
	for _, s := range hist.Sent() {
		all = append(all, string(s.Body))
	}
	col.waitAll(t, all, 30*time.Second)
}

func testTagFilter(t *testing.T, g *Group) {
	const topic, group = "E2ETags", "cg-tags"
	g.CreateTopic(t, topic, 2)
	p := newProducer(t, g, "pg-tags")
	var hist History
	var wantBodies []string
	for i := 0; i < 30; i++ {
		tag := []string{"TagA", "TagB", "TagC"}[i%3]
		body := fmt.Sprintf("tags-%s-%d", tag, i)
		m := primitive.NewMessage(topic, []byte(body))
		m.WithTag(tag)
		mustSend(t, p, &hist, m)
		if tag != "TagB" {
			wantBodies = append(wantBodies, body)
		}
	}
	col := newCollector()
	start := time.Now()
	startConsumer(t, g, group, topic, sel("TagA || TagC"), col.handler("c"))
	col.waitAll(t, wantBodies, 60*time.Second)
	t.Logf("matching messages delivered after %v", time.Since(start).Round(time.Millisecond))
	// Once the group committed past every message, it has seen all it will see.
	waitCommitted(t, g, group, topic, 2, 60*time.Second)
	t.Logf("group committed past the filtered messages after %v", time.Since(start).Round(time.Millisecond))
	for _, m := range col.messages() {
		require.NotEqual(t, "TagB", m.GetTags(), "filtered tag delivered: %q", m.Body)
	}
	require.Len(t, col.messages(), len(wantBodies))
}

func testOrderPerQueue(t *testing.T, g *Group) {
	const topic, group, queues, perKey = "E2EOrder", "cg-order", 4, 25
	g.CreateTopic(t, topic, queues)
	p := newProducer(t, g, "pg-order", producer.WithQueueSelector(producer.NewHashQueueSelector()))
	var hist History
	sentOrder := map[int][]string{} // queue -> bodies in send order
	var all []string
	keys := []string{"order-k0", "order-k1", "order-k2", "order-k3", "order-k4", "order-k5"}
	for i := 0; i < perKey; i++ {
		for _, k := range keys {
			body := fmt.Sprintf("%s-%03d", k, i)
			m := primitive.NewMessage(topic, []byte(body))
			m.WithShardingKey(k)
			res := mustSend(t, p, &hist, m)
			sentOrder[res.MessageQueue.QueueId] = append(sentOrder[res.MessageQueue.QueueId], body)
			all = append(all, body)
		}
	}
	col := newCollector()
	// One consume goroutine: the client hands a queue's messages over one at a time, in the
	// order the broker served them.
	startConsumer(t, g, group, topic, sel("*"), col.handler("c"), consumer.WithConsumeGoroutineNums(1))
	col.waitAll(t, all, 60*time.Second)
	got := map[int][]string{}
	lastOff := map[int]int64{}
	for _, m := range col.messages() {
		q := m.Queue.QueueId
		if prev, ok := lastOff[q]; ok {
			require.Greater(t, m.QueueOffset, prev, "queue %d went back from %d to %d", q, prev, m.QueueOffset)
		}
		lastOff[q] = m.QueueOffset
		got[q] = append(got[q], string(m.Body))
	}
	qs := make([]int, 0, len(sentOrder))
	for q := range sentOrder {
		qs = append(qs, q)
	}
	sort.Ints(qs)
	for _, q := range qs {
		require.Equal(t, sentOrder[q], got[q], "queue %d consumed out of send order", q)
	}
	require.Greater(t, len(qs), 1, "hash selector used a single queue")
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consumeMessageDirectly against a real rocketmq-client-go push consumer: by offset message
// id and by queue offset, the listener's answer printed (CR_SUCCESS, then CR_LATER from a
// listener that asks for a retry), queryMsgById -g -d as Java's resend, a client that is not
// connected named.
func TestConsumeMessageDirectlyAgainstGroup(t *testing.T) {
	g := startLoneMaster(t)
	const topic, group = "DirectTopic", "direct-group"
	g.CreateTopic(t, topic, 1)
	p := startProducer(t, g.NamesrvAddr, "pg-direct", 2)
	var sent []*primitive.SendResult
	for i := 0; i < 3; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("direct-%d", i))))
		require.NoError(t, err)
		sent = append(sent, res)
	}

	var mu sync.Mutex
	bodies := map[string]int{}
	retry := false // the listener asks for a retry of the messages it is handed from now on
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{g.NamesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("direct-%d", time.Now().UnixNano())), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			bodies[string(m.Body)]++
		}
		if retry {
			return consumer.ConsumeRetryLater, nil
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()
	consumed := func(body string, n int) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if bodies[body] < n {
				return fmt.Errorf("%s consumed %d times, want %d (%v)", body, bodies[body], n, bodies)
			}
			return nil
		})
	}
	for i := range sent {
		consumed(fmt.Sprintf("direct-%d", i), 1)
	}
	var conn struct {
		Connections []ConnectionRow `json:"connections"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "consumerConnection", "-n", g.NamesrvAddr, "-g", group, "--json")), &conn))
	require.Len(t, conn.Connections, 1)
	clientID := conn.Connections[0].ClientID

	// By offset message id: the table Java's result prints, field by field.
	out := mustRun(t, "consumeMessageDirectly", "-n", g.NamesrvAddr, "-g", group, "-i", clientID, "-m", sent[0].OffsetMsgID)
	row := tableRow(out, sent[0].OffsetMsgID)
	require.NotNil(t, row, out)
	assert.Equal(t, []string{sent[0].OffsetMsgID, g.MasterAddr, "false", "true", "CR_SUCCESS", "-"}, row[:6], out)
	consumed("direct-0", 2)

	// By queue offset, JSON; the listener now asks for a retry: CR_LATER.
	mu.Lock()
	retry = true
	mu.Unlock()
	var res struct {
		Results []DirectResult `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "consumeMessageDirectly", "-n", g.NamesrvAddr, "-g", group, "-i", clientID,
		"-t", topic, "-b", e2e.BrokerName, "-q", "0", "-o", "1", "--json")), &res))
	require.Len(t, res.Results, 1)
	assert.Equal(t, sent[1].OffsetMsgID, res.Results[0].MsgID)
	assert.Equal(t, "CR_LATER", res.Results[0].ConsumeResult)
	consumed("direct-1", 2)
	mu.Lock()
	retry = false
	mu.Unlock()

	// queryMsgById -g -d: Java's resend to one client, every -i.
	out = mustRun(t, "queryMsgById", "-n", g.NamesrvAddr, "-g", group, "-d", clientID, "-i", sent[2].OffsetMsgID, "-i", sent[0].OffsetMsgID)
	assert.Equal(t, "CR_SUCCESS", tableRow(out, sent[2].OffsetMsgID)[4], out)
	assert.Equal(t, "CR_SUCCESS", tableRow(out, sent[0].OffsetMsgID)[4], out)
	consumed("direct-2", 2)
	consumed("direct-0", 3)

	// Refusals: a client that is not connected, usage errors.
	code, o, e := runOut("consumeMessageDirectly", "-n", g.NamesrvAddr, "-g", group, "-i", "127.0.0.1@nobody", "-m", sent[0].OffsetMsgID)
	assert.Equal(t, ExitServer, code, o+e)
	assert.Contains(t, o+e, "not online")
	code, o, e = runOut("consumeMessageDirectly", "-n", g.NamesrvAddr, "-g", group, "-i", clientID)
	assert.Equal(t, ExitUsage, code, o+e)
	code, o, e = runOut("queryMsgById", "-n", g.NamesrvAddr, "-g", group, "-i", sent[0].OffsetMsgID)
	assert.Equal(t, ExitUsage, code, o+e)
	assert.True(t, strings.Contains(o+e, "-d"), o+e)
	assert.True(t, g.Master.Running())
}

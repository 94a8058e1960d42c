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
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A running rocketmq-client-go push consumer answers GET_CONSUMER_RUNNING_INFO and
// CONSUME_MESSAGE_DIRECTLY through the broker it is connected to.
func TestConsumerRunningInfoThroughBroker(t *testing.T) {
	g := startLoneMaster(t)
	const topic, group = "RunningInfoTopic", "running-group"
	g.CreateTopic(t, topic, 2)
	p := startProducer(t, g.NamesrvAddr, "pg-running", 2)
	var sent []*primitive.SendResult
	for i := 0; i < 4; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(fmt.Sprintf("running-%d", i))))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		sent = append(sent, res)
	}

	var mu sync.Mutex
	bodies := map[string]int{}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{g.NamesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("running-%d", time.Now().UnixNano())), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			bodies[string(m.Body)]++
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()
	harness.Eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) < 4 {
			return fmt.Errorf("received %v", bodies)
		}
		return nil
	})

	var conn struct {
		Connections []ConnectionRow `json:"connections"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "consumerConnection", "-n", g.NamesrvAddr, "-g", group, "--json")), &conn))
	require.Len(t, conn.Connections, 1)
	clientID := conn.Connections[0].ClientID

	// consumerStatus -i: the client's own view, relayed by the broker.
	var info struct {
		Properties    map[string]string `json:"properties"`
		Subscriptions []struct {
			Topic string `json:"topic"`
		} `json:"subscriptions"`
		Queues []RunningQueueRow `json:"queues"`
	}
	harness.Eventually(t, 30*time.Second, func() error {
		code, out, errOut := runOut("consumerStatus", "-n", g.NamesrvAddr, "-g", group, "-i", clientID, "--json")
		if code != ExitOK {
			return fmt.Errorf("exit %d: %s%s", code, out, errOut)
		}
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			return err
		}
		if len(info.Queues) < 2 {
			return fmt.Errorf("queues %+v", info.Queues)
		}
		return nil
	})
	assert.Equal(t, "CONSUME_PASSIVELY", info.Properties["PROP_CONSUME_TYPE"])
	var topics []string
	for _, s := range info.Subscriptions {
		topics = append(topics, s.Topic)
	}
	assert.Contains(t, topics, topic)
	for _, q := range info.Queues {
		assert.Equal(t, e2e.BrokerName, q.BrokerName)
	}
	out := mustRun(t, "consumerStatus", "-n", g.NamesrvAddr, "-g", group, "-i", clientID)
	assert.Contains(t, out, "#Consumer Properties#")
	assert.NotNil(t, tableRow(out, topic, e2e.BrokerName, "0"), out)

	// Not connected: named, exit code "not found"-like (the broker is asked, the client is not there).
	code, outErr, errOut := runOut("consumerStatus", "-n", g.NamesrvAddr, "-g", group, "-i", "127.0.0.1@nobody")
	assert.NotEqual(t, ExitOK, code, outErr+errOut)
	assert.Contains(t, outErr+errOut, "127.0.0.1@nobody")

	// CONSUME_MESSAGE_DIRECTLY: the broker hands the stored message to the client's listener.
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "msgId": sent[0].OffsetMsgID}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(remoting.ConsumeMessageDirectly, ext, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	assert.True(t, strings.Contains(string(resp.Body), "CR_SUCCESS") || strings.Contains(string(resp.Body), `"consumeResult":0`), string(resp.Body))
	harness.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if bodies["running-0"] != 2 {
			return fmt.Errorf("running-0 consumed %d times", bodies["running-0"])
		}
		return nil
	})
	assert.True(t, g.Master.Running())
}

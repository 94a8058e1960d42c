package remoting

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"
)

// TestInteropGoProducer drives the real rocketmq-client-go producer against a Server that
// plays both name server and broker: one route lookup, one SendSync. It proves that framing,
// header JSON, opaque matching and the response flag are what the client expects.
func TestInteropGoProducer(t *testing.T) {
	rlog.SetLogLevel("fatal")
	sends := make(chan *Command, 4)
	var addr string
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(GetRouteInfoByTopic, func(w ResponseWriter, r *Command) {
			if r.Ext("topic") != "TopicTest" {
				_ = w.Write(NewResponse(r, TopicNotExist, "No topic route info in name server for the topic: "+r.Ext("topic")))
				return
			}
			resp := NewResponse(r, Success, "")
			resp.Body = []byte(fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{0:"%s"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`, addr))
			_ = w.Write(resp)
		})
		s.HandleFunc(SendMessage, func(w ResponseWriter, r *Command) {
			sends <- r
			resp := NewResponse(r, Success, "")
			resp.ExtFields["msgId"] = "7F000001000078BF0000000000000000"
			resp.ExtFields["queueId"] = r.Ext("queueId")
			resp.ExtFields["queueOffset"] = "42"
			resp.ExtFields["MSG_REGION"] = "DefaultRegion"
			resp.ExtFields["TRACE_ON"] = "true"
			_ = w.Write(resp)
		})
		s.HandleFunc(HeartBeat, func(w ResponseWriter, r *Command) { _ = w.Write(NewResponse(r, Success, "")) })
	})
	addr = s.Addr().String()

	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{addr})),
		producer.WithGroupName("pg"),
		producer.WithInstanceName(fmt.Sprintf("interop-%d", time.Now().UnixNano())),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := primitive.NewMessage("TopicTest", []byte("hello-sync"))
	msg.WithTag("TagA")
	res, err := p.SendSync(ctx, msg)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	require.Equal(t, "7F000001000078BF0000000000000000", res.OffsetMsgID)
	require.EqualValues(t, 42, res.QueueOffset)
	require.Equal(t, "broker-a", res.MessageQueue.BrokerName)
	require.NotEmpty(t, res.MsgID)

	got := <-sends
	require.Equal(t, "hello-sync", string(got.Body))
	require.Equal(t, "TopicTest", got.Ext("topic"))
	require.Equal(t, "pg", got.Ext("producerGroup"))
	require.Equal(t, "GO", got.Language)
	require.Contains(t, got.Ext("properties"), "TAGS\x01TagA\x02")
	require.Contains(t, got.Ext("properties"), "UNIQ_KEY\x01"+res.MsgID)
	require.False(t, got.IsOneway())
}

package broker

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// The broker forwards 307 and 309 to the named client's connection and relays its answer.
func TestCallConsumerForwardsAndRelays(t *testing.T) {
	b := startBroker(t, testConfig(t))
	admin := newTestClient(t)
	consumer := newTestClient(t)
	var seen atomic.Pointer[remoting.Command]
	consumer.HandleRequest(remoting.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
		seen.Store(req)
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.ExtFields["from"] = "client"
		resp.Body = []byte(`{"properties":{"consumeType":"CONSUME_PASSIVELY"}}`)
		return resp
	})
	consumer.HandleRequest(remoting.ConsumeMessageDirectly, func(req *remoting.Command) *remoting.Command {
		seen.Store(req)
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte(`{"consumeResult":"CR_SUCCESS","order":false,"autoCommit":true,"spentTimeMills":1}`)
		return resp
	})
	hb := heartbeatBody("cid-call", "call-g", map[string]string{"CallTopic": "*"})
	require.Equal(t, remoting.Success, invoke(t, consumer, b.Addr(), remoting.HeartBeat, nil, hb).Code)

	ext := map[string]string{"consumerGroup": "call-g", "clientId": "cid-call", "jstackEnable": "false"}
	r := invoke(t, admin, b.Addr(), remoting.GetConsumerRunningInfo, ext, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.Equal(t, `{"properties":{"consumeType":"CONSUME_PASSIVELY"}}`, string(r.Body))
	require.Equal(t, "client", r.Ext("from"))
	require.Equal(t, remoting.GetConsumerRunningInfo, seen.Load().Code)
	require.Equal(t, "cid-call", seen.Load().Ext("clientId"))
	require.Equal(t, "false", seen.Load().Ext("jstackEnable"))

	// Not online: a wrong id, a wrong group.
	for _, e := range []map[string]string{{"consumerGroup": "call-g", "clientId": "other"}, {"consumerGroup": "nope", "clientId": "cid-call"}} {
		r = invoke(t, admin, b.Addr(), remoting.GetConsumerRunningInfo, e, nil)
		require.Equal(t, remoting.SystemError, r.Code)
		require.Equal(t, "The Consumer <"+e["consumerGroup"]+"> <"+e["clientId"]+"> not online", r.Remark)
	}

	// CONSUME_MESSAGE_DIRECTLY: the stored message goes to the client as the body.
	s := send(t, admin, b.Addr(), "CallTopic", 0, "", "direct body")
	require.Equal(t, remoting.Success, s.Code, s.Remark)
	msgID := s.Ext("offsetMsgId")
	if msgID == "" {
		msgID = s.Ext("msgId")
	}
	_, off := mustParseMsgID(t, msgID)
	stored, err := b.store.ReadRecord(off)
	require.NoError(t, err)
	r = invoke(t, admin, b.Addr(), remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "call-g", "clientId": "cid-call", "msgId": msgID}, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.Contains(t, string(r.Body), "CR_SUCCESS")
	fwd := seen.Load()
	require.Equal(t, remoting.ConsumeMessageDirectly, fwd.Code)
	require.Equal(t, "broker-a", fwd.Ext("brokerName"))
	require.Equal(t, stored, fwd.Body)

	r = invoke(t, admin, b.Addr(), remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "call-g", "clientId": "cid-call", "msgId": "zz"}, nil)
	require.Equal(t, remoting.SystemError, r.Code)
	missing := msgID[:16] + strconv.FormatInt(1<<40, 16)
	for len(missing) < 32 {
		missing = msgID[:16] + "0" + missing[16:]
	}
	r = invoke(t, admin, b.Addr(), remoting.ConsumeMessageDirectly, map[string]string{"consumerGroup": "call-g", "clientId": "cid-call", "msgId": missing}, nil)
	require.Equal(t, remoting.QueryNotFound, r.Code, r.Remark)
}

// A client that does not answer: CONSUME_MSG_TIMEOUT after the broker's wait.
func TestCallConsumerTimeout(t *testing.T) {
	cfg := testConfig(t)
	cfg.ClientCallTimeout = 300 * time.Millisecond
	b := startBroker(t, cfg)
	admin := newTestClient(t)
	consumer := newTestClient(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	consumer.HandleRequest(remoting.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
		<-release
		return nil
	})
	require.Equal(t, remoting.Success, invoke(t, consumer, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("cid-slow", "slow-g", map[string]string{"T": "*"})).Code)
	r := invoke(t, admin, b.Addr(), remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "slow-g", "clientId": "cid-slow"}, nil)
	require.Equal(t, remoting.ConsumeMsgTimeout, r.Code, r.Remark)
	require.Contains(t, r.Remark, "consumer <slow-g> <cid-slow> Timeout")
}

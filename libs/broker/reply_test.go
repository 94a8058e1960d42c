package broker

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// replyExt is a SEND_REPLY_MESSAGE header to requester's client id.
func replyExt(b *Broker, requester string) map[string]string {
	return sendExt(b.cfg.BrokerClusterName+"_REPLY_TOPIC", 0, props("CORRELATION_ID", "c1", "MSG_TYPE", "reply", "REPLY_TO_CLIENT", requester))
}

// TestReplyPushOutcomes: the answers RocketMQ gives for a requester that answers an error, a
// requester that is not a producer here, and a reply without REPLY_TO_CLIENT; every reply is
// stored all the same (storeReplyMessageEnable) and counted.
func TestReplyPushOutcomes(t *testing.T) {
	b := startBroker(t, testConfig(t))
	replier := newTestClient(t)
	requester := newTestClient(t)
	answer := remoting.Success
	requester.HandleRequest(remoting.PushReplyMessageToClient, func(req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, answer, "busy")
	})
	const id = "127.0.0.1@unit-requester"
	hb := []byte(`{"clientID":"` + id + `","producerDataSet":[{"groupName":"pg-req"}],"consumerDataSet":[]}`)
	require.Equal(t, remoting.Success, invoke(t, requester, b.Addr(), remoting.HeartBeat, nil, hb).Code)

	resp := invoke(t, replier, b.Addr(), remoting.SendReplyMessage, replyExt(b, id), []byte("r1"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "0", resp.Ext("queueOffset"))
	require.Equal(t, "1", resp.Ext("replicas"))

	answer = remoting.SystemError
	resp = invoke(t, replier, b.Addr(), remoting.SendReplyMessage, replyExt(b, id), []byte("r2"))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "push reply message to "+id+"fail.", resp.Remark)
	require.Equal(t, "1", resp.Ext("queueOffset"), "stored all the same")

	resp = invoke(t, replier, b.Addr(), remoting.SendReplyMessage, replyExt(b, "127.0.0.1@nobody"), []byte("r3"))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "push reply message fail, channel of <127.0.0.1@nobody> not found.", resp.Remark)

	ext := replyExt(b, id)
	ext["properties"] = props("CORRELATION_ID", "c4")
	resp = invoke(t, replier, b.Addr(), remoting.SendReplyMessage, ext, []byte("r4"))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "reply message properties[REPLY_TO_CLIENT] is null", resp.Remark)

	// A body over maxMessageSize and a system topic are refused before any push.
	resp = invoke(t, replier, b.Addr(), remoting.SendReplyMessage, replyExt(b, id), make([]byte, b.cfg.MaxMessageSize+1))
	require.Equal(t, remoting.MessageIllegal, resp.Code)
	ext = replyExt(b, id)
	ext["topic"] = "SCHEDULE_TOPIC_XXXX"
	resp = invoke(t, replier, b.Addr(), remoting.SendReplyMessage, ext, []byte("r5"))
	require.Equal(t, remoting.NoPermission, resp.Code)

	st := &b.replies
	require.Equal(t, uint64(1), st.pushed.Load())
	require.Equal(t, uint64(1), st.pushFailed.Load())
	require.Equal(t, uint64(1), st.notFound.Load())
	require.Equal(t, uint64(1), st.noReplyTo.Load())
	require.Equal(t, uint64(4), st.stored.Load())
	require.Equal(t, uint64(2), st.refused.Load())
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset(b.cfg.BrokerClusterName+"_REPLY_TOPIC", 0) == 4 }, 10*time.Second, 5*time.Millisecond)

	// The runtime info carries the counts (mqadmin brokerStatus).
	info := invoke(t, replier, b.Addr(), remoting.GetBrokerRuntimeInfo, nil, nil)
	require.Contains(t, string(info.Body), `"replyPushed":"1"`)
}

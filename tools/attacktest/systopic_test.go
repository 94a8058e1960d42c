package attacktest

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// sendExt is a SEND_MESSAGE header as a client writes it.
func sendExt(topic string, queueID string, properties string) map[string]string {
	return map[string]string{
		"producerGroup": "attacker", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": queueID, "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": properties, "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}
}

func props(kv ...string) string {
	var s string
	for i := 0; i+1 < len(kv); i += 2 {
		s += kv[i] + "\x01" + kv[i+1] + "\x02"
	}
	return s
}

// A stranger sends into SCHEDULE_TOPIC_XXXX with DELAY set (what used to start a delay loop of
// about 1,500 entries a second, replicated and surviving restarts) and into every other topic
// only brokers write: each is answered NO_PERMISSION as RocketMQ answers it, nothing is stored,
// and the CommitLog does not move for 5 s afterwards.
func TestSystemTopicSend(t *testing.T) {
	f := Start(t, Config{})
	f.SendOK(t, "SysBystander", []byte("before"))
	f.WaitSlaveCaughtUp(t)
	before, err := f.MasterStatus()
	require.NoError(t, err)
	for _, topic := range []string{"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"} {
		for _, p := range []string{
			props("DELAY", "1", "UNIQ_KEY", "evil-"+topic),
			props("DELAY", "3", "REAL_TOPIC", "SCHEDULE_TOPIC_XXXX", "REAL_QID", "0"),
			props("UNIQ_KEY", "plain-"+topic),
		} {
			for _, code := range []int32{remoting.SendMessage, remoting.SendBatchMessage} {
				body := []byte("loop me")
				if code == remoting.SendBatchMessage {
					body = batchBody("loop me", props("UNIQ_KEY", "b"))
				}
				resp, err := f.Invoke(f.MasterAddr, code, sendExt(topic, "0", p), body)
				require.NoError(t, err)
				require.Equal(t, remoting.NoPermission, resp.Code, "%s to %s: %q", remoting.RequestName(code), topic, resp.Remark)
				require.Equal(t, "Sending message to topic["+topic+"] is forbidden.", resp.Remark)
			}
		}
	}
	after, err := f.MasterStatus()
	require.NoError(t, err)
	require.Equal(t, before.MaxOffset, after.MaxOffset, "nothing stored")
	require.Never(t, func() bool {
		st, err := f.MasterStatus()
		return err != nil || st.MaxOffset != before.MaxOffset
	}, 5*time.Second, 100*time.Millisecond, "the CommitLog grows: a delivery loop")
	refused, err := Metric(f.MasterHTTP, "rmqha_broker_system_topic_send_refused_total")
	require.NoError(t, err)
	require.EqualValues(t, 6*3*2, refused)
	f.CheckInvariants(t)
}

// queueId 4294967296 used to be parsed as 64 bits and cast to 32: the message landed in queue
// 0. It is refused (SYSTEM_ERROR, what RocketMQ answers for a header it cannot decode), as
// are the other out-of-range values, and nothing is stored.
func TestQueueIDOutOfRange(t *testing.T) {
	f := Start(t, Config{})
	f.CreateTopic(t, "QidTopic", 4)
	f.SendOK(t, "QidTopic", []byte("before"))
	f.WaitSlaveCaughtUp(t)
	before, err := f.MasterStatus()
	require.NoError(t, err)
	q0, err := f.MaxOffset(f.MasterAddr, "QidTopic", 0)
	require.NoError(t, err)
	for _, qid := range []string{"4294967296", "4294967297", "-4294967296", "9223372036854775807", "99999999999999999999"} {
		resp, err := f.Invoke(f.MasterAddr, remoting.SendMessage, sendExt("QidTopic", qid, props("UNIQ_KEY", "q"+qid)), []byte("wrapped"))
		require.NoError(t, err)
		require.Equal(t, remoting.SystemError, resp.Code, "queueId %s: %q", qid, resp.Remark)
		require.Contains(t, resp.Remark, "queueId")
		ext := map[string]string{"a": "attacker", "b": "QidTopic", "c": "TBW102", "d": "4", "e": qid, "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}
		resp, err = f.Invoke(f.MasterAddr, remoting.SendMessageV2, ext, []byte("wrapped"))
		require.NoError(t, err)
		require.Equal(t, remoting.SystemError, resp.Code, "V2 queueId %s: %q", qid, resp.Remark)
		resp, err = f.Invoke(f.MasterAddr, remoting.PullMessage, map[string]string{
			"consumerGroup": "attacker", "topic": "QidTopic", "queueId": qid, "queueOffset": "0", "maxMsgNums": "32",
			"sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
		}, nil)
		require.NoError(t, err)
		require.Equal(t, remoting.SystemError, resp.Code, "pull queueId %s: %q", qid, resp.Remark)
	}
	after, err := f.MasterStatus()
	require.NoError(t, err)
	require.Equal(t, before.MaxOffset, after.MaxOffset, "nothing stored")
	q0after, err := f.MaxOffset(f.MasterAddr, "QidTopic", 0)
	require.NoError(t, err)
	require.Equal(t, q0, q0after, "queue 0 unchanged")
	f.CheckInvariants(t)
}

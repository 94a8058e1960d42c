package broker

import (
	"testing"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// Client sends into the topics only the broker stores into are answered as RocketMQ answers
// them (NO_PERMISSION "Sending message to topic[T] is forbidden."), with every send code, and
// store nothing; DELAY set or not. RMQ_SYS_TRACE_TOPIC takes sends (message traces).
func TestSendToSystemTopicsRefused(t *testing.T) {
	cfg := metricsConfig(t)
	b := startBroker(t, cfg)
	c := newTestClient(t)
	forbidden := []string{"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"}
	refused := 0
	for _, topic := range forbidden {
		before := b.store.MaxOffset()
		for _, tc := range []struct {
			name string
			code int32
			ext  map[string]string
			body []byte
		}{
			{"SEND_MESSAGE", remoting.SendMessage, sendExt(topic, 0, props("DELAY", "1", "UNIQ_KEY", "a")), []byte("x")},
			{"SEND_MESSAGE no delay", remoting.SendMessage, sendExt(topic, 0, props("REAL_TOPIC", topic, "REAL_QID", "0")), []byte("x")},
			{"SEND_MESSAGE_V2", remoting.SendMessageV2, map[string]string{"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": props("DELAY", "2"), "j": "0", "k": "false", "m": "false"}, []byte("x")},
			{"SEND_BATCH_MESSAGE", remoting.SendBatchMessage, sendExt(topic, 0, ""), batchBody([]string{"b1"}, []string{props("UNIQ_KEY", "b1")})},
		} {
			resp := invoke(t, c, b.Addr(), tc.code, tc.ext, tc.body)
			require.Equal(t, remoting.NoPermission, resp.Code, "%s to %s: %q", tc.name, topic, resp.Remark)
			require.Equal(t, "Sending message to topic["+topic+"] is forbidden.", resp.Remark)
			refused++
		}
		require.Equal(t, before, b.store.MaxOffset(), "nothing stored for %s", topic)
	}
	require.Equal(t, float64(refused), metric(t, b, "rmqha_broker_system_topic_send_refused_total"))
	resp := send(t, c, b.Addr(), meta.TraceTopic, 0, "", "trace data")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = send(t, c, b.Addr(), "NormalTopic", 0, "", "normal")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// updateTopic and deleteTopic of a system topic are refused as RocketMQ refuses them
// (SYSTEM_ERROR "The topic[T] is conflict with system topic."), and change nothing.
func TestAdminOnSystemTopicsRefused(t *testing.T) {
	cfg := testConfig(t)
	b := startBroker(t, cfg)
	c := newTestClient(t)
	for _, topic := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
		"RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "rmq_sys_anything",
		cfg.BrokerClusterName, cfg.BrokerName, cfg.BrokerClusterName + "_REPLY_TOPIC"} {
		old, had := b.tables.Topics.Get(topic)
		resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "2"}, nil)
		require.Equal(t, remoting.SystemError, resp.Code, "update %s", topic)
		require.Equal(t, "The topic["+topic+"] is conflict with system topic.", resp.Remark)
		resp = invoke(t, c, b.Addr(), remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)
		require.Equal(t, remoting.SystemError, resp.Code, "delete %s", topic)
		require.Equal(t, "The topic["+topic+"] is conflict with system topic.", resp.Remark)
		now, has := b.tables.Topics.Get(topic)
		require.Equal(t, had, has, topic)
		require.Equal(t, old, now, topic)
	}
	resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "rmq_sy_close", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

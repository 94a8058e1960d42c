package broker

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func TestBrokerSystemTopicsConsumersAndConsumeStats(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	for _, tc := range []struct {
		topic string
		order string
	}{{"W", "false"}, {"O", "true"}, {"Gone", "false"}} {
		create := map[string]string{"topic": tc.topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "order": tc.order}
		require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, create, nil).Code)
	}
	for i := 0; i < 6; i++ {
		require.Equal(t, remoting.Success, send(t, c, b.Addr(), "W", i%2, "", "w"+strconv.Itoa(i)).Code)
	}
	require.Equal(t, remoting.Success, send(t, c, b.Addr(), "O", 0, "", "o").Code)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("W", 1) == 3 && b.store.QueueMaxOffset("O", 0) == 1 },
		5*time.Second, 2*time.Millisecond)
	commitOff := func(group, topic string, q, off int) {
		u := map[string]string{"topic": topic, "queueId": strconv.Itoa(q), "consumerGroup": group, "commitOffset": strconv.Itoa(off)}
		require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateConsumerOffset, u, nil).Code)
	}
	for _, g := range []string{"offline-g", "online-g"} {
		gc, _ := json.Marshal(meta.SubscriptionGroupConfig{GroupName: g, ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16})
		require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, gc).Code)
	}
	commitOff("offline-g", "W", 0, 1)
	commitOff("offline-g", "O", 0, 1)
	commitOff("offline-g", "Gone", 0, 0)
	commitOff("online-g", "W", 1, 3)
	commitOff("online-g", "O", 0, 0) // online-g no longer subscribes to O: left out
	hb := heartbeatBody("cid-bstats", "online-g", map[string]string{"W": "*", "Sub": "*"})
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.HeartBeat, nil, hb).Code)
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.DeleteTopicInBroker, map[string]string{"topic": "Gone"}, nil).Code)

	// GET_SYSTEM_TOPIC_LIST_FROM_BROKER.
	resp := invoke(t, c, b.Addr(), remoting.GetSystemTopicListFromBroker, nil, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	topics, _, err := route.DecodeTopicList(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "OFFSET_MOVED_EVENT",
		"DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC", "rmq_sys_wheel_timer"} {
		require.Contains(t, topics, want)
	}
	require.NotContains(t, topics, "W")

	// QUERY_TOPIC_CONSUME_BY_WHO: online subscribers and groups with offsets.
	who := func(topic string) []string {
		resp := invoke(t, c, b.Addr(), remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		gs, err := route.DecodeGroupList(resp.Body)
		require.NoError(t, err)
		return gs
	}
	require.Equal(t, []string{"offline-g", "online-g"}, who("W"))
	require.Equal(t, []string{"online-g"}, who("Sub"))
	require.Equal(t, []string{"offline-g", "online-g"}, who("O"))
	require.Empty(t, who("Nobody"))
	require.Equal(t, remoting.SystemError, invoke(t, c, b.Addr(), remoting.QueryTopicConsumeByWho, nil, nil).Code)

	// GET_BROKER_CONSUME_STATS.
	stats := func(order string) route.ConsumeStatsList {
		resp := invoke(t, c, b.Addr(), remoting.GetBrokerConsumeStats, map[string]string{"isOrder": order}, nil)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		l, err := route.DecodeConsumeStatsList(resp.Body)
		require.NoError(t, err)
		return l
	}
	l := stats("false")
	require.Equal(t, b.AdvertisedAddr(), l.BrokerAddr)
	byGroup := map[string][]route.ConsumeStats{}
	for _, g := range l.Groups {
		byGroup[g.Group] = g.Stats
	}
	require.Len(t, byGroup["offline-g"], 2, "W and O; Gone is deleted")
	require.Len(t, byGroup["online-g"], 1, "only W: the online group does not subscribe to O")
	w1 := byGroup["online-g"][0].OffsetTable[route.MessageQueue{Topic: "W", BrokerName: "broker-a", QueueID: 1}]
	require.Equal(t, route.OffsetWrapper{BrokerOffset: 3, ConsumerOffset: 3, PullOffset: 3, LastTimestamp: w1.LastTimestamp}, w1)
	require.Positive(t, w1.LastTimestamp)
	// offline-g: W 3+3 behind by 2+3, O 1 behind by 0; online-g: W q0 3 + q1 0.
	require.Equal(t, int64(5+0+3), l.TotalDiff)
	// isOrder: only the ordered topic.
	l = stats("true")
	for _, g := range l.Groups {
		for _, s := range g.Stats {
			for q := range s.OffsetTable {
				require.Equal(t, "O", q.Topic)
			}
		}
	}
}

package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func TestConnectionListsAndStats(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	create := map[string]string{"topic": "S", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, create, nil).Code)
	for i := 0; i < 4; i++ {
		require.Equal(t, remoting.Success, send(t, c, b.Addr(), "S", i%2, "", "m"+strconv.Itoa(i)).Code)
	}
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("S", 1) == 2 }, 5*time.Second, 2*time.Millisecond)

	// Not online / not existing.
	resp := invoke(t, c, b.Addr(), remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "sg"}, nil)
	require.Equal(t, remoting.ConsumerNotOnline, resp.Code)
	require.Equal(t, "the consumer group[sg] not online", resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.GetProducerConnectionList, map[string]string{"producerGroup": "pg"}, nil)
	require.Equal(t, remoting.SystemError, resp.Code)

	hb := heartbeatBody("cid-stats", "sg", map[string]string{"S": "*"})
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.HeartBeat, nil, hb).Code)
	resp = invoke(t, c, b.Addr(), remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": "sg"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	cc, err := route.DecodeConsumerConnection(resp.Body)
	require.NoError(t, err)
	require.Len(t, cc.ConnectionSet, 1)
	require.Equal(t, "cid-stats", cc.ConnectionSet[0].ClientID)
	require.Equal(t, remoting.LanguageGo, cc.ConnectionSet[0].Language)
	require.NotEmpty(t, cc.ConnectionSet[0].ClientAddr)
	require.Equal(t, "*", cc.SubscriptionTable["S"].SubString)
	require.Equal(t, "CLUSTERING", cc.MessageModel)

	resp = invoke(t, c, b.Addr(), remoting.GetProducerConnectionList, map[string]string{"producerGroup": "pg"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	pc, err := route.DecodeProducerConnection(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "cid-stats", pc.ConnectionSet[0].ClientID)

	u := map[string]string{"topic": "S", "queueId": "1", "consumerGroup": "sg", "commitOffset": "1"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateConsumerOffset, u, nil).Code)
	for _, ext := range []map[string]string{{"consumerGroup": "sg", "topic": "S"}, {"consumerGroup": "sg"}} {
		resp = invoke(t, c, b.Addr(), remoting.GetConsumeStats, ext, nil)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		_, table, err := route.DecodeConsumeStats(resp.Body)
		require.NoError(t, err)
		q1 := table[route.MessageQueue{Topic: "S", BrokerName: "broker-a", QueueID: 1}]
		require.Equal(t, int64(2), q1.BrokerOffset)
		require.Equal(t, int64(1), q1.ConsumerOffset)
		require.Positive(t, q1.LastTimestamp)
		require.Len(t, table, 2)
	}
	resp = invoke(t, c, b.Addr(), remoting.GetConsumeStats, map[string]string{}, nil)
	require.Equal(t, remoting.SystemError, resp.Code)

	resp = invoke(t, c, b.Addr(), remoting.GetTopicStatsInfo, map[string]string{"topic": "S"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ts, err := route.DecodeTopicStatsTable(resp.Body)
	require.NoError(t, err)
	require.Equal(t, int64(2), ts[route.MessageQueue{Topic: "S", BrokerName: "broker-a", QueueID: 0}].MaxOffset)
	require.Positive(t, ts[route.MessageQueue{Topic: "S", BrokerName: "broker-a", QueueID: 0}].LastUpdateTimestamp)
	resp = invoke(t, c, b.Addr(), remoting.GetTopicStatsInfo, map[string]string{"topic": "Nope"}, nil)
	require.Equal(t, remoting.TopicNotExist, resp.Code)
	require.Equal(t, "topic[Nope] not exist", resp.Remark)
}

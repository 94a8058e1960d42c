package broker

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/brokerstats"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// VIEW_BROKER_STATS_DATA, consumeTps and the runtime-info totals for a known backlog: 7
// messages stored (a batch of 3, 4 single sends), 5 of them pulled by one group.
func TestViewBrokerStatsData(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	create := map[string]string{"topic": "ST", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, create, nil).Code)
	for i := 0; i < 4; i++ {
		require.Equal(t, remoting.Success, send(t, c, b.Addr(), "ST", 0, "", "body"+strconv.Itoa(i)).Code) // 5 bytes each
	}
	bodies := []string{"b1", "b2", "b3"}
	bp := []string{props("UNIQ_KEY", "u1"), props("UNIQ_KEY", "u2"), props("UNIQ_KEY", "u3")}
	ext := sendExt("ST", 0, "")
	ext["batch"] = "true"
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.SendBatchMessage, ext, batchBody(bodies, bp)).Code)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("ST", 0) == 7 }, 5*time.Second, 2*time.Millisecond)

	hb := heartbeatBody("cid-stats", "SG", map[string]string{"ST": "*"})
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.HeartBeat, nil, hb).Code)
	pe := pullExt("SG", "ST", 0, 2, 0, 0)
	resp := invoke(t, c, b.Addr(), remoting.PullMessage, pe, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Len(t, decodeRecords(t, resp.Body), 5)
	pe = pullExt("SG", "ST", 0, 7, 0, 0)
	require.Equal(t, remoting.PullNotFound, invoke(t, c, b.Addr(), remoting.PullMessage, pe, nil).Code)
	commit := map[string]string{"topic": "ST", "queueId": "0", "consumerGroup": "SG", "commitOffset": "5"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateConsumerOffset, commit, nil).Code)

	// The next minute sample, 10 s on: the first window of a new item spans 10 s.
	b.bstats.Tick(time.Now().Add(brokerstats.MinutePeriod + time.Second))
	view := func(name, key string) (route.BrokerStatsData, *remoting.Command) {
		resp := invoke(t, c, b.Addr(), remoting.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, nil)
		if resp.Code != remoting.Success {
			return route.BrokerStatsData{}, resp
		}
		d, err := route.DecodeBrokerStatsData(resp.Body)
		require.NoError(t, err)
		return d, resp
	}
	d, _ := view("TOPIC_PUT_NUMS", "ST")
	assert.Equal(t, int64(7), d.StatsMinute.Sum)
	assert.InDelta(t, 0.7, d.StatsMinute.Tps, 0.1)
	assert.InDelta(t, 7.0/5, d.StatsMinute.Avgpt, 1e-9, "5 requests")
	assert.Zero(t, d.StatsHour.Sum, "the hour ring samples 10 min after start")
	d, _ = view("TOPIC_PUT_SIZE", "ST")
	assert.Equal(t, int64(4*5+3*2), d.StatsMinute.Sum)
	d, _ = view("GROUP_GET_NUMS", "ST@SG")
	assert.Equal(t, int64(5), d.StatsMinute.Sum)
	getTps := d.StatsMinute.Tps
	assert.Positive(t, getTps)
	d, _ = view("BROKER_PUT_NUMS", "DefaultCluster")
	assert.Equal(t, int64(7), d.StatsMinute.Sum)
	for _, k := range [][2]string{{"TOPIC_PUT_NUMS", "nope"}, {"GROUP_GET_NUMS", "ST@nobody"}, {"NO_SUCH_STATS", "ST"}, {"", ""}} {
		_, resp := view(k[0], k[1])
		assert.Equal(t, remoting.SystemError, resp.Code)
		assert.Equal(t, "The stats <"+k[0]+"> <"+k[1]+"> not exist", resp.Remark)
	}

	// consumeTps: the group's minute tps on the topic.
	resp = invoke(t, c, b.Addr(), remoting.GetConsumeStats, map[string]string{"consumerGroup": "SG", "topic": "ST"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	tps, table, err := route.DecodeConsumeStats(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, getTps, tps)
	assert.Equal(t, int64(7), table[route.MessageQueue{Topic: "ST", BrokerName: "broker-a", QueueID: 0}].BrokerOffset)
	resp = invoke(t, c, b.Addr(), remoting.GetBrokerConsumeStats, nil, nil)
	list, err := route.DecodeConsumeStatsList(resp.Body)
	require.NoError(t, err)
	var found bool
	for _, g := range list.Groups {
		if g.Group == "SG" {
			require.Len(t, g.Stats, 1)
			assert.Equal(t, getTps, g.Stats[0].ConsumeTps)
			found = true
		}
	}
	assert.True(t, found, "%+v", list)

	// Runtime info: the totals without system topics, the rate keys present.
	var kv struct {
		Table map[string]string `json:"table"`
	}
	require.NoError(t, json.Unmarshal(invoke(t, c, b.Addr(), remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv))
	assert.Equal(t, "7", kv.Table["msgPutTotalTodayNow"])
	assert.Equal(t, "5", kv.Table["msgGetTotalTodayNow"])
	assert.Equal(t, "0", kv.Table["msgPutTotalYesterdayMorning"])
	for _, k := range []string{"putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps", "getTransferredTps"} {
		assert.Contains(t, kv.Table, k)
	}

	// Deleting the topic drops its items.
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.DeleteTopicInBroker, map[string]string{"topic": "ST"}, nil).Code)
	_, resp = view("TOPIC_PUT_NUMS", "ST")
	assert.Equal(t, remoting.SystemError, resp.Code)
	_, resp = view("GROUP_GET_NUMS", "ST@SG")
	assert.Equal(t, remoting.SystemError, resp.Code)
}

func TestBrokerStatsConfig(t *testing.T) {
	for _, idle := range []int{-1, 0, 5, 60, math.MaxInt32} {
		cfg := testConfig(t)
		cfg.MaxStatsIdleTimeInMinutes = idle
		_, err := newBrokerStats(cfg)
		require.NoError(t, err, idle)
	}
	cfg := testConfig(t)
	cfg.StatsMaxKeys = -1
	require.ErrorIs(t, cfg.Validate(), ErrInvalidConfig)
}

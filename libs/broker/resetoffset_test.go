package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func TestResetOffsetByTime(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	create := map[string]string{"topic": "R", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, create, nil).Code)
	for i := 0; i < 6; i++ {
		require.Equal(t, remoting.Success, send(t, c, b.Addr(), "R", i%2, "", "m"+strconv.Itoa(i)).Code)
	}
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("R", 1) == 3 }, 5*time.Second, 2*time.Millisecond)
	for q := 0; q < 2; q++ {
		u := map[string]string{"topic": "R", "queueId": strconv.Itoa(q), "consumerGroup": "rg", "commitOffset": "3"}
		require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateConsumerOffset, u, nil).Code)
	}
	reset := func(ts int64, force bool) *remoting.Command {
		return invoke(t, c, b.Addr(), remoting.InvokeBrokerToResetOffset, map[string]string{
			"topic": "R", "group": "rg", "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force)}, nil)
	}
	// No consumer online: refused, nothing changed.
	resp := reset(0, true)
	require.Equal(t, remoting.ConsumerNotOnline, resp.Code, resp.Remark)
	off, _ := b.tables.Offsets.Query("rg", "R", 0)
	require.Equal(t, int64(3), off)

	hb := heartbeatBody("cid-reset", "rg", map[string]string{"R": "*"})
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.HeartBeat, nil, hb).Code)
	resp = reset(0, true)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	table, err := route.DecodeResetOffsetBody(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[route.MessageQueue]int64{
		{Topic: "R", BrokerName: "broker-a", QueueID: 0}: 0,
		{Topic: "R", BrokerName: "broker-a", QueueID: 1}: 0,
	}, table)
	off, _ = b.tables.Offsets.Query("rg", "R", 1)
	require.Equal(t, int64(0), off, "committed as an explicit reset")
	require.Len(t, b.tables.Offsets.Resets(), 1)

	// -1: the max offsets; without force only lowering is kept.
	resp = reset(-1, false)
	require.Equal(t, remoting.Success, resp.Code)
	table, _ = route.DecodeResetOffsetBody(resp.Body)
	require.Equal(t, int64(0), table[route.MessageQueue{Topic: "R", BrokerName: "broker-a", QueueID: 0}])
	resp = reset(-1, true)
	table, _ = route.DecodeResetOffsetBody(resp.Body)
	require.Equal(t, int64(3), table[route.MessageQueue{Topic: "R", BrokerName: "broker-a", QueueID: 0}])

	// 5.x: one queue to an offset, no client told.
	resp = invoke(t, c, b.Addr(), remoting.InvokeBrokerToResetOffset, map[string]string{
		"topic": "R", "group": "rg", "timestamp": "0", "queueId": "1", "offset": "2"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	off, _ = b.tables.Offsets.Query("rg", "R", 1)
	require.Equal(t, int64(2), off)

	for _, bad := range []struct {
		ext  map[string]string
		code int32
	}{
		{map[string]string{"topic": "R", "timestamp": "0"}, remoting.SystemError},
		{map[string]string{"topic": "R", "group": "rg"}, remoting.SystemError},
		{map[string]string{"topic": "R", "group": "rg", "timestamp": "0", "isForce": "maybe"}, remoting.SystemError},
		{map[string]string{"topic": "Nope", "group": "rg", "timestamp": "0"}, remoting.TopicNotExist},
		{map[string]string{"topic": "R", "group": "other", "timestamp": "0"}, remoting.SystemError},
	} {
		resp = invoke(t, c, b.Addr(), remoting.InvokeBrokerToResetOffset, bad.ext, nil)
		require.Equal(t, bad.code, resp.Code, "%v: %s", bad.ext, resp.Remark)
	}

	// Consume time span: queue 1 is consumed up to offset 2 of 3.
	resp = invoke(t, c, b.Addr(), remoting.QueryConsumeTimeSpan, map[string]string{"topic": "R", "group": "rg"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	spans, err := route.DecodeQueryConsumeTimeSpanBody(resp.Body)
	require.NoError(t, err)
	require.Len(t, spans, 2)
	s1 := spans[1]
	require.Equal(t, int32(1), s1.MessageQueue.QueueID)
	require.Positive(t, s1.MinTimeStamp)
	require.GreaterOrEqual(t, s1.MaxTimeStamp, s1.MinTimeStamp)
	require.GreaterOrEqual(t, s1.ConsumeTimeStamp, s1.MinTimeStamp)
	require.GreaterOrEqual(t, s1.DelayTime, int64(0))
	resp = invoke(t, c, b.Addr(), remoting.QueryConsumeTimeSpan, map[string]string{"topic": "Nope", "group": "rg"}, nil)
	require.Equal(t, remoting.TopicNotExist, resp.Code)

	// Clone rg's offsets to a new group (an explicit reset too).
	resp = invoke(t, c, b.Addr(), remoting.CloneGroupOffset, map[string]string{"srcGroup": "rg", "destGroup": "copy", "topic": "", "offline": "false"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, map[string]map[int32]int64{"R": {0: 3, 1: 2}}, b.tables.Offsets.GroupOffsets("copy"))
	resp = invoke(t, c, b.Addr(), remoting.CloneGroupOffset, map[string]string{"destGroup": "copy"}, nil)
	require.Equal(t, remoting.SystemError, resp.Code)
}

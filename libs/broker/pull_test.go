package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func TestPullLongPollWakeUp(t *testing.T) {
	cfg := testConfig(t)
	b := startBroker(t, cfg)
	c := newTestClient(t)
	require.Equal(t, remoting.Success, send(t, c, b.Addr(), "LP", 0, "", "first").Code)
	invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("c1", "g", map[string]string{"LP": "*"}))
	// The first message must be in the consume queue (dispatch runs behind the
	// append), or offset 1 is beyond the queue's end and answered at once.
	require.Eventually(t, func() bool { return b.Store().QueueMaxOffset("LP", 0) == 1 }, 5*time.Second, time.Millisecond)

	// Held at offset 1 (nothing there yet) with a 20 s suspend; a send must wake it.
	type result struct {
		resp *remoting.Command
		err  error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.PullMessage, pullExt("g", "LP", 0, 1, 2, 20000), nil))
		done <- result{resp, err}
	}()
	require.Eventually(t, func() bool { return b.holds.heldCount() == 1 }, 5*time.Second, 2*time.Millisecond)
	c2 := newTestClient(t)
	require.Equal(t, remoting.Success, send(t, c2, b.Addr(), "LP", 0, "", "second").Code)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("held pull was not woken by the arrival")
	}
	require.NoError(t, r.err)
	require.Equal(t, remoting.Success, r.resp.Code, r.resp.Remark)
	recs := decodeRecords(t, r.resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "second", string(recs[0].Body))
	require.Equal(t, "2", r.resp.Ext("nextBeginOffset"))
	require.Equal(t, 0, b.holds.heldCount())
}

func TestPullHoldTimeout(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("c1", "g", map[string]string{"Empty": "*"}))
	invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "Empty", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	resp := invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "Empty", 0, 0, 2, 200), nil)
	require.Equal(t, remoting.PullNotFound, resp.Code)
	require.Equal(t, "0", resp.Ext("nextBeginOffset"))
	require.Equal(t, "0", resp.Ext("suggestWhichBrokerId"))
	// Without the suspend flag the answer is immediate.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "Empty", 0, 0, 0, 20000), nil)
	require.Equal(t, remoting.PullNotFound, resp.Code)
}

func TestPullStatusesAndFilter(t *testing.T) {
	cfg := testConfig(t)
	cfg.SlaveReadEnable = true // suggestions stay 0 while the backlog fits in memory
	b := startBroker(t, cfg)
	c := newTestClient(t)
	for i := 0; i < 6; i++ {
		tag := "A"
		if i%2 == 1 {
			tag = "B"
		}
		require.Equal(t, remoting.Success, send(t, c, b.Addr(), "F", 0, tag, "m"+strconv.Itoa(i)).Code)
	}
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("F", 0) == 6 }, 5*time.Second, 2*time.Millisecond)

	// No heartbeat yet: the subscription is unknown; the offset is kept.
	resp := invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "F", 0, 3, 0, 0), nil)
	require.Equal(t, remoting.SubscriptionNotExist, resp.Code)
	require.Equal(t, "3", resp.Ext("nextBeginOffset"))

	invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("c1", "g", map[string]string{"F": "B"}))
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "F", 0, 0, 0, 0), nil)
	require.Equal(t, remoting.Success, resp.Code)
	recs := decodeRecords(t, resp.Body)
	require.Len(t, recs, 3)
	for _, r := range recs {
		require.Contains(t, r.Properties, "TAGS\x01B\x02")
	}
	require.Equal(t, "6", resp.Ext("nextBeginOffset"))

	// Subscription in the request (flag 0x4) overrides the registry.
	ext := pullExt("g", "F", 0, 0, 4, 0)
	ext["subscription"] = "A || C"
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, ext, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Len(t, decodeRecords(t, resp.Body), 3)

	// Offset too far: OFFSET_MOVED with the corrected offset on a master (RocketMQ's rule: the
	// queue's min offset when that is 0).
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "F", 0, 100, 0, 0), nil)
	require.Equal(t, remoting.PullOffsetMoved, resp.Code)
	require.Equal(t, "0", resp.Ext("nextBeginOffset"))
	require.Equal(t, "6", resp.Ext("maxOffset"))

	// Everything filtered out from offset 5 on (tag B at 5 only matches B; ask for A).
	ext = pullExt("g", "F", 0, 5, 4, 0)
	ext["subscription"] = "A"
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, ext, nil)
	require.Equal(t, remoting.PullRetryImmediately, resp.Code)
	require.Equal(t, "6", resp.Ext("nextBeginOffset"))

	// Unknown topic on a master.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "Nope", 0, 0, 0, 0), nil)
	require.Equal(t, remoting.TopicNotExist, resp.Code)

	// Commit-offset piggyback.
	ext = pullExt("g", "F", 0, 6, 1, 0)
	ext["commitOffset"] = "4"
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, ext, nil)
	require.Equal(t, remoting.PullNotFound, resp.Code)
	off, found := b.tables.Offsets.Query("g", "F", 0)
	require.True(t, found)
	require.Equal(t, int64(4), off)

	// A slow consumer is sent to the slave when slave reads are enabled (the backlog exceeds
	// accessMessageInMemoryMaxRatio of physical memory; memory is shrunk here to make it so).
	b.physMem = 100
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "F", 0, 0, 0, 0), nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "1", resp.Ext("suggestWhichBrokerId"))
	b.physMem = 1 << 40
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "F", 0, 0, 0, 0), nil)
	require.Equal(t, "0", resp.Ext("suggestWhichBrokerId"))

	// Missing ext fields.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, map[string]string{"topic": "F"}, nil)
	require.Equal(t, remoting.SystemError, resp.Code)
}

func TestOffsetsAndQueries(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	before := time.Now().UnixMilli()
	var msgID string
	for i := 0; i < 3; i++ {
		r := send(t, c, b.Addr(), "O", 2, "", "m"+strconv.Itoa(i))
		require.Equal(t, remoting.Success, r.Code)
		if i == 1 {
			msgID = r.Ext("msgId")
		}
	}
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("O", 2) == 3 }, 5*time.Second, 2*time.Millisecond)
	q := map[string]string{"topic": "O", "queueId": "2", "consumerGroup": "g"}

	resp := invoke(t, c, b.Addr(), remoting.QueryConsumerOffset, q, nil)
	require.Equal(t, remoting.Success, resp.Code) // young queue: start at 0
	require.Equal(t, "0", resp.Ext("offset"))

	u := map[string]string{"topic": "O", "queueId": "2", "consumerGroup": "g", "commitOffset": "2"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UpdateConsumerOffset, u, nil).Code)
	resp = invoke(t, c, b.Addr(), remoting.QueryConsumerOffset, q, nil)
	require.Equal(t, "2", resp.Ext("offset"))

	resp = invoke(t, c, b.Addr(), remoting.GetMaxOffset, q, nil)
	require.Equal(t, "3", resp.Ext("offset"))
	resp = invoke(t, c, b.Addr(), remoting.GetMinOffset, q, nil)
	require.Equal(t, "0", resp.Ext("offset"))
	resp = invoke(t, c, b.Addr(), remoting.GetEarliestMsgStoretime, q, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ts, _ := strconv.ParseInt(resp.Ext("timestamp"), 10, 64)
	require.GreaterOrEqual(t, ts, before-1000)
	s := map[string]string{"topic": "O", "queueId": "2", "timestamp": strconv.FormatInt(before-60000, 10)}
	resp = invoke(t, c, b.Addr(), remoting.SearchOffsetByTimestamp, s, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "0", resp.Ext("offset"))

	_, phys := mustParseMsgID(t, msgID)
	resp = invoke(t, c, b.Addr(), remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(phys, 10)}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "m1", string(decodeRecords(t, resp.Body)[0].Body))
	resp = invoke(t, c, b.Addr(), remoting.ViewMessageByID, map[string]string{"offset": "99999999"}, nil)
	require.NotEqual(t, remoting.Success, resp.Code)

	// Error paths.
	for _, bad := range []struct {
		code int32
		ext  map[string]string
	}{
		{remoting.GetMaxOffset, map[string]string{"topic": "O"}},
		{remoting.GetMinOffset, map[string]string{"queueId": "0"}},
		{remoting.GetEarliestMsgStoretime, map[string]string{"topic": "Nothing", "queueId": "0"}},
		{remoting.SearchOffsetByTimestamp, map[string]string{"topic": "O", "queueId": "2"}},
		{remoting.QueryConsumerOffset, map[string]string{"topic": "O", "queueId": "2"}},
		{remoting.UpdateConsumerOffset, map[string]string{"topic": "O", "queueId": "2", "consumerGroup": "g", "commitOffset": "x"}},
		{remoting.ViewMessageByID, map[string]string{}},
	} {
		resp = invoke(t, c, b.Addr(), bad.code, bad.ext, nil)
		require.Equal(t, remoting.SystemError, resp.Code, "%s %v", remoting.RequestName(bad.code), bad.ext)
	}
	// A group without an offset on a queue whose head was deleted: QUERY_NOT_FOUND is left to
	// the client's consumeFromWhere; here the queue is young, so 0.
	resp = invoke(t, c, b.Addr(), remoting.QueryConsumerOffset, map[string]string{"topic": "O", "queueId": "2", "consumerGroup": "other"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "0", resp.Ext("offset"))

	// Offsets survive a restart (persisted on shutdown).
	cfg := b.cfg
	require.NoError(t, b.Shutdown(context.Background()))
	cfg.ListenPort = 0
	b2 := startBroker(t, cfg)
	resp = invoke(t, newTestClient(t), b2.Addr(), remoting.QueryConsumerOffset, q, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "2", resp.Ext("offset"))
}

package main

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func TestWritableQueues(t *testing.T) {
	rd := route.TopicRouteData{
		QueueDatas: []route.QueueData{
			{BrokerName: "a", ReadQueueNums: 4, WriteQueueNums: 2, Perm: route.PermRead | route.PermWrite},
			{BrokerName: "b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: route.PermRead}, // write wiped
			{BrokerName: "c", ReadQueueNums: 2, WriteQueueNums: 2, Perm: route.PermRead | route.PermWrite},
		},
		BrokerDatas: []route.BrokerData{
			{BrokerName: "a", BrokerAddrs: map[int64]string{0: "h:1", 1: "h:2"}},
			{BrokerName: "b", BrokerAddrs: map[int64]string{0: "h:3"}},
			{BrokerName: "c", BrokerAddrs: map[int64]string{1: "h:4"}}, // no master
		},
	}
	require.Equal(t, []sendTarget{{"a", "h:1", 0}, {"a", "h:1", 1}}, writableQueues(rd, "", -1))
	require.Equal(t, []sendTarget{{"a", "h:1", 1}}, writableQueues(rd, "a", 1))
	require.Empty(t, writableQueues(rd, "a", 2), "beyond writeQueueNums")
	require.Empty(t, writableQueues(rd, "b", -1), "not writable")
	require.Empty(t, writableQueues(rd, "c", -1), "no master")
}

func TestSendStatusAndUniqKey(t *testing.T) {
	require.Equal(t, "SEND_OK", sendStatus(remoting.Success))
	require.Equal(t, "FLUSH_DISK_TIMEOUT", sendStatus(remoting.FlushDiskTimeout))
	require.Equal(t, "FLUSH_SLAVE_TIMEOUT", sendStatus(remoting.FlushSlaveTimeout))
	require.Equal(t, "SLAVE_NOT_AVAILABLE", sendStatus(remoting.SlaveNotAvailable))
	require.Empty(t, sendStatus(remoting.SystemError))
	now := time.Now()
	a, b := newUniqKey(now), newUniqKey(now)
	require.Len(t, a, 32)
	require.Regexp(t, "^[0-9A-F]{32}$", a)
	require.NotEqual(t, a, b)
}

func TestQueryMsgByIDUsage(t *testing.T) {
	code, _, _ := runOut("queryMsgById", "-n", "127.0.0.1:1")
	require.Equal(t, ExitUsage, code, "no -i")
	code, _, _ = runOut("queryMsgById", "-n", "127.0.0.1:1", "-i", "7F000001")
	require.Equal(t, ExitUsage, code, "short id")
}

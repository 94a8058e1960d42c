package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What rocketmq-client-go v2 answers (its ConsumerRunningInfo.Encode, a space included).
const goRunningInfo = `{"properties":{"consumeType":"CONSUME_PASSIVELY","PROP_CLIENT_VERSION":"v2.1.2"},"statusTable":{"T":{"pullRT":1.5,"pullTPS":0,"consumeRT":0,"consumeOKTPS":0,"consumeFailedTPS":0,"consumeFailedMsgs":0}},` +
	`"subscriptionSet":[{"classFilterMode":false,"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],` +
	`"mqTable":{{"topic":"T","brokerName":"broker-a","queueId":0}:{"commitOffset":3,"cachedMsgMinOffset":0,"cachedMsgMaxOffset":0,"cachedMsgCount":0,"cachedMsgSizeInMiB":0,"transactionMsgMinOffset":0,"transactionMsgMaxOffset":0,"transactionMsgCount":0,"locked":false,"tryUnlockTimes":0,"lastLockTimestamp":0,"dropped":false,"lastPullTimestamp":7,"lastConsumeTimestamp":8}}, "jstack":"" }`

func TestDecodeConsumerRunningInfo(t *testing.T) {
	info, err := DecodeConsumerRunningInfo([]byte(goRunningInfo))
	require.NoError(t, err)
	require.Equal(t, "CONSUME_PASSIVELY", info.Properties["consumeType"])
	require.Len(t, info.Subscriptions, 1)
	require.Equal(t, "T", info.Subscriptions[0].Topic)
	require.Equal(t, ProcessQueueInfo{CommitOffset: 3, LastPullTimestamp: 7, LastConsumeTimestamp: 8},
		info.MQTable[MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}])
	require.Equal(t, 1.5, info.StatusTable["T"]["pullRT"])

	info, err = DecodeConsumerRunningInfo([]byte(`{"properties":{},"mqTable":{}}`))
	require.NoError(t, err)
	require.Empty(t, info.MQTable)
	for _, bad := range []string{"", "{", `{"properties":1}`, `{"mqTable":{{"topic":"T"}:{"commitOffset":"x"}}}`} {
		_, err := DecodeConsumerRunningInfo([]byte(bad))
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func FuzzConsumerRunningInfo(f *testing.F) {
	f.Add([]byte(goRunningInfo))
	f.Add([]byte(`{"mqTable":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeConsumerRunningInfo(b)
	})
}

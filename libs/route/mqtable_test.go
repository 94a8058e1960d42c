package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResetOffsetBodyRoundTrip(t *testing.T) {
	table := map[MessageQueue]int64{
		{Topic: "T", BrokerName: "broker-a", QueueID: 1}: 7,
		{Topic: "T", BrokerName: "broker-a", QueueID: 0}: 12,
		{Topic: "A}b", BrokerName: "x{y", QueueID: 3}:    0,
	}
	b := AppendResetOffsetBody(nil, table)
	require.Equal(t, `{"offsetTable":{{"brokerName":"x{y","queueId":3,"topic":"A}b"}:0,`+
		`{"brokerName":"broker-a","queueId":0,"topic":"T"}:12,{"brokerName":"broker-a","queueId":1,"topic":"T"}:7}}`, string(b))
	got, err := DecodeResetOffsetBody(b)
	require.NoError(t, err)
	require.Equal(t, table, got)

	empty := AppendResetOffsetBody(nil, nil)
	require.Equal(t, `{"offsetTable":{}}`, string(empty))
	got, err = DecodeResetOffsetBody(empty)
	require.NoError(t, err)
	require.Empty(t, got)

	for _, bad := range []string{"", "{", `{"offsetTable":{{"topic":"T"}}}`, `{"offsetTable":{{"topic":"T"}:x}}`,
		`{"offsetTable":{{"topic":{"a":1}}:1}}`, `{"offsetTable":{{"topic":"T"}:1`, `{"offsetTable":{{"topic":"T}:1}}`} {
		_, err := DecodeResetOffsetBody([]byte(bad))
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func FuzzResetOffsetBody(f *testing.F) {
	f.Add(AppendResetOffsetBody(nil, map[MessageQueue]int64{{Topic: "T", BrokerName: "b", QueueID: 1}: 5}))
	f.Add([]byte(`{"offsetTable":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		table, err := DecodeResetOffsetBody(b)
		if err != nil {
			return
		}
		again, err := DecodeResetOffsetBody(AppendResetOffsetBody(nil, table))
		require.NoError(t, err)
		require.Equal(t, table, again)
	})
}

func TestQueryConsumeTimeSpanBodyRoundTrip(t *testing.T) {
	spans := []QueueTimeSpan{
		{MessageQueue: MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}, MinTimeStamp: 1, MaxTimeStamp: 5, ConsumeTimeStamp: 3, DelayTime: 7},
		{MessageQueue: MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}},
	}
	b := AppendQueryConsumeTimeSpanBody(nil, spans)
	require.Equal(t, `{"consumeTimeSpanSet":[{"consumeTimeStamp":3,"delayTime":7,"maxTimeStamp":5,`+
		`"messageQueue":{"brokerName":"b","queueId":0,"topic":"T"},"minTimeStamp":1},{"consumeTimeStamp":0,"delayTime":0,`+
		`"maxTimeStamp":0,"messageQueue":{"brokerName":"b","queueId":1,"topic":"T"},"minTimeStamp":0}]}`, string(b))
	got, err := DecodeQueryConsumeTimeSpanBody(b)
	require.NoError(t, err)
	require.Equal(t, spans, got)
	_, err = DecodeQueryConsumeTimeSpanBody([]byte(`{}`))
	require.ErrorIs(t, err, ErrSyntax)
}

func FuzzQueryConsumeTimeSpanBody(f *testing.F) {
	f.Add(AppendQueryConsumeTimeSpanBody(nil, []QueueTimeSpan{{MessageQueue: MessageQueue{Topic: "T"}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		spans, err := DecodeQueryConsumeTimeSpanBody(b)
		if err != nil {
			return
		}
		again, err := DecodeQueryConsumeTimeSpanBody(AppendQueryConsumeTimeSpanBody(nil, spans))
		require.NoError(t, err)
		require.Equal(t, spans, again)
	})
}

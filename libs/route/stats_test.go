package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatsBodiesRoundTrip(t *testing.T) {
	q0 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	q1 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	cs := map[MessageQueue]OffsetWrapper{q0: {BrokerOffset: 9, ConsumerOffset: 7, LastTimestamp: 5, PullOffset: 7}, q1: {}}
	b := AppendConsumeStats(nil, 1.5, cs)
	require.Equal(t, `{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":9,"consumerOffset":7,"lastTimestamp":5,"pullOffset":7},`+
		`{"brokerName":"b","queueId":1,"topic":"T"}:{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0}}}`, string(b))
	tps, got, err := DecodeConsumeStats(b)
	require.NoError(t, err)
	require.Equal(t, 1.5, tps)
	require.Equal(t, cs, got)

	ts := map[MessageQueue]TopicOffset{q0: {LastUpdateTimestamp: 3, MaxOffset: 9, MinOffset: 1}}
	b = AppendTopicStatsTable(nil, ts)
	require.Equal(t, `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":3,"maxOffset":9,"minOffset":1}}}`, string(b))
	gt, err := DecodeTopicStatsTable(b)
	require.NoError(t, err)
	require.Equal(t, ts, gt)
	gt, err = DecodeTopicStatsTable([]byte(`{"offsetTable":{}}`))
	require.NoError(t, err)
	require.Empty(t, gt)

	cc := ConsumerConnection{ConnectionSet: []Connection{{ClientID: "c1", ClientAddr: "1.2.3.4:5", Language: "GO", Version: 317}},
		ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		SubscriptionTable: map[string]Subscription{"T": {Topic: "T", SubString: "*", ExpressionType: "TAG", CodeSet: []int32{}, TagsSet: []string{}}}}
	b = AppendConsumerConnection(nil, cc)
	gc, err := DecodeConsumerConnection(b)
	require.NoError(t, err)
	require.Equal(t, cc, gc)
	pc := ProducerConnection{ConnectionSet: []Connection{{ClientID: "p", ClientAddr: "a", Language: "JAVA", Version: 1}}}
	gp, err := DecodeProducerConnection(AppendProducerConnection(nil, pc))
	require.NoError(t, err)
	require.Equal(t, pc, gp)

	for _, bad := range []string{"", "{", `{"x":1}`, `{"offsetTable":{{"topic":"T"}}}`, `{"offsetTable":{{"topic":"T"}:}}`, `{"offsetTable":{{"topic":"T"}:{"maxOffset":"x"}}}`} {
		_, err := DecodeTopicStatsTable([]byte(bad))
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func FuzzConsumeStats(f *testing.F) {
	f.Add(AppendConsumeStats(nil, 0, map[MessageQueue]OffsetWrapper{{Topic: "T"}: {BrokerOffset: 1}}))
	f.Add(AppendTopicStatsTable(nil, map[MessageQueue]TopicOffset{{Topic: "T"}: {MaxOffset: 1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if tps, table, err := DecodeConsumeStats(b); err == nil {
			_, again, err := DecodeConsumeStats(AppendConsumeStats(nil, tps, table))
			if tps == tps && tps < 1e300 && tps > -1e300 { // finite values round-trip
				require.NoError(t, err)
				require.Equal(t, table, again)
			}
		}
		_, _ = DecodeTopicStatsTable(b)
	})
}

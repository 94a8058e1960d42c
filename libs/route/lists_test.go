package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestListBodiesRoundTrip(t *testing.T) {
	b := AppendTopicList(nil, []string{"TBW102", "SCHEDULE_TOPIC_XXXX"}, "")
	require.Equal(t, `{"topicList":["SCHEDULE_TOPIC_XXXX","TBW102"]}`, string(b))
	topics, addr, err := DecodeTopicList(b)
	require.NoError(t, err)
	require.Equal(t, []string{"SCHEDULE_TOPIC_XXXX", "TBW102"}, topics)
	require.Empty(t, addr)
	b = AppendTopicList(nil, nil, "1.2.3.4:10911")
	require.Equal(t, `{"brokerAddr":"1.2.3.4:10911","topicList":[]}`, string(b))

	b = AppendGroupList(nil, []string{"g2", "g1"})
	require.Equal(t, `{"groupList":["g1","g2"]}`, string(b))
	groups, err := DecodeGroupList(b)
	require.NoError(t, err)
	require.Equal(t, []string{"g1", "g2"}, groups)
	require.Equal(t, `{"groupList":[]}`, string(AppendGroupList(nil, nil)))
}

func TestConsumeStatsListRoundTrip(t *testing.T) {
	q := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	l := ConsumeStatsList{BrokerAddr: "127.0.0.1:10911", TotalDiff: 3, Groups: []GroupConsumeStats{
		{Group: "g1", Stats: []ConsumeStats{{OffsetTable: map[MessageQueue]OffsetWrapper{q: {BrokerOffset: 5, ConsumerOffset: 2, PullOffset: 2, LastTimestamp: 9}}}}},
		{Group: "empty"},
	}}
	b := AppendConsumeStatsList(nil, l)
	require.Equal(t, `{"brokerAddr":"127.0.0.1:10911","consumeStatsList":[{"g1":[{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:`+
		`{"brokerOffset":5,"consumerOffset":2,"lastTimestamp":9,"pullOffset":2}}}]},{"empty":[]}],"totalDiff":3,"totalInflightDiff":0}`, string(b))
	got, err := DecodeConsumeStatsList(b)
	require.NoError(t, err)
	require.Equal(t, l, got)

	// A Java broker's order of fields, white space and a field this decoder does not know.
	got, err = DecodeConsumeStatsList([]byte(`{ "totalDiff" : 3, "extra": {"a":[1,{"b":2}]}, "consumeStatsList" : [ { "g1" : [ ] } ], "brokerAddr":"x" }`))
	require.NoError(t, err)
	require.Equal(t, ConsumeStatsList{BrokerAddr: "x", TotalDiff: 3, Groups: []GroupConsumeStats{{Group: "g1"}}}, got)

	for _, bad := range []string{"", "{", `{"consumeStatsList":[{"g":[{"offsetTable":1}]}]}`, `{"consumeStatsList":[{"g":[}]}`, `{"totalDiff":"x"}`, `{"consumeStatsList":[{1:[]}]}`} {
		_, err := DecodeConsumeStatsList([]byte(bad))
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func FuzzConsumeStatsList(f *testing.F) {
	f.Add(AppendConsumeStatsList(nil, ConsumeStatsList{BrokerAddr: "a", Groups: []GroupConsumeStats{{Group: "g", Stats: []ConsumeStats{{OffsetTable: map[MessageQueue]OffsetWrapper{{Topic: "T"}: {BrokerOffset: 1}}}}}}}))
	f.Add([]byte(`{"consumeStatsList":[{"g":[]}]}`))
	f.Add(AppendGroupList(nil, []string{"g"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if l, err := DecodeConsumeStatsList(b); err == nil {
			finite := true
			for _, g := range l.Groups {
				for _, s := range g.Stats {
					finite = finite && s.ConsumeTps == s.ConsumeTps && s.ConsumeTps < 1e300 && s.ConsumeTps > -1e300
				}
			}
			if finite {
				again, err := DecodeConsumeStatsList(AppendConsumeStatsList(nil, l))
				require.NoError(t, err)
				require.Equal(t, l, again)
			}
		}
		_, _, _ = DecodeTopicList(b)
		_, _ = DecodeGroupList(b)
	})
}

package clients

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goHeartbeat is the HEART_BEAT body captured from rocketmq-client-go.
const goHeartbeat = `{"clientID":"192.0.2.2@17660","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"%RETRY%cg","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1795936508418089170,"expressionType":"TAG"},{"classFilterMode":false,"topic":"TopicTest","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1795936508418052941,"expressionType":"TAG"}],"unitMode":false}]}`

// goTaggedHeartbeat subscribes with tags; the Go client sends codeSet as strings.
const goTaggedHeartbeat = `{"clientID":"192.0.2.3@1","producerDataSet":[],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"TopicTest","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":7,"expressionType":"TAG"}],"unitMode":false}]}`

// javaHeartbeat has numeric codeSet entries and extra keys.
const javaHeartbeat = `{"clientID":"10.0.0.9@4242#123","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"jg","messageModel":"BROADCASTING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}`

func TestDecodeGoHeartbeat(t *testing.T) {
	hb, err := DecodeHeartbeat([]byte(goHeartbeat))
	require.NoError(t, err)
	require.Equal(t, "192.0.2.2@17660", hb.ClientID)
	require.Equal(t, []ProducerData{{GroupName: "pg"}}, hb.ProducerDataSet)
	require.Len(t, hb.ConsumerDataSet, 1)
	cd := hb.ConsumerDataSet[0]
	require.Equal(t, "cg", cd.GroupName)
	require.Equal(t, ConsumePassively, cd.ConsumeType)
	require.Equal(t, Clustering, cd.MessageModel)
	require.Equal(t, "CONSUME_FROM_FIRST_OFFSET", cd.ConsumeFromWhere)
	require.Equal(t, SubscriptionData{Topic: "%RETRY%cg", SubString: "*", TagsSet: []string{}, CodeSet: CodeSet{},
		SubVersion: 1795936508418089170, ExpressionType: "TAG"}, cd.SubscriptionDataSet[0])

	// Round trip through our encoder.
	again, err := DecodeHeartbeat(AppendHeartbeat(nil, hb))
	require.NoError(t, err)
	require.Equal(t, hb, again)
}

func TestDecodeCodeSetStringsAndNumbers(t *testing.T) {
	hb, err := DecodeHeartbeat([]byte(goTaggedHeartbeat))
	require.NoError(t, err)
	require.Equal(t, CodeSet{2598919, 2598920}, hb.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet)
	hb, err = DecodeHeartbeat([]byte(javaHeartbeat))
	require.NoError(t, err)
	require.Equal(t, CodeSet{2598919}, hb.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet)
	require.Equal(t, Broadcasting, hb.ConsumerDataSet[0].MessageModel)
	enc := string(AppendHeartbeat(nil, hb))
	require.Contains(t, enc, `"codeSet":[2598919]`)
}

func TestDecodeHeartbeatRejects(t *testing.T) {
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"clientID":""}`,
		`{"clientID":"c","producerDataSet":[{}]}`,
		`{"clientID":"c","consumerDataSet":[{"groupName":""}]}`,
		`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":""}]}]}`,
		`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t","codeSet":["x"]}]}]}`,
		`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t","codeSet":[1.5]}]}]}`,
		`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t","codeSet":[2147483648]}]}]}`,
		`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t","codeSet":{}}]}]}`,
	} {
		_, err := DecodeHeartbeat([]byte(bad))
		require.ErrorIs(t, err, ErrInvalidHeartbeat, bad)
	}
}

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(goHeartbeat))
	f.Add([]byte(goTaggedHeartbeat))
	f.Add([]byte(javaHeartbeat))
	f.Add([]byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t","subString":"||","codeSet":["-1"]}]}]}`))
	reg, err := NewRegistry(Config{Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		hb, err := DecodeHeartbeat(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidHeartbeat) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		again, err := DecodeHeartbeat(AppendHeartbeat(nil, hb))
		if err != nil {
			t.Fatalf("re-encoded heartbeat does not decode: %v", err)
		}
		_ = again
		now := time.Unix(1000, 0)
		if _, err := reg.Register(hb, 1, now); err == nil {
			for _, cd := range hb.ConsumerDataSet {
				for _, s := range cd.SubscriptionDataSet {
					if sd, ok := reg.Subscription(cd.GroupName, s.Topic); ok {
						sd.MatchTagsCode(TagsCode("TagA"))
					}
				}
			}
		}
		reg.UnregisterConn(1)
	})
}

package clients

import (
	"errors"
	"strconv"
	"strings"
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

// Names are checked as RocketMQ's client validators check them: groups up to 255
// characters, topics up to 127, both from [%|a-zA-Z0-9_-].
func TestHeartbeatNameBounds(t *testing.T) {
	long := func(n int) string { return strings.Repeat("g", n) }
	consumer := func(group, topic string) string {
		return `{"clientID":"c","consumerDataSet":[{"groupName":"` + group + `","subscriptionDataSet":[{"topic":"` + topic + `","subString":"*"}]}]}`
	}
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"group 255", consumer(long(255), "T"), true},
		{"group 256", consumer(long(256), "T"), false},
		{"group with space", consumer("a b", "T"), false},
		{"group with dot", consumer("a.b", "T"), false},
		{"topic 127", consumer("g", long(127)), true},
		{"topic 128", consumer("g", long(128)), false},
		{"topic with slash", consumer("g", "a/b"), false},
		{"retry topic", consumer("g", "%RETRY%g"), true},
		{"producer 256", `{"clientID":"c","producerDataSet":[{"groupName":"` + long(256) + `"}]}`, false},
		{"producer unicode", `{"clientID":"c","producerDataSet":[{"groupName":"grüppe"}]}`, false},
		{"client id 1024", `{"clientID":"` + long(1024) + `"}`, true},
		{"client id 1025", `{"clientID":"` + long(1025) + `"}`, false},
		{"expression 64 KiB", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"` + long(64<<10) + `"}]}]}`, true},
		{"expression above 64 KiB", `{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"` + long(32<<10) + `","tagsSet":["` + long(32<<10+1) + `"]}]}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeHeartbeat([]byte(tc.body))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidHeartbeat)
		})
	}
}

func TestHeartbeatLimits(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"clientID":"c","producerDataSet":[{"groupName":"p"}],"consumerDataSet":[`)
	for i := 0; i < 3; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"groupName":"g` + strconv.Itoa(i) + `","subscriptionDataSet":[{"topic":"A","subString":"*"},{"topic":"B","subString":"*"}]}`)
	}
	sb.WriteString(`]}`)
	hb, err := DecodeHeartbeat([]byte(sb.String()))
	require.NoError(t, err)
	require.NoError(t, hb.CheckLimits(Limits{}))
	require.NoError(t, hb.CheckLimits(Limits{MaxGroups: 4, MaxSubscriptions: 6}))
	err = hb.CheckLimits(Limits{MaxGroups: 3})
	require.ErrorIs(t, err, ErrHeartbeatTooLarge)
	require.Contains(t, err.Error(), "heartbeatMaxGroups")
	err = hb.CheckLimits(Limits{MaxSubscriptions: 5})
	require.ErrorIs(t, err, ErrHeartbeatTooLarge)
	require.Contains(t, err.Error(), "heartbeatMaxSubscriptions")
}

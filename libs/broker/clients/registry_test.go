package clients

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

func discardLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func newTestRegistry(t *testing.T) *Registry {
	t.Helper()
	r, err := NewRegistry(Config{Logger: discardLogger()})
	require.NoError(t, err)
	return r
}

type conn struct{ id int }

func heartbeat(t *testing.T, body string) *HeartbeatData {
	t.Helper()
	hb, err := DecodeHeartbeat([]byte(body))
	require.NoError(t, err)
	return hb
}

func TestRegisterAndMembership(t *testing.T) {
	r := newTestRegistry(t)
	t0 := time.Unix(1_700_000_000, 0)
	c1, c2 := &conn{1}, &conn{2}

	res, err := r.Register(heartbeat(t, goHeartbeat), c1, t0)
	require.NoError(t, err)
	require.Equal(t, []string{"cg"}, res.MembershipChanged)
	require.Equal(t, []string{"cg"}, res.SubscriptionChanged)
	require.Equal(t, []string{"192.0.2.2@17660"}, r.ConsumerIDs("cg"))
	require.Equal(t, []string{"pg"}, r.ProducerGroups())
	require.Equal(t, []string{"cg"}, r.ConsumerGroups())
	sd, ok := r.Subscription("cg", "TopicTest")
	require.True(t, ok)
	require.Equal(t, "*", sd.SubString)
	require.Equal(t, int64(1795936508418052941), sd.SubVersion)
	_, ok = r.Subscription("cg", "Other")
	require.False(t, ok)

	// The periodic heartbeat changes nothing but the last-seen time.
	res, err = r.Register(heartbeat(t, goHeartbeat), c1, t0.Add(30*time.Second))
	require.NoError(t, err)
	require.Empty(t, res.MembershipChanged)
	require.Empty(t, res.SubscriptionChanged)
	require.Equal(t, t0.Add(30*time.Second), r.Consumers("cg")[0].LastSeen)

	// A second client joins (its heartbeat also replaces the subscription
	// table: the Java rule follows the latest heartbeat).
	res, err = r.Register(heartbeat(t, goTaggedHeartbeat), c2, t0.Add(31*time.Second))
	require.NoError(t, err)
	require.Equal(t, []string{"cg"}, res.MembershipChanged)
	require.Equal(t, []string{"cg"}, res.SubscriptionChanged)
	require.Equal(t, []string{"192.0.2.2@17660", "192.0.2.3@1"}, r.ConsumerIDs("cg"))
	_, ok = r.Subscription("cg", "%RETRY%cg")
	require.False(t, ok, "topics absent from the latest heartbeat are dropped")
	info, ok := r.ConsumerGroup("cg")
	require.True(t, ok)
	require.Equal(t, "CONSUME_FROM_LAST_OFFSET", info.ConsumeFromWhere)
	require.Len(t, info.Members, 2)
	require.Equal(t, c2, info.Members[1].Conn)

	// Closing c1 removes the first client from both groups.
	require.Equal(t, []string{"cg"}, r.UnregisterConn(c1))
	require.Equal(t, []string{"192.0.2.3@1"}, r.ConsumerIDs("cg"))
	require.Empty(t, r.ProducerGroups())
	require.Nil(t, r.UnregisterConn(c1))

	// The last member leaving removes the group and its subscriptions.
	require.Equal(t, []string{"cg"}, r.UnregisterConn(c2))
	require.Nil(t, r.ConsumerIDs("cg"))
	_, ok = r.Subscription("cg", "TopicTest")
	require.False(t, ok)
	require.Empty(t, r.ConsumerGroups())
}

func TestReconnectKeepsMember(t *testing.T) {
	r := newTestRegistry(t)
	t0 := time.Unix(0, 0)
	oldConn, newConn := &conn{1}, &conn{2}
	_, err := r.Register(heartbeat(t, goHeartbeat), oldConn, t0)
	require.NoError(t, err)
	res, err := r.Register(heartbeat(t, goHeartbeat), newConn, t0.Add(time.Second))
	require.NoError(t, err)
	require.Empty(t, res.MembershipChanged, "same client id on a new connection")
	// The old connection's late close does not remove the member.
	require.Nil(t, r.UnregisterConn(oldConn))
	require.Equal(t, []string{"192.0.2.2@17660"}, r.ConsumerIDs("cg"))
	require.Equal(t, []Member{{ClientID: "192.0.2.2@17660", Conn: newConn, LastSeen: t0.Add(time.Second)}}, r.Producers("pg"))
}

func TestExpire(t *testing.T) {
	r := newTestRegistry(t)
	t0 := time.Unix(1000, 0)
	_, err := r.Register(heartbeat(t, goHeartbeat), "conn-a", t0)
	require.NoError(t, err)
	_, err = r.Register(heartbeat(t, goTaggedHeartbeat), "conn-b", t0.Add(60*time.Second))
	require.NoError(t, err)

	require.Nil(t, r.Expire(t0.Add(DefaultChannelExpiredTimeout), DefaultChannelExpiredTimeout), "exactly the timeout is not expired")
	require.Equal(t, []string{"cg"}, r.Expire(t0.Add(DefaultChannelExpiredTimeout+time.Millisecond), DefaultChannelExpiredTimeout))
	require.Equal(t, []string{"192.0.2.3@1"}, r.ConsumerIDs("cg"))
	require.Nil(t, r.Producers("pg"))
	require.Equal(t, []string{"cg"}, r.Expire(t0.Add(200*time.Second), DefaultChannelExpiredTimeout))
	require.Empty(t, r.ConsumerGroups())
}

func TestRegistryRecomputesCodeSet(t *testing.T) {
	r := newTestRegistry(t)
	// The Go client's codeSet for "标签" is its UTF-8 hash; the broker keeps
	// the Java hash of the tag instead.
	body := `{"clientID":"c@1","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"标签","tagsSet":["标签"],"codeSet":["` +
		itoa(goClientHash("标签")) + `"],"subVersion":1,"expressionType":"TAG"}]}]}`
	_, err := r.Register(heartbeat(t, body), 1, time.Unix(0, 0))
	require.NoError(t, err)
	sd, ok := r.Subscription("g", "T")
	require.True(t, ok)
	require.Equal(t, CodeSet{JavaStringHash("标签")}, sd.CodeSet)
	require.True(t, sd.MatchTagsCode(TagsCode("标签")))

	// tagsSet missing: parsed from subString.
	body = `{"clientID":"c@1","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"TagA||TagB","subVersion":2}]}]}`
	res, err := r.Register(heartbeat(t, body), 1, time.Unix(0, 0))
	require.NoError(t, err)
	require.Equal(t, []string{"g"}, res.SubscriptionChanged)
	sd, _ = r.Subscription("g", "T")
	require.Equal(t, []string{"TagA", "TagB"}, sd.TagsSet)
	require.Equal(t, CodeSet{2598919, 2598920}, sd.CodeSet)

	// A lower subVersion does not replace the subscription.
	body = `{"clientID":"c@1","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"*","subVersion":1}]}]}`
	res, err = r.Register(heartbeat(t, body), 1, time.Unix(0, 0))
	require.NoError(t, err)
	require.Empty(t, res.SubscriptionChanged)
	sd, _ = r.Subscription("g", "T")
	require.Equal(t, "TagA||TagB", sd.SubString)

	// A tag expression without tags is rejected.
	body = `{"clientID":"c@1","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"||","subVersion":3}]}]}`
	_, err = r.Register(heartbeat(t, body), 1, time.Unix(0, 0))
	require.ErrorIs(t, err, ErrInvalidHeartbeat)
	require.ErrorIs(t, err, ErrSubscriptionParse)
}

func itoa(v int32) string { return strconv.FormatInt(int64(v), 10) }

func TestRegistryRejectsBadInput(t *testing.T) {
	r := newTestRegistry(t)
	_, err := r.Register(heartbeat(t, goHeartbeat), []int{1}, time.Unix(0, 0))
	require.ErrorIs(t, err, ErrConnNotComparable)
	_, err = r.Register(heartbeat(t, goHeartbeat), struct{ f any }{f: []int{1}}, time.Unix(0, 0))
	require.ErrorIs(t, err, ErrConnNotComparable)
	require.Nil(t, r.UnregisterConn([]int{1}), "no panic on a non-comparable handle")
	_, err = r.Register(nil, 1, time.Unix(0, 0))
	require.ErrorIs(t, err, ErrInvalidHeartbeat)
	_, err = NewRegistry(Config{})
	require.Error(t, err)
	require.NoError(t, DefaultConfig().Validate())
}

func TestWithoutSubHeartbeatKeepsSubscriptions(t *testing.T) {
	r := newTestRegistry(t)
	_, err := r.Register(heartbeat(t, goTaggedHeartbeat), 1, time.Unix(0, 0))
	require.NoError(t, err)
	light := `{"clientID":"192.0.2.3@1","consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionDataSet":[]},{"groupName":"fresh","subscriptionDataSet":[]}],"heartbeatFingerprint":77,"isWithoutSub":true}`
	hb := heartbeat(t, light)
	require.True(t, hb.WithoutSub)
	require.Equal(t, int64(77), hb.HeartbeatFingerprint)
	res, err := r.Register(hb, 1, time.Unix(1, 0))
	require.NoError(t, err)
	require.Empty(t, res.SubscriptionChanged)
	require.Equal(t, []string{"fresh"}, res.SubscriptionMissing)
	require.Equal(t, []string{"fresh"}, res.MembershipChanged)
	sd, ok := r.Subscription("cg", "TopicTest")
	require.True(t, ok)
	require.Equal(t, []string{"TagA", "TagB"}, sd.TagsSet)

	hb2 := heartbeat(t, `{"clientID":"x","withoutSub":true}`)
	require.True(t, hb2.WithoutSub)
}

func TestProducerConnFindsLatestHeartbeat(t *testing.T) {
	r := newTestRegistry(t)
	t0 := time.Unix(1_700_000_000, 0)
	c1, c2 := &conn{1}, &conn{2}
	_, ok := r.ProducerConn("10.0.0.1@1")
	require.False(t, ok)
	_, err := r.Register(heartbeat(t, `{"clientID":"10.0.0.1@1","producerDataSet":[{"groupName":"PG1"}]}`), c1, t0)
	require.NoError(t, err)
	_, err = r.Register(heartbeat(t, `{"clientID":"10.0.0.1@1","producerDataSet":[{"groupName":"PG2"}]}`), c2, t0.Add(time.Second))
	require.NoError(t, err)
	got, ok := r.ProducerConn("10.0.0.1@1")
	require.True(t, ok)
	require.Equal(t, c2, got, "the latest heartbeat's connection")
	// A consumer-only client is not a producer: RocketMQ finds reply channels among producers.
	_, err = r.Register(heartbeat(t, `{"clientID":"10.0.0.2@1","consumerDataSet":[{"groupName":"CG","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING"}]}`), c1, t0)
	require.NoError(t, err)
	_, ok = r.ProducerConn("10.0.0.2@1")
	require.False(t, ok)
	r.UnregisterConn(c1)
	r.UnregisterConn(c2)
	_, ok = r.ProducerConn("10.0.0.1@1")
	require.False(t, ok)
}

package clients

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/filter"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

// sqlHeartbeat is a rocketmq-client-go push consumer's heartbeat with a SQL92 selector
// (consumer.MessageSelector{Type: consumer.SQL92, Expression: expr}) next to its retry topic.
func sqlHeartbeat(expr, typ string, version int) string {
	return `{"clientID":"192.0.2.7@1","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"sg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[` +
		`{"classFilterMode":false,"topic":"%RETRY%sg","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"},` +
		`{"classFilterMode":false,"topic":"T","subString":"` + expr + `","tagsSet":[],"codeSet":[],"subVersion":` + strings.Repeat("1", version) + `,"expressionType":"` + typ + `"}],"unitMode":false}]}`
}

func TestIsTagType(t *testing.T) {
	for typ, want := range map[string]bool{"": true, "TAG": true, "tag": false, "SQL92": false, "sql92": false, "FOO": false} {
		require.Equal(t, want, IsTagType(typ), "%q", typ)
	}
}

// TestRegisterCompilesSQL92: a SQL92 subscription is compiled when registered, passes every
// tag code, and matches by properties.
func TestRegisterCompilesSQL92(t *testing.T) {
	r := newTestRegistry(t)
	_, err := r.Register(heartbeat(t, sqlHeartbeat("a > 5", "SQL92", 1)), &conn{1}, time.Unix(0, 0))
	require.NoError(t, err)
	sd, ok := r.Subscription("sg", "T")
	require.True(t, ok)
	require.False(t, sd.IsTagType())
	expr, err := sd.Selector()
	require.NoError(t, err)
	require.Equal(t, "a > 5", expr.Source())
	require.True(t, sd.MatchTagsCode(TagsCode("anything")), "the tag stage passes a SQL92 subscription")
	require.True(t, expr.MatchRaw([]byte("a\x016\x02")))
	require.False(t, expr.MatchRaw([]byte("a\x015\x02")))
	require.False(t, expr.MatchRaw(nil))

	retry, ok := r.Subscription("sg", "%RETRY%sg")
	require.True(t, ok)
	require.True(t, retry.IsTagType())
	e, err := retry.Selector()
	require.Nil(t, e)
	require.NoError(t, err)

	// The group info (admin views) carries the type and the compiled selector.
	info, ok := r.ConsumerGroup("sg")
	require.True(t, ok)
	got := info.Subscriptions["T"]
	require.Equal(t, "SQL92", got.ExpressionType)
	e, err = got.Selector()
	require.NoError(t, err)
	require.Same(t, expr, e)
}

// TestRegisterKeepsBadSelector: a selector that does not compile, or an unknown expression
// type, does not refuse the heartbeat (the client's other groups stay registered); the
// subscription carries the error for the pull path.
func TestRegisterKeepsBadSelector(t *testing.T) {
	var logs bytes.Buffer
	l := logrus.New()
	l.SetOutput(&logs)
	r, err := NewRegistry(Config{Logger: l})
	require.NoError(t, err)
	res, err := r.Register(heartbeat(t, sqlHeartbeat("a >", "SQL92", 1)), &conn{1}, time.Unix(0, 0))
	require.NoError(t, err)
	require.Equal(t, []string{"sg"}, res.MembershipChanged)
	require.Equal(t, []string{"pg"}, r.ProducerGroups())
	sd, ok := r.Subscription("sg", "T")
	require.True(t, ok)
	e, err := sd.Selector()
	require.Nil(t, e)
	require.ErrorIs(t, err, filter.ErrParse)
	var pe *filter.ParseError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, logs.String(), "does not compile")
	require.Contains(t, logs.String(), `expression="a >"`)

	// A newer version with a good selector replaces it.
	_, err = r.Register(heartbeat(t, sqlHeartbeat("a > 5 b", "SQL92", 2)), &conn{1}, time.Unix(1, 0))
	require.NoError(t, err)
	sd, _ = r.Subscription("sg", "T")
	e, err = sd.Selector()
	require.NoError(t, err)
	require.Equal(t, "b", e.Trailing())
	require.Contains(t, logs.String(), "text after the expression is ignored")

	for _, typ := range []string{"sql92", "FOO", "tag"} {
		r := newTestRegistry(t)
		_, err := r.Register(heartbeat(t, sqlHeartbeat("a > 5", typ, 1)), &conn{1}, time.Unix(0, 0))
		require.NoError(t, err, typ)
		sd, _ := r.Subscription("sg", "T")
		_, err = sd.Selector()
		require.ErrorIs(t, err, ErrUnsupportedExpressionType, typ)
	}
	// A TAG subscription without tags still refuses the heartbeat, as before.
	r = newTestRegistry(t)
	_, err = r.Register(heartbeat(t, sqlHeartbeat("||", "TAG", 1)), &conn{1}, time.Unix(0, 0))
	require.ErrorIs(t, err, ErrSubscriptionParse)
}

func TestBuildSelector(t *testing.T) {
	sd, err := BuildSelector("T", "TagA||TagB", "", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"TagA", "TagB"}, sd.TagsSet)
	sd, err = BuildSelector("T", "TagA", "TAG", nil)
	require.NoError(t, err)
	require.False(t, sd.MatchTagsCode(TagsCode("TagB")))

	cache := NewFilterCache(0, 0)
	sd, err = BuildSelector("T", "b IN ('x', 'y')", "SQL92", cache)
	require.NoError(t, err)
	e, err := sd.Selector()
	require.NoError(t, err)
	require.True(t, e.MatchMap(map[string]string{"b": "y"}))
	again, err := BuildSelector("T", "b IN ('x', 'y')", "SQL92", cache)
	require.NoError(t, err)
	e2, _ := again.Selector()
	require.Same(t, e, e2, "compiled once")

	_, err = BuildSelector("T", "a >", "SQL92", cache)
	require.ErrorIs(t, err, filter.ErrParse)
	_, err = BuildSelector("T", "", "SQL92", cache)
	require.ErrorIs(t, err, filter.ErrParse)
	_, err = BuildSelector("T", "a > 5", "sql92", cache)
	require.ErrorIs(t, err, ErrUnsupportedExpressionType)
	_, err = BuildSelector("T", "||", "TAG", cache)
	require.ErrorIs(t, err, ErrSubscriptionParse)
}

// TestFilterCacheBounds: the cache never holds more than its bounds; failures are cached.
func TestFilterCacheBounds(t *testing.T) {
	c := NewFilterCache(3, 40)
	for i := 0; i < 10; i++ {
		_, err := c.Compile("SQL92", "a > "+strings.Repeat("1", i+1))
		require.NoError(t, err)
		require.LessOrEqual(t, c.Len(), 3)
	}
	c = NewFilterCache(100, 40)
	_, err := c.Compile("SQL92", "a > 1 AND "+strings.Repeat("b = 1 AND ", 4)+"c = 1") // 55 bytes
	require.NoError(t, err)
	require.Equal(t, 0, c.Len(), "a text above the byte bound is not kept")
	_, err1 := c.Compile("SQL92", "a >")
	_, err2 := c.Compile("SQL92", "a >")
	require.ErrorIs(t, err1, filter.ErrParse)
	require.Same(t, err1, err2, "the failure is cached")
	require.Equal(t, 1, c.Len())
	var nilCache *FilterCache
	e, err := nilCache.Compile("SQL92", "a = 1")
	require.NoError(t, err)
	require.True(t, e.MatchMap(map[string]string{"a": "1"}))
}

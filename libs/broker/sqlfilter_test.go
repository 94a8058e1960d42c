package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/clients"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/filter"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// selectorHeartbeat is a push consumer's heartbeat for group with one subscription to topic
// of type typ (and, as every client sends, "*" on the group's retry topic).
func selectorHeartbeat(clientID, group, topic, typ, expr string, version int) []byte {
	q := strconv.Quote
	return []byte(`{"clientID":` + q(clientID) + `,"producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":` + q(group) +
		`,"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[` +
		`{"classFilterMode":false,"topic":"%RETRY%` + group + `","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"},` +
		`{"classFilterMode":false,"topic":` + q(topic) + `,"subString":` + q(expr) + `,"tagsSet":[],"codeSet":[],"subVersion":` + strconv.Itoa(version) +
		`,"expressionType":` + q(typ) + `}],"unitMode":false}]}`)
}

// sqlPullExt is a pull of group from topic/0 at offset; with sub set it carries its own
// subscription (the pull consumer's PullFrom) of type typ.
func sqlPullExt(group, topic string, offset int64, maxMsgs int, typ, sub string) map[string]string {
	ext := pullExt(group, topic, 0, offset, 0, 0)
	ext["maxMsgNums"] = strconv.Itoa(maxMsgs)
	if sub != "" || typ != "TAG" {
		ext["sysFlag"] = strconv.Itoa(pullFlagSubscription)
		ext["subscription"] = sub
		ext["expressionType"] = typ
	}
	return ext
}

// sendWithProps stores one message with the given user properties (name, value pairs).
func sendWithProps(t *testing.T, c *remoting.Client, addr, topic, body string, kv ...string) {
	t.Helper()
	p := props(append([]string{"UNIQ_KEY", "ID" + body}, kv...)...)
	resp := invoke(t, c, addr, remoting.SendMessage, sendExt(topic, 0, p), []byte(body))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// sqlBacklog sends the messages every SQL92 test reads from topic/0: a0..a9 with a = 0..9,
// then "none" (no property a), "text" (a = 'x') and "half" (a = '7.5', not an Integer).
func sqlBacklog(t *testing.T, b *Broker, c *remoting.Client, topic string) {
	t.Helper()
	for i := 0; i < 10; i++ {
		sendWithProps(t, c, b.Addr(), topic, "a"+strconv.Itoa(i), "a", strconv.Itoa(i), "TAGS", "T"+strconv.Itoa(i%2))
	}
	sendWithProps(t, c, b.Addr(), topic, "none", "b", "1")
	sendWithProps(t, c, b.Addr(), topic, "text", "a", "x")
	sendWithProps(t, c, b.Addr(), topic, "half", "a", "7.5")
	require.Eventually(t, func() bool { return b.Store().QueueMaxOffset(topic, 0) == 13 }, 5*time.Second, time.Millisecond)
}

func pullBodies(t *testing.T, resp *remoting.Command) []string {
	t.Helper()
	out := []string{}
	for _, r := range decodeRecords(t, resp.Body) {
		out = append(out, string(r.Body))
	}
	return out
}

func sqlConfig(t *testing.T) Config {
	cfg := metricsConfig(t)
	cfg.EnablePropertyFilter = true
	return cfg
}

// TestSQL92HeartbeatSubscriptionFilters: a push consumer's SQL92 subscription from its
// heartbeat filters its pulls by properties: only TRUE delivers; a missing property (NULL) and
// a value that does not convert (an error in RocketMQ's evaluator) do not. Records are the
// stored ones byte for byte; the counts show on /metrics.
func TestSQL92HeartbeatSubscriptionFilters(t *testing.T) {
	b := startBroker(t, sqlConfig(t))
	c := newTestClient(t)
	sqlBacklog(t, b, c, "Q")
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "sg", "Q", "SQL92", "a > 5", 1))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 32, "TAG", ""), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"a6", "a7", "a8", "a9"}, pullBodies(t, resp))
	require.Equal(t, "13", resp.Ext("nextBeginOffset"))
	// Byte-exact: the same bytes an unfiltered read returns for those offsets.
	all := b.Store().GetMessages("Q", 0, 0, 32, 1<<20, nil)
	require.Len(t, all.Records, 13)
	require.Equal(t, bytes.Join(all.Records[6:10], nil), resp.Body)

	m := withPrefix(scrape(t, b), "rmqha_broker_sql92_")
	require.Equal(t, 4.0, m["rmqha_broker_sql92_delivered_total"])
	require.Equal(t, 6.0, m[`rmqha_broker_sql92_filtered_total{result="false"}`])
	require.Equal(t, 1.0, m[`rmqha_broker_sql92_filtered_total{result="unknown"}`], "none: a is missing")
	require.Equal(t, 2.0, m[`rmqha_broker_sql92_filtered_total{result="error"}`], "text and half do not parse as an Integer")
	require.Equal(t, 1.0, m[`rmqha_broker_sql92_subscriptions{state="compiled"}`])
	// The same in GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus).
	var kv struct {
		Table map[string]string `json:"table"`
	}
	require.NoError(t, json.Unmarshal(invoke(t, c, b.Addr(), remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv))
	require.Equal(t, "true", kv.Table["enablePropertyFilter"])
	require.Equal(t, "1", kv.Table["sql92Subscriptions"])
	require.Equal(t, "4", kv.Table["sql92Delivered"])
	require.Equal(t, "1", kv.Table["sql92FilteredUnknown"])
	require.Equal(t, "2", kv.Table["sql92FilteredError"])

	// Limits count delivered messages: two per pull.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 2, "TAG", ""), nil)
	require.Equal(t, []string{"a6", "a7"}, pullBodies(t, resp))
	require.Equal(t, "8", resp.Ext("nextBeginOffset"))
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 8, 2, "TAG", ""), nil)
	require.Equal(t, []string{"a8", "a9"}, pullBodies(t, resp))
	require.Equal(t, "10", resp.Ext("nextBeginOffset"))
	// What is left does not match: PULL_RETRY_IMMEDIATELY past it, no body.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 10, 2, "TAG", ""), nil)
	require.Equal(t, remoting.PullRetryImmediately, resp.Code, resp.Remark)
	require.Equal(t, "13", resp.Ext("nextBeginOffset"))
	require.Empty(t, resp.Body)

	// Missing properties and types: IS NULL sees "none"; string comparison needs no conversion.
	version := 1
	for expr, want := range map[string][]string{
		"a IS NULL":                         {"none"},
		"a = 'x' OR a = '7.5'":              {"text", "half"},
		"a IN ('1', '3') OR b = 1":          {"a1", "a3", "none"},
		"a BETWEEN 2 AND 3 AND TAGS = 'T1'": {"a3"},
		"NOT (a > 5)":                       {"a0", "a1", "a2", "a3", "a4", "a5"},
		"a > 7.0":                           {"a8", "a9", "half"},
	} {
		version++ // a higher subVersion replaces the subscription
		resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "sg", "Q", "SQL92", expr, version))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 32, "TAG", ""), nil)
		require.Equal(t, remoting.Success, resp.Code, "%s: %s", expr, resp.Remark)
		require.Equal(t, want, pullBodies(t, resp), expr)
	}
}

// TestSQL92PullCarriesSubscription: a pull with the subscription bit (the pull consumer's
// PullFrom) is filtered by the selector it carries; one that does not compile is
// SUBSCRIPTION_PARSE_FAILED with the parse error, and so is an unknown expression type.
func TestSQL92PullCarriesSubscription(t *testing.T) {
	b := startBroker(t, sqlConfig(t))
	c := newTestClient(t)
	sqlBacklog(t, b, c, "Q")
	resp := invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("pull-g", "Q", 0, 32, "SQL92", "a BETWEEN 2 AND 4"), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"a2", "a3", "a4"}, pullBodies(t, resp))

	for _, tc := range []struct{ typ, sub, remark string }{
		{"SQL92", "a >", "invalid SQL92 expression at line 1, column 4"},
		{"SQL92", "", "invalid SQL92 expression"},
		{"SQL92", "a > 'x'", "invalid SQL92 expression"},
		{"sql92", "a > 5", "unsupported expression type"},
		{"FOO", "a > 5", "unsupported expression type"},
	} {
		resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("pull-g", "Q", 0, 32, tc.typ, tc.sub), nil)
		require.Equal(t, remoting.SubscriptionParseFailed, resp.Code, "%+v: %s", tc, resp.Remark)
		require.Contains(t, resp.Remark, tc.remark, "%+v", tc)
		require.Equal(t, "0", resp.Ext("nextBeginOffset"))
	}
	require.Equal(t, 5.0, metric(t, b, `rmqha_broker_sql92_pulls_refused_total{reason="parse_failed"}`))

	// Tag subscriptions carried by a pull are unchanged.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("pull-g", "Q", 0, 32, "TAG", "T1"), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"a1", "a3", "a5", "a7", "a9"}, pullBodies(t, resp))
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("pull-g", "Q", 0, 32, "", "T0 || T1"), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Len(t, pullBodies(t, resp), 10)
}

// TestSQL92RefusedWhenDisabled: with enablePropertyFilter=false (the default) the heartbeat
// is accepted and the pulls are SYSTEM_ERROR with RocketMQ's remark, whichever way the
// subscription arrives; a pull's selector is parsed first, as in RocketMQ; CHECK_CLIENT_CONFIG
// gives the same refusal. Tag subscriptions are served as before.
func TestSQL92RefusedWhenDisabled(t *testing.T) {
	b := startBroker(t, metricsConfig(t))
	c := newTestClient(t)
	sqlBacklog(t, b, c, "Q")
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "sg", "Q", "SQL92", "a > 5", 1))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"c1"}, b.clients.reg.ConsumerIDs("sg"))

	const remark = "The broker does not support consumer to filter message by SQL92"
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 32, "TAG", ""), nil)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, remark, resp.Remark)
	require.Empty(t, resp.Body)
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("pull-g", "Q", 0, 32, "SQL92", "a > 5"), nil)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, remark, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("pull-g", "Q", 0, 32, "SQL92", "a >"), nil)
	require.Equal(t, remoting.SubscriptionParseFailed, resp.Code, resp.Remark)
	require.Equal(t, 2.0, metric(t, b, `rmqha_broker_sql92_pulls_refused_total{reason="disabled"}`))

	resp = invoke(t, c, b.Addr(), remoting.CheckClientConfig, nil, []byte(`{"clientId":"c1","group":"sg","subscriptionData":{"topic":"Q","subString":"a > 5","expressionType":"SQL92","tagsSet":[],"codeSet":[],"subVersion":1}}`))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, remark, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.CheckClientConfig, nil, []byte(`{"clientId":"c1","group":"sg","subscriptionData":{"topic":"Q","subString":"T1","expressionType":"TAG"}}`))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	// A tag subscription of the same broker is served.
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c2", "tg", "Q", "TAG", "T0", 1))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("tg", "Q", 0, 32, "TAG", ""), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"a0", "a2", "a4", "a6", "a8"}, pullBodies(t, resp))
}

// TestSQL92BadHeartbeatSelector: a heartbeat whose selector does not compile is kept (its
// other groups and its producer are registered), and the group's pulls of that topic are
// FILTER_DATA_NOT_EXIST with RocketMQ's remark and the parse error; CHECK_CLIENT_CONFIG is
// SUBSCRIPTION_PARSE_FAILED.
func TestSQL92BadHeartbeatSelector(t *testing.T) {
	b := startBroker(t, sqlConfig(t))
	c := newTestClient(t)
	sqlBacklog(t, b, c, "Q")
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "sg", "Q", "SQL92", "a > > 5", 1))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"c1"}, b.clients.reg.ConsumerIDs("sg"))
	require.Equal(t, []string{"pg"}, b.clients.reg.ProducerGroups())

	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 32, "TAG", ""), nil)
	require.Equal(t, remoting.FilterDataNotExist, resp.Code)
	require.True(t, strings.HasPrefix(resp.Remark, "The broker's consumer filter data is not exist!Your expression may be wrong! (invalid SQL92 expression at line 1, column 5"), resp.Remark)
	require.Equal(t, "0", resp.Ext("nextBeginOffset"))
	// The retry topic's "*" subscription of the same group is served.
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("sg", "%RETRY%sg", 0, 32, "TAG", ""), nil)
	require.NotEqual(t, remoting.FilterDataNotExist, resp.Code, resp.Remark)
	m := scrape(t, b)
	require.Equal(t, 1.0, m[`rmqha_broker_sql92_pulls_refused_total{reason="no_filter_data"}`])
	require.Equal(t, 1.0, m[`rmqha_broker_sql92_subscriptions{state="invalid"}`])
	require.Equal(t, 1.0, m[`rmqha_broker_pull_total{status="FILTER_DATA_NOT_EXIST"}`])

	// Disabled as well: still FILTER_DATA_NOT_EXIST first (RocketMQ's order).
	b2 := startBroker(t, testConfig(t))
	invoke(t, c, b2.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "sg", "Q", "SQL92", "a > > 5", 1))
	sendWithProps(t, c, b2.Addr(), "Q", "x", "a", "1")
	resp = invoke(t, c, b2.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 32, "TAG", ""), nil)
	require.Equal(t, remoting.FilterDataNotExist, resp.Code, resp.Remark)

	resp = invoke(t, c, b.Addr(), remoting.CheckClientConfig, nil, []byte(`{"clientId":"c1","group":"sg","subscriptionData":{"topic":"Q","subString":"a > > 5","expressionType":"SQL92"}}`))
	require.Equal(t, remoting.SubscriptionParseFailed, resp.Code)
	require.Contains(t, resp.Remark, "invalid SQL92 expression at line 1, column 5")
	resp = invoke(t, c, b.Addr(), remoting.CheckClientConfig, nil, []byte(`{"clientId":"c1","group":"sg","subscriptionData":{"topic":"Q","subString":"a > 5","expressionType":"SQL92"}}`))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.CheckClientConfig, nil, []byte(`{not json`))
	require.Equal(t, remoting.SystemError, resp.Code)
}

// TestSQL92LimitsCountDeliveredMessages: over a long backlog where one message in ten
// matches, a pull of 5 returns 5 matching messages, found past the rejected ones.
func TestSQL92LimitsCountDeliveredMessages(t *testing.T) {
	b := startBroker(t, sqlConfig(t))
	c := newTestClient(t)
	for i := 0; i < 100; i++ {
		sendWithProps(t, c, b.Addr(), "L", "m"+strconv.Itoa(i), "n", strconv.Itoa(i), "hit", strconv.FormatBool(i%10 == 3))
	}
	require.Eventually(t, func() bool { return b.Store().QueueMaxOffset("L", 0) == 100 }, 5*time.Second, time.Millisecond)
	invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "lg", "L", "SQL92", "hit = TRUE", 1))
	resp := invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("lg", "L", 0, 5, "TAG", ""), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"m3", "m13", "m23", "m33", "m43"}, pullBodies(t, resp))
	require.Equal(t, "44", resp.Ext("nextBeginOffset"))
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("lg", "L", 44, 32, "TAG", ""), nil)
	require.Equal(t, []string{"m53", "m63", "m73", "m83", "m93"}, pullBodies(t, resp))
	require.Equal(t, "100", resp.Ext("nextBeginOffset"))
}

// TestSQL92LongPollWakesOnMatch: a held SQL92 pull answers with the matching message that
// arrives, not with the ones before it.
func TestSQL92LongPollWakesOnMatch(t *testing.T) {
	b := startBroker(t, sqlConfig(t))
	c := newTestClient(t)
	sendWithProps(t, c, b.Addr(), "W", "first", "a", "1")
	require.Eventually(t, func() bool { return b.Store().QueueMaxOffset("W", 0) == 1 }, 5*time.Second, time.Millisecond)
	invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "wg", "W", "SQL92", "a = 2", 1))
	done := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ext := sqlPullExt("wg", "W", 1, 32, "TAG", "")
		ext["sysFlag"], ext["suspendTimeoutMillis"] = strconv.Itoa(pullFlagSuspend), "20000"
		resp, _ := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.PullMessage, ext, nil))
		done <- resp
	}()
	require.Eventually(t, func() bool { return b.holds.heldCount() == 1 }, 5*time.Second, 2*time.Millisecond)
	c2 := newTestClient(t)
	sendWithProps(t, c2, b.Addr(), "W", "second", "a", "2")
	select {
	case resp := <-done:
		require.NotNil(t, resp)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		require.Equal(t, []string{"second"}, pullBodies(t, resp))
	case <-time.After(10 * time.Second):
		t.Fatal("held pull was not answered")
	}
}

// TestSQL92RetryTopic: retried messages (%RETRY%group) are delivered unfiltered by default;
// with filterSupportRetry they are evaluated against the group's selector for the topic they
// came from (RETRY_TOPIC), and pass when the group has none for it.
func TestSQL92RetryTopic(t *testing.T) {
	for _, supportRetry := range []bool{false, true} {
		t.Run("filterSupportRetry="+strconv.FormatBool(supportRetry), func(t *testing.T) {
			cfg := sqlConfig(t)
			cfg.FilterSupportRetry = supportRetry
			b := startBroker(t, cfg)
			c := newTestClient(t)
			resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "rg", "Q", "SQL92", "a > 5", 1))
			require.Equal(t, remoting.Success, resp.Code, resp.Remark)
			const retry = "%RETRY%rg"
			sendRetry := func(body string, kv ...string) {
				ext := sendExt(retry, 0, props(append([]string{"UNIQ_KEY", "ID" + body}, kv...)...))
				ext["reconsumeTimes"], ext["maxReconsumeTimes"] = "1", "16" // below the limit: not a dead letter
				resp := invoke(t, c, b.Addr(), remoting.SendMessage, ext, []byte(body))
				require.Equal(t, remoting.Success, resp.Code, resp.Remark)
			}
			for i := 4; i < 8; i++ {
				sendRetry("r"+strconv.Itoa(i), "a", strconv.Itoa(i), "RETRY_TOPIC", "Q")
			}
			sendRetry("other", "a", "1", "RETRY_TOPIC", "Elsewhere")
			require.Eventually(t, func() bool { return b.Store().QueueMaxOffset(retry, 0) == 5 }, 5*time.Second, time.Millisecond)
			resp = invoke(t, c, b.Addr(), remoting.PullMessage, sqlPullExt("rg", retry, 0, 32, "TAG", ""), nil)
			require.Equal(t, remoting.Success, resp.Code, resp.Remark)
			if supportRetry {
				require.Equal(t, []string{"r6", "r7", "other"}, pullBodies(t, resp))
				require.Equal(t, 1.0, metric(t, b, "rmqha_broker_sql92_retry_unfiltered_total"))
			} else {
				require.Equal(t, []string{"r4", "r5", "r6", "r7", "other"}, pullBodies(t, resp))
			}
		})
	}
}

// TestSQL92OnSlave: a slave serving pulls (slaveReadEnable) filters the replicated messages
// with the subscriptions of the heartbeats it receives, as the master does. (The OR is
// evaluated left to right: "text" fails converting 'x' for a <= 1, an error, not delivered.)
func TestSQL92OnSlave(t *testing.T) {
	mcfg := sqlConfig(t)
	mcfg.SlaveReadEnable = true
	m := startBroker(t, mcfg)
	scfg := slaveConfig(t, m.HAAddr())
	scfg.EnablePropertyFilter, scfg.SlaveReadEnable = true, true
	s := startBroker(t, scfg)
	c := newTestClient(t)
	sqlBacklog(t, m, c, "Q")
	require.Eventually(t, func() bool { return s.Store().QueueMaxOffset("Q", 0) == 13 }, 10*time.Second, 2*time.Millisecond)
	resp := invoke(t, c, s.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("c1", "sg", "Q", "SQL92", "a = '7.5' OR a <= 1", 1))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, s.Addr(), remoting.PullMessage, sqlPullExt("sg", "Q", 0, 32, "TAG", ""), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, []string{"a0", "a1", "half"}, pullBodies(t, resp))
	require.Equal(t, "13", resp.Ext("nextBeginOffset"))
	// The slave's records are the master's bytes.
	want := m.Store().GetMessages("Q", 0, 0, 32, 1<<20, nil).Records
	require.Equal(t, bytes.Join([][]byte{want[0], want[1], want[12]}, nil), resp.Body)
}

// BenchmarkPullSQL92: PULL_MESSAGE over loopback of a backlog of 1 KiB messages, half of
// which match, once through a tag subscription ("TagA") and once through a SQL92 selector
// on a user property (region = 'eu' AND size > 100, true for the same half), reported as
// delivered msgs/s and as the ratio SQL92 / tag measured in the same run.
func BenchmarkPullSQL92(b *testing.B) {
	cfg := testConfig(b)
	cfg.EnablePropertyFilter = true
	cfg.MappedFileSizeCommitLog = 64 << 20
	m := startBroker(b, cfg)
	c := newTestClient(b)
	resp := invoke(b, c, m.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "PF", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	require.Equal(b, remoting.Success, resp.Code)
	body := make([]byte, 1024)
	const n = 20032
	msgs := make([]*commitlog.Message, 0, 64)
	for i := 0; i < n; i += 64 {
		msgs = msgs[:0]
		for j := 0; j < 64; j++ {
			p := "TAGS\x01TagB\x02region\x01us\x02size\x0150\x02"
			if (i+j)%2 == 0 {
				p = "TAGS\x01TagA\x02region\x01eu\x02size\x01500\x02"
			}
			msgs = append(msgs, &commitlog.Message{Topic: "PF", Body: body, Properties: p + "UNIQ_KEY\x01" + strconv.Itoa(i+j) + "\x02"})
		}
		_, err := m.store.AppendBatch(msgs)
		require.NoError(b, err)
	}
	require.Eventually(b, func() bool { return m.store.QueueMaxOffset("PF", 0) == n }, 30*time.Second, 5*time.Millisecond)
	invoke(b, c, m.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("bench@1", "tagg", "PF", "TAG", "TagA", 1))
	invoke(b, c, m.Addr(), remoting.HeartBeat, nil, selectorHeartbeat("bench@2", "sqlg", "PF", "SQL92", "region = 'eu' AND size > 100", 1))

	// run makes pulls PULL_MESSAGE requests of group, round the backlog, and returns the
	// delivered msgs/s.
	run := func(group string, pulls int) float64 {
		got := 0
		off := int64(0)
		start := time.Now()
		for i := 0; i < pulls; i++ {
			resp, err := c.Invoke(context.Background(), m.Addr(), remoting.NewRequest(remoting.PullMessage, pullExt(group, "PF", 0, off, 0, 0), nil))
			require.NoError(b, err)
			if resp.Code != remoting.Success && resp.Code != remoting.PullRetryImmediately { // the last unit may not match
				b.Fatalf("pull: code %d %s", resp.Code, resp.Remark)
			}
			got += countRecords(resp.Body)
			off, _ = strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
			if off >= n {
				off = 0
			}
		}
		return float64(got) / time.Since(start).Seconds()
	}
	run("tagg", 50) // warm both paths
	run("sqlg", 50)
	tagRate := 0.0
	for pass := 0; pass < 3; pass++ { // best of three: the same-run baseline
		tagRate = max(tagRate, run("tagg", 300))
	}
	b.Logf("same-run baseline: tag-filtered pull %.0f msgs/s", tagRate)
	b.SetBytes(32 * 1024)
	b.ResetTimer()
	rate := run("sqlg", b.N)
	b.StopTimer()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(tagRate, "tag_msgs/s")
	b.ReportMetric(rate/tagRate, "ratio_to_tag")
}

// FuzzRecordFilter: a stored properties section is disk bytes; any bytes with any retry
// topic and selector must evaluate without panicking, and lastProperty must agree with the
// properties decoder (RocketMQ's map: the last pair of a name wins, empty names and values
// are dropped).
func FuzzRecordFilter(f *testing.F) {
	f.Add([]byte("a\x016\x02RETRY_TOPIC\x01Q\x02"), "a > 5")
	f.Add([]byte("RETRY_TOPIC\x01A\x02RETRY_TOPIC\x01Q\x02a\x01x"), "a = 'x'")
	f.Add([]byte("\x01\x02\x02RETRY_TOPIC\x01\x02RETRY_TOPIC"), "a IS NULL")
	f.Fuzz(func(t *testing.T, props []byte, expr string) {
		v, ok := lastProperty(props, propRetryTopic)
		want, wantOK := commitlog.ParseProperties(string(props))[propRetryTopic]
		require.Equal(t, wantOK, ok)
		require.Equal(t, want, string(v))
		cache := clients.NewFilterCache(0, 0)
		e, err := cache.Compile(clients.ExpressionTypeSQL92, expr)
		if err != nil {
			return
		}
		direct := &recordFilter{expr: e}
		retry := &recordFilter{byTopic: map[string]*filter.Expr{want: e}}
		require.Equal(t, direct.match(props), retry.match(props), "the retry path evaluates the original topic's selector")
		require.Equal(t, e.MatchMap(commitlog.ParseProperties(string(props))), direct.match(props))
	})
}

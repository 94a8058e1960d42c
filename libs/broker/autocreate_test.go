package broker

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func fileHas(t *testing.T, cfg Config, name, what string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "config", name))
	if os.IsNotExist(err) {
		return false
	}
	require.NoError(t, err)
	return strings.Contains(string(b), what)
}

// One heartbeat creates at most autoCreatePerHeartbeat groups plus retry topics; the groups
// beyond are answered SUBSCRIPTION_GROUP_NOT_EXIST and not registered; later heartbeats create
// the rest. Existing groups in the same heartbeat are registered.
func TestHeartbeatCreatesWithinItsBudget(t *testing.T) {
	cfg := testConfig(t)
	cfg.AutoCreatePerHeartbeat = 10 // 5 groups with their retry topics
	cfg.AutoCreatePerConnection = 0
	b := startBroker(t, cfg)
	c := newTestClient(t)

	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("c1", 12))
	require.Equal(t, remoting.SubscriptionGroupNotExist, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "autoCreatePerHeartbeat")
	require.Contains(t, resp.Remark, "7 of 12 groups")
	require.Equal(t, 5, b.tables.Groups.Len())
	for i := 0; i < 12; i++ {
		g := "c1-g" + strconv.Itoa(i)
		_, known := b.clients.consumerIDs(g)
		_, inTable := b.tables.Groups.Get(g)
		_, retry := b.tables.Topics.Get(meta.RetryTopic(g))
		require.Equal(t, i < 5, known, g)
		require.Equal(t, i < 5, inTable, g)
		require.Equal(t, i < 5, retry, g)
	}
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("c1", 12))
	require.Equal(t, remoting.SubscriptionGroupNotExist, resp.Code)
	require.Contains(t, resp.Remark, "2 of 12 groups")
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("c1", 12))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, 12, b.tables.Groups.Len())
	require.Equal(t, uint64(9), b.autoc.refused[refusedPerHeartbeat].Load(), "7 then 2 groups refused")
}

// The requests of one connection create at most autoCreatePerConnection groups and retry
// topics (heartbeats and pulls alike); a closed connection's account is dropped.
func TestAutoCreatePerConnection(t *testing.T) {
	cfg := testConfig(t)
	cfg.AutoCreatePerHeartbeat = 0
	cfg.AutoCreatePerConnection = 6
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("a", 2)) // 4 creations
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("pulled-1", "TBW102", 0, 0, 0, 0), nil) // 5
	require.NotEqual(t, remoting.SubscriptionGroupNotExist, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("b", 2)) // group b-g0 (6), its retry topic refused
	require.Equal(t, remoting.SubscriptionGroupNotExist, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "autoCreatePerConnection")
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("pulled-2", "TBW102", 0, 0, 0, 0), nil)
	require.Equal(t, remoting.SubscriptionGroupNotExist, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "subscription group [pulled-2] does not exist")
	_, ok := b.tables.Groups.Get("pulled-2")
	require.False(t, ok)

	other := newTestClient(t)
	resp = invoke(t, other, b.Addr(), remoting.PullMessage, pullExt("pulled-2", "TBW102", 0, 0, 0, 0), nil)
	require.NotEqual(t, remoting.SubscriptionGroupNotExist, resp.Code, resp.Remark)
	c.Close()
	require.Eventually(t, func() bool {
		b.autoc.mu.Lock()
		defer b.autoc.mu.Unlock()
		return len(b.autoc.conns) == 1
	}, 5*time.Second, 10*time.Millisecond, "the closed connection's account is dropped")
}

// Once the table holds autoCreateSubscriptionGroupLimit groups nothing more is auto-created,
// through any request; existing groups keep working and admin updateSubGroup still creates.
func TestAutoCreateTableLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.AutoCreateSubscriptionGroupLimit = 3
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("x", 5))
	require.Equal(t, remoting.SubscriptionGroupNotExist, resp.Code)
	require.Contains(t, resp.Remark, "autoCreateSubscriptionGroupLimit")
	require.Equal(t, 3, b.tables.Groups.Len())
	for _, req := range []struct {
		code int32
		ext  map[string]string
	}{
		{remoting.PullMessage, pullExt("late", "TBW102", 0, 0, 0, 0)},
		{remoting.ConsumerSendMsgBack, map[string]string{"group": "late", "offset": "0", "delayLevel": "0"}},
		{remoting.SendMessage, sendExt("%RETRY%late", 0, "")},
	} {
		resp := invoke(t, c, b.Addr(), req.code, req.ext, []byte("x"))
		require.Equal(t, remoting.SubscriptionGroupNotExist, resp.Code, "%s: %s", remoting.RequestName(req.code), resp.Remark)
	}
	resp = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("x-g0", "TBW102", 0, 0, 0, 0), nil)
	require.NotEqual(t, remoting.SubscriptionGroupNotExist, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"by-admin"}`))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, 4, b.tables.Groups.Len())
	require.Positive(t, b.autoc.refused[refusedTableLimit].Load())
}

// Heartbeat bodies beyond heartbeatMaxGroups / heartbeatMaxSubscriptions, with names RocketMQ's
// validators refuse, or making one connection hold too many registrations are refused whole.
func TestHeartbeatBodyBounds(t *testing.T) {
	cfg := metricsConfig(t)
	cfg.HeartbeatMaxGroups = 8
	cfg.HeartbeatMaxSubscriptions = 8
	cfg.AutoCreatePerHeartbeat = 0
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("big", 9))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "heartbeatMaxGroups")
	require.Equal(t, 0, b.tables.Groups.Len())

	subs := map[string]string{}
	for i := 0; i < 9; i++ {
		subs["T"+strconv.Itoa(i)] = "*"
	}
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("cl", "g", subs))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "heartbeatMaxSubscriptions")

	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("cl", strings.Repeat("g", 256), map[string]string{"T": "*"}))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "1..255 characters")

	// 4 client ids in 2 groups each (grp and the producer group pg) fit; a fifth client id on
	// the same connection does not.
	for i := 0; i < 4; i++ {
		resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("id"+strconv.Itoa(i), "grp", map[string]string{"T": "*"}))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("id0", "grp", map[string]string{"T": "*"}))
	require.Equal(t, remoting.Success, resp.Code, "a repeated heartbeat adds nothing: %s", resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("id9", "grp", map[string]string{"T": "*"}))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "client/group registrations")
	require.Equal(t, uint64(2), b.autoc.hbRefused[refusedTooLarge].Load())
	require.Equal(t, uint64(1), b.autoc.hbRefused[refusedInvalid].Load())
	require.Equal(t, uint64(1), b.autoc.hbRefused[refusedRegistrations].Load())
	require.Equal(t, 2.0, metric(t, b, `rmqha_broker_heartbeat_refused_total{reason="too_large"}`))
}

// Heartbeat-created groups and retry topics are written in batches (no rewrite per group); a
// send into such a retry topic is answered only once topics.json holds it.
func TestHeartbeatCreatedTopicDurableBeforeSend(t *testing.T) {
	cfg := testConfig(t)
	cfg.MetadataFlushInterval = time.Hour // only the send makes it durable
	b := startBroker(t, cfg)
	c := newTestClient(t)
	writes := b.tables.Topics.Writes()
	resp := invoke(t, c, b.Addr(), remoting.HeartBeat, nil, floodBody("d", 20))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, writes, b.tables.Topics.Writes(), "the heartbeat itself writes nothing")
	require.False(t, fileHas(t, cfg, meta.TopicsFileName, "%RETRY%d-g7"))
	require.False(t, fileHas(t, cfg, meta.SubscriptionGroupFileName, `"d-g7"`))

	ext := sendExt("%RETRY%d-g7", 0, "")
	delete(ext, "maxReconsumeTimes") // 16 from the group: the message stays in the retry topic
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, ext, []byte("retry me"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.True(t, fileHas(t, cfg, meta.TopicsFileName, "%RETRY%d-g7"), "answered before the topic was in topics.json")
	require.Equal(t, writes+1, b.tables.Topics.Writes(), "one rewrite wrote all 20 retry topics")
	require.True(t, fileHas(t, cfg, meta.TopicsFileName, "%RETRY%d-g19"))

	// Shutdown writes the pending group batch.
	require.False(t, fileHas(t, cfg, meta.SubscriptionGroupFileName, `"d-g7"`))
	require.NoError(t, b.Shutdown(t.Context()))
	require.True(t, fileHas(t, cfg, meta.SubscriptionGroupFileName, `"d-g19"`))
}

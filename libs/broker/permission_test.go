package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

// lastRegistered is the topic table of the stub's latest REGISTER_BROKER as master (brokerId 0).
func (ns *nsStub) lastRegistered(t *testing.T) route.TopicConfigSerializeWrapper {
	t.Helper()
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for i := len(ns.reqs) - 1; i >= 0; i-- {
		if ns.reqs[i].Code == remoting.RegisterBroker && ns.reqs[i].Ext("brokerId") == "0" {
			body, err := route.DecodeRegisterBrokerBody(ns.reqs[i].Body)
			require.NoError(t, err)
			return body.TopicConfigSerializeWrapper
		}
	}
	t.Fatal("no registration")
	return route.TopicConfigSerializeWrapper{}
}

// brokerPermission=4 at runtime: the next registration (sent at once) carries read-only topics
// under a new DataVersion, sends and send-backs answer NO_PERMISSION with RocketMQ's remark,
// pulls still work; 2 refuses pulls; 6 restores the registered perm; the file keeps the value.
func TestBrokerPermissionAtRuntime(t *testing.T) {
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	file := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(file, []byte("brokerName=broker-a\n"), 0o644))
	cfg.ConfigFile = file
	b := startBroker(t, cfg)
	c := newTestClient(t)

	r := send(t, c, b.Addr(), "PermTopic", 0, "", "m0")
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	b.RegisterNow()
	before := ns.lastRegistered(t)
	require.Equal(t, int32(6), before.TopicConfigTable["PermTopic"].Perm)
	require.Equal(t, int32(7), before.TopicConfigTable["TBW102"].Perm)

	setPerm := func(v string) {
		t.Helper()
		r := invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("brokerPermission="+v+"\n"))
		require.Equal(t, remoting.Success, r.Code, r.Remark)
	}
	registeredPerm := func(topic string) int32 { return ns.lastRegistered(t).TopicConfigTable[topic].Perm }

	setPerm("4")
	require.Eventually(t, func() bool { return registeredPerm("PermTopic") == 4 }, 10*time.Second, 10*time.Millisecond,
		"the update registers at once")
	ro := ns.lastRegistered(t)
	require.Equal(t, int32(5), ro.TopicConfigTable["TBW102"].Perm, "the inherit bit stays")
	require.False(t, ro.DataVersion.Equal(before.DataVersion), "a name server rebuilds queue data only on a new version")

	r = send(t, c, b.Addr(), "PermTopic", 0, "", "m1")
	require.Equal(t, remoting.NoPermission, r.Code)
	require.Equal(t, "the broker[127.0.0.1] sending message is forbidden", r.Remark)
	r = invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, map[string]string{"group": "g", "offset": "0", "delayLevel": "0"}, nil)
	require.Equal(t, remoting.NoPermission, r.Code)
	r = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "PermTopic", 0, 0, 0, 0), nil)
	require.NotEqual(t, remoting.NoPermission, r.Code, "read stays: %s", r.Remark)

	setPerm("2")
	require.Eventually(t, func() bool { return registeredPerm("PermTopic") == 2 }, 10*time.Second, 10*time.Millisecond)
	require.False(t, ns.lastRegistered(t).DataVersion.Equal(ro.DataVersion))
	r = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "PermTopic", 0, 0, 0, 0), nil)
	require.Equal(t, remoting.NoPermission, r.Code)
	require.Equal(t, "the broker[127.0.0.1] pulling message is forbidden", r.Remark)
	r = send(t, c, b.Addr(), "PermTopic", 0, "", "m2")
	require.Equal(t, remoting.Success, r.Code, r.Remark)

	setPerm("6")
	require.Eventually(t, func() bool { return registeredPerm("PermTopic") == 6 }, 10*time.Second, 10*time.Millisecond)
	require.True(t, ns.lastRegistered(t).DataVersion.Equal(b.tables.Topics.DataVersion()), "unmasked, the table's own version")

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "brokerName=broker-a\nbrokerPermission=6\n", string(data))

	for _, bad := range []string{"8", "-1", "rw"} {
		r = invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("brokerPermission="+bad+"\n"))
		require.Equal(t, remoting.SystemError, r.Code, bad)
		require.Contains(t, r.Remark, "brokerPermission", bad)
	}
}

// A broker started read-only registers read-only topics from its first registration.
func TestBrokerPermissionFromConfig(t *testing.T) {
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	cfg.BrokerPermission = route.PermRead
	b := startBroker(t, cfg)
	b.RegisterNow()
	require.Equal(t, int32(5), ns.lastRegistered(t).TopicConfigTable["TBW102"].Perm)
	r := send(t, newTestClient(t), b.Addr(), "PermTopic", 0, "", "m0")
	require.Equal(t, remoting.NoPermission, r.Code)

	bad := testConfig(t)
	bad.BrokerPermission = 9
	require.ErrorContains(t, bad.Validate(), "brokerPermission")
}

// The permission belongs to the process: a read-only standby promoted to master registers
// read-only topics and refuses sends, the demoted master keeps its own 6.
func TestBrokerPermissionKeptAcrossPromotion(t *testing.T) {
	ns := startNSStub(t)
	acfg := syncMasterConfig(t)
	acfg.NamesrvAddr = ns.addr()
	a := startBroker(t, acfg)
	bcfg := slaveConfig(t, a.HAAddr())
	bcfg.NamesrvAddr = ns.addr()
	bcfg.BrokerPermission = route.PermRead
	b := startBroker(t, bcfg)
	b.SetPromotion(PromotionConfig{MasterRole: RoleSyncMaster})
	a.SetPromotion(PromotionConfig{SlaveID: 1})
	c := newTestClient(t)
	require.Eventually(t, func() bool { return a.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	r := send(t, c, a.Addr(), "PermFailover", 0, "", "m0")
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	r = invoke(t, c, b.Addr(), remoting.PullMessage, pullExt("g", "PermFailover", 0, 0, 0, 0), nil)
	require.NotEqual(t, remoting.NoPermission, r.Code, "a read-only slave serves pulls: %s", r.Remark)
	a.RegisterNow()
	require.Equal(t, int32(6), ns.lastRegistered(t).TopicConfigTable["PermFailover"].Perm)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Demote(ctx))
	_, err := b.Promote(ctx, a.Epoch()+1)
	require.NoError(t, err)
	b.RegisterNow()
	require.Equal(t, int32(4), ns.lastRegistered(t).TopicConfigTable["PermFailover"].Perm, "the new master's own permission")
	r = send(t, c, b.Addr(), "PermFailover", 0, "", "m1")
	require.Equal(t, remoting.NoPermission, r.Code, r.Remark)
	require.Equal(t, int32(6), a.Config().BrokerPermission)
	require.Equal(t, int32(4), b.Config().BrokerPermission)
}

package nsadmintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("fatal")
	os.Exit(m.Run())
}

const readyTimeout = 60 * time.Second

var instanceSeq atomic.Int64

// signed is req signed with the registration secret, as mqadmin -registrationSecretFile sends it.
func signed(secret string, code int32, ext map[string]string) *remoting.Command {
	req := remoting.NewRequest(code, ext, nil)
	acl.SignCommand(req, acl.BrokerAccessKey, secret)
	return req
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

func newClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestKVConfigOnConsul: two name servers on one Consul share the KV configuration, which
// outlives a name server restart; an unsigned write is refused and stores nothing.
func TestKVConfigOnConsul(t *testing.T) {
	cons := harness.StartConsulT(t)
	dir, err := e2e.BinDir()
	require.NoError(t, err)
	secret := harness.NewSecret()
	ports := harness.MustFreePorts(t, 2)
	var ns []*harness.Process
	for i, port := range ports {
		d := filepath.Join(t.TempDir(), fmt.Sprint("ns", i))
		require.NoError(t, os.MkdirAll(d, 0o755))
		conf := filepath.Join(d, "namesrv.conf")
		// kvConfigPath points at a file that must stay unused: with Consul the items are in Consul.
		require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf("listenPort=%d\nbindAddress=127.0.0.1\nregistryBackend=consul\nregistrationSecret=%s\nkvConfigPath=%s\n",
			port, secret, filepath.Join(d, "kvConfig.json"))), 0o644))
		p := harness.StartProcessT(t, harness.ProcessConfig{Name: fmt.Sprint("namesrv", i), Bin: filepath.Join(dir, "namesrv"),
			Args: []string{"-c", conf}, Dir: d, Env: []string{"CONSUL_HTTP_ADDR=" + cons.HTTPAddr()}})
		ns = append(ns, p)
		harness.Eventually(t, readyTimeout, func() error { return harness.DialOK(harness.Addr(port)) })
	}
	a, b := harness.Addr(ports[0]), harness.Addr(ports[1])
	c := newClient(t)

	resp := invoke(t, c, a, remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "x"}, nil))
	require.Equal(t, remoting.NoPermission, resp.Code, resp.Remark)
	resp = invoke(t, c, b, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}, nil))
	require.Equal(t, remoting.QueryNotFound, resp.Code, "the stranger stored nothing")

	resp = invoke(t, c, a, signed(secret, remoting.PutKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, b, remoting.NewRequest(remoting.GetKVListByNamespace, map[string]string{"namespace": "ORDER_TOPIC_CONFIG"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, `{"table":{"T":"broker-a:4"}}`, string(resp.Body), "the other name server sees it")

	ns[1].Kill()
	require.NoError(t, ns[1].Restart())
	harness.Eventually(t, readyTimeout, func() error { return harness.DialOK(b) })
	resp = invoke(t, c, b, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "broker-a:4", resp.Ext("value"))

	resp = invoke(t, c, b, signed(secret, remoting.DeleteKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, a, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}, nil))
	require.Equal(t, remoting.QueryNotFound, resp.Code)
	for i := range ns {
		require.True(t, ns[i].Running(), "name server %d alive", i)
		_, err := os.Stat(filepath.Join(filepath.Dir(ns[i].LogPath()), "kvConfig.json"))
		require.True(t, os.IsNotExist(err), "no KV file with Consul")
	}
}

func newProducer(t *testing.T, g *e2e.Group, name string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName("pg-"+name),
		producer.WithInstanceName(fmt.Sprintf("%s-%d-%d", name, os.Getpid(), instanceSeq.Add(1))),
		producer.WithRetry(0),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

func send(p rocketmq.Producer, topic, body string) (*primitive.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
}

// TestWipeWritePermDrainsProducers: after wipeWritePerm a producer finds no writable queue of
// the broker while a consumer still reads everything; addWritePerm gives writes back.
func TestWipeWritePermDrainsProducers(t *testing.T) {
	t.Run("memory", func(t *testing.T) { wipeDrains(t, false) })
	t.Run("consul", func(t *testing.T) { wipeDrains(t, true) })
}

func wipeDrains(t *testing.T, onConsul bool) {
	cfg := e2e.DefaultGroupConfig()
	cfg.NoSlave = true
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.RegistrationSecret = harness.NewSecret()
	if onConsul {
		// The name server's registry (and the overlay of its admin changes) on Consul; the
		// processes inherit CONSUL_HTTP_ADDR.
		cons := harness.StartConsulT(t)
		t.Setenv("CONSUL_HTTP_ADDR", cons.HTTPAddr())
		cfg.ExtraNamesrv = []string{"registryBackend=consul"}
	}
	g := e2e.StartGroup(t, cfg)
	if onConsul {
		require.True(t, g.Namesrv.LogContains("registry=consul"), "the name server runs on Consul")
	}
	const topic = "DrainTopic"
	g.CreateTopic(t, topic, 2)
	c := newClient(t)

	acked := map[string]bool{}
	before := newProducer(t, g, "before")
	for i := 0; i < 5; i++ {
		res, err := send(before, topic, fmt.Sprint("before-", i))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		acked[fmt.Sprint("before-", i)] = true
	}

	resp := invoke(t, c, g.NamesrvAddr, signed(cfg.RegistrationSecret, remoting.WipeWritePermOfBroker, map[string]string{"brokerName": e2e.BrokerName}))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	t.Logf("wipeTopicCount=%s", resp.Ext("wipeTopicCount"))
	rt, err := g.Route(topic)
	require.NoError(t, err)
	require.Len(t, rt.QueueDatas, 1)
	require.Equal(t, 4, rt.QueueDatas[0].Perm, "PERM_READ only: no writable queue in the route")

	during := newProducer(t, g, "during")
	_, err = send(during, topic, "during")
	require.Error(t, err, "a producer that learns the route now has nowhere to write")
	t.Logf("what the producer sees: %v", err)

	// Consumers still read the broker.
	received := map[string]int{}
	recv := make(chan string, 64)
	pc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{g.NamesrvAddr}), consumer.WithGroupName("cg-drain"),
		consumer.WithInstance(fmt.Sprint("cg-drain-", os.Getpid(), "-", onConsul)), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			recv <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, pc.Start())
	t.Cleanup(func() { _ = pc.Shutdown() })
	collect := func(n int) {
		deadline := time.After(readyTimeout)
		for len(received) < n {
			select {
			case b := <-recv:
				received[b]++
			case <-deadline:
				t.Fatalf("received %d of %d", len(received), n)
			}
		}
	}
	collect(len(acked))

	resp = invoke(t, c, g.NamesrvAddr, signed(cfg.RegistrationSecret, remoting.AddWritePermOfBroker, map[string]string{"brokerName": e2e.BrokerName}))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.NotEqual(t, "0", resp.Ext("addTopicCount"))
	after := newProducer(t, g, "after")
	res, err := send(after, topic, "after")
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	acked["after"] = true
	collect(len(acked))

	// Invariants: every acknowledged message delivered once, nothing else stored, broker alive.
	for body := range acked {
		require.Equal(t, 1, received[body], body)
	}
	var stored int64
	for q := 0; q < 2; q++ {
		n, err := g.MaxOffset(g.MasterAddr, topic, q)
		require.NoError(t, err)
		stored += n
	}
	require.Equal(t, int64(len(acked)), stored)
	require.True(t, g.Master.Running())
	require.True(t, g.Namesrv.Running())
}

// TestGoAdminDeleteTopic: rocketmq-client-go's admin DeleteTopic sends DELETE_TOPIC_IN_BROKER
// and then DELETE_TOPIC_IN_NAMESRV, unsigned (its DeleteTopic never installs the ACL hook, even
// WithCredentials). Both are refused in the default configuration (the client does not check
// the codes) and the topic stays; the same two requests signed with the registration secret
// (access key rmqha-broker, as mqadmin -registrationSecretFile signs) are served and the route
// goes.
func TestGoAdminDeleteTopic(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.NoSlave = true
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.RegistrationSecret = harness.NewSecret()
	g := e2e.StartGroup(t, cfg)
	const topic = "GoAdminDeleted"
	g.CreateTopic(t, topic, 1)
	g.WaitRoute(t, topic)

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{g.NamesrvAddr})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = adm.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(g.MasterAddr),
		admin.WithNameSrvAddr([]string{g.NamesrvAddr})))
	harness.Eventually(t, readyTimeout, func() error {
		if !g.Master.LogContains("admin request refused") || !g.Namesrv.LogContains("admin request refused") {
			return fmt.Errorf("the broker and the name server did not both refuse the unsigned deletes")
		}
		return nil
	})
	_, err = g.Route(topic)
	require.NoError(t, err, "an unsigned DeleteTopic removed the route")

	for _, to := range []struct {
		addr string
		code int32
	}{{g.MasterAddr, remoting.DeleteTopicInBroker}, {g.NamesrvAddr, remoting.DeleteTopicInNameSrv}} {
		resp := invoke(t, g.Admin, to.addr, remoting.NewRequest(to.code, map[string]string{"topic": topic}, nil))
		require.Equal(t, remoting.Success, resp.Code, "%s: %s", remoting.RequestName(to.code), resp.Remark)
	}
	harness.Eventually(t, readyTimeout, func() error {
		if _, err := g.Route(topic); err == nil {
			return fmt.Errorf("route of %s still served", topic)
		}
		return nil
	})
	require.True(t, g.Master.Running())
	require.True(t, g.Namesrv.Running())
}

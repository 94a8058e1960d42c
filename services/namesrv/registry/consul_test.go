package registry_test

import (
	"context"
	"testing"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/broker/route"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/rmqha/rmqha/services/namesrv/registrytest"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func consulClient(t *testing.T, c *harness.Consul) *consul.Client {
	cl, err := discovery.NewClient(c.HTTPAddr())
	require.NoError(t, err)
	return cl
}

// wipe removes every broker instance and topic table so each subtest starts empty.
func wipe(t *testing.T, cl *consul.Client) {
	svcs, err := cl.Agent().Services()
	require.NoError(t, err)
	for id, s := range svcs {
		if s.Service == discovery.ServiceName {
			require.NoError(t, cl.Agent().ServiceDeregister(id))
		}
	}
	_, err = cl.KV().DeleteTree(discovery.KVTopicsPrefix, nil)
	require.NoError(t, err)
}

func newConsulRegistry(t *testing.T, cl *consul.Client, mod func(*registry.ConsulConfig)) *registry.Consul {
	cfg := registry.DefaultConsulConfig()
	cfg.Client = cl
	cfg.TCPInterval = 0 // the test brokers are not real listeners
	cfg.Wait = 2 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := registry.NewConsul(ctx, cfg)
	require.NoError(t, err)
	require.False(t, r.Status().Stale, r.Status().StaleWhy)
	t.Cleanup(func() { r.Close() })
	return r
}

func settle(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 10*time.Millisecond)
}

func TestConsulConformance(t *testing.T) {
	c := harness.StartConsulT(t)
	cl := consulClient(t, c)
	registrytest.Run(t, func(t *testing.T) registry.Registry {
		wipe(t, cl)
		return newConsulRegistry(t, cl, nil)
	}, registrytest.Options{Settle: settle, ExternalExpiry: true})
}

func reg(name string, id int64, addr string, epoch int64, conn uint64, topics ...string) registry.Registration {
	w := route.TopicConfigSerializeWrapper{DataVersion: route.NewDataVersion(time.Now()), TopicConfigTable: map[string]route.TopicConfig{}}
	for _, tp := range topics {
		w.TopicConfigTable[tp] = route.NewTopicConfig(tp)
	}
	return registry.Registration{Cluster: "C", BrokerName: name, BrokerID: id, Addr: addr, HAAddr: addr + "-ha", Epoch: epoch, ConnID: conn, Topics: w}
}

// Two name servers over one Consul give identical routes, and a restarted
// one answers the same at once.
func TestConsulTwoNameServersAgree(t *testing.T) {
	c := harness.StartConsulT(t)
	cl := consulClient(t, c)
	a := newConsulRegistry(t, cl, nil)
	b := newConsulRegistry(t, cl, nil)
	_, err := a.Register(reg("b1", 0, "m:1", 1, 1, "T"), time.Now())
	require.NoError(t, err)
	// b learns of the master through its watch (eventually consistent).
	settle(t, func() bool { _, ok := b.Route("T"); return ok })
	res, err := b.Register(reg("b1", 1, "s:1", 0, 1), time.Now())
	require.NoError(t, err)
	require.Equal(t, "m:1-ha", res.MasterHAAddr)
	settle(t, func() bool {
		ra, okA := a.Route("T")
		rb, okB := b.Route("T")
		return okA && okB && string(route.AppendTopicRouteData(nil, ra)) == string(route.AppendTopicRouteData(nil, rb)) &&
			len(ra.BrokerDatas[0].BrokerAddrs) == 2
	})
	want, _ := a.Route("T")
	require.NoError(t, b.Close())
	b2 := newConsulRegistry(t, cl, nil) // first answer already there when NewConsul returns
	got, ok := b2.Route("T")
	require.True(t, ok)
	require.Equal(t, string(route.AppendTopicRouteData(nil, want)), string(route.AppendTopicRouteData(nil, got)))
}

// A broker that stops registering turns critical when its TTL passes and
// leaves the routes.
func TestConsulTTLExpiry(t *testing.T) {
	c := harness.StartConsulT(t)
	cl := consulClient(t, c)
	r := newConsulRegistry(t, cl, func(cfg *registry.ConsulConfig) { cfg.TTL = time.Second })
	_, err := r.Register(reg("b1", 0, "m:1", 0, 0, "T"), time.Now())
	require.NoError(t, err)
	_, ok := r.Route("T")
	require.True(t, ok)
	start := time.Now()
	settle(t, func() bool { _, ok := r.Route("T"); return !ok })
	t.Logf("dropped %s after the last registration (TTL 1s)", time.Since(start).Round(10*time.Millisecond))
}

// The Consul agent stops: reads answer from the last state and say stale;
// registrations made meanwhile are written once it is back.
func TestConsulOutageStaleThenConverges(t *testing.T) {
	c := harness.StartConsulT(t)
	cl := consulClient(t, c)
	r := newConsulRegistry(t, cl, func(cfg *registry.ConsulConfig) { cfg.RetryInterval = 100 * time.Millisecond })
	_, err := r.Register(reg("b1", 0, "m:1", 0, 0, "T"), time.Now())
	require.NoError(t, err)

	c.Kill()
	settle(t, func() bool { return r.Status().Stale })
	_, ok := r.Route("T")
	require.True(t, ok, "last known route still served while Consul is down")
	_, err = r.Register(reg("b2", 0, "n:1", 0, 0, "U"), time.Now())
	require.NoError(t, err, "registration accepted and queued")
	_, ok = r.Route("U")
	require.True(t, ok, "queued registration visible locally")

	require.NoError(t, c.RestartAndWait())
	require.Eventually(t, func() bool { return !r.Status().Stale }, 10*time.Second, 10*time.Millisecond, "still stale: %+v", r.Status())
	settle(t, func() bool {
		bs, _, err := discovery.Healthy(context.Background(), cl, nil)
		return err == nil && len(bs) == 2
	})
	_, ok = r.Route("U")
	require.True(t, ok)
}

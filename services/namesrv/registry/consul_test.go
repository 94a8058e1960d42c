package registry_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/failover"
	"github.com/rmqha/rmqha/libs/route"
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
	registrytest.Run(t, func(t *testing.T, l registry.Limits) registry.Registry {
		wipe(t, cl)
		return newConsulRegistry(t, cl, func(cfg *registry.ConsulConfig) { cfg.Limits = l })
	}, registrytest.Options{Settle: settle, ExternalExpiry: true})
}

func reg(name string, id int64, addr string, epoch int64, conn uint64, topics ...string) registry.Registration {
	w := route.TopicConfigSerializeWrapper{DataVersion: route.NewDataVersion(time.Now()), TopicConfigTable: map[string]route.TopicConfig{}}
	for _, tp := range topics {
		w.TopicConfigTable[tp] = route.NewTopicConfig(tp)
	}
	return registry.Registration{Cluster: "C", BrokerName: name, BrokerID: id, Addr: addr, HAAddr: haOf(addr), Epoch: epoch, ConnID: conn, Topics: w, Authenticated: true}
}

// haOf is the HA address the test brokers use: port+1.
func haOf(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// Two name servers over one Consul give identical routes, and a restarted
// one answers the same at once.
func TestConsulTwoNameServersAgree(t *testing.T) {
	c := harness.StartConsulT(t)
	cl := consulClient(t, c)
	a := newConsulRegistry(t, cl, nil)
	b := newConsulRegistry(t, cl, nil)
	_, err := a.Register(reg("b1", 0, "10.0.0.1:100", 1, 1, "T"), time.Now())
	require.NoError(t, err)
	// b learns of the master through its watch (eventually consistent).
	settle(t, func() bool { _, ok := b.Route("T"); return ok })
	res, err := b.Register(reg("b1", 1, "10.0.1.1:100", 0, 1), time.Now())
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:101", res.MasterHAAddr)
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
	_, err := r.Register(reg("b1", 0, "10.0.0.1:100", 0, 0, "T"), time.Now())
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
	_, err := r.Register(reg("b1", 0, "10.0.0.1:100", 0, 0, "T"), time.Now())
	require.NoError(t, err)

	c.Kill()
	settle(t, func() bool { return r.Status().Stale })
	_, ok := r.Route("T")
	require.True(t, ok, "last known route still served while Consul is down")
	_, err = r.Register(reg("b2", 0, "10.0.0.3:100", 0, 0, "U"), time.Now())
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

// lockGroup takes C/name's failover lock for a broker at addr, as libs/failover does;
// the returned function releases it.
func lockGroup(t *testing.T, cl *consul.Client, name string, node int64, addr string) func() {
	t.Helper()
	sess, _, err := cl.Session().Create(&consul.SessionEntry{TTL: "30s", Behavior: consul.SessionBehaviorRelease, LockDelay: time.Millisecond}, nil)
	require.NoError(t, err)
	val, err := json.Marshal(failover.Leader{Node: node, Addr: addr, Epoch: 1})
	require.NoError(t, err)
	ok, _, err := cl.KV().Acquire(&consul.KVPair{Key: failover.LeaderKey("C", name), Value: val, Session: sess}, nil)
	require.NoError(t, err)
	require.True(t, ok)
	// The group's other keys under the lock must not read as locks.
	_, err = cl.KV().Put(&consul.KVPair{Key: failover.StateKey("C", name), Value: []byte(`{"epoch":9,"master":9}`)}, nil)
	require.NoError(t, err)
	return func() {
		_, err := cl.Session().Destroy(sess, nil)
		require.NoError(t, err)
	}
}

func masterOf(r registry.Registry, topic string) string {
	rd, ok := r.Route(topic)
	if !ok {
		return ""
	}
	return rd.BrokerDatas[0].MasterAddr()
}

// With automatic failover the group's Consul lock, not a declared epoch, names the master:
// another address is refused whatever epoch it declares, a registered master that is not
// the holder leaves the routes and the slaves' answers, and the holder's registration is
// accepted at once (a consistent read, not the watch) whatever its epoch.
func TestConsulFailoverLockDecidesMaster(t *testing.T) {
	c := harness.StartConsulT(t)
	cl := consulClient(t, c)
	r := newConsulRegistry(t, cl, nil)
	now := time.Now()
	// Before any lock: the epoch rule.
	_, err := r.Register(reg("b1", 0, "10.0.0.1:100", 5, 1, "T"), now)
	require.NoError(t, err)
	_, err = r.Register(reg("b1", 1, "10.0.1.1:100", 0, 2), now)
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:100", masterOf(r, "T"))

	// The slave at 10.0.0.2 took the lock (failover): its registration, epoch 1 below the
	// registered master's 5, is accepted at once and replaces it.
	release := lockGroup(t, cl, "b1", 2, "10.0.0.2:100")
	_, err = r.Register(reg("b1", 0, "10.0.0.2:100", 1, 3, "T"), now)
	require.NoError(t, err)
	settle(t, func() bool { return masterOf(r, "T") == "10.0.0.2:100" })

	// The old master (fenced, still registering) and anyone else claiming the role with any
	// epoch are refused.
	for _, addr := range []string{"10.0.0.1:100", "10.0.9.9:100"} {
		_, err = r.Register(reg("b1", 0, addr, 1<<40, 9, "T"), now)
		require.ErrorIs(t, err, registry.ErrNotLeader)
	}
	require.Equal(t, "10.0.0.2:100", masterOf(r, "T"))
	res, err := r.Register(reg("b1", 1, "10.0.1.1:100", 0, 2), now)
	require.NoError(t, err)
	require.Equal(t, "10.0.0.2:100", res.MasterAddr)
	require.Equal(t, "10.0.0.2:101", res.MasterHAAddr)

	// The lock is free (election under way): the epoch rule again.
	release()
	settle(t, func() bool {
		_, err := r.Register(reg("b1", 0, "10.0.0.4:100", 2, 4, "T"), now)
		return err == nil
	})
	require.Equal(t, "10.0.0.4:100", masterOf(r, "T"))

	// A master registered while the lock names another broker is left out of the routes
	// and of the answers slaves get.
	_, err = r.Register(reg("b2", 0, "10.0.2.1:100", 7, 5, "U"), now)
	require.NoError(t, err)
	_, err = r.Register(reg("b2", 1, "10.0.2.2:100", 0, 6), now)
	require.NoError(t, err)
	lockGroup(t, cl, "b2", 1, "10.0.2.2:200")
	settle(t, func() bool { return masterOf(r, "U") == "" })
	res, err = r.Register(reg("b2", 1, "10.0.2.2:100", 0, 6), now)
	require.NoError(t, err)
	require.Empty(t, res.MasterAddr, "slave pointed at a master that does not hold the lock")
}

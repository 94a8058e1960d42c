// Package registrytest holds the conformance tests every registry.Registry
// implementation must pass (the in-memory one and the Consul-backed one run
// the same suite).
package registrytest

import (
	"errors"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/route"
	"github.com/rmqha/rmqha/services/namesrv/registry"
)

// Settle lets an implementation with asynchronous reads (a cache fed by
// watches) catch up before the suite checks a read; nil for synchronous ones.
type Settle func(t *testing.T, cond func() bool)

func topics(names ...string) route.TopicConfigSerializeWrapper {
	w := route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]route.TopicConfig{}}
	for _, n := range names {
		tc := route.NewTopicConfig(n)
		tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
		w.TopicConfigTable[n] = tc
	}
	return w
}

func reg(cluster, name string, id int64, addr string, epoch int64, conn uint64, ts ...string) registry.Registration {
	return registry.Registration{Cluster: cluster, BrokerName: name, BrokerID: id, Addr: addr,
		HAAddr: addr + "-ha", Epoch: epoch, ConnID: conn, Topics: topics(ts...)}
}

// Options adapt the suite to an implementation.
type Options struct {
	// Settle waits for asynchronous reads; nil checks once.
	Settle Settle
	// ExternalExpiry: brokers expire by a mechanism outside Expire (Consul's
	// TTL checks); the implementation tests that itself.
	ExternalExpiry bool
}

// Run runs the suite; newReg returns an empty registry.
func Run(t *testing.T, newReg func(t *testing.T) registry.Registry, opts Options) {
	settle := opts.Settle
	if settle == nil {
		settle = func(t *testing.T, cond func() bool) {
			t.Helper()
			if !cond() {
				t.Fatal("condition not met")
			}
		}
	}
	now := time.Unix(1_700_000_000, 0)

	t.Run("RouteFromMasterWithSlaveAddrs", func(t *testing.T) {
		r := newReg(t)
		res, err := r.Register(reg("C", "b1", 0, "m:1", 0, 1, "T"), now)
		must(t, err)
		if res.MasterAddr != "" {
			t.Fatalf("master told about a master: %+v", res)
		}
		res, err = r.Register(reg("C", "b1", 1, "s:1", 0, 2), now)
		must(t, err)
		if res.MasterAddr != "m:1" || res.MasterHAAddr != "m:1-ha" {
			t.Fatalf("slave not told its master: %+v", res)
		}
		settle(t, func() bool {
			rd, ok := r.Route("T")
			return ok && len(rd.BrokerDatas) == 1 && len(rd.BrokerDatas[0].BrokerAddrs) == 2
		})
		rd, _ := r.Route("T")
		if rd.QueueDatas[0].WriteQueueNums != 4 || rd.BrokerDatas[0].BrokerAddrs[0] != "m:1" || rd.BrokerDatas[0].BrokerAddrs[1] != "s:1" {
			t.Fatalf("route %+v", rd)
		}
		if _, ok := r.Route("nope"); ok {
			t.Fatal("route for unknown topic")
		}
	})

	t.Run("MasterGoneKeepsQueuesForSlaveReads", func(t *testing.T) {
		r := newReg(t)
		_, err := r.Register(reg("C", "b1", 0, "m:1", 0, 1, "T"), now)
		must(t, err)
		_, err = r.Register(reg("C", "b1", 1, "s:1", 0, 2), now)
		must(t, err)
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && len(rd.BrokerDatas[0].BrokerAddrs) == 2 })
		if got := r.DropConn(1); len(got) != 1 || got[0] != "m:1" {
			t.Fatalf("DropConn = %v", got)
		}
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && len(rd.BrokerDatas[0].BrokerAddrs) == 1 })
		rd, _ := r.Route("T")
		if _, hasMaster := rd.BrokerDatas[0].BrokerAddrs[0]; hasMaster {
			t.Fatalf("dead master still routed: %+v", rd)
		}
		r.DropConn(2)
		settle(t, func() bool { _, ok := r.Route("T"); return !ok })
	})

	t.Run("Expiry", func(t *testing.T) {
		if opts.ExternalExpiry {
			t.Skip("expiry is external to this implementation")
		}
		r := newReg(t)
		_, err := r.Register(reg("C", "b1", 0, "m:1", 0, 0, "T"), now)
		must(t, err)
		if got := r.Expire(now.Add(time.Minute), 2*time.Minute); len(got) != 0 {
			t.Fatalf("expired early: %v", got)
		}
		if got := r.Expire(now.Add(3*time.Minute), 2*time.Minute); len(got) != 1 {
			t.Fatalf("not expired: %v", got)
		}
		settle(t, func() bool { _, ok := r.Route("T"); return !ok })
	})

	t.Run("TwoMastersHigherEpochWins", func(t *testing.T) {
		r := newReg(t)
		_, err := r.Register(reg("C", "b1", 0, "m:1", 5, 1, "T"), now)
		must(t, err)
		_, err = r.Register(reg("C", "b1", 0, "m:2", 5, 2, "T"), now)
		if !errors.Is(err, registry.ErrMasterConflict) {
			t.Fatalf("equal epoch: %v", err)
		}
		_, err = r.Register(reg("C", "b1", 0, "m:2", 4, 2, "T"), now)
		if !errors.Is(err, registry.ErrMasterConflict) {
			t.Fatalf("lower epoch: %v", err)
		}
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && rd.BrokerDatas[0].BrokerAddrs[0] == "m:1" })
		_, err = r.Register(reg("C", "b1", 0, "m:2", 6, 2, "T"), now)
		must(t, err)
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && rd.BrokerDatas[0].BrokerAddrs[0] == "m:2" })
		rd, _ := r.Route("T")
		if len(rd.BrokerDatas[0].BrokerAddrs) != 1 {
			t.Fatalf("two masters routed: %+v", rd)
		}
		if len(r.Status().Conflicts) == 0 {
			t.Fatal("conflict not reported")
		}
	})

	t.Run("SameNameTwoClustersRefused", func(t *testing.T) {
		r := newReg(t)
		_, err := r.Register(reg("C1", "b1", 0, "m:1", 0, 1, "T"), now)
		must(t, err)
		_, err = r.Register(reg("C2", "b1", 0, "x:1", 9, 2, "U"), now)
		if !errors.Is(err, registry.ErrClusterConflict) {
			t.Fatalf("got %v", err)
		}
		settle(t, func() bool { _, ok := r.Route("T"); return ok })
		if _, ok := r.Route("U"); ok {
			t.Fatal("second cluster's topic routed")
		}
		ci := r.ClusterInfo()
		if len(ci.ClusterAddrTable["C1"]) != 1 || len(ci.ClusterAddrTable["C2"]) != 0 {
			t.Fatalf("cluster info %+v", ci)
		}
	})

	t.Run("UnregisterAndTopicList", func(t *testing.T) {
		r := newReg(t)
		_, err := r.Register(reg("C", "b1", 0, "m:1", 0, 1, "T", "U"), now)
		must(t, err)
		_, err = r.Register(reg("C", "b2", 0, "n:1", 0, 2, "U"), now)
		must(t, err)
		settle(t, func() bool { rd, ok := r.Route("U"); return ok && len(rd.QueueDatas) == 2 })
		if got := r.Topics(); len(got) != 2 || got[0] != "T" || got[1] != "U" {
			t.Fatalf("topics %v", got)
		}
		must(t, r.Unregister("C", "b1", 0, "m:1"))
		settle(t, func() bool {
			rd, ok := r.Route("U")
			return ok && len(rd.QueueDatas) == 1 && rd.QueueDatas[0].BrokerName == "b2"
		})
	})

	t.Run("InvalidRegistration", func(t *testing.T) {
		r := newReg(t)
		if _, err := r.Register(registry.Registration{BrokerName: "b"}, now); !errors.Is(err, registry.ErrInvalid) {
			t.Fatalf("got %v", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

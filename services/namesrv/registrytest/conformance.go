// Package registrytest holds the conformance tests every registry.Registry
// implementation must pass (the in-memory one and the Consul-backed one run
// the same suite).
package registrytest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/route"
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

// reg is an authenticated registration; addr is host:port, its HA address host:port+1.
func reg(cluster, name string, id int64, addr string, epoch int64, conn uint64, ts ...string) registry.Registration {
	return registry.Registration{Cluster: cluster, BrokerName: name, BrokerID: id, Addr: addr,
		HAAddr: ha(addr), Epoch: epoch, ConnID: conn, Topics: topics(ts...), Authenticated: true}
}

// stranger is the same registration, unauthenticated.
func stranger(cluster, name string, id int64, addr string, epoch int64, conn uint64, ts ...string) registry.Registration {
	r := reg(cluster, name, id, addr, epoch, conn, ts...)
	r.Authenticated = false
	return r
}

func ha(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

// Options adapt the suite to an implementation.
type Options struct {
	// Settle waits for asynchronous reads; nil checks once.
	Settle Settle
	// ExternalExpiry: brokers expire by a mechanism outside Expire (Consul's
	// TTL checks); the implementation tests that itself.
	ExternalExpiry bool
}

// Run runs the suite; newReg returns an empty registry with the given limits (a zero
// Limits: the defaults).
func Run(t *testing.T, newRegL func(t *testing.T, l registry.Limits) registry.Registry, opts Options) {
	newReg := func(t *testing.T) registry.Registry { return newRegL(t, registry.Limits{}) }
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
		res, err := r.Register(reg("C", "b1", 0, "10.0.0.1:100", 0, 1, "T"), now)
		must(t, err)
		if res.MasterAddr != "" {
			t.Fatalf("master told about a master: %+v", res)
		}
		res, err = r.Register(reg("C", "b1", 1, "10.0.1.1:100", 0, 2), now)
		must(t, err)
		if res.MasterAddr != "10.0.0.1:100" || res.MasterHAAddr != "10.0.0.1:101" {
			t.Fatalf("slave not told its master: %+v", res)
		}
		settle(t, func() bool {
			rd, ok := r.Route("T")
			return ok && len(rd.BrokerDatas) == 1 && len(rd.BrokerDatas[0].BrokerAddrs) == 2
		})
		rd, _ := r.Route("T")
		if rd.QueueDatas[0].WriteQueueNums != 4 || rd.BrokerDatas[0].BrokerAddrs[0] != "10.0.0.1:100" || rd.BrokerDatas[0].BrokerAddrs[1] != "10.0.1.1:100" {
			t.Fatalf("route %+v", rd)
		}
		if _, ok := r.Route("nope"); ok {
			t.Fatal("route for unknown topic")
		}
	})

	t.Run("MasterGoneKeepsQueuesForSlaveReads", func(t *testing.T) {
		r := newReg(t)
		_, err := r.Register(reg("C", "b1", 0, "10.0.0.1:100", 0, 1, "T"), now)
		must(t, err)
		_, err = r.Register(reg("C", "b1", 1, "10.0.1.1:100", 0, 2), now)
		must(t, err)
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && len(rd.BrokerDatas[0].BrokerAddrs) == 2 })
		if got := r.DropConn(1); len(got) != 1 || got[0] != "10.0.0.1:100" {
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
		_, err := r.Register(reg("C", "b1", 0, "10.0.0.1:100", 0, 0, "T"), now)
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
		_, err := r.Register(reg("C", "b1", 0, "10.0.0.1:100", 5, 1, "T"), now)
		must(t, err)
		_, err = r.Register(reg("C", "b1", 0, "10.0.0.2:100", 5, 2, "T"), now)
		if !errors.Is(err, registry.ErrMasterConflict) {
			t.Fatalf("equal epoch: %v", err)
		}
		_, err = r.Register(reg("C", "b1", 0, "10.0.0.2:100", 4, 2, "T"), now)
		if !errors.Is(err, registry.ErrMasterConflict) {
			t.Fatalf("lower epoch: %v", err)
		}
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && rd.BrokerDatas[0].BrokerAddrs[0] == "10.0.0.1:100" })
		_, err = r.Register(reg("C", "b1", 0, "10.0.0.2:100", 6, 2, "T"), now)
		must(t, err)
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && rd.BrokerDatas[0].BrokerAddrs[0] == "10.0.0.2:100" })
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
		_, err := r.Register(reg("C1", "b1", 0, "10.0.0.1:100", 0, 1, "T"), now)
		must(t, err)
		_, err = r.Register(reg("C2", "b1", 0, "10.0.9.9:100", 9, 2, "U"), now)
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
		_, err := r.Register(reg("C", "b1", 0, "10.0.0.1:100", 0, 1, "T", "U"), now)
		must(t, err)
		_, err = r.Register(reg("C", "b2", 0, "10.0.0.3:100", 0, 2, "U"), now)
		must(t, err)
		settle(t, func() bool { rd, ok := r.Route("U"); return ok && len(rd.QueueDatas) == 2 })
		if got := r.Topics(); len(got) != 2 || got[0] != "T" || got[1] != "U" {
			t.Fatalf("topics %v", got)
		}
		must(t, r.Unregister("C", "b1", 0, "10.0.0.1:100", 1))
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

	runTrust(t, newReg, settle, now)
	runLimits(t, newRegL, settle, now)
}

const (
	masterAddr  = "10.0.0.1:100"
	slaveAddr   = "10.0.1.1:100"
	strangeAddr = "10.0.9.9:100"
)

// group registers master (conn 1, epoch 5, topics T and U) and slave (conn 2) of C/b1 and
// waits until both are routed.
func group(t *testing.T, r registry.Registry, settle Settle, now time.Time) {
	t.Helper()
	_, err := r.Register(reg("C", "b1", 0, masterAddr, 5, 1, "T", "U"), now)
	must(t, err)
	_, err = r.Register(reg("C", "b1", 1, slaveAddr, 0, 2), now)
	must(t, err)
	settle(t, func() bool { return routed(r, "T", masterAddr, slaveAddr) && routed(r, "U", masterAddr, slaveAddr) })
}

// routed reports whether topic routes to exactly master (id 0) and slave (id 1) of b1.
func routed(r registry.Registry, topic, master, slave string) bool {
	rd, ok := r.Route(topic)
	if !ok || len(rd.BrokerDatas) != 1 || len(rd.QueueDatas) != 1 {
		return false
	}
	a := rd.BrokerDatas[0].BrokerAddrs
	return len(a) == 2 && a[0] == master && a[1] == slave
}

// intact fails unless the group is routed as group left it and the slave is still told
// the real master.
func intact(t *testing.T, r registry.Registry, settle Settle, now time.Time) {
	t.Helper()
	settle(t, func() bool { return routed(r, "T", masterAddr, slaveAddr) && routed(r, "U", masterAddr, slaveAddr) })
	res, err := r.Register(reg("C", "b1", 1, slaveAddr, 0, 2), now)
	must(t, err)
	if res.MasterAddr != masterAddr || res.MasterHAAddr != ha(masterAddr) {
		t.Fatalf("slave told %+v", res)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got %v, want %v", err, target)
	}
}

// runTrust: what strangers and other connections must not do to a group's route.
func runTrust(t *testing.T, newReg func(t *testing.T) registry.Registry, settle Settle, now time.Time) {
	t.Run("UnauthenticatedEpochDoesNotTakeMaster", func(t *testing.T) {
		r := newReg(t)
		group(t, r, settle, now)
		_, err := r.Register(stranger("C", "b1", 0, strangeAddr, 1<<40, 9, "T", "U"), now)
		wantErr(t, err, registry.ErrMasterConflict)
		intact(t, r, settle, now)
		// An authenticated higher epoch does move the master (failover without a lock).
		_, err = r.Register(reg("C", "b1", 0, "10.0.0.2:100", 6, 3, "T", "U"), now)
		must(t, err)
		settle(t, func() bool { return routed(r, "T", "10.0.0.2:100", slaveAddr) })
	})

	t.Run("UnauthenticatedMastersKeepTheFirst", func(t *testing.T) {
		r := newReg(t)
		_, err := r.Register(stranger("C", "b1", 0, masterAddr, 3, 1, "T"), now)
		must(t, err)
		_, err = r.Register(stranger("C", "b1", 0, strangeAddr, 9, 9, "T"), now)
		wantErr(t, err, registry.ErrMasterConflict)
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && rd.BrokerDatas[0].BrokerAddrs[0] == masterAddr })
		for _, b := range r.Status().Brokers {
			if b.Epoch != 0 {
				t.Fatalf("unauthenticated epoch counted: %+v", b)
			}
		}
	})

	t.Run("SlaveIDAtMasterAddrDoesNotRemoveMaster", func(t *testing.T) {
		r := newReg(t)
		group(t, r, settle, now)
		for _, x := range []registry.Registration{reg("C", "b1", 1, masterAddr, 0, 9), stranger("C", "b1", 1, masterAddr, 0, 9), reg("C", "b1", 2, masterAddr, 0, 9)} {
			_, err := r.Register(x, now)
			wantErr(t, err, registry.ErrNotOwner)
		}
		intact(t, r, settle, now)
		// The master's own connection switching it to a slave id is a role switch.
		_, err := r.Register(reg("C", "b1", 2, masterAddr, 0, 1), now)
		must(t, err)
		settle(t, func() bool {
			rd, ok := r.Route("T")
			return ok && rd.BrokerDatas[0].BrokerAddrs[2] == masterAddr && rd.BrokerDatas[0].MasterAddr() == ""
		})
	})

	t.Run("EmptyTopicTableOnlyFromMastersConnection", func(t *testing.T) {
		r := newReg(t)
		group(t, r, settle, now)
		for _, x := range []registry.Registration{reg("C", "b1", 0, masterAddr, 5, 9), stranger("C", "b1", 0, masterAddr, 5, 9), reg("C", "b1", 0, masterAddr, 5, 2)} {
			_, err := r.Register(x, now)
			wantErr(t, err, registry.ErrNotOwner)
		}
		intact(t, r, settle, now)
		// The master itself deleted its topics: legitimate.
		_, err := r.Register(reg("C", "b1", 0, masterAddr, 5, 1), now)
		must(t, err)
		settle(t, func() bool { _, ok := r.Route("T"); return !ok })
	})

	t.Run("OtherConnectionChangesOnlyWhenAuthenticated", func(t *testing.T) {
		r := newReg(t)
		group(t, r, settle, now)
		x := stranger("C", "b1", 0, masterAddr, 5, 9, "T", "U")
		x.HAAddr = "10.0.9.9:101"
		_, err := r.Register(x, now)
		wantErr(t, err, registry.ErrNotOwner)
		intact(t, r, settle, now)
		// The master reconnected: its authenticated registration over the new connection
		// takes the entry over, and the old connection closing no longer removes it.
		_, err = r.Register(reg("C", "b1", 0, masterAddr, 5, 7, "T", "U"), now)
		must(t, err)
		if got := r.DropConn(1); len(got) != 0 {
			t.Fatalf("old connection removed %v", got)
		}
		intact(t, r, settle, now)
		if got := r.DropConn(7); len(got) != 1 || got[0] != masterAddr {
			t.Fatalf("DropConn(new) = %v", got)
		}
	})

	t.Run("UnregisterOnlyOverOwnConnection", func(t *testing.T) {
		r := newReg(t)
		group(t, r, settle, now)
		wantErr(t, r.Unregister("C", "b1", 0, masterAddr, 9), registry.ErrNotOwner)
		wantErr(t, r.Unregister("C", "b1", 0, "", 9), registry.ErrNotOwner)
		wantErr(t, r.Unregister("C", "b1", 1, slaveAddr, 1), registry.ErrNotOwner)
		intact(t, r, settle, now)
		must(t, r.Unregister("C", "b1", 0, strangeAddr, 9)) // not registered at that address: nothing to do
		must(t, r.Unregister("C", "b9", 0, "", 9))
		must(t, r.Unregister("C", "b1", 0, masterAddr, 1))
		settle(t, func() bool { rd, ok := r.Route("T"); return ok && rd.BrokerDatas[0].MasterAddr() == "" })
	})
}

// runLimits: every bound refuses before anything is stored, naming the limit.
func runLimits(t *testing.T, newReg func(t *testing.T, l registry.Limits) registry.Registry, settle Settle, now time.Time) {
	small := registry.DefaultLimits()
	small.MaxTopicsPerRegistration = 3
	small.MaxBrokersPerCluster = 3
	small.MaxBrokerGroupsPerCluster = 2
	small.MaxClusters = 2
	small.MaxClusterNameLength = 16
	small.MaxBrokerNameLength = 16

	long := func(n int) string { return strings.Repeat("a", n) }
	withTopic := func(r registry.Registration, name string) registry.Registration {
		tc := route.NewTopicConfig(name)
		r.Topics.TopicConfigTable[name] = tc
		return r
	}
	cases := []struct {
		name, limit string
		r           registry.Registration
		err         error
	}{
		{"cluster name of 1 MiB", "maxClusterNameLength", reg(long(1<<20), "b2", 0, "10.0.0.5:100", 0, 5), registry.ErrLimit},
		{"long cluster name", "maxClusterNameLength", reg(long(17), "b2", 0, "10.0.0.5:100", 0, 5), registry.ErrLimit},
		{"long broker name", "maxBrokerNameLength", reg("C", long(17), 0, "10.0.0.5:100", 0, 5), registry.ErrLimit},
		{"broker name with slash", "brokerName", reg("C", "b/2", 0, "10.0.0.5:100", 0, 5), registry.ErrInvalid},
		{"cluster name with space", "clusterName", reg("C 2", "b2", 0, "10.0.0.5:100", 0, 5), registry.ErrInvalid},
		{"address without port", "brokerAddr", reg("C", "b2", 0, "10.0.0.5", 0, 5), registry.ErrInvalid},
		{"address port 0", "brokerAddr", reg("C", "b2", 0, "10.0.0.5:0", 0, 5), registry.ErrInvalid},
		{"address host junk", "brokerAddr", reg("C", "b2", 0, "a b:10", 0, 5), registry.ErrInvalid},
		{"ha address junk", "haServerAddr", func() registry.Registration {
			x := reg("C", "b2", 0, "10.0.0.5:100", 0, 5)
			x.HAAddr = "nope"
			return x
		}(), registry.ErrInvalid},
		{"too many topics", "maxTopicsPerRegistration", reg("C", "b2", 0, "10.0.0.5:100", 0, 5, "A", "B", "D", "E"), registry.ErrLimit},
		{"topic of 128 bytes", "127", withTopic(reg("C", "b2", 0, "10.0.0.5:100", 0, 5), long(128)), registry.ErrInvalid},
		{"topic with a dot", "[%|a-zA-Z0-9_-]", withTopic(reg("C", "b2", 0, "10.0.0.5:100", 0, 5), "a.b"), registry.ErrInvalid},
		{"brokers per cluster", "maxBrokersPerCluster", reg("C", "b1", 3, "10.0.1.3:100", 0, 5), registry.ErrLimit},
		{"groups per cluster", "maxBrokerGroupsPerCluster", reg("C", "b3", 0, "10.0.3.1:100", 0, 5), registry.ErrLimit},
		{"clusters", "maxClusters", reg("C3", "c3", 0, "10.0.4.1:100", 0, 5), registry.ErrLimit},
	}
	t.Run("Limits", func(t *testing.T) {
		r := newReg(t, small)
		group(t, r, settle, now) // C/b1: 2 brokers
		_, err := r.Register(reg("C", "b2", 0, "10.0.2.1:100", 0, 3, "V"), now)
		must(t, err) // C: 2 groups, 3 brokers
		_, err = r.Register(reg("C2", "c2", 0, "10.0.5.1:100", 0, 4, "W"), now)
		must(t, err) // 2 clusters
		settle(t, func() bool { _, ok := r.Route("W"); return ok })
		before := fmt.Sprint(r.ClusterInfo(), r.Topics())
		for _, c := range cases {
			_, err := r.Register(c.r, now)
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.limit) {
				t.Fatalf("%s: got %v, want %v naming %s", c.name, err, c.err, c.limit)
			}
			if len(err.Error()) > 512 {
				t.Fatalf("%s: error of %d bytes", c.name, len(err.Error()))
			}
		}
		intact(t, r, settle, now)
		if after := fmt.Sprint(r.ClusterInfo(), r.Topics()); after != before {
			t.Fatalf("refused registrations changed the registry:\n%s\n%s", before, after)
		}
		// Updates of registered brokers are not new brokers.
		_, err = r.Register(reg("C", "b2", 0, "10.0.2.1:100", 0, 3, "V", "V2"), now)
		must(t, err)
		if err := small.CheckBodySize(small.MaxBodySize + 1); !errors.Is(err, registry.ErrLimit) || !strings.Contains(err.Error(), "maxRegistrationBodySize") {
			t.Fatalf("body size: %v", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

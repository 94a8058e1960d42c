package main

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBroker answers GET_BROKER_RUNTIME_INFO with a table the test sets.
type fakeBroker struct {
	srv *remoting.Server
	mu  sync.Mutex
	kv  map[string]string
}

func startFake(t *testing.T) *remoting.Server {
	t.Helper()
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	return srv
}

func newFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	fb := &fakeBroker{srv: startFake(t), kv: map[string]string{}}
	fb.srv.HandleFunc(remoting.GetBrokerRuntimeInfo, func(w remoting.ResponseWriter, req *remoting.Command) {
		fb.mu.Lock()
		body := route.AppendStringMap([]byte(`{"table":`), fb.kv)
		fb.mu.Unlock()
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = append(body, '}')
		_ = w.Write(resp)
	})
	require.NoError(t, fb.srv.Start())
	t.Cleanup(func() { _ = fb.srv.Close() })
	return fb
}

func (fb *fakeBroker) set(kv map[string]string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.kv = kv
}

func (fb *fakeBroker) addr() string { return fb.srv.Addr().String() }

// fakeGroup is a name server that lists one master and one slave.
func fakeGroup(t *testing.T) (admin *Admin, master, slave *fakeBroker) {
	t.Helper()
	master, slave = newFakeBroker(t), newFakeBroker(t)
	ns := startFake(t)
	ci := route.ClusterInfo{
		BrokerAddrTable: map[string]route.BrokerData{"b1": {Cluster: "C", BrokerName: "b1",
			BrokerAddrs: map[int64]string{0: master.addr(), 1: slave.addr()}}},
		ClusterAddrTable: map[string][]string{"C": {"b1"}},
	}
	ns.HandleFunc(remoting.GetBrokerClusterInfo, func(w remoting.ResponseWriter, req *remoting.Command) {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = route.AppendClusterInfo(nil, ci)
		_ = w.Write(resp)
	})
	require.NoError(t, ns.Start())
	t.Cleanup(func() { _ = ns.Close() })
	cfg := DefaultConfig()
	cfg.Namesrvs = []string{ns.Addr().String()}
	admin, err := NewAdmin(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	return admin, master, slave
}

func TestHAFromRuntimeInfoOnly(t *testing.T) {
	admin, master, slave := fakeGroup(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	now := func() time.Time { return clock }

	// In-sync count 2 with one connected slave: that slave is the one in sync.
	master.set(map[string]string{"brokerRole": "SYNC_MASTER", "commitLogMinOffset": "0", "commitLogMaxOffset": "1000",
		"haEpoch": "3", "haConfirmedOffset": "1000", "haInSyncCount": "2", "haSlaveCount": "1"})
	slave.set(map[string]string{"brokerRole": "SLAVE", "commitLogMinOffset": "0", "commitLogMaxOffset": "1000",
		"haConnected": "true", "haLagBytes": "0"})
	rep, err := collectHA(ctx, admin, "", nil, nil, now)
	require.NoError(t, err)
	require.Len(t, rep.Groups, 1)
	g := rep.Groups[0]
	assert.Equal(t, int64(3), g.Epoch)
	require.Len(t, g.Nodes, 2)
	require.NotNil(t, g.Nodes[1].InSync)
	assert.True(t, *g.Nodes[1].InSync)
	assert.Empty(t, g.Warnings)

	// Only the master in sync: the connected slave is behind and catching up.
	master.set(map[string]string{"brokerRole": "SYNC_MASTER", "commitLogMinOffset": "0", "commitLogMaxOffset": "10000000",
		"haEpoch": "3", "haInSyncCount": "1", "haSlaveCount": "1"})
	slave.set(map[string]string{"brokerRole": "SLAVE", "commitLogMaxOffset": "2000000", "haConnected": "true",
		"haLagBytes": "8000000", "haLagSeconds": "4.5", "haState": "streaming"})
	rep1, err := collectHA(ctx, admin, "", nil, nil, now)
	require.NoError(t, err)
	s := rep1.Groups[0].Nodes[1]
	require.NotNil(t, s.InSync)
	assert.False(t, *s.InSync)
	assert.True(t, s.CatchingUp)
	assert.Equal(t, int64(8000000), s.LagBytes)
	require.NotNil(t, s.LagSeconds)
	assert.InDelta(t, 4.5, *s.LagSeconds, 1e-9)
	require.NotNil(t, s.Progress)
	assert.InDelta(t, 0.2, *s.Progress, 1e-9)
	assert.Nil(t, s.RateBytesPerSec, "no rate from a single sample")

	// Two seconds later the slave moved 2 MB: 1 MB/s, 6 MB left → 6 s.
	clock = t0.Add(2 * time.Second)
	slave.set(map[string]string{"brokerRole": "SLAVE", "commitLogMaxOffset": "4000000", "haConnected": "true", "haLagBytes": "6000000"})
	rep2, err := collectHA(ctx, admin, "", nil, rep1, now)
	require.NoError(t, err)
	s = rep2.Groups[0].Nodes[1]
	require.NotNil(t, s.RateBytesPerSec)
	assert.InDelta(t, 1e6, *s.RateBytesPerSec, 1e-6)
	require.NotNil(t, s.ETASeconds)
	assert.InDelta(t, 6, *s.ETASeconds, 1e-9)
	assert.Contains(t, progressLine(s), "6s left")

	// A master that lists its slaves in the runtime info ("haSlaves") settles each one.
	master.set(map[string]string{"brokerRole": "ASYNC_MASTER", "commitLogMaxOffset": "5000", "haInSyncCount": "2", "haSlaveCount": "1",
		"haSlaves": `[{"addr":"10.0.0.2:50000","brokerId":1,"streaming":true,"ackOffset":4000,"lagBytes":1000,"lagSeconds":0.25,"inSync":true},` +
			`{"addr":"10.0.0.3:50000","brokerId":2,"streaming":true,"ackOffset":100,"lagBytes":4900,"lagSeconds":9,"inSync":false}]`})
	slave.set(map[string]string{"brokerRole": "SLAVE", "commitLogMaxOffset": "4000", "haConnected": "true"})
	rep3, err := collectHA(ctx, admin, "", nil, nil, now)
	require.NoError(t, err)
	nodes := rep3.Groups[0].Nodes
	require.Len(t, nodes, 3, "%+v", nodes)
	assert.True(t, *nodes[1].InSync)
	assert.InDelta(t, 0.25, *nodes[1].LagSeconds, 1e-9)
	assert.Equal(t, "master-view", nodes[2].Source, "a slave the name server does not list")
	assert.False(t, *nodes[2].InSync)
	assert.Contains(t, rep3.Groups[0].Warnings, "slave 2 (10.0.0.3:50000): not registered with the name server")

	// A slave seen in the previous sample but no longer listed stays as a GONE row.
	prev := &HAReport{Time: t0, Groups: []HAGroup{{Cluster: "C", BrokerName: "b1", Nodes: []HANode{
		{BrokerID: 0, Addr: master.addr(), Reachable: true}, {BrokerID: 1, Addr: slave.addr(), Reachable: true},
		{BrokerID: 3, Addr: "10.0.0.9:10911", Role: "SLAVE", Reachable: true, MaxOffset: 77}}}}}
	rep4, err := collectHA(ctx, admin, "", nil, prev, now)
	require.NoError(t, err)
	nodes = rep4.Groups[0].Nodes
	require.Len(t, nodes, 4)
	assert.Equal(t, "gone", nodes[3].Source)
	assert.Equal(t, int64(77), nodes[3].MaxOffset)
	assert.Contains(t, rep4.Groups[0].Warnings, "slave 3 (10.0.0.9:10911) is gone from the name server")
	var out bytes.Buffer
	require.NoError(t, renderHA(&env{stdout: &out}, rep4))
	assert.Equal(t, []string{"C", "b1", "3", "SLAVE", "10.0.0.9:10911", "-", "-", "-", "GONE", "0"}, tableRow(out.String(), "C", "b1", "3"), out.String())

	// -c limits the report; an unknown cluster is a not-found error.
	_, err = collectHA(ctx, admin, "Other", nil, nil, now)
	assert.ErrorIs(t, err, ErrNotFound)
}

// With automatic failover on, haStatus shows the lock holder, epoch and in-sync set the
// master's runtime info carries.
func TestHAShowsFailoverView(t *testing.T) {
	admin, master, slave := fakeGroup(t)
	master.set(map[string]string{"brokerRole": "SYNC_MASTER", "commitLogMaxOffset": "1000", "haEpoch": "4",
		"haInSyncCount": "2", "haSlaveCount": "1",
		"failover": `{"node":2,"master":true,"lockHolder":2,"lockHolderAddr":"10.0.0.2:10911","epoch":4,"inSync":[1,2],"fenced":false,"leaseLeftMs":1800}`})
	slave.set(map[string]string{"brokerRole": "SLAVE", "commitLogMaxOffset": "1000", "haConnected": "true",
		"failover": `{"node":1,"master":false,"lockHolder":2,"epoch":4,"inSync":[1,2]}`})
	rep, err := collectHA(context.Background(), admin, "", nil, nil, time.Now)
	require.NoError(t, err)
	f := rep.Groups[0].Failover
	require.NotNil(t, f)
	assert.Equal(t, int64(2), f.Holder)
	assert.Equal(t, "10.0.0.2:10911", f.HolderAddr, "the master's view wins over a slave's")
	assert.Equal(t, []int64{1, 2}, f.InSync)
	var out bytes.Buffer
	require.NoError(t, renderHA(&env{stdout: &out}, rep))
	assert.Contains(t, out.String(), "C/b1 failover: lock node 2 10.0.0.2:10911, epoch 4, in-sync [1 2], lease left 1800 ms")
}

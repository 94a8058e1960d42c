package failover

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunHandsOverOnClose runs two electors on the real clock: one becomes master; closing it
// (a clean shutdown) fences it and the other takes over without waiting for the lease.
func TestRunHandsOverOnClose(t *testing.T) {
	coord := NewMemCoordinator(time.Now)
	var nodes []*fakeNode
	var cancels []context.CancelFunc
	var dones []chan struct{}
	for i := int64(1); i <= 2; i++ {
		cfg := DefaultConfig()
		cfg.Cluster, cfg.BrokerName, cfg.Node = "c", "b", i
		cfg.LeaseTTL, cfg.SafetyMargin, cfg.PassInterval, cfg.PollInterval = 10*time.Second, 2*time.Second, 50*time.Millisecond, 10*time.Millisecond
		n := &fakeNode{id: i, inSync: []int64{3 - i}}
		e, err := New(cfg, coord, n)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); e.Run(ctx) }()
		nodes, cancels, dones = append(nodes, n), append(cancels, cancel), append(dones, done)
	}
	defer func() {
		for i := range cancels {
			cancels[i]()
			<-dones[i]
		}
	}()
	var master int
	require.Eventually(t, func() bool {
		c := 0
		for i, n := range nodes {
			if n.IsMaster() {
				c, master = c+1, i
			}
		}
		return c == 1
	}, 5*time.Second, time.Millisecond)
	// Let the master publish both nodes in sync, then stop it.
	require.Eventually(t, func() bool {
		kv, ok, _ := coord.Get(context.Background(), StateKey("c", "b"))
		st, _ := decode[State](kv.Value)
		return ok && st != nil && len(st.InSync) == 2
	}, 5*time.Second, time.Millisecond)
	cancels[master]()
	<-dones[master]
	require.True(t, nodes[master].isFenced(), "a master leaving fences first")
	other := 1 - master
	require.Eventually(t, func() bool { return nodes[other].IsMaster() }, 5*time.Second, time.Millisecond,
		"the in-sync slave takes over long before the 10s lease would have ended")
}

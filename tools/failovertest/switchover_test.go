package failovertest

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/failover"
	"github.com/stretchr/testify/require"
)

// TestSwitchoverUnderLoad hands the master role back and forth on command while a producer
// sends: every SEND_OK message is on both nodes at its offsets afterwards (their CommitLogs
// identical), and the time from the request to the new master holding the lock is logged.
func TestSwitchoverUnderLoad(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	defer p.close()
	client, err := discovery.NewClient(g.consul.HTTPAddr())
	require.NoError(t, err)
	coord := failover.NewConsul(client)
	var took []time.Duration
	for r := 0; r < 3; r++ {
		m = g.waitMaster(2)
		p.waitSends(t, 20)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := failover.RequestSwitchover(ctx, coord, clusterName, brokerName, 0, 5*time.Millisecond, time.Now)
		cancel()
		require.NoError(t, err)
		require.Equal(t, m.id, res.From)
		require.NotEqual(t, res.From, res.To)
		took = append(took, res.Took)
		firstAfter(t, p.sends, time.Now(), m.addr)
		t.Logf("switchover %d: node %d → node %d, epoch %d → %d, lock handed over in %v", r+1, res.From, res.To, res.FromEpoch, res.ToEpoch, res.Took)
	}
	g.waitMaster(2)
	p.close()
	g.checkConverged(t, p)
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("switchover request → new master holds the lock: %v; sends %v", took, p.hist.Counts())
}

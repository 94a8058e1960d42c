package failovertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOnlyInSyncNodeTakesOver kills the master, then the node that took over before the first
// one rejoined: the first node, restarted, is not in the published in-sync set and must not
// take the lock (it lacks what the second acknowledged alone); when the second node returns
// it takes its role back (its own earlier session is ended) and the first follows it.
func TestOnlyInSyncNodeTakesOver(t *testing.T) {
	g := startGroup(t, 2)
	a := g.waitMaster(2)
	require.NoError(t, g.createTopic(a.addr))
	p := g.startProducer()
	defer p.close()
	waitStoredOn(t, p, a.addr, time.Now())
	a.proc.Kill()
	b := g.waitMaster(1)
	require.NotEqual(t, a.id, b.id)
	// b stores alone (SLAVE_NOT_AVAILABLE answers) for a moment.
	at := time.Now()
	waitStoredOn(t, p, b.addr, at)
	b.proc.Kill()
	require.NoError(t, a.proc.Restart())
	// a comes back as a slave and stays one while b is away.
	waitFor(t, func() bool {
		st, err := a.status()
		return err == nil && st.Failover != nil && st.Role == "SLAVE"
	})
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		st, err := a.status()
		require.NoError(t, err)
		require.Equal(t, "SLAVE", st.Role, "a node outside the in-sync set took over")
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, b.proc.Restart())
	// b, alone in the in-sync set it published, takes the role back; a stays a slave until then.
	waitFor(t, func() bool {
		if st, err := a.status(); err == nil {
			require.Equal(t, "SLAVE", st.Role, "a node outside the in-sync set took over")
		}
		st, err := b.status()
		return err == nil && st.serving()
	})
	// Once a has caught up, b publishes both nodes as in sync. From then on a lease b fails to
	// renew in time (a loaded machine) may hand the role to a, rightly: either may be master.
	m := g.waitMaster(2)
	if m.id != b.id {
		t.Logf("node %d took over from node %d after both were in sync", m.id, b.id)
	}
	waitStoredOn(t, p, m.addr, time.Now())
	p.close()
	// Every SEND_OK message is on both nodes at its offsets (a's divergent tail, if any, cut).
	ms, err := m.status()
	require.NoError(t, err)
	waitFor(t, func() bool {
		st, err := a.status()
		return err == nil && caughtUp(st, ms.MaxOffset)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, n := range g.nodes {
		require.NoError(t, p.hist.Check(ctx, g.admin, n.addr), "node %d", n.id)
	}
	t.Logf("sends: %v", p.hist.Counts())
}

func waitStoredOn(t *testing.T, p *producer, addr string, after time.Time) {
	t.Helper()
	waitFor(t, func() bool {
		for _, s := range p.stored() {
			if s.addr == addr && s.at.After(after) {
				return true
			}
		}
		return false
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "condition not met within %v", readyTimeout)
		time.Sleep(20 * time.Millisecond)
	}
}

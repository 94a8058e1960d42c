package failovertest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestKillDuringPromotionAndTruncation kills -9, round after round under SYNC_MASTER load:
// the slave, and the master 30 ms later (the master dies with a tail the slave never got);
// the slave is restarted and killed again at a random moment between seeing itself hold the
// lock and shortly after its promotion; restarted once more, it takes over; then the old
// master is restarted and killed at a random moment while it rejoins (its handshake truncates
// the divergent tail), and restarted for good. Restarts converge to one master with both
// nodes in sync, and at the end the history checker finds every SEND_OK message at its
// offsets on both nodes and the two CommitLogs are byte for byte the same: nothing divergent
// survives anywhere.
func TestKillDuringPromotionAndTruncation(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	defer p.close()
	var promoKills, truncKills []time.Duration
	for r := 0; r < 4; r++ {
		m = g.waitMaster(2)
		s := g.other(m)
		p.waitSends(t, 20)
		// The slave dies, and the master 30 ms later: in between the master stored sends the
		// slave never got (a divergent tail), before it could publish an in-sync set without
		// the slave (it publishes every 200 ms).
		s.proc.Kill()
		time.Sleep(30 * time.Millisecond)
		m.proc.Kill()
		require.NoError(t, s.proc.Restart())
		// The restarted slave takes the lock: kill it 0-200 ms after it is seen holding it.
		var held time.Time
		err := harness.WaitFor(20*time.Second, func() error {
			st, err := s.status()
			if err != nil {
				return err
			}
			if st.Failover == nil || st.Failover.Holder != s.id {
				time.Sleep(5 * time.Millisecond)
				return errNotYet
			}
			held = time.Now()
			return nil
		})
		if err != nil {
			// The master published the in-sync set without the slave first: only the master
			// may take over (correctly); this round has nothing to truncate.
			require.NoError(t, m.proc.Restart())
			t.Logf("round %d: node %d was dropped from the in-sync set before node %d died; node %d takes over again", r+1, s.id, m.id, m.id)
			continue
		}
		d := time.Duration(rand.IntN(200)) * time.Millisecond
		time.Sleep(time.Until(held.Add(d)))
		s.proc.Kill()
		promoKills = append(promoKills, d)
		// Both down. The node killed around its promotion comes back and takes over (it was in
		// the in-sync set either way); it stores sends on its own for a moment.
		require.NoError(t, s.proc.Restart())
		nm := g.waitMaster(1)
		require.Equal(t, s.id, nm.id, "the old master is down: only the other node can be master")
		before := len(p.stored())
		harness.Eventually(t, readyTimeout, func() error {
			if len(p.stored()) < before+10 {
				return errNotYet
			}
			return nil
		})
		// The old master rejoins: its first handshake cuts whatever tail the new master does
		// not have. Kill it 0-250 ms after it starts, then let it rejoin for good.
		require.NoError(t, m.proc.Restart())
		d2 := time.Duration(rand.IntN(250)) * time.Millisecond
		time.Sleep(d2)
		m.proc.Kill()
		truncKills = append(truncKills, d2)
		require.NoError(t, m.proc.Restart())
		g.waitMaster(2)
		st, err := m.status()
		require.NoError(t, err)
		cut := "its tail was cut before the kill"
		if st.HASlave != nil && st.HASlave.Truncations > 0 {
			cut = fmt.Sprintf("%d bytes cut after the kill", st.HASlave.TruncatedBytes)
		}
		t.Logf("round %d: slave node %d and master node %d killed 30 ms apart; node %d killed again %v after holding the lock, then master; node %d killed %v into its rejoin (%s)",
			r+1, s.id, m.id, s.id, d, m.id, d2, cut)
	}
	m = g.waitMaster(2)
	p.waitSends(t, 20)
	p.close()
	truncated := 0
	for _, n := range g.nodes {
		b, err := os.ReadFile(n.proc.LogPath())
		require.NoError(t, err)
		truncated += bytes.Count(b, []byte("truncating to the common point"))
	}
	require.Positive(t, truncated, "no rejoin cut a divergent tail: the test did not exercise truncation")
	g.checkConverged(t, p)
	sort.Slice(promoKills, func(i, j int) bool { return promoKills[i] < promoKills[j] })
	t.Logf("kills after the lock was taken: %v; kills into a rejoin: %v; divergent tails cut: %d; sends %v",
		promoKills, truncKills, truncated, p.hist.Counts())
}

// waitCaughtUp waits until every node holds master m's log up to its current end and has
// indexed it in its consume queues.
func (g *group) waitCaughtUp(t *testing.T, m *node) {
	t.Helper()
	ms, err := m.status()
	require.NoError(t, err)
	for _, n := range g.nodes {
		harness.Eventually(t, readyTimeout, func() error {
			st, err := n.status()
			if err != nil {
				return err
			}
			if !caughtUp(st, ms.MaxOffset) {
				return errNotYet
			}
			return nil
		})
	}
}

// other is the node that is not n (two-node groups).
func (g *group) other(n *node) *node {
	for _, o := range g.nodes {
		if o != n {
			return o
		}
	}
	return nil
}

// checkConverged waits until every node holds the master's log and has indexed it, runs the
// history checker against every node, then stops the nodes and compares their CommitLogs
// byte for byte up to the master's end.
func (g *group) checkConverged(t *testing.T, p *producer) {
	t.Helper()
	g.waitCaughtUp(t, g.waitMaster(len(g.nodes)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, n := range g.nodes {
		require.NoError(t, p.hist.Check(ctx, g.admin, n.addr), "node %d", n.id)
	}
	ends := map[int64]int64{}
	for _, n := range g.nodes {
		st, err := n.status()
		require.NoError(t, err)
		ends[n.id] = st.MaxOffset
	}
	for _, n := range g.nodes {
		require.NoError(t, n.proc.Stop(20*time.Second))
	}
	ref := g.nodes[0]
	for _, n := range g.nodes[1:] {
		require.Equal(t, ends[ref.id], ends[n.id], "nodes %d and %d end at different offsets", ref.id, n.id)
		require.NoError(t, sameLog(g.storeDir(ref), g.storeDir(n), ends[ref.id]), "nodes %d and %d", ref.id, n.id)
	}
}

func (g *group) storeDir(n *node) string {
	return filepath.Join(g.dir, "node"+strconv.FormatInt(n.id, 10), "store", "commitlog")
}

// sameLog compares two CommitLog directories over [0, end): the segments are named by their
// start offset and must hold the same bytes.
func sameLog(a, b string, end int64) error {
	names, err := os.ReadDir(a)
	if err != nil {
		return err
	}
	compared := int64(0)
	for _, e := range names {
		start, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || start >= end {
			continue
		}
		x, err := os.ReadFile(filepath.Join(a, e.Name()))
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil {
			return fmt.Errorf("segment %s: %w", e.Name(), err)
		}
		n := min(int64(len(x)), end-start)
		if int64(len(y)) < n {
			return fmt.Errorf("segment %s: %d bytes, want at least %d", e.Name(), len(y), n)
		}
		if !bytes.Equal(x[:n], y[:n]) {
			i := 0
			for i < int(n) && x[i] == y[i] {
				i++
			}
			return fmt.Errorf("segment %s differs at byte %d (log offset %d)", e.Name(), i, start+int64(i))
		}
		compared += n
	}
	if compared != end {
		return fmt.Errorf("compared %d bytes of %d", compared, end)
	}
	return nil
}

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
// the master; then the node taking over, at a random moment between seeing itself hold the
// lock and shortly after its promotion; restarted, that node takes over; then the old master
// is restarted and killed again at a random moment while it rejoins (its handshake truncates
// a tail the new master never had), and restarted for good. Restarts converge to one master with both nodes in sync, and at the end the history
// checker finds every SEND_OK message at its offsets on both nodes and the two CommitLogs are
// byte for byte the same: nothing divergent survives anywhere.
func TestKillDuringPromotionAndTruncation(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	stopped := false
	defer func() {
		if !stopped {
			p.close()
		}
	}()
	var promoKills, truncKills []time.Duration
	truncated := 0
	for r := 0; r < 4; r++ {
		m = g.waitMaster(2)
		s := g.other(m)
		before := len(p.sends())
		harness.Eventually(t, readyTimeout, func() error {
			if len(p.sends()) < before+20 {
				return errNotYet
			}
			return nil
		})
		m.proc.Kill()
		// The other node takes the lock: kill it 0-200 ms after it is seen holding it.
		var held time.Time
		harness.Eventually(t, readyTimeout, func() error {
			st, err := s.status()
			if err != nil {
				return err
			}
			if st.Failover == nil || st.Failover.Holder != s.id {
				return errNotYet
			}
			held = time.Now()
			return nil
		})
		d := time.Duration(rand.IntN(200)) * time.Millisecond
		time.Sleep(time.Until(held.Add(d)))
		s.proc.Kill()
		promoKills = append(promoKills, d)
		// Both down. The node killed around its promotion comes back and takes over (it was in
		// the in-sync set either way); it stores sends on its own for a moment.
		require.NoError(t, s.proc.Restart())
		nm := g.waitMaster(1)
		require.Equal(t, s.id, nm.id, "the old master is down: only the other node can be master")
		before = len(p.stored())
		harness.Eventually(t, readyTimeout, func() error {
			if len(p.stored()) < before+10 {
				return errNotYet
			}
			return nil
		})
		// The old master rejoins: its first handshake cuts whatever tail the new master does
		// not have. Kill it 0-300 ms after it starts, then let it rejoin for good.
		require.NoError(t, m.proc.Restart())
		d2 := time.Duration(rand.IntN(300)) * time.Millisecond
		time.Sleep(d2)
		m.proc.Kill()
		truncKills = append(truncKills, d2)
		require.NoError(t, m.proc.Restart())
		g.waitMaster(2)
		st, err := m.status()
		require.NoError(t, err)
		cut := "nothing to cut"
		if st.HASlave != nil && st.HASlave.Truncations > 0 {
			cut = fmt.Sprintf("%d bytes cut", st.HASlave.TruncatedBytes)
			truncated++
		}
		t.Logf("round %d: node %d killed, node %d killed %v after holding the lock and restarted as master; node %d killed %v into its rejoin (%s)",
			r+1, m.id, s.id, d, m.id, d2, cut)
	}
	m = g.waitMaster(2)
	before := len(p.sends())
	harness.Eventually(t, readyTimeout, func() error {
		if len(p.sends()) < before+20 {
			return errNotYet
		}
		return nil
	})
	p.close()
	stopped = true
	g.checkConverged(t, p)
	sort.Slice(promoKills, func(i, j int) bool { return promoKills[i] < promoKills[j] })
	t.Logf("kills after the lock was taken: %v; kills into a rejoin: %v; rejoins that cut a tail after the kill: %d; sends %v",
		promoKills, truncKills, truncated, p.hist.Counts())
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
	m := g.waitMaster(len(g.nodes))
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

package failovertest

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKillMasterThreeNodes kills (-9) whichever of three nodes is master, round after round
// under SYNC_MASTER load (inSyncReplicas=2: one slave's acknowledgement makes a SEND_OK). One
// of the two slaves takes over (the one furthest ahead) and the other follows it, so SEND_OK
// resumes without waiting for the killed node; it is restarted and rejoins. Measured: kill -9
// to the first SEND_OK on the new master. At the end every SEND_OK message is at its offsets
// on all three nodes and their CommitLogs are identical.
func TestKillMasterThreeNodes(t *testing.T) {
	g := startGroup(t, 3)
	m := g.waitMaster(3)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	defer p.close()
	var times []time.Duration
	for r := 0; r < rounds(); r++ {
		m = g.waitMaster(3)
		p.waitSends(t, 20)
		m.proc.Kill()
		killed := time.Now()
		f := firstAfter(t, p.sends, killed, m.addr)
		first, by := f.at, f.addr
		times = append(times, first.Sub(killed))
		t.Logf("round %d: node %d killed; first SEND_OK on the new master %s after %v", r+1, m.id, by, first.Sub(killed))
		require.NoError(t, m.proc.Restart())
	}
	m = g.waitMaster(3)
	p.waitSends(t, 20)
	p.close()
	g.checkConverged(t, p)
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("three nodes, kill -9 → first SEND_OK on the new master over %d rounds: min %v p50 %v p90 %v max %v; sends %v",
		len(times), times[0], times[len(times)/2], times[len(times)*9/10], times[len(times)-1], p.hist.Counts())
}

package failovertest

import (
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func rounds() int {
	if v, err := strconv.Atoi(os.Getenv("FAILOVER_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return 5
}

// TestKillMasterRounds kills whichever node is master with kill -9 under SYNC_MASTER load,
// round after round, and restarts it: the other node takes over, the producer continues, and
// afterwards every SEND_OK message is readable on both nodes exactly at its offset, and the
// two CommitLogs are identical.
func TestKillMasterRounds(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	defer p.close()
	var times, okTimes []time.Duration
	for r := 0; r < rounds(); r++ {
		m = g.waitMaster(2)
		// Some load on this master first.
		p.waitSends(t, 20)
		m.proc.Kill()
		killed := time.Now()
		// With its only slave dead, the new SYNC_MASTER stores and answers SLAVE_NOT_AVAILABLE:
		// the first stored answer is when writes resumed; SEND_OK follows once the restarted
		// node is in sync again.
		first := firstAfter(t, p.stored, killed, m.addr).at
		require.NoError(t, m.proc.Restart())
		firstOK := firstAfter(t, p.sends, killed, m.addr).at
		times = append(times, first.Sub(killed))
		okTimes = append(okTimes, firstOK.Sub(killed))
		t.Logf("round %d: node %d killed; first stored answer on the new master after %v, first SEND_OK (restarted node in sync) after %v",
			r+1, m.id, first.Sub(killed), firstOK.Sub(killed))
	}
	g.waitMaster(2)
	p.waitSends(t, 20)
	p.close()

	// Queue offsets of stored answers never go backwards, per queue.
	last := map[int]int64{}
	for _, s := range p.stored() {
		if prev, ok := last[s.queue]; ok {
			require.Greater(t, s.off, prev, "queue %d offset went backwards", s.queue)
		}
		last[s.queue] = s.off
	}
	// Every node holds every SEND_OK message at its offsets (the restarted one caught up), and
	// the CommitLogs are identical.
	g.checkConverged(t, p)
	t.Logf("sends: %v", p.hist.Counts())
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("kill -9 → first stored answer on the new master over %d rounds: min %v p50 %v max %v (all %v)",
		len(times), times[0], times[len(times)/2], times[len(times)-1], times)
	sort.Slice(okTimes, func(i, j int) bool { return okTimes[i] < okTimes[j] })
	t.Logf("kill -9 → first SEND_OK on the new master (includes the restart of the killed node): p50 %v max %v (all %v)",
		okTimes[len(okTimes)/2], okTimes[len(okTimes)-1], okTimes)
}

// TestMasterCutFromConsulFences cuts the master's link to Consul (clients still reach it):
// it stops acknowledging before the other node takes over, and no SEND_OK of the old master
// comes after the first SEND_OK of the new one.
func TestMasterCutFromConsulFences(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	defer p.close()
	p.waitSends(t, 20)
	m.consulPx.Cut()
	cut := time.Now()
	harness.Eventually(t, readyTimeout, func() error {
		st, err := m.status()
		if err != nil {
			return err
		}
		if st.serving() {
			return errNotYet
		}
		return nil
	})
	fenced := time.Since(cut)
	// The new SYNC_MASTER has no slave while the old master is cut off: its answers are
	// stored ones (SLAVE_NOT_AVAILABLE) until the old master rejoins.
	var firstNew time.Time
	harness.Eventually(t, readyTimeout, func() error {
		for _, s := range p.stored() {
			if s.addr != m.addr {
				firstNew = s.at
				return nil
			}
		}
		return errNotYet
	})
	var lastOld time.Time
	for _, s := range p.stored() {
		if s.addr == m.addr {
			lastOld = s.at
		}
	}
	require.True(t, lastOld.Before(firstNew), "the old master stored a send after the new one did")
	t.Logf("cut from Consul: fenced (observed) %v after the cut, last stored answer of the old master %v after, first of the new %v after",
		fenced, lastOld.Sub(cut), firstNew.Sub(cut))
	// Healed: the old master rejoins as a slave of the new one.
	m.consulPx.Heal()
	harness.Eventually(t, readyTimeout, func() error {
		st, err := m.status()
		if err != nil {
			return err
		}
		if st.Role != "SLAVE" {
			return errNotYet
		}
		return nil
	})
	nm := g.waitMaster(2)
	require.NotEqual(t, m.id, nm.id)
	require.True(t, slices.Contains([]int64{1, 2}, nm.id))
	healed := time.Now()
	harness.Eventually(t, readyTimeout, func() error {
		for _, s := range p.sends() {
			if s.addr == nm.addr && s.at.After(healed) {
				return nil
			}
		}
		return errNotYet
	})
}

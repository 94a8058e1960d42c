package failovertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsulRestart kills (-9) and restarts the Consul agent under load: the group ends up with one serving
// master again with both nodes in sync, and sends succeed.
func TestConsulRestart(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	p := g.startProducer()
	defer p.close()
	waitStoredOn(t, p, m.addr, time.Now())
	g.consul.Kill()
	require.NoError(t, g.consul.RestartAndWait())
	restarted := time.Now()
	m = g.waitMaster(2)
	waitFor(t, func() bool {
		for _, s := range p.sends() {
			if s.addr == m.addr && s.at.After(restarted) {
				return true
			}
		}
		return false
	})
	t.Logf("master after the Consul restart: node %d; sends %v", m.id, p.hist.Counts())
}

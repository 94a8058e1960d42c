package failovertest

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/failover"
	"github.com/rmqha/rmqha/libs/failover/coordtest"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestConsulCoordinatorConformance runs the coordinator conformance suite (also run by the
// in-memory twin) against a real Consul agent.
func TestConsulCoordinatorConformance(t *testing.T) {
	c := harness.StartConsulT(t)
	client, err := discovery.NewClient(c.HTTPAddr())
	require.NoError(t, err)
	// The real clock moves by itself: advancing is waiting (bounded by the suite's deadline).
	coordtest.Run(t, failover.NewConsul(client), time.Second, func(d time.Duration) {
		timer := time.NewTimer(d)
		<-timer.C
	}, "rmqha/conformance")
}

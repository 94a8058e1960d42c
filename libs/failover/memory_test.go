package failover_test

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/failover"
	"github.com/rmqha/rmqha/libs/failover/coordtest"
)

func TestMemCoordinatorConformance(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	coordtest.Run(t, failover.NewMemCoordinator(clock), time.Second, func(d time.Duration) { now = now.Add(d) }, "t")
}

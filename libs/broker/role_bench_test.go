package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// sendRate sends 1 KiB SEND_MESSAGE to addr from 64 callers for d and returns msgs/s.
func sendRate(b *testing.B, c *remoting.Client, addr string, d time.Duration) float64 {
	req := remoting.NewRequest(remoting.SendMessage, sendExt("Bench", 0, "TAGS\x01a\x02"), make([]byte, 1024))
	var n, bad atomic.Int64
	stop := time.Now().Add(d)
	done := make(chan struct{})
	for i := 0; i < 64; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for time.Now().Before(stop) {
				resp, err := c.Invoke(context.Background(), addr, req)
				if err != nil || resp.Code != remoting.Success {
					bad.Add(1)
					continue
				}
				n.Add(1)
			}
		}()
	}
	for i := 0; i < 64; i++ {
		<-done
	}
	require.Zero(b, bad.Load(), "failed sends")
	return float64(n.Load()) / d.Seconds()
}

// BenchmarkPromotedMasterSend: SYNC_MASTER sends (64 callers, one slave) to a broker configured
// as master, then to the broker promoted in process after a switch (the old master now its
// slave): the role switch machinery leaves the send path unchanged but for one atomic load, so
// the ratio should be about 1. Each b.N iteration is a one-second window of each.
func BenchmarkPromotedMasterSend(b *testing.B) {
	for i := 0; i < b.N; i++ {
		acfg := syncMasterConfig(b)
		acfg.MappedFileSizeCommitLog = 64 << 20
		a := startBroker(b, acfg)
		bcfg := slaveConfig(b, a.HAAddr())
		bcfg.MappedFileSizeCommitLog = 64 << 20
		s := startBroker(b, bcfg)
		require.Eventually(b, func() bool { return a.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
		c := newTestClient(b)
		configured := sendRate(b, c, a.Addr(), time.Second)

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(b, a.Demote(ctx))
		_, err := s.Promote(ctx, a.Epoch()+1)
		require.NoError(b, err)
		cancel()
		fctx, fcancel := context.WithCancel(context.Background())
		a.FollowMaster(fctx, hawire.StaticDiscovery(s.HAAddr()))
		require.Eventually(b, func() bool { return s.view().master.InSyncCount() == 2 }, 30*time.Second, 5*time.Millisecond)
		promoted := sendRate(b, c, s.Addr(), time.Second)
		fcancel()
		b.ReportMetric(configured, "configured_msgs/s")
		b.ReportMetric(promoted, "promoted_msgs/s")
		b.ReportMetric(promoted/configured, "ratio_promoted_to_configured")
	}
}

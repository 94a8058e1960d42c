package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func TestPromoteAndDemoteInProcess(t *testing.T) {
	a := startBroker(t, syncMasterConfig(t))
	bcfg := slaveConfig(t, a.HAAddr())
	b := startBroker(t, bcfg)
	synced := make(chan struct{}, 1)
	b.SetPromotion(PromotionConfig{MasterRole: RoleSyncMaster, BeforePromote: func(context.Context) error {
		synced <- struct{}{}
		return nil
	}})
	a.SetPromotion(PromotionConfig{SlaveID: 1})
	c := newTestClient(t)
	require.Eventually(t, func() bool { return a.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	for i := 0; i < 3; i++ {
		resp := send(t, c, a.Addr(), "F", 0, "", "m"+string(rune('0'+i)))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	epochA := a.Epoch()

	// The master steps down first (writes fenced at once), then the slave takes over.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Demote(ctx))
	require.Equal(t, RoleSlave, a.Role())
	resp := send(t, c, a.Addr(), "F", 0, "", "refused")
	require.Equal(t, remoting.ServiceNotAvailable, resp.Code, resp.Remark)

	ep, err := b.Promote(ctx, epochA+5)
	require.NoError(t, err)
	require.Equal(t, epochA+5, ep, "the wanted epoch is started exactly")
	require.Len(t, synced, 1, "metadata synced before writes")
	tc, ok := b.tables.Topics.Get("F")
	require.True(t, ok, "a topic only the log knows is recovered on promotion")
	require.Equal(t, int32(1), tc.WriteQueueNums)
	require.Equal(t, RoleSyncMaster, b.Role())
	require.Equal(t, int64(0), b.Config().BrokerID)
	entries, err := hawire.LoadEpochFile(bcfg.StorePathRootDir)
	require.NoError(t, err)
	require.Equal(t, ep, entries[len(entries)-1].Epoch, "epoch recorded before serving")
	again, err := b.Promote(ctx, ep+1)
	require.NoError(t, err)
	require.Equal(t, ep, again, "promoting a master changes nothing")

	// The old master follows the new one and catches up; SYNC sends succeed with two copies.
	fctx, fcancel := context.WithCancel(context.Background())
	defer fcancel()
	a.FollowMaster(fctx, hawire.StaticDiscovery(b.HAAddr()))
	require.Eventually(t, func() bool { return b.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	resp = send(t, c, b.Addr(), "F", 0, "", "after")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "2", resp.Ext("replicas"))
	require.Eventually(t, func() bool { return a.store.QueueMaxOffset("F", 0) == 4 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, b.store.MaxOffset(), a.store.MaxOffset())

	// And back: the original master is promoted again at a higher epoch.
	require.NoError(t, b.Demote(ctx))
	ep2, err := a.Promote(ctx, ep+1)
	require.NoError(t, err)
	require.Greater(t, ep2, ep)
	b.FollowMaster(fctx, hawire.StaticDiscovery(a.HAAddr()))
	require.Eventually(t, func() bool { return a.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	resp = send(t, c, a.Addr(), "F", 0, "", "back")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "4", resp.Ext("queueOffset"))
	require.Equal(t, int64(4), a.RoleSwitches()+b.RoleSwitches())
}

func TestFenceWrites(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTPPort, cfg.MetricsEnable = freePort(t), true
	m := startBroker(t, cfg)
	c := newTestClient(t)
	require.Zero(t, metric(t, m, "rmqha_broker_writes_fenced"))
	m.FenceWrites("lease lost")
	require.Equal(t, 1.0, metric(t, m, "rmqha_broker_writes_fenced"))
	resp := send(t, c, m.Addr(), "T", 0, "", "x")
	require.Equal(t, remoting.ServiceNotAvailable, resp.Code)
	require.Contains(t, resp.Remark, "lease lost")
	m.UnfenceWrites()
	resp = send(t, c, m.Addr(), "T", 0, "", "y")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

func TestPrepareEpoch(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, hawire.SaveEpochFile(dir, []hawire.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}}))
	require.NoError(t, prepareEpoch(dir, 7, 300))
	e, err := hawire.LoadEpochFile(dir)
	require.NoError(t, err)
	require.Equal(t, hawire.EpochEntry{Epoch: 6, StartOffset: 300}, e[len(e)-1])
	// Already empty at the end: lifted, not appended.
	require.NoError(t, prepareEpoch(dir, 9, 300))
	e, _ = hawire.LoadEpochFile(dir)
	require.Len(t, e, 3)
	require.Equal(t, int64(8), e[2].Epoch)
	// Nothing to do when the file is ahead.
	require.NoError(t, prepareEpoch(dir, 3, 300))
	e2, _ := hawire.LoadEpochFile(dir)
	require.Equal(t, e, e2)
}

// TestPromotedSlaveResumesDelayedDeliveryFromTheLog: the master delivers delayed messages and
// dies before its delay offsets reach the slave (here: the slave's table never learns them);
// the promoted slave resumes each level after the deliveries it replicated, so no message is
// delivered twice, and a message still waiting is delivered once by the new master.
func TestPromotedSlaveResumesDelayedDeliveryFromTheLog(t *testing.T) {
	a := startBroker(t, syncMasterConfig(t))
	bcfg := slaveConfig(t, a.HAAddr())
	b := startBroker(t, bcfg)
	a.SetPromotion(PromotionConfig{SlaveID: 1})
	c := newTestClient(t)
	require.Eventually(t, func() bool { return len(a.InSyncSlaves()) == 1 }, 10*time.Second, 5*time.Millisecond)
	for i := 0; i < 5; i++ {
		body := "d" + strconv.Itoa(i)
		resp := invoke(t, c, a.Addr(), remoting.SendMessage, sendExt("DLY", 0, props("DELAY", "1", "UNIQ_KEY", "ID"+body)), []byte(body))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	// All five delivered on the master and replicated to the slave.
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("DLY", 0) == 5 }, 10*time.Second, 5*time.Millisecond)
	_, p := recordAt(t, b, "DLY", 0, 4)
	require.Equal(t, "1:4", p[schedule.PropertyDelaySource])
	off, _ := b.tables.Delay.Get(1)
	require.Zero(t, off, "the slave's delay table is stale (nothing synced it)")

	// One more, long enough to be still waiting at the switch (level 18 = 360ms here).
	resp := invoke(t, c, a.Addr(), remoting.SendMessage, sendExt("DLY", 0, props("DELAY", "18", "UNIQ_KEY", "IDlate")), []byte("late"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Demote(ctx))
	_, err := b.Promote(ctx, a.Epoch()+1)
	require.NoError(t, err)

	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("DLY", 0) >= 6 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // a redelivery of level 1 would have happened by now (20ms)
	require.Equal(t, int64(6), b.store.QueueMaxOffset("DLY", 0), "each delayed message delivered exactly once")
	seen := map[string]int{}
	for o := int64(0); o < 6; o++ {
		rec, _ := recordAt(t, b, "DLY", 0, o)
		seen[string(rec.Body)]++
	}
	require.Equal(t, map[string]int{"d0": 1, "d1": 1, "d2": 1, "d3": 1, "d4": 1, "late": 1}, seen)
	off, _ = b.tables.Delay.Get(1)
	require.Equal(t, int64(5), off, "level 1 resumed after the replicated deliveries")
}

func TestLearnMasterAddr(t *testing.T) {
	m := startBroker(t, syncMasterConfig(t))
	s := startBroker(t, slaveConfig(t, m.HAAddr()))
	s.LearnMasterAddr("127.0.0.1:1234")
	require.Equal(t, "127.0.0.1:1234", s.Status().MasterAddr, "a slave's metadata follower pulls there")
	m.LearnMasterAddr("127.0.0.1:1234")
	require.Empty(t, m.Status().MasterAddr, "a master ignores it")
}

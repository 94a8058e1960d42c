package broker

import (
	"context"
	"testing"
	"time"

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
	m := startBroker(t, testConfig(t))
	c := newTestClient(t)
	m.FenceWrites("lease lost")
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

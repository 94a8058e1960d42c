package broker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// A start that finds the CommitLog's last record torn (a crash in the middle of its write)
// cuts the log there and says where, why and how much: /status storeCheck.cut and
// rmqha_broker_store_recovery_cut_bytes. A start with nothing to cut reports none.
func TestStatusReportsLogCut(t *testing.T) {
	cfg := metricsConfig(t)
	b := startBroker(t, cfg)
	require.Nil(t, b.Status().StoreCheck.Cut)
	require.Equal(t, 0.0, metric(t, b, "rmqha_broker_store_recovery_cut_bytes"))
	c := newTestClient(t)
	var offs []int64
	for i := 0; i < 10; i++ {
		r := send(t, c, b.Addr(), "CutTopic", 0, "", "body-"+strconv.Itoa(i))
		require.Equal(t, remoting.Success, r.Code, r.Remark)
		_, off := mustParseMsgID(t, r.Ext("msgId"))
		offs = append(offs, off)
	}
	end := b.store.MaxOffset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))

	seg := filepath.Join(cfg.StorePathRootDir, "commitlog", "00000000000000000000")
	const kept = 20 // of the last record: a torn write
	require.NoError(t, os.Truncate(seg, offs[9]+kept))
	b = startBroker(t, cfg)
	cut := b.Status().StoreCheck.Cut
	require.NotNil(t, cut)
	require.Equal(t, offs[9], cut.At)
	require.EqualValues(t, kept, cut.Bytes)
	require.Equal(t, seg, cut.File)
	require.Contains(t, cut.Reason, "torn")
	require.Equal(t, float64(kept), metric(t, b, "rmqha_broker_store_recovery_cut_bytes"))
	require.Equal(t, offs[9], b.store.MaxOffset())
	require.Less(t, offs[9], end)
}

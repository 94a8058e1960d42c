package meta

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConsumerOffsetResetsInSnapshot(t *testing.T) {
	now := time.Unix(1700000000, 0)
	cfg, _, _, _ := testConfig(t)
	cfg.Now = func() time.Time { return now }
	tb, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	tb.Commit("g", "T", 0, 10)
	tb.Commit("g", "T", 1, 20)
	require.True(t, tb.Reset("g", "T", map[int32]int64{0: 3, 1: 5}))
	rs := tb.Resets()
	require.Len(t, rs, 1)
	require.Equal(t, map[int32]int64{0: 3, 1: 5}, rs[0].Offsets)
	v1 := rs[0].Version
	require.Equal(t, tb.DataVersion(), v1)

	// A stale commit of the old position, then the client applying the reset lower: the
	// reset follows the lowering commit, with a newer version.
	now = now.Add(time.Second)
	tb.Commit("g", "T", 1, 20)
	now = now.Add(time.Second)
	tb.Commit("g", "T", 1, 6)
	rs = tb.Resets()
	require.Equal(t, map[int32]int64{0: 3, 1: 6}, rs[0].Offsets)
	require.Greater(t, rs[0].Version.Counter, v1.Counter)
	// Past the window, lowering commits are plain commits.
	now = now.Add(2 * ResetFollowWindow)
	tb.Commit("g", "T", 1, 4)
	require.Equal(t, int64(6), tb.Resets()[0].Offsets[1])

	// The snapshot carries the resets, decodes back, and survives a reload.
	snap, err := DecodeConsumerOffsetSnapshot(tb.Snapshot())
	require.NoError(t, err)
	require.Len(t, snap.Resets, 1)
	require.Equal(t, "T", snap.Resets[0].Topic)
	require.Equal(t, "g", snap.Resets[0].Group)
	require.NoError(t, tb.Persist())
	again, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	require.Equal(t, tb.Resets(), again.Resets())

	// A reset that changes nothing changes no version.
	before := again.DataVersion()
	require.False(t, again.Reset("g", "T", map[int32]int64{0: 3}))
	require.Equal(t, before, again.DataVersion())
	require.True(t, again.RemoveGroup("g"))
	require.Empty(t, again.Resets())
}

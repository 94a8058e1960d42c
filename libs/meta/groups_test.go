package meta

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// javaGroupsJSON is a 4.x subscriptionGroup.json.
const javaGroupsJSON = `{"dataVersion":{"counter":2,"timestamp":1690000000000},"subscriptionGroupTable":{"cg":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"cg","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1},"slow":{"brokerId":0,"consumeEnable":false,"groupName":"slow","retryMaxTimes":3,"whichBrokerWhenConsumeSlowly":1}}}`

func TestSubscriptionGroups(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	writeConfigFile(t, cfg, SubscriptionGroupFileName, javaGroupsJSON)
	gt, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	require.Equal(t, 2, gt.Len())
	cg, ok := gt.Get("cg")
	require.True(t, ok)
	require.Equal(t, NewSubscriptionGroupConfig("cg"), cg)
	slow, _ := gt.Get("slow")
	want := NewSubscriptionGroupConfig("slow")
	want.ConsumeEnable, want.RetryMaxTimes = false, 3
	require.Equal(t, want, slow, "absent fields keep Java's defaults")

	// Our snapshot is the same table in standard JSON.
	other := mustGroups(t, Config{})
	changed, err := other.ApplySnapshot(gt.Snapshot())
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, gt.All(), other.All())
	require.Equal(t, `{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1690000000000},"subscriptionGroupTable":{"cg":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"cg","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1},"slow":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":false,"consumeFromMinEnable":true,"groupName":"slow","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}`, string(gt.Snapshot()))

	// Auto-create.
	g, created, err := gt.FindOrCreate("new", Wait)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, NewSubscriptionGroupConfig("new"), g)
	_, created, err = gt.FindOrCreate("new", Wait)
	require.NoError(t, err)
	require.False(t, created)
	_, _, err = gt.FindOrCreate("bad name", Wait)
	require.ErrorIs(t, err, ErrInvalidGroup)

	// Apply deletes what the snapshot lacks, and is persisted.
	changed, err = gt.ApplySnapshot([]byte(`{"dataVersion":{"counter":9,"timestamp":1},"subscriptionGroupTable":{"cg":{"groupName":"cg"}}}`))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, []SubscriptionGroupConfig{NewSubscriptionGroupConfig("cg")}, gt.All())
	reloaded, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	require.Equal(t, gt.All(), reloaded.All())
	require.Equal(t, DataVersion{Timestamp: 1, Counter: 9}, reloaded.DataVersion())

	cfg.AutoCreateSubscriptionGroup = false
	noAuto, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	_, _, err = noAuto.FindOrCreate("unknown", Wait)
	require.ErrorIs(t, err, ErrGroupNotExist)
}

func mustGroups(t *testing.T, cfg Config) *SubscriptionGroupTable {
	t.Helper()
	base, _, _, _ := testConfig(t)
	base.StorePathRootDir = cfg.StorePathRootDir
	gt, err := NewSubscriptionGroupTable(base)
	require.NoError(t, err)
	return gt
}

package meta

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/route"
)

func TestTopicTableSystemTopics(t *testing.T) {
	cfg, clock, _, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)

	want := map[string][3]int32{ // read/write queues, perm
		"TBW102":                     {8, 8, 7},
		"SELF_TEST_TOPIC":            {1, 1, 6},
		"BenchmarkTest":              {1024, 1024, 6},
		"DefaultCluster":             {16, 16, 7},
		"broker-a":                   {1, 1, 7},
		"OFFSET_MOVED_EVENT":         {1, 1, 6},
		"SCHEDULE_TOPIC_XXXX":        {18, 18, 6},
		"DefaultCluster_REPLY_TOPIC": {1, 1, 6},
	}
	require.Equal(t, len(want), tt.Len())
	for name, w := range want {
		tc, ok := tt.Get(name)
		require.True(t, ok, name)
		require.Equal(t, w, [3]int32{tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm}, name)
		require.Equal(t, "SINGLE_TAG", tc.TopicFilterType)
	}
	require.Equal(t, DataVersion{Timestamp: clock.Now().UnixMilli()}, tt.DataVersion())
	require.Equal(t, LoadedNothing, tt.LoadInfo().Source)

	// The fresh table was written; reopening yields the same table and version.
	clock.Advance(time.Second)
	again, err := NewTopicTable(cfg)
	require.NoError(t, err)
	require.Equal(t, LoadedFile, again.LoadInfo().Source)
	require.Equal(t, tt.DataVersion(), again.DataVersion())
	require.Equal(t, tt.All(), again.All())

	cfg.AutoCreateTopicEnable = false
	cfg.StorePathRootDir = ""
	noAuto, err := NewTopicTable(cfg)
	require.NoError(t, err)
	_, ok := noAuto.Get("TBW102")
	require.False(t, ok)
}

func TestTopicTableAddsMissingSystemTopicsToOldFile(t *testing.T) {
	cfg, clock, _, _ := testConfig(t)
	writeConfigFile(t, cfg, TopicsFileName, `{"dataVersion":{"counter":3,"timestamp":5},"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}`)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	require.Equal(t, DataVersion{Timestamp: clock.Now().UnixMilli(), Counter: 4}, tt.DataVersion())
	require.Equal(t, 9, tt.Len())
	w, err := route.DecodeTopicConfigSerializeWrapper([]byte(readConfigFile(t, cfg, TopicsFileName)))
	require.NoError(t, err)
	require.Len(t, w.TopicConfigTable, 9)
}

func TestDataVersionChangesOnlyOnMutation(t *testing.T) {
	cfg, clock, _, _ := testConfig(t)
	tabs, err := Open(cfg)
	require.NoError(t, err)

	type versionedTable interface{ DataVersion() DataVersion }
	step := func(name string, v versionedTable, mutate func() bool) {
		t.Helper()
		before := v.DataVersion()
		clock.Advance(time.Millisecond)
		changed := mutate()
		after := v.DataVersion()
		if changed {
			require.Equal(t, before.Counter+1, after.Counter, name)
			require.Equal(t, clock.Now().UnixMilli(), after.Timestamp, name)
		} else {
			require.Equal(t, before, after, name)
		}
	}
	must := func(ok bool, err error) bool { require.NoError(t, err); return ok }

	tc := route.NewTopicConfig("TopicTest")
	step("put new", tabs.Topics, func() bool { return must(tabs.Topics.Put(tc)) })
	step("put same", tabs.Topics, func() bool { return must(tabs.Topics.Put(tc)) })
	tc.Attributes = map[string]string{}
	step("put same, empty attributes", tabs.Topics, func() bool { return must(tabs.Topics.Put(tc)) })
	tc.Perm = route.PermRead
	step("put changed", tabs.Topics, func() bool { return must(tabs.Topics.Put(tc)) })
	step("delete missing", tabs.Topics, func() bool { return must(tabs.Topics.Delete("nope")) })
	step("delete", tabs.Topics, func() bool { return must(tabs.Topics.Delete("TopicTest")) })
	step("reads", tabs.Topics, func() bool { tabs.Topics.All(); tabs.Topics.Snapshot(); tabs.Topics.Get("TBW102"); return false })
	step("auto-create", tabs.Topics, func() bool {
		_, created, err := tabs.Topics.CreateTopicInSendMessage("NewTopic", "TBW102", 4)
		return must(created, err)
	})
	step("auto-create again", tabs.Topics, func() bool {
		_, created, err := tabs.Topics.CreateTopicInSendMessage("NewTopic", "TBW102", 4)
		return must(created, err)
	})
	step("retry topic", tabs.Topics, func() bool { _, c, err := tabs.Topics.CreateRetryTopic("cg", 1, Wait); return must(c, err) })
	step("retry topic again", tabs.Topics, func() bool { _, c, err := tabs.Topics.CreateRetryTopic("cg", 1, Wait); return must(c, err) })

	step("group create", tabs.Groups, func() bool { _, c, err := tabs.Groups.FindOrCreate("cg", Wait); return must(c, err) })
	step("group find", tabs.Groups, func() bool { _, c, err := tabs.Groups.FindOrCreate("cg", Wait); return must(c, err) })
	g := NewSubscriptionGroupConfig("cg")
	step("group put same", tabs.Groups, func() bool { return must(tabs.Groups.Put(g)) })
	g.RetryMaxTimes = 3
	step("group put changed", tabs.Groups, func() bool { return must(tabs.Groups.Put(g)) })
	step("group delete", tabs.Groups, func() bool { return must(tabs.Groups.Delete("cg")) })

	step("commit", tabs.Offsets, func() bool { return tabs.Offsets.Commit("cg", "T", 0, 5) })
	step("commit same", tabs.Offsets, func() bool { return tabs.Offsets.Commit("cg", "T", 0, 5) })
	step("commit lower", tabs.Offsets, func() bool { return tabs.Offsets.Commit("cg", "T", 0, 4) })
	step("query", tabs.Offsets, func() bool { tabs.Offsets.Query("cg", "T", 0); tabs.Offsets.Snapshot(); return false })
	step("merge lower", tabs.Offsets, func() bool {
		return tabs.Offsets.Merge(ConsumerOffsetSnapshot{OffsetTable: map[string]map[int32]int64{"T@cg": {0: 1}}})
	})
	step("merge higher", tabs.Offsets, func() bool {
		return tabs.Offsets.Merge(ConsumerOffsetSnapshot{OffsetTable: map[string]map[int32]int64{"T@cg": {0: 9}}})
	})
	step("reset same", tabs.Offsets, func() bool { return tabs.Offsets.Reset("cg", "T", map[int32]int64{0: 9}) })
	step("reset lower", tabs.Offsets, func() bool { return tabs.Offsets.Reset("cg", "T", map[int32]int64{0: 0}) })
	step("persist", tabs.Offsets, func() bool { require.NoError(t, tabs.Offsets.Persist()); return false })

	step("delay update", tabs.Delay, func() bool { return tabs.Delay.Update(3, 10) })
	step("delay same", tabs.Delay, func() bool { return tabs.Delay.Update(3, 10) })
	step("delay persist", tabs.Delay, func() bool { require.NoError(t, tabs.Delay.Persist()); return false })
}

func TestCreateTopicInSendMessage(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)

	tc, created, err := tt.CreateTopicInSendMessage("TopicTest", "TBW102", 4)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, route.TopicConfig{TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}, tc)
	got, ok := tt.Get("TopicTest")
	require.True(t, ok)
	require.Equal(t, tc, got)

	// Existing topic: returned unchanged, whatever the request says.
	tc2, created, err := tt.CreateTopicInSendMessage("TopicTest", "TBW102", 1)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, tc, tc2)

	tc, _, err = tt.CreateTopicInSendMessage("Big", "TBW102", 100)
	require.NoError(t, err)
	require.Equal(t, int32(8), tc.WriteQueueNums, "capped by TBW102's queues")
	tc, _, err = tt.CreateTopicInSendMessage("Neg", "TBW102", -3)
	require.NoError(t, err)
	require.Equal(t, int32(0), tc.ReadQueueNums)

	_, _, err = tt.CreateTopicInSendMessage("X", "NoSuchDefault", 4)
	require.ErrorIs(t, err, ErrTopicNotExist)
	_, _, err = tt.CreateTopicInSendMessage("X", "SELF_TEST_TOPIC", 4)
	require.ErrorIs(t, err, ErrNoInheritPerm)
	_, _, err = tt.CreateTopicInSendMessage("bad topic", "TBW102", 4)
	require.ErrorIs(t, err, ErrInvalidTopic)
	_, ok = tt.Get("X")
	require.False(t, ok)

	// Inheriting from another template topic (the broker-name topic).
	tc, _, err = tt.CreateTopicInSendMessage("FromBroker", "broker-a", 4)
	require.NoError(t, err)
	require.Equal(t, [3]int32{1, 1, 6}, [3]int32{tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm})

	// With auto-create off, a TBW102 left in the file no longer inherits.
	cfg.AutoCreateTopicEnable = false
	off, err := NewTopicTable(cfg)
	require.NoError(t, err)
	_, ok = off.Get("TBW102")
	require.True(t, ok)
	_, _, err = off.CreateTopicInSendMessage("Y", "TBW102", 4)
	require.ErrorIs(t, err, ErrNoInheritPerm)
}

func TestCreateRetryAndDLQTopics(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	tc, created, err := tt.CreateRetryTopic("cg", 1, Wait)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, route.TopicConfig{TopicName: "%RETRY%cg", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}, tc)
	_, created, err = tt.CreateRetryTopic("cg", 3, Wait)
	require.NoError(t, err)
	require.False(t, created)
	tc, created, err = tt.CreateDLQTopic("cg")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "%DLQ%cg", tc.TopicName)
	_, _, err = tt.CreateRetryTopic("bad group", 1, Wait)
	require.ErrorIs(t, err, ErrInvalidGroup)
}

// javaTopicsJSON is a 4.x topics.json: no stateVersion, no attributes.
const javaTopicsJSON = `{"dataVersion":{"counter":42,"timestamp":1690000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},"%RETRY%cg":{"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"%RETRY%cg","topicSysFlag":0,"writeQueueNums":1}}}`

func TestTopicApplySnapshot(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)

	changed, err := tt.ApplySnapshot([]byte(javaTopicsJSON))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, DataVersion{Timestamp: 1690000000000, Counter: 42}, tt.DataVersion())
	require.Equal(t, 2, tt.Len(), "topics missing from the snapshot are deleted")
	_, ok := tt.Get("TBW102")
	require.False(t, ok)

	// Same snapshot again: nothing changes, nothing is written.
	writes := fsys.renames(configPath(cfg, TopicsFileName))
	changed, err = tt.ApplySnapshot([]byte(javaTopicsJSON))
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, writes, fsys.renames(configPath(cfg, TopicsFileName)))

	// Our own snapshot round-trips into an equal table.
	snap := tt.Snapshot()
	require.True(t, json.Valid(snap))
	other, err := NewTopicTable(Config{BrokerClusterName: "c", BrokerName: "b", DefaultTopicQueueNums: 8, FS: vfs.Default, Now: time.Now, Logger: cfg.Logger})
	require.NoError(t, err)
	changed, err = other.ApplySnapshot(snap)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, tt.All(), other.All())
	require.Equal(t, tt.DataVersion(), other.DataVersion())
	require.Equal(t, string(snap), string(other.Snapshot()))

	// Persisted, and reloads as the applied table.
	reloaded, err := NewTopicTable(cfg)
	require.NoError(t, err)
	require.Equal(t, 8+2, reloaded.Len(), "system topics are re-added on load")

	_, err = tt.ApplySnapshot([]byte(`{"dataVersion":{}}`))
	require.ErrorIs(t, err, ErrInvalidSnapshot)
	_, err = tt.ApplySnapshot([]byte(`{"topicConfigTable":{"A":{"topicName":"B"}}}`))
	require.ErrorIs(t, err, ErrInvalidSnapshot)
}

func TestTopicSnapshotShape(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	cfg.StorePathRootDir = ""
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	_, err = tt.ApplySnapshot([]byte(`{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{"T":{"perm":6,"readQueueNums":4,"writeQueueNums":4,"topicName":"T"}}}`))
	require.NoError(t, err)
	require.Equal(t, `{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":2},"topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}`, string(tt.Snapshot()))
	w := tt.Wrapper()
	require.Equal(t, string(tt.Snapshot()), string(route.AppendTopicConfigSerializeWrapper(nil, w)))
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for name, mutate := range map[string]func(*Config){
		"BrokerName":            func(c *Config) { c.BrokerName = "" },
		"BrokerClusterName":     func(c *Config) { c.BrokerClusterName = "a b" },
		"DefaultTopicQueueNums": func(c *Config) { c.DefaultTopicQueueNums = 0 },
		"FS":                    func(c *Config) { c.FS = nil },
		"Now":                   func(c *Config) { c.Now = nil },
		"Logger":                func(c *Config) { c.Logger = nil },
	} {
		c := DefaultConfig()
		mutate(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, name)
	}
	require.NoError(t, ValidateTopicName("%RETRY%cg_1-x|y"))
	require.ErrorIs(t, ValidateTopicName(string(make([]byte, 128))), ErrInvalidTopic)
}

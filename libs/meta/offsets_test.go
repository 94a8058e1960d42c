package meta

import (
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// javaConsumerOffsetJSON is a 4.x consumerOffset.json: fastjson's bare
// integer queue ids, no dataVersion.
const javaConsumerOffsetJSON = `{"offsetTable":{"TopicTest@cg":{0:12,1:15,2:0,3:7},"%RETRY%cg@cg":{0:0},"TopicTest@other":{0:3}}}`

func TestConsumerOffsetsLoadJavaFile(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	writeConfigFile(t, cfg, ConsumerOffsetFileName, javaConsumerOffsetJSON)
	o, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	require.Equal(t, LoadedFile, o.LoadInfo().Source)
	require.Equal(t, DataVersion{}, o.DataVersion())

	off, ok := o.Query("cg", "TopicTest", 1)
	require.True(t, ok)
	require.Equal(t, int64(15), off)
	_, ok = o.Query("cg", "TopicTest", 9)
	require.False(t, ok)
	_, ok = o.Query("nobody", "TopicTest", 0)
	require.False(t, ok)

	require.Equal(t, []string{"cg", "other"}, o.Groups())
	require.Equal(t, map[string]map[int32]int64{
		"TopicTest": {0: 12, 1: 15, 2: 0, 3: 7},
		"%RETRY%cg": {0: 0},
	}, o.GroupOffsets("cg"))

	// Nothing changed: Persist leaves the Java file as it was.
	require.NoError(t, o.Persist())
	require.Equal(t, javaConsumerOffsetJSON, readConfigFile(t, cfg, ConsumerOffsetFileName))
}

func TestConsumerOffsetsSnapshotShapeAndPersist(t *testing.T) {
	cfg, clock, fsys, _ := testConfig(t)
	o, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	o.Commit("g", "T", 10, 100)
	o.Commit("g", "T", 2, 20)
	o.Commit("g", "T", 0, 12)
	want := `{"offsetTable":{"T@g":{"0":12,"2":20,"10":100}},"dataVersion":{"counter":3,"stateVersion":0,"timestamp":` +
		jsonInt(clock.Now().UnixMilli()) + `}}`
	require.Equal(t, want, string(o.Snapshot()))

	path := configPath(cfg, ConsumerOffsetFileName)
	require.NoError(t, o.Persist())
	require.Equal(t, want, readConfigFile(t, cfg, ConsumerOffsetFileName))
	require.Equal(t, 1, fsys.renames(path))
	require.NoError(t, o.Persist())
	require.Equal(t, 1, fsys.renames(path), "unchanged table is not rewritten")
	o.Commit("g", "T", 0, 12)
	require.NoError(t, o.Persist())
	require.Equal(t, 1, fsys.renames(path), "same offset is not a change")
	o.Commit("g", "T", 0, 13)
	require.NoError(t, o.Persist())
	require.Equal(t, 2, fsys.renames(path))

	again, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	require.Equal(t, o.DataVersion(), again.DataVersion())
	off, _ := again.Query("g", "T", 0)
	require.Equal(t, int64(13), off)

	// A failed persist is retried by the next tick.
	o.Commit("g", "T", 0, 14)
	fsys.setFail(func(op vfs.Op, _ string) error {
		if op == vfs.OpRename {
			return errInjected
		}
		return nil
	})
	require.ErrorIs(t, o.Persist(), errInjected)
	fsys.setFail(nil)
	require.NoError(t, o.Persist())
	again, err = NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	off, _ = again.Query("g", "T", 0)
	require.Equal(t, int64(14), off)
}

func jsonInt(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMergeNeverLowersOffsets(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cfg, _, _, _ := testConfig(t)
	cfg.StorePathRootDir = ""
	o, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	model := map[string]map[int32]int64{}
	keys := []string{"T@a", "T@b", "U@a"}
	for round := 0; round < 200; round++ {
		remote := ConsumerOffsetSnapshot{OffsetTable: map[string]map[int32]int64{}}
		for _, k := range keys {
			if rng.Intn(2) == 0 {
				continue
			}
			q := map[int32]int64{}
			for id := int32(0); id < 4; id++ {
				if rng.Intn(2) == 0 {
					q[id] = rng.Int63n(1000)
				}
			}
			remote.OffsetTable[k] = q
		}
		before := o.DataVersion()
		changed := o.Merge(remote)
		expectChange := false
		for k, q := range remote.OffsetTable {
			if model[k] == nil {
				model[k] = map[int32]int64{}
			}
			for id, off := range q {
				if old, ok := model[k][id]; !ok || off > old {
					model[k][id] = off
					expectChange = true
				}
			}
		}
		require.Equal(t, expectChange, changed)
		require.Equal(t, expectChange, before != o.DataVersion())
		for k, q := range model {
			topic, group, _ := SplitOffsetKey(k)
			for id, want := range q {
				got, ok := o.Query(group, topic, id)
				require.True(t, ok)
				require.Equal(t, want, got, "%s/%d", k, id)
			}
		}
	}

	// Only an explicit Reset lowers an offset.
	o.Commit("a", "T", 0, 500)
	require.False(t, o.Merge(ConsumerOffsetSnapshot{OffsetTable: map[string]map[int32]int64{"T@a": {0: 1}}}))
	off, _ := o.Query("a", "T", 0)
	require.Equal(t, int64(500), off)
	require.True(t, o.Reset("a", "T", map[int32]int64{0: 1, 7: 0}))
	off, _ = o.Query("a", "T", 0)
	require.Equal(t, int64(1), off)
	off, ok := o.Query("a", "T", 7)
	require.True(t, ok)
	require.Equal(t, int64(0), off)

	require.True(t, o.RemoveGroup("a"))
	require.Empty(t, o.GroupOffsets("a"))
	require.False(t, o.RemoveGroup("a"))
}

func TestMergeJavaSnapshot(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	cfg.StorePathRootDir = ""
	o, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	o.Commit("cg", "TopicTest", 0, 20) // newer than the master's 12
	s, err := DecodeConsumerOffsetSnapshot([]byte(javaConsumerOffsetJSON))
	require.NoError(t, err)
	require.True(t, o.Merge(s))
	off, _ := o.Query("cg", "TopicTest", 0)
	require.Equal(t, int64(20), off)
	off, _ = o.Query("cg", "TopicTest", 1)
	require.Equal(t, int64(15), off)

	for _, bad := range []string{``, `null`, `{}`, `{"offsetTable":{"a":{"x":1}}}`, `{"offsetTable":[]}`} {
		_, err := DecodeConsumerOffsetSnapshot([]byte(bad))
		require.ErrorIs(t, err, ErrInvalidSnapshot, bad)
	}
}

// javaDelayOffsetJSON is a 4.x delayOffset.json.
const javaDelayOffsetJSON = `{"offsetTable":{1:0,2:5,3:17,18:2}}`

func TestDelayOffsets(t *testing.T) {
	cfg, clock, _, _ := testConfig(t)
	writeConfigFile(t, cfg, DelayOffsetFileName, javaDelayOffsetJSON)
	d, err := NewDelayOffsetTable(cfg)
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{1: 0, 2: 5, 3: 17, 18: 2}, d.All())
	require.True(t, d.Update(2, 6))
	require.Equal(t, `{"offsetTable":{"1":0,"2":6,"3":17,"18":2},"dataVersion":{"counter":1,"stateVersion":0,"timestamp":`+
		jsonInt(clock.Now().UnixMilli())+`}}`, string(d.Snapshot()))
	require.NoError(t, d.Persist())
	require.Equal(t, string(d.Snapshot()), readConfigFile(t, cfg, DelayOffsetFileName))

	// Replace from a master snapshot.
	changed, err := d.ApplySnapshot([]byte(`{"offsetTable":{1:9},"dataVersion":{"counter":4,"timestamp":8}}`))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, map[int32]int64{1: 9}, d.All())
	require.Equal(t, DataVersion{Timestamp: 8, Counter: 4}, d.DataVersion())
	changed, err = d.ApplySnapshot([]byte(`{"offsetTable":{"1":9},"dataVersion":{"counter":4,"timestamp":8}}`))
	require.NoError(t, err)
	require.False(t, changed)
	_, err = d.ApplySnapshot([]byte(`{"offsetTable":null}`))
	require.ErrorIs(t, err, ErrInvalidSnapshot)
	require.NoError(t, d.Persist())
	again, err := NewDelayOffsetTable(cfg)
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{1: 9}, again.All())
}

func FuzzDecodeTables(f *testing.F) {
	f.Add([]byte(javaConsumerOffsetJSON))
	f.Add([]byte(javaDelayOffsetJSON))
	f.Add([]byte(javaTopicsJSON))
	f.Add([]byte(javaGroupsJSON))
	f.Fuzz(func(t *testing.T, in []byte) {
		if s, err := DecodeConsumerOffsetSnapshot(in); err == nil {
			cfg := DefaultConfig()
			o, _ := NewConsumerOffsetTable(cfg)
			o.Merge(s)
			if _, err := DecodeConsumerOffsetSnapshot(o.Snapshot()); err != nil {
				t.Fatalf("own snapshot does not decode: %v", err)
			}
		}
		_, _ = DecodeDelayOffsetSnapshot(in)
		if _, items, err := decodeTopics(in); err == nil {
			_ = items
		}
		_, _, _ = decodeGroups(in)
	})
}

// Java writes its config files pretty-printed with tabs.
const javaPrettyOffsets = "{\n\t\"offsetTable\":{\n\t\t\"TopicTest@cg\":{0:12,1:15\n\t\t},\n\t\t\"%RETRY%cg@cg\":{0:0\n\t\t}\n\t}\n}"

func TestPrettyPrintedJavaFile(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	writeConfigFile(t, cfg, ConsumerOffsetFileName, javaPrettyOffsets)
	o, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	off, ok := o.Query("cg", "TopicTest", 1)
	require.True(t, ok)
	require.Equal(t, int64(15), off)
}

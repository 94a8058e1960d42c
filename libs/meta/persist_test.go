package meta

import (
	"os"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/route"
)

func TestPersistFailureLeavesPreviousFile(t *testing.T) {
	type failure struct {
		op     vfs.Op
		suffix string
	}
	for _, f := range []failure{
		{vfs.OpCreate, "topics.json.tmp"},
		{vfs.OpWrite, "topics.json.tmp"},
		{vfs.OpSync, "topics.json.tmp"},
		{vfs.OpRead, "topics.json"},
		{vfs.OpCreate, "topics.json.bak.tmp"},
		{vfs.OpWrite, "topics.json.bak.tmp"},
		{vfs.OpSync, "topics.json.bak.tmp"},
		{vfs.OpRename, "topics.json.bak.tmp"},
		{vfs.OpRename, "topics.json.tmp"},
	} {
		t.Run(f.op.String()+"_"+f.suffix, func(t *testing.T) {
			cfg, _, fsys, _ := testConfig(t)
			tt, err := NewTopicTable(cfg)
			require.NoError(t, err)
			_, err = tt.Put(route.NewTopicConfig("First"))
			require.NoError(t, err)
			before := readConfigFile(t, cfg, TopicsFileName)
			beforeBak := readConfigFile(t, cfg, TopicsFileName+".bak")

			fsys.setFail(func(op vfs.Op, name string) error {
				if op == f.op && strings.HasSuffix(name, "/"+f.suffix) {
					return errInjected
				}
				return nil
			})
			changed, err := tt.Put(route.NewTopicConfig("Second"))
			require.True(t, changed)
			require.ErrorIs(t, err, errInjected)
			fsys.setFail(nil)

			require.Equal(t, before, readConfigFile(t, cfg, TopicsFileName), "previous file intact")
			// The backup is either untouched or already holds the (valid)
			// previous main file.
			require.Contains(t, []string{beforeBak, before}, readConfigFile(t, cfg, TopicsFileName+".bak"))
			noTempFiles(t, cfg)
			_, ok := tt.Get("Second")
			require.True(t, ok, "the in-memory change is kept")

			// The next successful persist writes it.
			require.NoError(t, tt.Persist())
			again, err := NewTopicTable(cfg)
			require.NoError(t, err)
			_, ok = again.Get("Second")
			require.True(t, ok)
			require.Equal(t, LoadedFile, again.LoadInfo().Source)
		})
	}
}

func TestPersistDirSyncFailureIsReported(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	fsys.setFail(func(op vfs.Op, _ string) error {
		if op == vfs.OpSyncDir {
			return errInjected
		}
		return nil
	})
	_, err = tt.Put(route.NewTopicConfig("T"))
	require.ErrorIs(t, err, errInjected)
}

func TestBackupHoldsPreviousContent(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	first := readConfigFile(t, cfg, TopicsFileName)
	_, err = tt.Put(route.NewTopicConfig("A"))
	require.NoError(t, err)
	require.Equal(t, first, readConfigFile(t, cfg, TopicsFileName+".bak"))
	second := readConfigFile(t, cfg, TopicsFileName)
	_, err = tt.Put(route.NewTopicConfig("B"))
	require.NoError(t, err)
	require.Equal(t, second, readConfigFile(t, cfg, TopicsFileName+".bak"))
	require.Equal(t, string(tt.Snapshot()), readConfigFile(t, cfg, TopicsFileName))
}

func TestLoadFallsBackToBackupOnTruncatedFile(t *testing.T) {
	cfg, _, _, hook := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	_, err = tt.Put(route.NewTopicConfig("A"))
	require.NoError(t, err)
	_, err = tt.Put(route.NewTopicConfig("B"))
	require.NoError(t, err)
	good := readConfigFile(t, cfg, TopicsFileName)
	writeConfigFile(t, cfg, TopicsFileName, good[:len(good)/2]) // torn write

	again, err := NewTopicTable(cfg)
	require.NoError(t, err)
	info := again.LoadInfo()
	require.Equal(t, LoadedBackup, info.Source)
	require.ErrorIs(t, info.Cause, ErrInvalidSnapshot)
	require.Equal(t, configPath(cfg, TopicsFileName), info.Path)
	_, okA := again.Get("A")
	_, okB := again.Get("B")
	require.True(t, okA)
	require.False(t, okB, "the backup is one write older")

	var warned bool
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "backup") {
			warned = true
		}
	}
	require.True(t, warned, "the fallback is logged")
	// The main file was rewritten from the backup and is valid again.
	_, err = route.DecodeTopicConfigSerializeWrapper([]byte(readConfigFile(t, cfg, TopicsFileName)))
	require.NoError(t, err)
}

func TestLoadBothBadNamesTheFile(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	writeConfigFile(t, cfg, ConsumerOffsetFileName, `{"offsetTable":{"T@g":{0:1`)
	writeConfigFile(t, cfg, ConsumerOffsetFileName+".bak", `<nil>`)
	_, err := NewConsumerOffsetTable(cfg)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, configPath(cfg, ConsumerOffsetFileName))
	require.ErrorContains(t, err, configPath(cfg, ConsumerOffsetFileName)+".bak")

	// Corrupt and no backup at all.
	require.NoError(t, os.Remove(configPath(cfg, ConsumerOffsetFileName)+".bak"))
	_, err = NewConsumerOffsetTable(cfg)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "no backup")

	// An empty file is corrupt too; groups fall back to the backup.
	writeConfigFile(t, cfg, SubscriptionGroupFileName, ``)
	writeConfigFile(t, cfg, SubscriptionGroupFileName+".bak", `{"subscriptionGroupTable":{}}`)
	gt, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	require.Equal(t, LoadedBackup, gt.LoadInfo().Source)
}

func TestLoadMissingFileUsesBackup(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	writeConfigFile(t, cfg, DelayOffsetFileName+".bak", `{"offsetTable":{1:7}}`)
	d, err := NewDelayOffsetTable(cfg)
	require.NoError(t, err)
	require.Equal(t, LoadedBackup, d.LoadInfo().Source)
	off, ok := d.Get(1)
	require.True(t, ok)
	require.Equal(t, int64(7), off)
}

func TestCorruptBackupIsNotOverwrittenByCorruptFile(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	good := `{"offsetTable":{"T@g":{"0":1}},"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1}}`
	writeConfigFile(t, cfg, ConsumerOffsetFileName, `garbage`)
	writeConfigFile(t, cfg, ConsumerOffsetFileName+".bak", good)
	o, err := NewConsumerOffsetTable(cfg)
	require.NoError(t, err)
	o.Commit("g", "T", 0, 2)
	require.NoError(t, o.Persist())
	require.Equal(t, good, readConfigFile(t, cfg, ConsumerOffsetFileName+".bak"), "garbage never replaces a good backup")
}

func TestInMemoryModeWritesNothing(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	cfg.StorePathRootDir = ""
	fsys.setFail(func(op vfs.Op, name string) error { t.Fatalf("unexpected %s %s", op, name); return nil })
	tabs, err := Open(cfg)
	require.NoError(t, err)
	_, err = tabs.Topics.Put(route.NewTopicConfig("T"))
	require.NoError(t, err)
	tabs.Offsets.Commit("g", "T", 0, 1)
	require.NoError(t, tabs.PersistOffsets())
	require.Equal(t, LoadedNothing, tabs.Topics.LoadInfo().Source)
}

package metasync

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/stretchr/testify/require"
)

type followerEnv struct {
	env      busEnv
	master   *memMaster
	mtables  *meta.Tables
	metasync *memMetasync
	slave    *meta.Tables
	f        *Follower
}

func newFollowerEnv(t *testing.T, env busEnv, adjust func(*FollowerConfig)) *followerEnv {
	t.Helper()
	fe := &followerEnv{env: env, mtables: newTables(t, "")}
	fe.master = &memMaster{tables: fe.mtables}
	fe.metasync = newMemMetasync(fe.master, env.bus())
	fe.slave = newTables(t, t.TempDir())
	cfg := DefaultFollowerConfig()
	cfg.Cluster, cfg.BrokerName = testCluster, testBroker
	cfg.Tables = fe.slave
	cfg.Bus = env.bus()
	cfg.Snapshots = fe.metasync
	cfg.Master = fe.master
	cfg.FallbackInterval = time.Hour // tests that need the fallback shorten it
	cfg.CheckInterval = 20 * time.Millisecond
	cfg.Logger = quietLogger()
	if adjust != nil {
		adjust(&cfg)
	}
	f, err := NewFollower(cfg)
	require.NoError(t, err)
	fe.metasync.publish(t)
	require.NoError(t, f.Start())
	t.Cleanup(func() { _ = f.Close() })
	require.NoError(t, f.SyncNow(context.Background())) // the start-up sync is over
	fe.f = f
	return fe
}

func hasTopic(tb *meta.Tables, topic string) func() error {
	return func() error {
		if _, ok := tb.Topics.Get(topic); !ok {
			return errNotYet
		}
		return nil
	}
}

func lacksTopic(tb *meta.Tables, topic string) func() error {
	return func() error {
		if _, ok := tb.Topics.Get(topic); ok {
			return errNotYet
		}
		return nil
	}
}

func TestFollowerTopicsAndGroupsReplaceWhole(t *testing.T) {
	forEachBus(t, func(t *testing.T, env busEnv) {
		fe := newFollowerEnv(t, env, nil)
		_, err := fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "T1", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
		require.NoError(t, err)
		_, err = fe.mtables.Groups.Put(meta.NewSubscriptionGroupConfig("g1"))
		require.NoError(t, err)
		fe.metasync.publish(t)
		eventually(t, 5*time.Second, hasTopic(fe.slave, "T1"))
		eventually(t, 5*time.Second, func() error {
			if _, ok := fe.slave.Groups.Get("g1"); !ok {
				return errNotYet
			}
			return nil
		})
		st := fe.f.Status().Table(TableTopics)
		require.Equal(t, SourceNATS, st.Source)
		require.True(t, st.DataVersion.Equal(fe.mtables.Topics.DataVersion()))

		_, err = fe.mtables.Topics.Delete("T1")
		require.NoError(t, err)
		_, err = fe.mtables.Groups.Delete("g1")
		require.NoError(t, err)
		fe.metasync.publish(t)
		eventually(t, 5*time.Second, lacksTopic(fe.slave, "T1"))
		eventually(t, 5*time.Second, func() error {
			if _, ok := fe.slave.Groups.Get("g1"); ok {
				return errNotYet
			}
			return nil
		})
		require.Equal(t, SourceNATS, fe.f.Status().Mode)
	})
}

func TestFollowerOffsetsNeverGoBack(t *testing.T) {
	forEachBus(t, func(t *testing.T, env busEnv) {
		fe := newFollowerEnv(t, env, nil)
		fe.mtables.Offsets.Commit("g", "T", 0, 10)
		fe.metasync.publish(t)
		eventually(t, 5*time.Second, offsetIs(fe.slave, 0, 10))

		// Consumers committed to the slave while the master was away.
		fe.slave.Offsets.Commit("g", "T", 0, 20)
		fe.mtables.Offsets.Commit("g", "T", 0, 15)
		fe.mtables.Offsets.Commit("g", "T", 1, 7)
		fe.metasync.publish(t)
		eventually(t, 5*time.Second, offsetIs(fe.slave, 1, 7))
		off, _ := fe.slave.Offsets.Query("g", "T", 0)
		require.EqualValues(t, 20, off)

		// The master restarts with an old table (lost its last offset writes).
		old := newTables(t, "")
		old.Offsets.Commit("g", "T", 0, 3)
		old.Offsets.Commit("g", "T", 1, 2)
		fe.master.set(old)
		fe.metasync.publish(t)
		require.NoError(t, fe.f.SyncNow(context.Background()))
		off, _ = fe.slave.Offsets.Query("g", "T", 0)
		require.EqualValues(t, 20, off)
		off, _ = fe.slave.Offsets.Query("g", "T", 1)
		require.EqualValues(t, 7, off)
	})
}

func offsetIs(tb *meta.Tables, q int32, want int64) func() error {
	return func() error {
		if off, ok := tb.Offsets.Query("g", "T", q); !ok || off != want {
			return errNotYet
		}
		return nil
	}
}

func TestFollowerExplicitResetAppliedOnce(t *testing.T) {
	dir := t.TempDir()
	statePath := filepath.Join(dir, "resets.json")
	fe := newFollowerEnv(t, newMemEnv(t), func(c *FollowerConfig) { c.ResetStatePath = statePath })
	fe.mtables.Offsets.Commit("g", "T", 0, 100)
	fe.metasync.publish(t)
	eventually(t, 5*time.Second, offsetIs(fe.slave, 0, 100))

	// An admin resets g on T to 5: the master's table says 5 and the snapshot
	// lists the reset with a newer version.
	fe.mtables.Offsets.Reset("g", "T", map[int32]int64{0: 5})
	fe.metasync.resets = []OffsetReset{{Topic: "T", Group: "g", Offsets: map[int32]int64{0: 5}, Version: DataVersion{Timestamp: time.Now().UnixMilli(), Counter: 1}}}
	fe.metasync.publish(t)
	eventually(t, 5*time.Second, offsetIs(fe.slave, 0, 5))

	// Consumers move on at the slave; the same reset seen again changes nothing.
	fe.slave.Offsets.Commit("g", "T", 0, 9)
	require.NoError(t, fe.f.SyncNow(context.Background()))
	off, _ := fe.slave.Offsets.Query("g", "T", 0)
	require.EqualValues(t, 9, off)

	// Nor after a follower restart: the applied reset is remembered on disk.
	require.NoError(t, fe.f.Close())
	cfg := fe.f.cfg
	f2, err := NewFollower(cfg)
	require.NoError(t, err)
	require.NoError(t, f2.Start())
	defer f2.Close()
	require.NoError(t, f2.SyncNow(context.Background()))
	off, _ = fe.slave.Offsets.Query("g", "T", 0)
	require.EqualValues(t, 9, off)

	// An older reset version is ignored too.
	fe.metasync.resets = []OffsetReset{{Topic: "T", Group: "g", Offsets: map[int32]int64{0: 1}, Version: DataVersion{Timestamp: 1, Counter: 1}}}
	fe.metasync.publish(t)
	require.NoError(t, f2.SyncNow(context.Background()))
	off, _ = fe.slave.Offsets.Query("g", "T", 0)
	require.EqualValues(t, 9, off)
}

func TestFollowerDelayOffsetsAppliedAsTheyAre(t *testing.T) {
	fe := newFollowerEnv(t, newMemEnv(t), nil)
	fe.mtables.Delay.Update(3, 40)
	fe.metasync.publish(t)
	eventually(t, 5*time.Second, func() error {
		if off, ok := fe.slave.Delay.Get(3); !ok || off != 40 {
			return errNotYet
		}
		return nil
	})
	// A lower delay offset at the master is applied (Java copies the file).
	fe.mtables.Delay.Update(3, 10)
	fe.metasync.publish(t)
	eventually(t, 5*time.Second, func() error {
		if off, _ := fe.slave.Delay.Get(3); off != 10 {
			return errNotYet
		}
		return nil
	})
}

func TestFollowerFallbackWhenBusDownAndBack(t *testing.T) {
	forEachBus(t, func(t *testing.T, env busEnv) {
		fe := newFollowerEnv(t, env, func(c *FollowerConfig) { c.FallbackInterval = 300 * time.Millisecond })
		fe.metasync.publish(t)
		eventually(t, 5*time.Second, func() error {
			if fe.f.Status().Mode != SourceNATS {
				return errNotYet
			}
			return nil
		})

		env.stop(t)
		_, err := fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "DURING_OUTAGE", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
		require.NoError(t, err)
		fe.metasync.publish(t) // lost: the bus is down
		eventually(t, 5*time.Second, func() error {
			if fe.f.Status().Table(TableTopics).Source != SourceFallback || fe.f.Status().Mode != SourceFallback {
				return errNotYet
			}
			return hasTopic(fe.slave, "DURING_OUTAGE")()
		})
		st := fe.f.Status()
		require.Equal(t, SourceFallback, st.Mode)
		require.Equal(t, SourceFallback, st.Table(TableTopics).Source)
		require.False(t, st.BusConnected)

		env.start(t)
		eventually(t, 10*time.Second, func() error {
			if !fe.f.Status().BusConnected {
				return errNotYet
			}
			return nil
		})
		// Announcements resume: with the master unreachable for the follower,
		// only NATS and metasync can bring the next change.
		fe.master.setDown(true)
		eventually(t, 5*time.Second, func() error {
			if fe.f.Status().Mode != SourceNATS {
				return errNotYet
			}
			return nil
		})
		_, err = fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "AFTER_OUTAGE", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
		require.NoError(t, err)
		// The NATS client resubscribes right after it reconnects; publish until seen.
		eventually(t, 5*time.Second, func() error {
			fe.master.setDown(false) // metasync still reads the master
			fe.metasync.publish(t)
			fe.master.setDown(true)
			if fe.f.Status().Table(TableTopics).Source != SourceNATS {
				return errNotYet
			}
			return hasTopic(fe.slave, "AFTER_OUTAGE")()
		})
	})
}

func TestFollowerMasterPullWhenMetasyncDown(t *testing.T) {
	fe := newFollowerEnv(t, newMemEnv(t), nil)
	fe.metasync.publish(t)
	fe.metasync.setDown(true)
	_, err := fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "T2", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	require.NoError(t, err)
	// The announcement arrives but metasync cannot serve: pull from the master at once.
	fe.metasync.mu.Lock()
	snap, _ := NewSnapshot(testCluster, testBroker, TableTopics, fe.mtables.Topics.Snapshot(), "", 0, time.Now())
	fe.metasync.mu.Unlock()
	require.NoError(t, fe.env.bus().Publish(Subject(DefaultSubjectPrefix, testCluster, testBroker, TableTopics), AppendAnnouncement(nil, snap.Announcement(""))))
	eventually(t, 5*time.Second, func() error {
		if fe.f.Status().Table(TableTopics).Source != SourceFallback {
			return errNotYet
		}
		return hasTopic(fe.slave, "T2")()
	})
}

func TestFollowerDuplicateAnnouncementsApplyOnce(t *testing.T) {
	fe := newFollowerEnv(t, newMemEnv(t), nil)
	_, err := fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "T3", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	require.NoError(t, err)
	fe.metasync.publish(t)
	eventually(t, 5*time.Second, func() error {
		if !fe.f.Status().Table(TableTopics).DataVersion.Equal(fe.mtables.Topics.DataVersion()) {
			return errNotYet
		}
		return nil
	})
	applied := fe.f.Status().Table(TableTopics).Applied
	for i := 0; i < 5; i++ { // a second instance, a restarted one
		fe.metasync.mu.Lock()
		a := fe.metasync.snaps[TableTopics].Announcement("")
		fe.metasync.mu.Unlock()
		require.NoError(t, fe.env.bus().Publish(Subject(DefaultSubjectPrefix, testCluster, testBroker, TableTopics), AppendAnnouncement(nil, a)))
	}
	require.NoError(t, fe.f.SyncNow(context.Background()))
	require.Equal(t, applied, fe.f.Status().Table(TableTopics).Applied)
}

func TestFollowerPersistsInBrokerFiles(t *testing.T) {
	fe := newFollowerEnv(t, newMemEnv(t), nil)
	_, err := fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "T4", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	require.NoError(t, err)
	fe.mtables.Offsets.Commit("g", "T4", 0, 12)
	fe.mtables.Delay.Update(2, 8)
	fe.metasync.publish(t)
	require.NoError(t, fe.f.SyncNow(context.Background()))
	// A promoted slave reopens the same files.
	dir := fe.slave.Topics.LoadInfo().Path
	root := filepath.Dir(filepath.Dir(dir))
	re := newTables(t, root)
	_, ok := re.Topics.Get("T4")
	require.True(t, ok)
	off, ok := re.Offsets.Query("g", "T4", 0)
	require.True(t, ok)
	require.EqualValues(t, 12, off)
	d, ok := re.Delay.Get(2)
	require.True(t, ok)
	require.EqualValues(t, 8, d)
}

func TestFollowerStatusReports(t *testing.T) {
	env := newMemEnv(t)
	got := make(chan FollowerReport, 16)
	_, err := env.bus().Subscribe(StatusWildcard(DefaultSubjectPrefix), func(_ string, data []byte) {
		r, err := DecodeFollowerReport(data)
		if err == nil {
			got <- r
		}
	})
	require.NoError(t, err)
	fe := newFollowerEnv(t, env, nil)
	fe.metasync.publish(t)
	select {
	case r := <-got:
		require.Equal(t, testBroker, r.BrokerName)
		require.Len(t, r.Tables, len(AllTables))
	case <-time.After(5 * time.Second):
		t.Fatal("no follower report")
	}
}

func TestFollowerConfigValidate(t *testing.T) {
	require.ErrorIs(t, DefaultFollowerConfig().Validate(), ErrInvalidConfig)
	cfg := DefaultFollowerConfig()
	cfg.Cluster, cfg.BrokerName, cfg.Tables = "c", "b", newTables(t, "")
	cfg.Bus = NewMemBus()
	require.ErrorContains(t, cfg.Validate(), "Master")
	cfg.Master = &memMaster{}
	require.NoError(t, cfg.Validate())
	f, err := NewFollower(cfg)
	require.NoError(t, err)
	require.NoError(t, f.Close()) // closing an unstarted follower returns
	require.ErrorIs(t, f.SyncNow(context.Background()), ErrClosed)
	cfg.FallbackInterval = 0
	require.ErrorContains(t, cfg.Validate(), "FallbackInterval")
}

// TestFollowerInactiveAppliesNothing: while Active reports false (the broker was promoted),
// neither announcements nor SyncNow touch the tables; active again, it follows.
func TestFollowerInactiveAppliesNothing(t *testing.T) {
	var active atomic.Bool
	active.Store(true)
	fe := newFollowerEnv(t, newMemEnv(t), func(c *FollowerConfig) { c.Active = active.Load })
	active.Store(false)
	_, err := fe.mtables.Topics.Put(meta.TopicConfig{TopicName: "Inactive", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	require.NoError(t, err)
	fe.metasync.publish(t)
	require.NoError(t, fe.f.SyncNow(context.Background()))
	require.Error(t, hasTopic(fe.slave, "Inactive")(), "an inactive follower applied a table")
	active.Store(true)
	require.NoError(t, fe.f.SyncNow(context.Background()))
	require.NoError(t, hasTopic(fe.slave, "Inactive")())
}

package syncer

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestTopicConvergence measures how long a topic created on the master takes
// to reach a slave through metasync and NATS.
func TestTopicConvergence(t *testing.T) {
	nats := harness.StartNATST(t)
	master := startFakeMaster(t, "")
	const interval = 300 * time.Millisecond
	svc := startService(t, svcOpts{natsURL: nats.URL(), masters: []string{cluster + "/" + broker + "@" + master.Addr}, interval: interval})
	sl := startSlave(t, dialBus(t, nats.URL()), []string{svc.URL()}, func() string { return master.Addr }, time.Hour)

	var ds []time.Duration
	slow := 0
	for i := 0; i < 20; i++ {
		name := "CONV_" + string(rune('A'+i))
		time.Sleep(rand.N(interval)) // sample every phase of the pull schedule
		start := time.Now()
		putTopic(t, master.T(), name)
		waitFor(t, 20*time.Second, name+" on the slave", func() bool { return sl.HasTopic(name) })
		d := time.Since(start)
		if d > 2*time.Second {
			slow++
		}
		ds = append(ds, d)
	}
	t.Logf("topic create -> applied on slave (syncInterval %v): %s; over 2s: %d", interval, distribution(ds), slow)
	require.Equal(t, metasync.SourceNATS, sl.F.Status().Table(metasync.TableTopics).Source)

	// With the master's doorbell the pull schedule no longer matters.
	bell := dialBus(t, nats.URL())
	ds = ds[:0]
	for i := 0; i < 20; i++ {
		name := "BELL_" + string(rune('A'+i))
		time.Sleep(rand.N(interval))
		start := time.Now()
		putTopic(t, master.T(), name)
		require.NoError(t, bell.Publish(metasync.ChangedSubject(metasync.DefaultSubjectPrefix, cluster, broker), nil))
		waitFor(t, 20*time.Second, name+" on the slave", func() bool { return sl.HasTopic(name) })
		ds = append(ds, time.Since(start))
	}
	t.Logf("topic create + master doorbell -> applied on slave: %s", distribution(ds))

	// /metrics shows the versions held by master and metasync, and the sync age.
	resp, err := http.Get(svc.URL() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	require.Regexp(t, `(?m)^rmqha_metasync_nats_connected 1$`, text, "the sample line (its HELP text starts with \"1 while\")")
	require.Contains(t, text, `rmqha_metasync_group_owned{broker="`+broker+`",cluster="`+cluster+`"} 1`)
	require.Regexp(t, `rmqha_metasync_table_version\{broker="`+broker+`",cluster="`+cluster+`",holder="master",table="`+string(metasync.TableTopics)+`"\} [1-9]`, text)
	require.Regexp(t, `rmqha_metasync_table_version\{broker="`+broker+`",cluster="`+cluster+`",holder="metasync",table="`+string(metasync.TableTopics)+`"\} [1-9]`, text)
	require.Contains(t, text, "rmqha_metasync_last_sync_age_seconds{")
	require.Contains(t, text, "go_goroutines")
}

func TestDeletesAndOffsets(t *testing.T) {
	nats := harness.StartNATST(t)
	master := startFakeMaster(t, "")
	svc := startService(t, svcOpts{natsURL: nats.URL(), masters: []string{cluster + "/" + broker + "@" + master.Addr}})
	sl := startSlave(t, dialBus(t, nats.URL()), []string{svc.URL()}, func() string { return master.Addr }, time.Hour)

	m := master.T()
	putTopic(t, m, "DEL_T")
	_, err := m.Groups.Put(meta.NewSubscriptionGroupConfig("DEL_G"))
	require.NoError(t, err)
	m.Offsets.Commit("g", "DEL_T", 0, 10)
	m.Delay.Update(1, 4)
	waitFor(t, 10*time.Second, "created on slave", func() bool {
		_, g := sl.Tables.Groups.Get("DEL_G")
		off, _ := sl.Tables.Offsets.Query("g", "DEL_T", 0)
		d, _ := sl.Tables.Delay.Get(1)
		return sl.HasTopic("DEL_T") && g && off == 10 && d == 4
	})
	_, err = m.Topics.Delete("DEL_T")
	require.NoError(t, err)
	_, err = m.Groups.Delete("DEL_G")
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "deleted on slave", func() bool {
		_, g := sl.Tables.Groups.Get("DEL_G")
		return !sl.HasTopic("DEL_T") && !g
	})

	// Consumers committed to the slave while its master was unreachable.
	sl.Tables.Offsets.Commit("g", "DEL_T", 0, 30)
	m.Offsets.Commit("g", "DEL_T", 0, 20)
	m.Offsets.Commit("g", "DEL_T", 1, 5)
	waitFor(t, 10*time.Second, "queue 1 on slave", func() bool { off, _ := sl.Tables.Offsets.Query("g", "DEL_T", 1); return off == 5 })
	off, _ := sl.Tables.Offsets.Query("g", "DEL_T", 0)
	require.EqualValues(t, 30, off)

	// The master restarts with an older offset table than the slave holds.
	old := openTables(t, "")
	old.Offsets.Commit("g", "DEL_T", 0, 2)
	old.Offsets.Commit("g", "DEL_T", 1, 1)
	old.Offsets.Commit("g", "OTHER", 0, 3)
	master.Swap(old)
	waitFor(t, 10*time.Second, "new key on slave", func() bool { off, _ := sl.Tables.Offsets.Query("g", "OTHER", 0); return off == 3 })
	require.NoError(t, sl.F.SyncNow(context.Background()))
	off, _ = sl.Tables.Offsets.Query("g", "DEL_T", 0)
	require.EqualValues(t, 30, off)
	off, _ = sl.Tables.Offsets.Query("g", "DEL_T", 1)
	require.EqualValues(t, 5, off)

	// /status shows master, metasync and slave versions.
	resp, err := http.Get(svc.URL() + "/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Len(t, st.Groups, 1)
	g := st.Groups[0]
	require.Equal(t, master.Addr, g.MasterAddr)
	require.True(t, g.Owned)
	for _, ts := range g.Tables {
		require.GreaterOrEqual(t, ts.LastSuccessAgeMillis, int64(0), ts.Table)
		require.NotNil(t, ts.MetasyncVersion, ts.Table)
	}
	waitFor(t, 10*time.Second, "slave report in /status", func() bool { return len(svc.Status().Groups[0].Tables[0].Slaves) == 1 })
	hr, err := http.Get(svc.URL() + "/health")
	require.NoError(t, err)
	hr.Body.Close()
	require.Equal(t, http.StatusOK, hr.StatusCode)
}

// TestNATSOutage: without NATS the slave converges through the fallback within
// its period; once NATS is back, announcements flow again.
func TestNATSOutage(t *testing.T) {
	nats := harness.StartNATST(t)
	master := startFakeMaster(t, "")
	svc := startService(t, svcOpts{natsURL: nats.URL(), masters: []string{cluster + "/" + broker + "@" + master.Addr}})
	const fallback = time.Second
	sl := startSlave(t, dialBus(t, nats.URL()), []string{svc.URL()}, func() string { return master.Addr }, fallback)
	putTopic(t, master.T(), "BEFORE")
	waitFor(t, 10*time.Second, "BEFORE", func() bool { return sl.HasTopic("BEFORE") })

	nats.Shutdown()
	nats.WaitForShutdown()
	waitFor(t, 10*time.Second, "follower sees the outage", func() bool { return !sl.F.Status().BusConnected })
	start := time.Now()
	putTopic(t, master.T(), "DURING")
	waitFor(t, 10*fallback, "DURING via fallback", func() bool { return sl.HasTopic("DURING") })
	t.Logf("converged without NATS after %v (fallback period %v)", time.Since(start).Round(time.Millisecond), fallback)
	waitFor(t, 5*time.Second, "fallback mode", func() bool {
		st := sl.F.Status()
		return st.Mode == metasync.SourceFallback && st.Table(metasync.TableTopics).Source == metasync.SourceFallback
	})

	n2, err := nats.Restart()
	require.NoError(t, err)
	t.Cleanup(n2.Shutdown)
	waitFor(t, 15*time.Second, "follower back on NATS", func() bool { return sl.F.Status().Mode == metasync.SourceNATS })
	putTopic(t, master.T(), "AFTER")
	waitFor(t, 10*time.Second, "AFTER via NATS", func() bool {
		return sl.HasTopic("AFTER") && sl.F.Status().Table(metasync.TableTopics).Source == metasync.SourceNATS
	})
}

// TestRestartKeepsSnapshots: a restarted instance serves its stored snapshots
// at once and does not announce versions it already had.
func TestRestartKeepsSnapshots(t *testing.T) {
	nats := harness.StartNATST(t)
	master := startFakeMaster(t, "")
	putTopic(t, master.T(), "KEPT")
	master.T().Offsets.Commit("g", "KEPT", 0, 9)
	dir := t.TempDir()
	masters := []string{cluster + "/" + broker + "@" + master.Addr}
	svc := startService(t, svcOpts{natsURL: nats.URL(), dir: dir, masters: masters})
	waitFor(t, 10*time.Second, "stored", func() bool {
		for _, tbl := range metasync.AllTables {
			if _, ok := svc.store.Get(cluster, broker, tbl); !ok {
				return false
			}
		}
		return true
	})
	before, _ := svc.store.Get(cluster, broker, metasync.TableTopics)

	// A second process on the same store is refused.
	cfg := svc.cfg
	cfg.HTTPPort = 0
	other, err := New(cfg)
	require.NoError(t, err)
	require.ErrorIs(t, other.Start(), ErrStoreLocked)

	require.NoError(t, svc.Close())
	ann := watchAnnouncements(t, dialBus(t, nats.URL()))
	svc2 := startService(t, svcOpts{natsURL: nats.URL(), dir: dir, masters: masters})
	got, ok := svc2.store.Get(cluster, broker, metasync.TableTopics)
	require.True(t, ok)
	require.Equal(t, before.Sequence, got.Sequence)
	c := metasync.NewHTTPSnapshots(svc2.URL())
	snap, err := c.Fetch(context.Background(), cluster, broker, metasync.TableTopics, "")
	require.NoError(t, err)
	require.True(t, snap.SameContent(before))
	// Several pulls later, nothing was announced again.
	waitFor(t, 10*time.Second, "pulled again", func() bool {
		st := svc2.Status()
		return len(st.Groups) == 1 && st.Groups[0].Tables[0].LastSuccessAgeMillis >= 0
	})
	time.Sleep(3 * svc2.cfg.SyncInterval) // let a few more pulls pass; nothing may be announced
	require.Empty(t, ann.List())
	putTopic(t, master.T(), "NEW")
	waitFor(t, 10*time.Second, "announced after restart", func() bool { return len(ann.List()) == 1 })
	a := ann.List()[0]
	require.Equal(t, metasync.TableTopics, a.Table)
	require.Equal(t, before.Sequence+1, a.Sequence)
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	c.MasterAddrs = []string{"nope"}
	require.ErrorContains(t, c.Validate(), "masterAddrs")
	c = DefaultConfig()
	c.LockSessionTTL = time.Second
	require.ErrorContains(t, c.Validate(), "lockSessionTTLMillis")
	tg, err := ParseMasterAddr("broker-b@127.0.0.1:1", "C")
	require.NoError(t, err)
	require.Equal(t, Target{Cluster: "C", BrokerName: "broker-b", Addr: "127.0.0.1:1"}, tg)
	tg, err = ParseMasterAddr("X/broker-b@127.0.0.1:1", "C")
	require.NoError(t, err)
	require.Equal(t, "X", tg.Cluster)
}

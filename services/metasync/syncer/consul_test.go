package syncer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/services/metasync/internal/testenv"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func owners(svcs ...*Service) []int {
	var out []int
	for i, s := range svcs {
		st := s.Status()
		for _, g := range st.Groups {
			if g.Owned {
				out = append(out, i)
			}
		}
	}
	return out
}

// offsetWatch samples a slave's offsets and records any that went backwards.
type offsetWatch struct {
	mu        sync.Mutex
	last      map[string]int64
	backwards []string
}

func watchOffsets(t testing.TB, sl *testenv.Slave, keys func() []string) *offsetWatch {
	w := &offsetWatch{last: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, k := range keys() {
				off, ok := sl.Tables.Offsets.Query("g", k, 0)
				if !ok {
					continue
				}
				w.mu.Lock()
				if prev, seen := w.last[k]; seen && off < prev {
					w.backwards = append(w.backwards, fmt.Sprintf("%s: %d -> %d", k, prev, off))
				}
				w.last[k] = off
				w.mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// TestTwoInstancesWithConsul: two instances find the master in Consul; one
// holds the group lock and syncs; when it stops the other takes over. The
// slave ends with every change, applies no version twice, and never sees an
// offset go backwards.
func TestTwoInstancesWithConsul(t *testing.T) {
	consul := harness.StartConsulT(t)
	nats := harness.StartNATST(t)
	master := startFakeMaster(t, "")
	registerMaster(t, consul.HTTPAddr(), master.Addr, 1)

	a := startService(t, svcOpts{natsURL: nats.URL(), consul: consul.HTTPAddr()})
	b := startService(t, svcOpts{natsURL: nats.URL(), consul: consul.HTTPAddr()})
	waitFor(t, 20*time.Second, "one owner", func() bool { return len(owners(a, b)) == 1 })
	ann := watchAnnouncements(t, dialBus(t, nats.URL()))
	sl := startSlave(t, dialBus(t, nats.URL()), []string{a.URL(), b.URL()}, func() string { return master.Addr }, time.Hour)

	// The non-owner refuses to serve the group.
	own := owners(a, b)[0]
	svcs := []*Service{a, b}
	_, err := metasync.NewHTTPSnapshots(svcs[1-own].URL()).Fetch(context.Background(), cluster, broker, metasync.TableTopics, "")
	require.ErrorIs(t, err, metasync.ErrNotOwner)

	var n atomic.Int64
	keys := func() []string {
		var ks []string
		for i := int64(0); i < n.Load(); i++ {
			ks = append(ks, fmt.Sprintf("T%d", i))
		}
		return ks
	}
	ow := watchOffsets(t, sl, keys)
	change := func() {
		i := n.Load()
		name := fmt.Sprintf("T%d", i)
		putTopic(t, master.T(), name)
		master.T().Offsets.Commit("g", name, 0, 100+i)
		if i > 0 {
			prev := fmt.Sprintf("T%d", i-1)
			master.T().Offsets.Commit("g", prev, 0, 1000+i) // consumers move on
		}
		n.Add(1)
	}
	for i := 0; i < 10; i++ {
		change()
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, 10*time.Second, "first half on the slave", func() bool { return sl.HasTopic("T9") })

	// The owner goes away (its lock is released); the other one takes over.
	require.NoError(t, svcs[own].Close())
	for i := 0; i < 10; i++ {
		change()
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, "takeover", func() bool { return len(owners(svcs[1-own])) == 1 })
	waitFor(t, 30*time.Second, "second half on the slave", func() bool {
		off, _ := sl.Tables.Offsets.Query("g", "T19", 0)
		return sl.HasTopic("T19") && off == 119
	})
	require.NoError(t, sl.F.SyncNow(context.Background()))
	for i := 0; i < 19; i++ {
		name := fmt.Sprintf("T%d", i)
		require.True(t, sl.HasTopic(name), name)
		off, _ := sl.Tables.Offsets.Query("g", name, 0)
		require.EqualValues(t, 1000+i+1, off, name)
	}
	ow.mu.Lock()
	require.Empty(t, ow.backwards)
	ow.mu.Unlock()

	// No update applied twice: every topic version the slave applied is
	// distinct, and announcements of one version come from one instance at a time.
	st := sl.F.Status().Table(metasync.TableTopics)
	seen := map[string]map[string]bool{}
	for _, an := range ann.List() {
		if an.Table != metasync.TableTopics {
			continue
		}
		k := fmt.Sprint(an.DataVersion)
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][an.SnapshotURL] = true
	}
	// The master made 20 topic versions after the slave's start-up sync; an
	// update applied twice would push the count past them.
	require.LessOrEqual(t, st.Applied, uint64(20+1), "a topic version was applied twice")
	t.Logf("topic versions announced: %d, applied by the slave: %d", len(seen), st.Applied)
}

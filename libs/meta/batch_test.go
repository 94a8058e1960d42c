package meta

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/route"
)

// Thousands of Batch creations cost a few rewrites (one per PersistBatchSize
// changes, plus the timer's), not one per change, and every one of them is in
// the file once the interval passed.
func TestBatchCoalescesRewrites(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	cfg.PersistBatchSize = 500
	cfg.PersistBatchInterval = time.Second
	tabs, err := Open(cfg)
	require.NoError(t, err)
	groupsFile := configPath(cfg, SubscriptionGroupFileName)
	topicsFile := configPath(cfg, TopicsFileName)
	g0, t0 := fsys.renames(groupsFile), fsys.renames(topicsFile)

	const n = 2100
	for i := 0; i < n; i++ {
		g := fmt.Sprintf("flood-%d", i)
		_, created, err := tabs.Groups.FindOrCreate(g, Batch)
		require.NoError(t, err)
		require.True(t, created)
		_, created, err = tabs.Topics.CreateRetryTopic(g, 1, Batch)
		require.NoError(t, err)
		require.True(t, created)
	}
	// n/500 rewrites happened inline; what is left waits for the timer.
	require.LessOrEqual(t, fsys.renames(groupsFile)-g0, n/500+2)
	require.LessOrEqual(t, fsys.renames(topicsFile)-t0, n/500+2)
	require.Eventually(t, func() bool { return tabs.Groups.Pending() == 0 && tabs.Topics.Pending() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.LessOrEqual(t, fsys.renames(groupsFile)-g0, n/500+2)

	again, err := Open(cfg)
	require.NoError(t, err)
	require.Equal(t, tabs.Groups.Len(), again.Groups.Len())
	require.Equal(t, n, again.Groups.Len())
	_, ok := again.Topics.Get(RetryTopic("flood-2099"))
	require.True(t, ok)
}

// A Batch change is not in the file until its batch is written; WaitDurable
// writes it (once) and later calls return without writing.
func TestWaitDurableWritesABatchedTopic(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	cfg.PersistBatchInterval = time.Hour // only WaitDurable writes
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	file := configPath(cfg, TopicsFileName)
	_, created, err := tt.CreateRetryTopic("cg", 1, Batch)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 1, tt.Pending())
	require.NotContains(t, readConfigFile(t, cfg, TopicsFileName), "%RETRY%cg")

	before := fsys.renames(file)
	require.NoError(t, tt.WaitDurable("%RETRY%cg"))
	require.Contains(t, readConfigFile(t, cfg, TopicsFileName), "%RETRY%cg")
	require.Equal(t, before+1, fsys.renames(file))
	require.NoError(t, tt.WaitDurable("%RETRY%cg"))
	require.NoError(t, tt.WaitDurable("unknown"))
	require.Equal(t, before+1, fsys.renames(file), "a written topic costs no rewrite")
	require.Equal(t, 0, tt.Pending())
}

// Concurrent Wait changes share rewrites: every caller's change is in the file
// when it returns, with fewer rewrites than callers.
func TestWaitChangesShareRewrites(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	slow := make(chan struct{})
	var once sync.Once
	fsys.setFail(func(op vfs.Op, name string) error {
		if op == vfs.OpRename && strings.HasSuffix(name, TopicsFileName+".tmp") {
			once.Do(func() { <-slow }) // hold the first rewrite until all callers queued
		}
		return nil
	})
	file := configPath(cfg, TopicsFileName)
	before := fsys.renames(file)
	const callers = 20
	var wg sync.WaitGroup
	started := make(chan struct{}, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			started <- struct{}{}
			_, created, err := tt.CreateTopicInSendMessage(fmt.Sprintf("T%d", i), AutoCreateTopicKey, 4)
			require.NoError(t, err)
			require.True(t, created)
			require.Contains(t, readConfigFile(t, cfg, TopicsFileName), fmt.Sprintf(`"T%d"`, i))
		}(i)
	}
	for i := 0; i < callers; i++ {
		<-started
	}
	time.Sleep(50 * time.Millisecond) // let the callers queue behind the held rewrite
	close(slow)
	wg.Wait()
	require.Less(t, fsys.renames(file)-before, callers)
}

// The auto-create limit refuses new groups with ErrGroupLimit (an
// ErrGroupNotExist); Put (admin) is not limited; existing groups are found.
func TestAutoCreateGroupLimit(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	cfg.AutoCreateSubscriptionGroupLimit = 3
	gt, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, created, err := gt.FindOrCreate(fmt.Sprintf("g%d", i), Batch)
		require.NoError(t, err)
		require.True(t, created)
	}
	_, _, err = gt.FindOrCreate("g3", Batch)
	require.ErrorIs(t, err, ErrGroupLimit)
	require.ErrorIs(t, err, ErrGroupNotExist)
	require.Contains(t, err.Error(), "autoCreateSubscriptionGroupLimit")
	_, created, err := gt.FindOrCreate("g1", Batch)
	require.NoError(t, err)
	require.False(t, created)
	_, err = gt.Put(NewSubscriptionGroupConfig("admin-made"))
	require.NoError(t, err)
	require.Equal(t, 4, gt.Len())
}

// The send auto-create limit counts every topic of the table (TBW102 and
// retry topics included) and refuses new ones with ErrTopicLimit (an
// ErrTopicNotExist); existing topics are still found, and retry topics and
// admin puts are not limited by it.
func TestAutoCreateTopicLimit(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	probe, err := NewTopicTable(cfg)
	require.NoError(t, err)
	base := probe.Len() // TBW102 and the system topics made at open
	cfg.StorePathRootDir = t.TempDir()
	cfg.AutoCreateTopicLimit = base + 3
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	require.Equal(t, base, tt.Len())
	for i := base; i < base+3; i++ {
		_, created, err := tt.CreateTopicInSendMessage(fmt.Sprintf("t%d", i), AutoCreateTopicKey, 4)
		require.NoError(t, err)
		require.True(t, created)
	}
	_, created, err := tt.CreateTopicInSendMessage("one-more", AutoCreateTopicKey, 4)
	require.ErrorIs(t, err, ErrTopicLimit)
	require.ErrorIs(t, err, ErrTopicNotExist)
	require.False(t, created)
	require.Contains(t, err.Error(), "autoCreateTopicLimit")
	_, ok := tt.Get("one-more")
	require.False(t, ok, "nothing stored")
	_, created, err = tt.CreateTopicInSendMessage(fmt.Sprintf("t%d", base), AutoCreateTopicKey, 4)
	require.NoError(t, err, "an existing topic is found at the limit")
	require.False(t, created)
	_, created, err = tt.CreateRetryTopic("g", 1, Wait)
	require.NoError(t, err)
	require.True(t, created)
	_, _, err = tt.PutIfAbsent(route.NewTopicConfig("admin-made"))
	require.NoError(t, err)
	require.Equal(t, base+5, tt.Len())
	bad := DefaultConfig()
	bad.AutoCreateTopicLimit = -1
	require.ErrorIs(t, bad.Validate(), ErrInvalidConfig)
}

// Close writes the pending batch; a failed batch rewrite is retried by the
// timer until it succeeds.
func TestBatchCloseAndRetry(t *testing.T) {
	cfg, _, fsys, _ := testConfig(t)
	cfg.PersistBatchInterval = 20 * time.Millisecond
	gt, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	var failing sync.Mutex
	fail := true
	fsys.setFail(func(op vfs.Op, name string) error {
		failing.Lock()
		defer failing.Unlock()
		if fail && op == vfs.OpRename && strings.HasSuffix(name, SubscriptionGroupFileName+".tmp") {
			return errInjected
		}
		return nil
	})
	_, _, err = gt.FindOrCreate("retried", Batch)
	require.NoError(t, err, "a Batch change does not report the later write")
	time.Sleep(100 * time.Millisecond) // a few failed timer rounds
	require.Equal(t, 1, gt.Pending())
	failing.Lock()
	fail = false
	failing.Unlock()
	require.Eventually(t, func() bool { return gt.Pending() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.Contains(t, readConfigFile(t, cfg, SubscriptionGroupFileName), `"retried"`)

	cfg.PersistBatchInterval = time.Hour
	gt2, err := NewSubscriptionGroupTable(cfg)
	require.NoError(t, err)
	_, _, err = gt2.FindOrCreate("at-close", Batch)
	require.NoError(t, err)
	require.NotContains(t, readConfigFile(t, cfg, SubscriptionGroupFileName), `"at-close"`)
	require.NoError(t, gt2.Close())
	require.Contains(t, readConfigFile(t, cfg, SubscriptionGroupFileName), `"at-close"`)

	// A Wait change reports its write error.
	tt := mustTopics(t, cfg)
	fsys.setFail(func(op vfs.Op, name string) error {
		if op == vfs.OpRename {
			return errInjected
		}
		return nil
	})
	_, _, err = tt.CreateRetryTopic("x", 1, Wait)
	require.True(t, errors.Is(err, errInjected), "%v", err)
}

// mustTopics opens a topic table or fails the test.
func mustTopics(t *testing.T, cfg Config) *TopicTable {
	t.Helper()
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)
	return tt
}

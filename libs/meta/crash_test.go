package meta

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/route"
)

// A power cut at any file operation of a save leaves a loadable table that
// holds either the state before the save or the state after it.
func TestPowerLossDuringSave(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var (
		mu     sync.Mutex
		clones []*vfs.MemFS
	)
	seed := int64(0)
	fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(vfs.Op, string) error {
		mu.Lock()
		seed++
		clones = append(clones, mem.CrashClone(seed))
		mu.Unlock()
		return nil
	}))
	cfg, _, _, _ := testConfig(t)
	cfg.StorePathRootDir = "/store"
	cfg.FS = fsys
	tt, err := NewTopicTable(cfg)
	require.NoError(t, err)

	names := func(tab *TopicTable) string {
		return fmt.Sprint(len(tab.All()), tab.DataVersion())
	}
	for i := 0; i < 20; i++ {
		before := names(tt)
		mu.Lock()
		clones = clones[:0]
		mu.Unlock()
		_, err := tt.Put(route.NewTopicConfig(fmt.Sprintf("T%d", i)))
		require.NoError(t, err)
		after := names(tt)

		mu.Lock()
		crashed := append([]*vfs.MemFS(nil), clones...)
		mu.Unlock()
		require.NotEmpty(t, crashed)
		for k, disk := range crashed {
			c := cfg
			c.FS = disk
			got, err := NewTopicTable(c)
			require.NoError(t, err, "put %d, crash at op %d", i, k)
			state := names(got)
			require.Contains(t, []string{before, after}, state, "put %d, crash at op %d", i, k)
		}
	}
}

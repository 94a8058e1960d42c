package meta

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/route"
)

// Concurrent mutations and persists: the last persist always writes the
// newest state (run with -race to check locking).
func TestConcurrentMutationsAndPersist(t *testing.T) {
	cfg, _, _, _ := testConfig(t)
	tabs, err := Open(cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				_, err := tabs.Topics.Put(route.NewTopicConfig(fmt.Sprintf("T%d_%d", w, i)))
				require.NoError(t, err)
				tabs.Offsets.Commit("g", "T", int32(w), int64(i))
				require.NoError(t, tabs.PersistOffsets())
				tabs.Topics.All()
			}
		}(w)
	}
	wg.Wait()
	require.NoError(t, tabs.PersistOffsets())
	again, err := Open(cfg)
	require.NoError(t, err)
	require.Equal(t, tabs.Topics.Len(), again.Topics.Len())
	require.Equal(t, string(tabs.Topics.Snapshot()), string(again.Topics.Snapshot()))
	require.Equal(t, string(tabs.Offsets.Snapshot()), string(again.Offsets.Snapshot()))
}

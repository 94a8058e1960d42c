package commitlog

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// TestMeasureStartup times Open on a multi-segment store on disk: clean starts with intact
// consume queues, and (where the check exists) a start after one queue's files were deleted.
// It only reports (set RMQHA_MEASURE=1; RMQHA_MEASURE_MB sets the log size, default 512).
func TestMeasureStartup(t *testing.T) {
	if os.Getenv("RMQHA_MEASURE") == "" {
		t.Skip("set RMQHA_MEASURE=1 to measure")
	}
	mb := 512
	if v, err := strconv.Atoi(os.Getenv("RMQHA_MEASURE_MB")); err == nil {
		mb = v
	}
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.FS = vfs.Default
	cfg.SegmentSize = 64 << 20
	cfg.CQUnitsPerFile = 100000
	s, err := Open(cfg)
	require.NoError(t, err)
	body := make([]byte, 1024)
	const topics, queues = 50, 8
	n := mb << 10 // ~1 KiB records
	for i := 0; i < n; i++ {
		m := &Message{Topic: "T" + strconv.Itoa(i%topics), QueueID: int32(i / topics % queues), Body: body, BornTimestamp: 1, Properties: "UNIQ_KEY\x01" + strconv.Itoa(i) + "\x02"}
		_, err := s.Append(m)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	segs, _ := os.ReadDir(cfg.Dir + "/commitlog")
	for round := 0; round < 3; round++ {
		start := time.Now()
		s, err = Open(cfg)
		require.NoError(t, err)
		took := time.Since(start)
		rep := s.Recovery()
		t.Logf("clean start %d: %v (segments=%d queues=%d max=%d report=%+v)", round, took, len(segs), s.Stats().Queues, s.MaxOffset(), rep)
		require.NoError(t, s.Close())
	}
	require.NoError(t, os.RemoveAll(cfg.Dir+"/consumequeue/T7/3"))
	start := time.Now()
	s, err = Open(cfg)
	require.NoError(t, err)
	t.Logf("start after deleting T7/3: %v queue max=%d report=%s", time.Since(start), s.QueueMaxOffset("T7", 3), fmt.Sprintf("%+v", s.Recovery()))
	require.NoError(t, s.Close())
}

package commitlog

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func retentionStore(t *testing.T) (*Store, *vfs.MemFS, *fakeClock, []AppendResult) {
	clk := &fakeClock{}
	clk.Set(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
	mem := vfs.NewMem()
	mem.SetClock(clk.Now)
	cfg := testConfig(mem)
	cfg.Now = clk.Now
	cfg.FileReservedTime = time.Hour
	cfg.DeleteWhen = []int{4}
	s := openStore(t, cfg)
	var res []AppendResult
	for i := 0; i < 50; i++ {
		res = append(res, mustAppend(t, s, msg("T", 0, strings.Repeat("r", 600), "")))
	}
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
	require.NoError(t, s.WaitDispatched(s.MaxOffset(), time.Now().Add(5*time.Second)))
	require.GreaterOrEqual(t, s.Stats().Segments, 4)
	return s, mem, clk, res
}

func TestRetentionExpiredAtDeleteHour(t *testing.T) {
	s, _, clk, res := retentionStore(t)
	defer s.Close()
	segs := s.Stats().Segments
	clk.Advance(2 * time.Hour) // 03:00, expired but not the delete hour
	n, err := s.RunRetention(false)
	require.NoError(t, err)
	require.Zero(t, n)
	clk.Advance(time.Hour) // 04:00
	n, err = s.RunRetention(false)
	require.NoError(t, err)
	require.Equal(t, segs-1, n, "everything but the active segment")
	require.Equal(t, s.MaxOffset()-s.MaxOffset()%s.SegmentSize(), s.MinOffset())
	// Reads below the new min.
	_, err = s.ReadRaw(0, 100)
	require.ErrorIs(t, err, ErrOffsetTooOld)
	_, err = s.ReadRecord(res[0].WroteOffset)
	require.ErrorIs(t, err, ErrOffsetTooOld)
	qmin := s.QueueMinOffset("T", 0)
	require.Greater(t, qmin, int64(0))
	g := s.GetMessages("T", 0, 0, 32, 1<<20, nil)
	require.Equal(t, OffsetTooSmall, g.Status)
	require.Equal(t, qmin, g.NextBeginOffset)
	g = s.GetMessages("T", 0, qmin, 32, 1<<20, nil)
	require.Equal(t, Found, g.Status)
	r, _, err := DecodeRecord(g.Records[0])
	require.NoError(t, err)
	require.GreaterOrEqual(t, r.PhysicalOffset, s.MinOffset())
	// Survives a restart.
	min := s.MinOffset()
	require.NoError(t, s.Close())
	s2 := openStore(t, s.cfg)
	defer s2.Close()
	require.Equal(t, min, s2.MinOffset())
	require.Equal(t, qmin, s2.QueueMinOffset("T", 0))
}

func TestRetentionRespectsReaders(t *testing.T) {
	s, _, clk, _ := retentionStore(t)
	defer s.Close()
	rd := s.RegisterReader("replica-2", 100) // inside the first segment
	clk.Set(time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC))
	n, err := s.RunRetention(false)
	require.NoError(t, err)
	require.Zero(t, n, "first segment is in use")
	rd.Advance(2 * s.SegmentSize())
	n, err = s.RunRetention(false)
	require.NoError(t, err)
	require.Equal(t, 2, n, "segments before the reader only")
	require.Equal(t, 2*s.SegmentSize(), s.MinOffset())
	select {
	case <-rd.Removed():
		t.Fatal("reader told although nothing it needs was deleted")
	default:
	}
	rd.Close()
	require.Equal(t, 0, s.Stats().Readers)
}

func TestRetentionDiskFull(t *testing.T) {
	s, mem, _, _ := retentionStore(t)
	defer s.Close()
	rd := s.RegisterReader("slow-consumer", 0)
	// Not expired, not the delete hour, but the disk is full.
	mem.SetCapacity(uint64(s.MaxOffset() + s.MaxOffset()/10))
	n, err := s.RunRetention(false)
	require.NoError(t, err)
	require.Positive(t, n)
	select {
	case <-rd.Removed():
	default:
		t.Fatal("reader whose data was deleted was not told")
	}
	require.Positive(t, s.MinOffset())
}

func TestRetentionNeverDeletesUnflushed(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC))
	mem := vfs.NewMem()
	mem.SetClock(clk.Now)
	var sw vfs.Switch
	cfg := testConfig(vfs.NewErrorFS(mem, &sw))
	cfg.Now = clk.Now
	cfg.FlushInterval = time.Hour
	cfg.FileReservedTime = time.Minute
	s := openStore(t, cfg)
	defer s.Close()
	for i := 0; i < 30; i++ {
		mustAppend(t, s, msg("T", 0, strings.Repeat("u", 600), ""))
	}
	clk.Advance(time.Hour)
	n, err := s.RunRetention(true)
	require.NoError(t, err)
	require.Zero(t, n, "nothing flushed yet")
}

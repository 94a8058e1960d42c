package commitlog

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// Baselines measured in the same run on the same disk.
var (
	baseOnce      sync.Once
	baseWriteRate float64 // bytes/s: plain file, 1 MiB writes, one fdatasync at the end
	baseReadRate  float64 // bytes/s: plain file, 1 MiB preads (page cache)
	baseSyncRate  float64 // fdatasync/s: 4 KiB append + fdatasync
)

func measureBaselines(b *testing.B) {
	baseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "clbase")
		require.NoError(b, err)
		defer os.RemoveAll(dir)
		f, err := os.Create(filepath.Join(dir, "plain"))
		require.NoError(b, err)
		defer f.Close()
		const total = 128 << 20
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte(i)
		}
		start := time.Now()
		for off := int64(0); off < total; off += int64(len(buf)) {
			_, err := f.WriteAt(buf, off)
			require.NoError(b, err)
		}
		require.NoError(b, syscall.Fdatasync(int(f.Fd())))
		baseWriteRate = total / time.Since(start).Seconds()
		start = time.Now()
		for off := int64(0); off < total; off += int64(len(buf)) {
			_, err := f.ReadAt(buf, off)
			require.NoError(b, err)
		}
		baseReadRate = total / time.Since(start).Seconds()
		g, err := os.Create(filepath.Join(dir, "sync"))
		require.NoError(b, err)
		defer g.Close()
		small := make([]byte, 4096)
		const n = 200
		start = time.Now()
		for i := 0; i < n; i++ {
			_, err := g.WriteAt(small, int64(i)*4096)
			require.NoError(b, err)
			require.NoError(b, syscall.Fdatasync(int(g.Fd())))
		}
		baseSyncRate = n / time.Since(start).Seconds()
		b.Logf("baselines: sequential write %.0f MB/s, read %.0f MB/s, fdatasync %.0f/s", baseWriteRate/1e6, baseReadRate/1e6, baseSyncRate)
	})
}

func benchStore(b *testing.B, mode FlushDiskType) *Store {
	return benchStoreBuf(b, mode, 0)
}

func benchStoreBuf(b *testing.B, mode FlushDiskType, wbuf int) *Store {
	cfg := DefaultConfig()
	cfg.WriteBuffer = wbuf
	cfg.Dir = b.TempDir()
	cfg.SegmentSize = 64 << 20
	cfg.FlushDiskType = mode
	cfg.FS = vfs.Default
	s, err := Open(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkAppendAsync: append throughput with ASYNC_FLUSH (including the
// final fsync), as a ratio to the disk's sequential write rate.
func BenchmarkAppendAsync(b *testing.B) {
	for _, wb := range []int{0, 1 << 20} {
		for _, size := range []int{128, 1024, 4096} {
			name := strconv.Itoa(size)
			if wb > 0 {
				name = "buffered-" + name
			}
			b.Run(name, func(b *testing.B) { benchAppendAsync(b, size, wb) })
		}
	}
}

func benchAppendAsync(b *testing.B, size, wb int) {
	{
		{
			measureBaselines(b)
			s := benchStoreBuf(b, AsyncFlush, wb)
			m := msg("BenchTopic", 0, string(make([]byte, size)), "TagA")
			b.SetBytes(int64(RecordSize(size, len(m.Topic), len(m.Properties), false, false)))
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := s.Append(m); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-s.WaitFlush(s.MaxOffset(), time.Now().Add(time.Minute)); err != nil {
				b.Fatal(err)
			}
			el := time.Since(start).Seconds()
			b.StopTimer()
			rate := float64(s.MaxOffset()) / el
			b.ReportMetric(rate/1e6, "MB/s")
			b.ReportMetric(rate/baseWriteRate, "x_disk_write")
			b.ReportMetric(float64(b.N)/el, "msgs/s")
		}
	}
}

// BenchmarkSyncFlush: SYNC_FLUSH appends that wait for their fsync, with 1,
// 16 and 64 concurrent appenders; messages per fsync shows group commit. queued-64 runs the
// 64 on the broker's send path: each queues its record (AppendQueued) and ends its burst with
// FlushQueued, so the flusher writes what is queued right before each fsync, and the record's
// callback registers its flush wait, as the broker's does.
func BenchmarkSyncFlush(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		b.Run(strconv.Itoa(conc), func(b *testing.B) { benchSyncFlush(b, conc, false) })
	}
	b.Run("queued-64", func(b *testing.B) { benchSyncFlush(b, 64, true) })
}

func benchSyncFlush(b *testing.B, conc int, queued bool) {
	measureBaselines(b)
	s := benchStore(b, SyncFlush)
	fs0, w0 := s.Stats().Fsyncs, s.gwrites.Load()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			m := msg("BenchTopic", int32(g%8), string(make([]byte, 1024)), "")
			d := &flushDone{s: s, out: make(chan flushOut, 1)}
			for next.Add(1) <= int64(b.N) {
				var wait <-chan error
				if queued {
					if err := s.AppendQueued(m, d); err != nil {
						b.Error(err)
						return
					}
					s.FlushQueued()
					o := <-d.out
					if o.err != nil {
						b.Error(o.err)
						return
					}
					wait = o.flush
				} else {
					r, err := s.Append(m)
					if err != nil {
						b.Error(err)
						return
					}
					wait = s.WaitFlush(r.EndOffset, time.Now().Add(time.Minute))
				}
				if err := <-wait; err != nil {
					b.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	b.StopTimer()
	fsyncs := s.Stats().Fsyncs - fs0
	rate := float64(b.N) / el
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(float64(b.N)/float64(max(fsyncs, 1)), "msgs/fsync")
	b.ReportMetric(float64(b.N)/float64(max(s.gwrites.Load()-w0, 1)), "msgs/write")
	b.ReportMetric(rate/baseSyncRate, "x_fdatasync_rate")
}

// BenchmarkConsumeQueueRead: GetMessages (32 per call) over one queue, as a
// ratio to reading the same bytes sequentially from a plain file.
func BenchmarkConsumeQueueRead(b *testing.B) {
	measureBaselines(b)
	s := benchStore(b, AsyncFlush)
	const n = 100000
	for i := 0; i < n; i++ {
		if _, err := s.Append(msg("BenchTopic", 0, string(make([]byte, 128)), "TagA")); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, s.WaitDispatched(s.MaxOffset(), time.Now().Add(time.Minute)))
	b.ResetTimer()
	start := time.Now()
	var bytesRead, msgs int64
	off := int64(0)
	for i := 0; i < b.N; i++ {
		g := s.GetMessages("BenchTopic", 0, off, 32, 1<<20, nil)
		if g.Status != Found {
			b.Fatalf("status %v at %d", g.Status, off)
		}
		for _, r := range g.Records {
			bytesRead += int64(len(r))
		}
		msgs += int64(len(g.Records))
		off = g.NextBeginOffset
		if off >= n {
			off = 0
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(msgs)/el, "msgs/s")
	b.ReportMetric(float64(bytesRead)/el/baseReadRate, "x_plain_read")
}

// BenchmarkRecovery: crash recovery with a full validating scan, seconds per
// GiB, against reading the same bytes from a plain file.
func BenchmarkRecovery(b *testing.B) {
	measureBaselines(b)
	mib := 64
	if v, err := strconv.Atoi(os.Getenv("COMMITLOG_BENCH_RECOVERY_MIB")); err == nil && v > 0 {
		mib = v
	}
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.SegmentSize = 64 << 20
	cfg.RecoveryFullScan = true
	s, err := Open(cfg)
	require.NoError(b, err)
	body := string(make([]byte, 1024))
	for s.MaxOffset() < int64(mib)<<20 {
		for q := int32(0); q < 8; q++ {
			if _, err := s.Append(msg("BenchTopic", q, body, "")); err != nil {
				b.Fatal(err)
			}
		}
	}
	require.NoError(b, s.Close())
	size := s.MaxOffset()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Simulate a crash: the abort marker is present and the consume
		// queues must be cut back to the last checkpoint.
		af, err := os.Create(filepath.Join(cfg.Dir, abortFile))
		require.NoError(b, err)
		af.Close()
		b.StartTimer()
		start := time.Now()
		s2, err := Open(cfg)
		total += time.Since(start)
		require.NoError(b, err)
		b.StopTimer()
		require.NoError(b, s2.Close())
		b.StartTimer()
	}
	perGiB := total.Seconds() / float64(b.N) / (float64(size) / (1 << 30))
	b.ReportMetric(perGiB, "s/GiB")
	b.ReportMetric((1/perGiB)*(1<<30)/baseReadRate, "x_plain_read")
}

// TestHeapPerGiB fills a store with a few hundred MiB (COMMITLOG_HEAP_MIB,
// default 128) and checks that the Go heap stays small: nothing is mapped or
// cached per byte stored.
func TestHeapPerGiB(t *testing.T) {
	if testing.Short() {
		t.Skip("writes to disk")
	}
	mib := 128
	if v, err := strconv.Atoi(os.Getenv("COMMITLOG_HEAP_MIB")); err == nil && v > 0 {
		mib = v
	}
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.SegmentSize = 32 << 20
	cfg.CQUnitsPerFile = 30000
	s, err := Open(cfg)
	require.NoError(t, err)
	body := make([]byte, 1024)
	batch := make([]*Message, 16)
	for s.MaxOffset() < int64(mib)<<20 {
		for q := int32(0); q < 16; q++ {
			for i := range batch {
				batch[i] = &Message{Topic: "HeapTopic", QueueID: q, Body: body, Properties: "TAGS\x01a\x02"}
			}
			_, err := s.AppendBatch(batch)
			require.NoError(t, err)
		}
	}
	require.NoError(t, s.Close())
	// Reopen with a crash-style full validation and read a little.
	af, _ := os.Create(filepath.Join(cfg.Dir, abortFile))
	af.Close()
	cfg.RecoveryFullScan = true
	s, err = Open(cfg)
	require.NoError(t, err)
	defer s.Close()
	for q := int32(0); q < 16; q++ {
		g := s.GetMessages("HeapTopic", q, 0, 32, 1<<20, nil)
		require.Equal(t, Found, g.Status)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gib := float64(s.MaxOffset()) / (1 << 30)
	t.Logf("store %.2f GiB, %d segments, %d queues: heap in use %.1f MiB (%.1f MiB per GiB stored)", gib, s.Stats().Segments, s.Stats().Queues, float64(ms.HeapInuse)/(1<<20), float64(ms.HeapInuse)/(1<<20)/gib)
	require.Less(t, ms.HeapInuse, uint64(48<<20), fmt.Sprintf("heap %d bytes", ms.HeapInuse))
}

package commitlog

import (
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkOpenAfterKill: Open of a store whose writer died without closing it (the broker's
// defaults: one 1 GiB segment, ASYNC_FLUSH, the message index on; 1 KiB records with KEYS
// and UNIQ_KEY over eight queues), its files in the page cache. The crash image is a copy of
// the files taken while the writer still runs, restored before every Open.
// RMQHA_RECOVERY_BENCH_MB sets its size (default 128). Reports seconds and CPU seconds
// per GiB recovered, against reading the same bytes from a plain file.
func BenchmarkOpenAfterKill(b *testing.B) {
	measureBaselines(b)
	mib := 128
	if v, err := strconv.Atoi(os.Getenv("RMQHA_RECOVERY_BENCH_MB")); err == nil && v > 0 {
		mib = v
	}
	root := b.TempDir()
	image := filepath.Join(root, "image")
	cfg := DefaultConfig()
	cfg.Dir = filepath.Join(root, "writer")
	s, err := Open(cfg)
	require.NoError(b, err)
	body := make([]byte, 1024)
	host := netip.MustParseAddrPort("127.0.0.1:5555")
	for i := 0; s.MaxOffset() < int64(mib)<<20; i++ {
		key := fmt.Sprintf("%032d", i)
		_, err := s.Append(&Message{Topic: "BenchRecovery", QueueID: int32(i % 8), Body: body, BornTimestamp: time.Now().UnixMilli(), BornHost: host,
			Properties: "KEYS\x01k" + key[24:] + "\x02UNIQ_KEY\x01" + key + "\x02"})
		require.NoError(b, err)
	}
	require.NoError(b, copyTree(cfg.Dir, image)) // what a kill -9 now leaves
	require.NoError(b, s.Close())
	size := s.MaxOffset()
	cfg.Dir = filepath.Join(root, "run")
	var wall, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		require.NoError(b, os.RemoveAll(cfg.Dir))
		require.NoError(b, copyTree(image, cfg.Dir))
		syscall.Sync()
		c0 := processCPU()
		b.StartTimer()
		start := time.Now()
		s2, err := Open(cfg)
		wall += time.Since(start)
		cpu += processCPU() - c0
		require.NoError(b, err)
		b.StopTimer()
		rep := s2.Recovery()
		require.False(b, rep.Clean)
		require.Equal(b, size, rep.MaxOffset)
		require.Equal(b, size, s2.IndexedOffset())
		require.NoError(b, s2.Close())
		b.StartTimer()
	}
	gib := float64(size) / (1 << 30) * float64(b.N)
	b.ReportMetric(wall.Seconds()/gib, "s/GiB")
	b.ReportMetric(cpu.Seconds()/gib, "cpu-s/GiB")
	b.ReportMetric(float64(size)*float64(b.N)/wall.Seconds()/baseReadRate, "x_plain_read")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// copyTree copies every file under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

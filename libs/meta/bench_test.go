package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/route"
)

// BenchmarkTopicPutPersist measures a topic change with its atomic save on
// the real disk, against the same-run baseline of one temp-file write +
// fsync + rename + directory fsync of the same bytes.
func BenchmarkTopicPutPersist(b *testing.B) {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = b.TempDir()
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	cfg.Logger = l
	tt, err := NewTopicTable(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := tt.Put(route.NewTopicConfig(fmt.Sprintf("Topic%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		tc := route.NewTopicConfig("Bench")
		tc.ReadQueueNums = int32(i%8 + 1)
		if _, err := tt.Put(tc); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start)
	b.StopTimer()

	data := tt.Snapshot()
	dir := filepath.Join(cfg.StorePathRootDir, "raw")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	for i := 0; i < b.N; i++ {
		f, err := vfs.Default.Create(filepath.Join(dir, "f.tmp"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
		if err := vfs.Default.Rename(filepath.Join(dir, "f.tmp"), filepath.Join(dir, "f")); err != nil {
			b.Fatal(err)
		}
		if err := vfs.Default.SyncDir(dir); err != nil {
			b.Fatal(err)
		}
	}
	base := time.Since(start)
	b.ReportMetric(float64(len(data)), "file-bytes")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "raw-atomic-write-ns/op")
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-raw-atomic-write")
}

// BenchmarkOffsetCommit measures Commit against a plain map store under a
// mutex (same run), the cost floor of any offset table.
func BenchmarkOffsetCommit(b *testing.B) {
	cfg := DefaultConfig()
	o, err := NewConsumerOffsetTable(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		o.Commit("group", "TopicTest", int32(i&7), int64(i))
	}
	ours := time.Since(start)
	b.StopTimer()
	plain := map[string]map[int32]int64{"TopicTest@group": {}}
	var mu = make(chan struct{}, 1)
	start = time.Now()
	for i := 0; i < b.N; i++ {
		mu <- struct{}{}
		plain[OffsetKey("TopicTest", "group")][int32(i&7)] = int64(i)
		<-mu
	}
	base := time.Since(start)
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-plain-map")
}

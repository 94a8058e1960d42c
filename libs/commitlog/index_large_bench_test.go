package commitlog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// BenchmarkIndexLargeLog measures the message index on a large log: a store of about
// RMQHA_INDEX_BENCH_MB MiB (default 1024) of 1 KiB keyed messages is built once (a unique KEYS
// key, a KEYS key shared by about 1000 messages and a UNIQ_KEY each), then
//
//   - query_unique: QueryIndex of a random unique key (one record back), against reading one
//     random record by its offset in the same run (x_read_record);
//   - query_hot_32: QueryIndex of a shared key, the newest 32 of its ~1000 records back,
//     against the same single record read;
//   - replica_catch_up: a replica-side store copying the first RMQHA_INDEX_BENCH_BACKLOG_MB MiB
//     (default 256) with AppendRaw and dispatching it, with the index against without it,
//     interleaved, median of 3 (MB/s, msgs/s, x_no_index).
//
// The store lives in a temporary folder removed at the end; it needs that much free disk
// (twice the backlog more for the replicas, one at a time). Skipped with -short.
func BenchmarkIndexLargeLog(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a large store")
	}
	size := envMB(b, "RMQHA_INDEX_BENCH_MB", 1024)
	backlog := min(envMB(b, "RMQHA_INDEX_BENCH_BACKLOG_MB", 256), size)
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.FS = vfs.Default
	cfg.SegmentSize = 64 << 20
	s, err := Open(cfg)
	require.NoError(b, err)
	defer s.Close()
	body := make([]byte, 1024)
	var offs []int64
	start := time.Now()
	for i := 0; s.MaxOffset() < size; i++ {
		m := &Message{Topic: "BenchLarge", QueueID: int32(i % 8), Body: body, BornTimestamp: 1700000000000,
			BornHost:   msg("x", 0, "", "").BornHost,
			Properties: "KEYS\x01order-" + strconv.Itoa(i) + " cust-" + strconv.Itoa(i%1009) + "\x02UNIQ_KEY\x01U" + fmt.Sprintf("%031d", i) + "\x02"}
		r, err := s.Append(m)
		require.NoError(b, err)
		offs = append(offs, r.WroteOffset)
	}
	require.NoError(b, s.WaitDispatched(s.MaxOffset(), time.Now().Add(10*time.Minute)))
	b.Logf("built %d MiB, %d messages, %d index entries per message, in %.1fs", s.MaxOffset()>>20, len(offs), 3, time.Since(start).Seconds())

	// The anchor: one record read by offset, random over the whole log.
	rng := rand.New(rand.NewPCG(1, 2))
	const reads = 20000
	t0 := time.Now()
	for i := 0; i < reads; i++ {
		if _, err := s.ReadRecord(offs[rng.IntN(len(offs))]); err != nil {
			b.Fatal(err)
		}
	}
	perRead := time.Since(t0).Seconds() / reads
	b.Logf("one record read: %.2f µs", perRead*1e6)

	b.Run("query_unique", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k := rng.IntN(len(offs))
			res, err := s.QueryIndex("BenchLarge", "order-"+strconv.Itoa(k), 32, 0, math.MaxInt64, 1<<20)
			if err != nil || len(res.Records) != 1 {
				b.Fatalf("query order-%d: %v, %d records", k, err, len(res.Records))
			}
		}
		per := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(per*1e6, "µs/query")
		b.ReportMetric(per/perRead, "x_read_record")
	})
	b.Run("query_hot_32", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			res, err := s.QueryIndex("BenchLarge", "cust-"+strconv.Itoa(rng.IntN(1009)), 32, 0, math.MaxInt64, 1<<20)
			if err != nil || len(res.Records) != 32 {
				b.Fatalf("query: %v, %d records", err, len(res.Records))
			}
		}
		per := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(per*1e6, "µs/query")
		b.ReportMetric(per/perRead, "x_read_record")
	})
	b.Run("replica_catch_up", func(b *testing.B) {
		var on, off []float64
		var copied int64
		for i := 0; i < b.N; i++ {
			for rep := 0; rep < 3; rep++ {
				// Alternate which goes first: the second run meets the first one's writeback.
				for _, index := range []bool{rep%2 == 0, rep%2 != 0} {
					sec, n := replicaCatchUp(b, s, cfg.SegmentSize, backlog, index)
					copied = n
					if index {
						on = append(on, sec)
					} else {
						off = append(off, sec)
					}
				}
			}
		}
		b.StopTimer()
		slices.Sort(on)
		slices.Sort(off)
		mOn, mOff := on[(len(on)-1)/2], off[(len(off)-1)/2] // seconds
		msgs := float64(len(offs))
		if i, _ := slices.BinarySearch(offs, copied); i < len(offs) {
			msgs = float64(i)
		}
		mb := float64(copied) / 1e6
		b.ReportMetric(mb/mOn, "MB/s")
		b.ReportMetric(msgs/mOn, "msgs/s")
		b.ReportMetric(mb/mOff, "MB/s_no_index")
		b.ReportMetric(mOff/mOn, "x_no_index")
	})
}

// replicaCatchUp copies the first n bytes of master (rounded up to whole records) into a fresh
// replica-side store (AppendRaw, 1 MiB at a time, as the HA link delivers them) and returns the
// seconds until the replica dispatched all of it (consume queues, and with index the message
// index), and the bytes copied.
func replicaCatchUp(b *testing.B, master *Store, segSize, n int64, index bool) (float64, int64) {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.FS = vfs.Default
	cfg.SegmentSize = segSize
	cfg.MessageIndexEnable = index
	r, err := Open(cfg)
	require.NoError(b, err)
	defer func() {
		require.NoError(b, r.Close())
		require.NoError(b, os.RemoveAll(cfg.Dir))
	}()
	// Read the backlog before the clock starts: the master's page cache is not the replica's cost.
	var chunks [][]byte
	var off int64
	for off < n {
		data, err := master.ReadRaw(off, 1<<20)
		require.NoError(b, err)
		chunks = append(chunks, data)
		off += int64(len(data))
	}
	start := time.Now()
	for _, c := range chunks {
		require.NoError(b, r.AppendRaw(r.MaxOffset(), c))
	}
	require.NoError(b, r.WaitDispatched(r.MaxOffset(), time.Now().Add(10*time.Minute)))
	return time.Since(start).Seconds(), off
}

func envMB(b *testing.B, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def << 20
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(b, err, name)
	require.Positive(b, n, name)
	return n << 20
}

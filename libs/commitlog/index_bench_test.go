package commitlog

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dispatchRate appends n keyed messages (two KEYS and a UNIQ_KEY each) to a store on the OS file
// system and returns the dispatched messages per second, append to dispatched.
func dispatchRate(b *testing.B, n int, index bool) float64 {
	s := openBenchStore(b, index)
	defer s.Close()
	msgs := make([]*Message, n)
	for i := range msgs {
		m := msg("Bench", int32(i%8), fmt.Sprintf("body-%08d-%0100d", i, 0), "")
		m.Properties = fmt.Sprintf("KEYS\x01order-%d cust-%d\x02UNIQ_KEY\x01U%016d\x02", i, i%977, i)
		msgs[i] = m
	}
	start := time.Now()
	for _, m := range msgs {
		if _, err := s.Append(m); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, s.WaitDispatched(s.MaxOffset(), time.Now().Add(time.Minute)))
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkIndexDispatch measures append + dispatch of keyed messages with the message index
// against the same run without it (x_no_index), and the time of one key query.
func BenchmarkIndexDispatch(b *testing.B) {
	const n = 50000
	base := dispatchRate(b, n, false)
	b.ResetTimer()
	var rate float64
	for i := 0; i < b.N; i++ {
		rate = dispatchRate(b, n, true)
	}
	b.StopTimer()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(rate/base, "x_no_index")
}

// BenchmarkIndexQuery measures QueryIndex of one key among 50000 indexed messages, against
// reading the one record it returns directly (x_read_record).
func BenchmarkIndexQuery(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.SegmentSize = 64 << 20
	s, err := Open(cfg)
	require.NoError(b, err)
	defer s.Close()
	var offs []int64
	for i := 0; i < 50000; i++ {
		m := msg("Bench", int32(i%8), fmt.Sprintf("body-%08d", i), "")
		m.Properties = fmt.Sprintf("KEYS\x01order-%d\x02", i)
		r, err := s.Append(m)
		require.NoError(b, err)
		offs = append(offs, r.WroteOffset)
	}
	require.NoError(b, s.WaitDispatched(s.MaxOffset(), time.Now().Add(time.Minute)))
	start := time.Now()
	const reads = 20000
	for i := 0; i < reads; i++ {
		if _, err := s.ReadRecord(offs[i%len(offs)]); err != nil {
			b.Fatal(err)
		}
	}
	perRead := time.Since(start).Seconds() / reads
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.QueryIndex("Bench", fmt.Sprintf("order-%d", i%50000), 32, 0, math.MaxInt64, 1<<20)
		if err != nil || len(res.Records) != 1 {
			b.Fatalf("query %d: %v %d", i, err, len(res.Records))
		}
	}
	b.StopTimer()
	perQuery := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perQuery/perRead, "x_read_record")
}

// BenchmarkIndexRebuild measures an Open that rebuilds a damaged index file of 50000 keyed
// messages from the CommitLog, against a clean Open of the same store (x_clean_open).
func BenchmarkIndexRebuild(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.SegmentSize = 64 << 20
	s, err := Open(cfg)
	require.NoError(b, err)
	for i := 0; i < 50000; i++ {
		m := msg("Bench", int32(i%8), fmt.Sprintf("body-%08d-%0100d", i, 0), "")
		m.Properties = fmt.Sprintf("KEYS\x01order-%d\x02UNIQ_KEY\x01U%016d\x02", i, i)
		_, err := s.Append(m)
		require.NoError(b, err)
	}
	require.NoError(b, s.WaitDispatched(s.MaxOffset(), time.Now().Add(time.Minute)))
	require.NoError(b, s.Close())
	open := func() (time.Duration, RecoveryReport) {
		start := time.Now()
		s, err := Open(cfg)
		require.NoError(b, err)
		d := time.Since(start)
		rep := s.Recovery()
		require.NoError(b, s.Close())
		return d, rep
	}
	var clean time.Duration
	for i := 0; i < 3; i++ {
		d, _ := open()
		clean += d / 3
	}
	b.ResetTimer()
	var took time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		names, err := cfg.FS.List(cfg.Dir + "/index")
		require.NoError(b, err)
		f, err := cfg.FS.Open(cfg.Dir + "/index/" + names[0])
		require.NoError(b, err)
		require.NoError(b, f.Truncate(100)) // damaged: the trailer is gone
		f.Close()
		b.StartTimer()
		d, rep := open()
		took += d
		if rep.IndexFrom < 0 {
			b.Fatalf("index not rebuilt: %+v", rep)
		}
	}
	b.StopTimer()
	per := took / time.Duration(b.N)
	b.ReportMetric(per.Seconds()*1e3, "ms/rebuild")
	b.ReportMetric(per.Seconds()/clean.Seconds(), "x_clean_open")
}

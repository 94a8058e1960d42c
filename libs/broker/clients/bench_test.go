package clients

import (
	"testing"
	"time"
)

// BenchmarkHeartbeat measures decoding and registering the Go client's
// heartbeat (the steady state: nothing changes), against the same-run
// baseline of decoding alone.
func BenchmarkHeartbeat(b *testing.B) {
	r, err := NewRegistry(Config{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(goTaggedHeartbeat)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		hb, err := DecodeHeartbeat(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Register(hb, 1, now); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start)
	b.StopTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := DecodeHeartbeat(body); err != nil {
			b.Fatal(err)
		}
	}
	base := time.Since(start)
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-decode-only")
}

// BenchmarkMatchTagsCode measures the broker-side tag filter for a two-tag
// subscription against hashing the message's tag (same run).
func BenchmarkMatchTagsCode(b *testing.B) {
	sd, err := BuildSubscription("T", "TagA || TagB")
	if err != nil {
		b.Fatal(err)
	}
	code := TagsCode("TagB")
	var sink bool
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		sink = sd.MatchTagsCode(code) != sink
	}
	ours := time.Since(start)
	b.StopTimer()
	var h int32
	start = time.Now()
	for i := 0; i < b.N; i++ {
		h += JavaStringHash("TagB")
	}
	base := time.Since(start)
	_ = h
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-JavaStringHash")
}

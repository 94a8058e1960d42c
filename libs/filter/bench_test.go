package filter

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchMessage is a typical stored message: the properties rocketmq-client-go sets on a tagged
// send with keys, plus two user properties.
var benchMessage = P{
	"UNIQ_KEY": "7F000001A1B218B4AAC2536FE8A40000",
	"TAGS":     "TagA",
	"KEYS":     "order-20240101-000042",
	"WAIT":     "true",
	"a":        "7",
	"b":        "x",
}

const benchSelector = "a > 5 AND b = 'x'"

// BenchmarkMatchRaw measures the per-message cost of SQL92 filtering on pull: evaluating a > 5
// AND b = 'x' on a stored 6-property message's properties section, against the same-run
// baseline of what RocketMQ does first for every message, decoding the properties into a map.
func BenchmarkMatchRaw(b *testing.B) {
	e, err := Parse(benchSelector)
	if err != nil {
		b.Fatal(err)
	}
	props := rawProps(benchMessage)
	if !e.MatchRaw(props) {
		b.Fatal("no match")
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for i := 0; i < b.N; i++ {
		if e.MatchRaw(props) {
			n++
		}
	}
	ours := time.Since(start)
	b.StopTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		n += len(decodeProps(props))
	}
	base := time.Since(start)
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-map-decode")
	if n == 0 {
		b.Fatal("unreachable")
	}
}

// BenchmarkMatchMap measures the same selector over properties already in a map, against
// two plain map lookups of the same names (same run).
func BenchmarkMatchMap(b *testing.B) {
	e, err := Parse(benchSelector)
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]string(benchMessage)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for i := 0; i < b.N; i++ {
		if e.MatchMap(m) {
			n++
		}
	}
	ours := time.Since(start)
	b.StopTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		n += len(m["a"]) + len(m["b"])
	}
	base := time.Since(start)
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-2-lookups")
	if n == 0 {
		b.Fatal("unreachable")
	}
}

// BenchmarkParse measures compiling a selector with a range, an IN list and a CONTAINS (done
// once per subscription change, not per message).
func BenchmarkParse(b *testing.B) {
	const sel = "(a BETWEEN 1 AND 100 OR b IN ('x', 'y', 'z', 'w', 'v')) AND TAGS IS NOT NULL AND c NOT CONTAINS 'test'"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(sel); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMatchDoesNotAllocate guards the hot path: evaluating a stored message or a map
// allocates nothing.
func TestMatchDoesNotAllocate(t *testing.T) {
	for _, sel := range []string{
		benchSelector,
		"a BETWEEN 1 AND 10 AND b IN ('x', 'y', 'z', 'w', 'v', 'u') AND TAGS NOT CONTAINS 'B'",
		"a > 5.5 OR b IS NULL OR KEYS STARTSWITH 'order-' OR -a < 0 OR NOT (WAIT = TRUE)",
	} {
		e, err := Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		props := rawProps(benchMessage)
		m := map[string]string(benchMessage)
		if n := testing.AllocsPerRun(100, func() { e.MatchRaw(props) }); n != 0 {
			t.Errorf("MatchRaw(%q): %v allocations", sel, n)
		}
		if n := testing.AllocsPerRun(100, func() { e.MatchMap(m) }); n != 0 {
			t.Errorf("MatchMap(%q): %v allocations", sel, n)
		}
	}
}

// TestConcurrentEval: one Expr serves many goroutines (the broker shares a subscription's
// compiled expression across pulls); run with -race.
func TestConcurrentEval(t *testing.T) {
	var terms []string
	for i := 0; i < 2*inlineSlots; i++ { // past the inline slots: the pooled path too
		terms = append(terms, "p"+strconv.Itoa(i)+" IS NULL")
	}
	for _, sel := range []string{benchSelector, strings.Join(terms, " OR ")} {
		e, err := Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		want := e.EvalRaw(rawProps(benchMessage))
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					if r := e.EvalRaw(rawProps(benchMessage)); r != want {
						t.Errorf("EvalRaw %v, want %v", r, want)
						return
					}
					if r := e.EvalMap(benchMessage); r != want {
						t.Errorf("EvalMap %v, want %v", r, want)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

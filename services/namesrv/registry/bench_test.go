package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/rmqha/rmqha/tools/harness"
)

// BenchmarkRouteLookup compares a route read from the registry's cache with
// the Consul round trips the same answer costs without it (a health query
// plus a KV read), in the same run against the same agent.
func BenchmarkRouteLookup(b *testing.B) {
	c := harness.StartConsulT(b)
	cl, err := discovery.NewClient(c.HTTPAddr())
	if err != nil {
		b.Fatal(err)
	}
	cfg := registry.DefaultConsulConfig()
	cfg.Client, cfg.TCPInterval = cl, 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := registry.NewConsul(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for i, name := range []string{"b1", "b2", "b3"} {
		if _, err := r.Register(reg(name, 0, harness.Addr(20000+i), 0, 0, "T", "U"), time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	var uncached time.Duration
	const n = 200
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, _, err := discovery.Healthy(context.Background(), cl, nil); err != nil {
			b.Fatal(err)
		}
		if _, _, err := cl.KV().List(discovery.KVTopicsPrefix, nil); err != nil {
			b.Fatal(err)
		}
	}
	uncached = time.Since(start) / n
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := r.Route("T"); !ok {
			b.Fatal("no route")
		}
	}
	b.StopTimer()
	cached := time.Duration(int64(b.Elapsed()) / int64(b.N))
	b.ReportMetric(float64(uncached.Microseconds()), "uncached-µs/op")
	b.ReportMetric(float64(uncached)/float64(cached), "x-faster-than-uncached")
}

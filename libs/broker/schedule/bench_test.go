package schedule

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// BenchmarkDeliver measures how fast one level drains a backlog of due
// messages into their real topic (read schedule unit and record, restore,
// Put = store Append, offset update), against the same run's baseline: the
// bare Append of the same restored messages into a fresh store, which is the
// least any delivery costs.
func BenchmarkDeliver(b *testing.B) {
	levels, err := ParseLevels("1ms")
	if err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 1)

	// Baseline: append n messages of the same shape.
	base := openEnv(b, b.TempDir(), levels, &recorder{})
	msgs := make([]*commitlog.Message, n)
	for i := range msgs {
		s := fmt.Sprintf("b%d", i)
		msgs[i] = &commitlog.Message{Topic: "BenchTopic", Body: []byte("body-" + s),
			Properties:    string(commitlog.AppendProperties(nil, map[string]string{"KEYS": s, "TAGS": "tagA", "UNIQ_KEY": "U" + s, "REAL_TOPIC": "BenchTopic", "REAL_QID": "0"})),
			BornTimestamp: 1, BornHost: bornHost}
	}
	t0 := time.Now()
	for _, m := range msgs {
		if _, err := base.store.Append(m); err != nil {
			b.Fatal(err)
		}
	}
	baseline := time.Since(t0)
	base.close()

	e := openEnv(b, b.TempDir(), levels, &recorder{})
	defer e.close()
	for i := 0; i < n; i++ {
		e.send("BenchTopic", 0, 1, fmt.Sprintf("d%d", i))
	}
	if err := e.store.WaitDispatched(e.store.MaxOffset(), time.Now().Add(time.Minute)); err != nil {
		b.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // every message due
	cfg := DefaultConfig()
	cfg.Levels = levels
	cfg.PersistInterval = time.Second
	put := &appendPutter{store: e.store}
	svc, err := New(cfg, e.store, e.tables.Delay, put)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	t1 := time.Now()
	if err := svc.Start(); err != nil {
		b.Fatal(err)
	}
	for put.n.Load() < int64(n) {
		time.Sleep(200 * time.Microsecond)
	}
	took := time.Since(t1)
	b.StopTimer()
	_ = svc.Stop()
	rate := float64(n) / took.Seconds()
	baseRate := float64(n) / baseline.Seconds()
	b.ReportMetric(rate, "deliveries/s")
	b.ReportMetric(baseRate, "baseline_appends/s")
	b.ReportMetric(rate/baseRate, "x_append_rate")
}

// appendPutter is the broker's Put at its leanest: one store Append.
type appendPutter struct {
	store *commitlog.Store
	n     atomic.Int64
}

func (p *appendPutter) Put(m *commitlog.Message) error {
	if _, err := p.store.Append(m); err != nil {
		return err
	}
	p.n.Add(1)
	return nil
}

package brokerstats

import (
	"github.com/rmqha/rmqha/libs/route"
)

// rateSpans are the spans, in 1 s samples, of the runtime-info rates (RocketMQ's
// StoreStatsService: over the last 10 s, minute and 10 min).
var rateSpans = [3]int{10, 60, 600}

const rateSamples = 601

type rateSample struct {
	at                            int64 // unix ms
	put, found, miss, transferred int64
}

// rates keeps the last 601 one-second samples of the broker totals.
type rates struct {
	buf  [rateSamples]rateSample
	head int
	n    int
}

func (r *rates) push(s rateSample) {
	if r.n < rateSamples {
		r.buf[(r.head+r.n)%rateSamples] = s
		r.n++
		return
	}
	r.buf[r.head] = s
	r.head = (r.head + 1) % rateSamples
}

// at is the i-th sample from the oldest.
func (r *rates) at(i int) rateSample { return r.buf[(r.head+i)%rateSamples] }

// Rates are GET_BROKER_RUNTIME_INFO's rate keys, each "r10 r60 r600" as RocketMQ writes
// them: per second over the last 10 s, minute and 10 min, a span left empty until the broker
// has sampled that long.
type Rates struct {
	PutTps, GetFoundTps, GetMissTps, GetTotalTps, GetTransferredTps string
}

// Rates returns the runtime-info rates.
func (m *Manager) Rates() Rates {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &m.rates
	var out [5][]byte
	for i, span := range rateSpans {
		for k := range out {
			if i > 0 {
				out[k] = append(out[k], ' ')
			}
		}
		if r.n <= span {
			continue
		}
		first, last := r.at(r.n-1-span), r.at(r.n-1)
		d := float64(last.at - first.at)
		if d <= 0 {
			continue
		}
		tps := func(a, b int64) float64 { return float64(b-a) * 1000 / d }
		found, miss := tps(first.found, last.found), tps(first.miss, last.miss)
		out[0] = route.AppendJavaDouble(out[0], tps(first.put, last.put))
		out[1] = route.AppendJavaDouble(out[1], found)
		out[2] = route.AppendJavaDouble(out[2], miss)
		out[3] = route.AppendJavaDouble(out[3], found+miss)
		out[4] = route.AppendJavaDouble(out[4], tps(first.transferred, last.transferred))
	}
	return Rates{PutTps: string(out[0]), GetFoundTps: string(out[1]), GetMissTps: string(out[2]),
		GetTotalTps: string(out[3]), GetTransferredTps: string(out[4])}
}

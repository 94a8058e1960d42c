package brokerstats

import (
	"sync"
	"sync/atomic"
	"time"
)

// Sampling periods and ring sizes of the three windows (RocketMQ's StatsItem).
const (
	MinutePeriod = 10 * time.Second
	HourPeriod   = 10 * time.Minute
	DayPeriod    = time.Hour

	minuteSamples = 7
	hourSamples   = 7
	daySamples    = 25
)

// Snapshot is one window of an item: sum of the value between the window's first and last
// sample, tps that sum per second, avgpt that sum per request (0 without requests), times the
// requests.
type Snapshot struct {
	Sum   int64
	Tps   float64
	Avgpt float64
	Times int64
}

// sample is the item's totals at one sampling time (unix ms).
type sample struct {
	at, times, value int64
}

// ring keeps the last len(buf) samples, oldest first from head.
type ring[A ~[minuteSamples]sample | ~[daySamples]sample] struct {
	buf  A
	head int
	n    int
}

func (r *ring[A]) push(s sample) {
	c := len(r.buf)
	if r.n < c {
		r.buf[(r.head+r.n)%c] = s
		r.n++
		return
	}
	r.buf[r.head] = s
	r.head = (r.head + 1) % c
}

func (r *ring[A]) snapshot() Snapshot {
	if r.n == 0 {
		return Snapshot{}
	}
	c := len(r.buf)
	first, last := r.buf[r.head], r.buf[(r.head+r.n-1)%c]
	s := Snapshot{Sum: last.value - first.value, Times: last.times - first.times}
	if d := last.at - first.at; d > 0 {
		s.Tps = float64(s.Sum) * 1000 / float64(d)
	}
	if s.Times > 0 {
		s.Avgpt = float64(s.Sum) / float64(s.Times)
	}
	return s
}

// Item is one stats item: running totals added to by requests, and the three windows.
type Item struct {
	value atomic.Int64
	times atomic.Int64

	mu     sync.Mutex // guards the rings and the idle bookkeeping
	minute ring[[minuteSamples]sample]
	hour   ring[[hourSamples]sample]
	day    ring[[daySamples]sample]
	// lastValue, lastTimes are the totals at the previous minute sample, changed the time
	// (unix ms) they were last seen to move: the idle clock without a clock read per add.
	lastValue, lastTimes int64
	changed              int64
}

// Add adds value and times to the totals (value messages or bytes in times requests).
func (it *Item) Add(value, times int64) {
	it.value.Add(value)
	if times != 0 {
		it.times.Add(times)
	}
}

// Value is the running total of the value.
func (it *Item) Value() int64 { return it.value.Load() }

// Times is the running total of the requests.
func (it *Item) Times() int64 { return it.times.Load() }

// sampleNow is the item's totals at now.
func (it *Item) sampleNow(now int64) sample {
	return sample{at: now, times: it.times.Load(), value: it.value.Load()}
}

// sampleMinute records a minute sample; it reports whether the item has been idle (its totals
// unchanged) since before idleBefore (unix ms; 0: never idle).
func (it *Item) sampleMinute(now, idleBefore int64) (idle bool) {
	s := it.sampleNow(now)
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.minute.n == 0 {
		it.minute.push(sample{at: now - MinutePeriod.Milliseconds()})
		it.changed = now
	}
	it.minute.push(s)
	if s.value != it.lastValue || s.times != it.lastTimes {
		it.lastValue, it.lastTimes, it.changed = s.value, s.times, now
	}
	return idleBefore > 0 && it.changed < idleBefore
}

func (it *Item) sampleHour(now int64) {
	s := it.sampleNow(now)
	it.mu.Lock()
	if it.hour.n == 0 {
		it.hour.push(sample{at: now - HourPeriod.Milliseconds()})
	}
	it.hour.push(s)
	it.mu.Unlock()
}

func (it *Item) sampleDay(now int64) {
	s := it.sampleNow(now)
	it.mu.Lock()
	if it.day.n == 0 {
		it.day.push(sample{at: now - DayPeriod.Milliseconds()})
	}
	it.day.push(s)
	it.mu.Unlock()
}

// Minute is the last minute's window (the last 7 samples, 10 s apart).
func (it *Item) Minute() Snapshot {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.minute.snapshot()
}

// Hour is the last hour's window (the last 7 samples, 10 min apart).
func (it *Item) Hour() Snapshot {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.hour.snapshot()
}

// Day is the last day's window (the last 25 samples, an hour apart).
func (it *Item) Day() Snapshot {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.day.snapshot()
}

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Status names counted in Result.Statuses.
const (
	StatusOK                = "SEND_OK"
	StatusFlushDiskTimeout  = "FLUSH_DISK_TIMEOUT"
	StatusFlushSlaveTimeout = "FLUSH_SLAVE_TIMEOUT"
	StatusSlaveNotAvailable = "SLAVE_NOT_AVAILABLE"
	StatusOneway            = "ONEWAY_WRITTEN" // a oneway send has no answer
	StatusError             = "error"
)

// headerLen is the part of every body the tool reads back: run id and send time.
const headerLen = 16

// Result is what a run measured.
type Result struct {
	Config Config
	// ProduceElapsed is the time from the first send to the last answer.
	ProduceElapsed time.Duration
	// Sent counts sends that got an answer without error (or, oneway, were written).
	Sent int64
	// SendErrors counts sends that failed (timeouts, transport errors, error codes).
	SendErrors int64
	// Statuses counts each send status by RocketMQ's name, errors under "error".
	Statuses map[string]int64
	// SendLatency holds every answered send's latency, sorted.
	SendLatency []time.Duration
	// Consumed counts deliveries of this run's messages (all messages with no producers).
	Consumed int64
	// ConsumeElapsed is the time from the start to the last delivery.
	ConsumeElapsed time.Duration
	// EndToEnd holds send-to-delivery latencies of consumed messages of this run, sorted.
	EndToEnd []time.Duration
	// FirstError is the first send or consume error seen, for the report.
	FirstError string
	// CPU is the CPU time (/proc/PID/stat utime+stime) each measured process spent while
	// producing: the -cpu-pids ones, then "bench" itself.
	CPU []ProcCPU
	// Allocs counts the bench process's heap allocations while producing.
	Allocs uint64
	// Syscalls counts the bench process's read and write syscalls while producing (-1:
	// unknown, no /proc).
	Syscalls int64
	// KeyPrefix is, with -keys, what every message's KEYS key starts with; a sequence number
	// (1, 2, ...) follows.
	KeyPrefix string
}

// keyPrefix is what the KEYS of -keys start with.
func (s *stats) keyPrefix() string { return "bench-" + strconv.FormatUint(s.runID&0xffffff, 16) + "-" }

// stats is the shared state of a run.
type stats struct {
	runID      uint64
	keySeq     atomic.Uint64 // the sequence number in the message keys of -keys
	issued     atomic.Int64  // send tickets handed out
	sent       atomic.Int64
	errs       atomic.Int64
	consumed   atomic.Int64
	lastRecvNs atomic.Int64

	mu        sync.Mutex
	statuses  map[string]int64 // but StatusOK's count, in ok
	ok        int64            // answers with StatusOK: no map update per message
	lat       []time.Duration
	e2e       []time.Duration
	firstErr  string
	maxSample int
}

func newStats() *stats {
	return &stats{runID: rand.Uint64() | 1, statuses: map[string]int64{}, maxSample: 4 << 20}
}

// ticket reports whether another message may be sent (n == 0: no limit).
func (s *stats) ticket(n int) bool {
	if n == 0 {
		return true
	}
	return s.issued.Add(1) <= int64(n)
}

func (s *stats) sendDone(status string, lat time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs.Add(1)
		s.statuses[StatusError]++
		if s.firstErr == "" {
			s.firstErr = err.Error()
		}
		return
	}
	s.sent.Add(1)
	if status == StatusOK {
		s.ok++
	} else {
		s.statuses[status]++
	}
	if len(s.lat) < s.maxSample {
		s.lat = append(s.lat, lat)
	}
}

func (s *stats) noteErr(err error) {
	s.mu.Lock()
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
	s.mu.Unlock()
}

// body builds a message body: run id, send time, filler.
func (s *stats) body(size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b[0:8], s.runID)
	binary.BigEndian.PutUint64(b[8:16], uint64(time.Now().UnixNano()))
	for i := headerLen; i < size; i++ {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// received counts a delivered body when it belongs to this run (or any body when all is set).
func (s *stats) received(body []byte, all bool) {
	now := time.Now()
	mine := len(body) >= headerLen && binary.BigEndian.Uint64(body[0:8]) == s.runID
	if !mine && !all {
		return
	}
	s.consumed.Add(1)
	s.lastRecvNs.Store(now.UnixNano())
	if mine {
		sentAt := time.Unix(0, int64(binary.BigEndian.Uint64(body[8:16])))
		s.mu.Lock()
		if len(s.e2e) < s.maxSample {
			s.e2e = append(s.e2e, now.Sub(sentAt))
		}
		s.mu.Unlock()
	}
}

// producer sends until stop is closed or the tickets run out, then returns after every
// send it started was answered.
type producer interface {
	run(ctx context.Context, stop <-chan struct{}) error
	close()
}

// consumer delivers into stats until ctx ends.
type consumer interface {
	start(ctx context.Context) error
	close()
}

// Run performs one benchmark and returns what it measured. Progress lines go to out.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := cfg.TLS.ApplyFile(); err != nil {
		return nil, err
	}
	tc, err := cfg.TLS.ClientTLS()
	if err != nil {
		return nil, err
	}
	cfg.tlsClient = tc
	st := newStats()
	adm, err := newAdmin(cfg)
	if err != nil {
		return nil, err
	}
	defer adm.close()
	route, err := adm.ensureTopic(ctx, cfg.Topic, cfg.Queues)
	if err != nil {
		return nil, err
	}
	group := cfg.Group
	if group == "" {
		group = fmt.Sprintf("bench-cg-%d-%x", os.Getpid(), st.runID&0xffffff)
	}
	consumeAll := cfg.Producers == 0

	var consumers []consumer
	cctx, cancelConsumers := context.WithCancel(ctx)
	defer cancelConsumers()
	for i := 0; i < cfg.Consumers; i++ {
		var c consumer
		if cfg.Client == ClientRaw {
			c, err = newRawConsumer(cfg, adm, route, group, i, st, consumeAll)
		} else {
			c, err = newGoConsumer(cfg, group, i, st, consumeAll)
		}
		if err != nil {
			return nil, err
		}
		consumers = append(consumers, c)
		defer c.close()
	}
	for _, c := range consumers {
		if err := c.start(cctx); err != nil {
			return nil, err
		}
	}

	var producers []producer
	for i := 0; i < cfg.Producers; i++ {
		var p producer
		if cfg.Client == ClientRaw {
			p, err = newRawProducer(cfg, route, i, st)
		} else {
			p, err = newGoProducer(cfg, i, st)
		}
		if err != nil {
			return nil, err
		}
		producers = append(producers, p)
		defer p.close()
	}

	pids, _ := parsePids(cfg.CPUPids) // checked by Validate
	meter := startCPUMeter(pids)
	start := time.Now()
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopAll := func() { stopOnce.Do(func() { close(stop) }) }
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, stopAll)
		defer t.Stop()
	}
	go func() {
		select {
		case <-ctx.Done():
			stopAll()
		case <-stop:
		}
	}()
	progressDone := make(chan struct{})
	if cfg.Progress > 0 {
		go progress(out, cfg.Progress, start, st, progressDone)
	}
	defer close(progressDone)

	var wg sync.WaitGroup
	for _, p := range producers {
		wg.Add(1)
		go func(p producer) {
			defer wg.Done()
			if err := p.run(ctx, stop); err != nil {
				st.noteErr(err)
			}
		}(p)
	}
	wg.Wait()
	produceElapsed := time.Since(start)
	cpu, allocs, syscalls := meter.stop()

	// Consumers: wait for every stored message of this run, or for N (consume only), bounded.
	if len(consumers) > 0 {
		var deadline <-chan time.Time
		switch {
		case consumeAll && cfg.Duration > 0:
			deadline = time.After(cfg.Duration)
		default:
			deadline = time.After(cfg.Drain)
		}
		want := st.sent.Load()
		if consumeAll {
			want = int64(cfg.N)
		}
		tick := time.NewTicker(20 * time.Millisecond)
	wait:
		for {
			if want > 0 && st.consumed.Load() >= want {
				break
			}
			if !consumeAll && want == 0 {
				break // nothing was stored, nothing to wait for
			}
			select {
			case <-ctx.Done():
				break wait
			case <-deadline:
				break wait
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	cancelConsumers()

	st.mu.Lock()
	defer st.mu.Unlock()
	res := &Result{
		Config: cfg, ProduceElapsed: produceElapsed, Sent: st.sent.Load(), SendErrors: st.errs.Load(),
		Statuses: map[string]int64{}, SendLatency: st.lat, Consumed: st.consumed.Load(),
		EndToEnd: st.e2e, FirstError: st.firstErr, CPU: cpu, Allocs: allocs, Syscalls: syscalls,
	}
	if cfg.Keys {
		res.KeyPrefix = st.keyPrefix()
	}
	for k, v := range st.statuses {
		res.Statuses[k] = v
	}
	if st.ok > 0 {
		res.Statuses[StatusOK] = st.ok
	}
	if last := st.lastRecvNs.Load(); last > 0 {
		res.ConsumeElapsed = time.Unix(0, last).Sub(start)
	}
	// slices.Sort, not sort.Slice: a few million samples sort in a third of the time, which is
	// bench CPU that the CPU per message counts.
	slices.Sort(res.SendLatency)
	slices.Sort(res.EndToEnd)
	return res, nil
}

func progress(out io.Writer, every time.Duration, start time.Time, st *stats, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	var lastSent, lastCons int64
	last := start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			sent, cons := st.sent.Load(), st.consumed.Load()
			dt := now.Sub(last).Seconds()
			fmt.Fprintf(out, "%7.1fs  sent %9d (%8.0f/s)  errors %6d  consumed %9d (%8.0f/s)\n",
				now.Sub(start).Seconds(), sent, float64(sent-lastSent)/dt, st.errs.Load(), cons, float64(cons-lastCons)/dt)
			lastSent, lastCons, last = sent, cons, now
		}
	}
}

// Percentile returns the p-th percentile (0..100) of sorted durations, 0 when empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// SendRate returns messages/s and MB/s (10^6 bytes) of the answered sends.
func (r *Result) SendRate() (msgs, mb float64) {
	s := r.ProduceElapsed.Seconds()
	if s <= 0 {
		return 0, 0
	}
	return float64(r.Sent) / s, float64(r.Sent) * float64(r.Config.Size) / s / 1e6
}

// ConsumeRate returns messages/s and MB/s of the deliveries.
func (r *Result) ConsumeRate() (msgs, mb float64) {
	s := r.ConsumeElapsed.Seconds()
	if s <= 0 {
		return 0, 0
	}
	return float64(r.Consumed) / s, float64(r.Consumed) * float64(r.Config.Size) / s / 1e6
}

// Print writes the summary.
func (r *Result) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "client=%s mode=%s producers=%d consumers=%d size=%d topic=%s\n", c.Client, c.Mode, c.Producers, c.Consumers, c.Size, c.Topic)
	if c.Producers > 0 {
		m, mb := r.SendRate()
		fmt.Fprintf(w, "send:    %d messages in %.2fs = %.0f msg/s, %.2f MB/s\n", r.Sent, r.ProduceElapsed.Seconds(), m, mb)
		l := r.SendLatency
		fmt.Fprintf(w, "latency: p50 %v  p99 %v  p99.9 %v  max %v\n", round(Percentile(l, 50)), round(Percentile(l, 99)), round(Percentile(l, 99.9)), round(Percentile(l, 100)))
		keys := make([]string, 0, len(r.Statuses))
		for k := range r.Statuses {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%d", k, r.Statuses[k]))
		}
		fmt.Fprintf(w, "status:  %s\n", strings.Join(parts, " "))
		if n := r.Sent + r.SendErrors; n > 0 && len(r.CPU) > 0 {
			parts = parts[:0]
			for _, p := range r.CPU {
				parts = append(parts, fmt.Sprintf("%s %.2f", p.Name, float64(p.CPU.Nanoseconds())/1e3/float64(n)))
			}
			fmt.Fprintf(w, "cpu:     µs per message: %s\n", strings.Join(parts, ", "))
			sc := ""
			if r.Syscalls >= 0 {
				sc = fmt.Sprintf(", %.2f read/write syscalls per message", float64(r.Syscalls)/float64(n))
			}
			fmt.Fprintf(w, "allocs:  %.1f per message (bench)%s\n", float64(r.Allocs)/float64(n), sc)
		}
	}
	if c.Consumers > 0 {
		m, mb := r.ConsumeRate()
		fmt.Fprintf(w, "consume: %d messages in %.2fs = %.0f msg/s, %.2f MB/s\n", r.Consumed, r.ConsumeElapsed.Seconds(), m, mb)
		if e := r.EndToEnd; len(e) > 0 {
			fmt.Fprintf(w, "end-to-end: p50 %v  p99 %v  p99.9 %v\n", round(Percentile(e, 50)), round(Percentile(e, 99)), round(Percentile(e, 99.9)))
		}
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

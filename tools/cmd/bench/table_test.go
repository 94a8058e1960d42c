package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// tableSizes sizes one run of the benchmark table: the real one (make bench) and a tiny one for
// the smoke test.
type tableSizes struct {
	Run        time.Duration // length of each broker, JetStream and store run
	Reps       int           // median of Reps, interleaved with the anchor's runs
	DiskBytes  int64         // sequential write anchor: bytes written, then one fdatasync
	SyncFor    time.Duration // fdatasync anchor: how long to append + fdatasync
	TCPBytes   int64         // loopback throughput anchor: bytes through one stream
	RTTs       int           // loopback ping-pongs per RTT measurement
	Backlog    int64         // slave catch-up: bytes produced while the slave is down
	BacklogMsg int           // message size of the backlog
	R3         bool          // also measure JetStream R3 (three servers on loopback)
	Recovery   int64         // crash recovery: the CommitLog a killed store holds
}

// fullTable is what make bench measures: about two minutes of runs on 2 cores.
var fullTable = tableSizes{
	Run: 3 * time.Second, Reps: 3, DiskBytes: 256 << 20, SyncFor: 2 * time.Second, TCPBytes: 256 << 20,
	RTTs: 5000, Backlog: 256 << 20, BacklogMsg: 16 << 10, R3: true,
	Recovery: 1020 << 20, // within one 1 GiB segment, all of it validated after the crash
}

// tableRow is one goal of the performance issue: the broker's number, its anchor measured in
// the same run, the ratio, and the CPU each process spent per message.
type tableRow struct {
	Goal       string
	Value      float64
	Unit       string
	Anchor     string
	AnchorVal  float64
	AnchorUnit string
	// Ratio is Value/AnchorVal (for a latency: how many round trips a send costs).
	Ratio float64
	// CPU is µs of CPU per message of each measured process.
	CPU []procUS
	// Allocs is the bench client's heap allocations per message; negative when not measured.
	Allocs float64
	Note   string
}

type procUS struct {
	Name string
	US   float64
}

func (r tableRow) cpuString() string {
	if len(r.CPU) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(r.CPU))
	for _, p := range r.CPU {
		parts = append(parts, fmt.Sprintf("%s %.1f", p.Name, p.US))
	}
	return strings.Join(parts, ", ")
}

// printTable writes the rows as one aligned table.
func printTable(w io.Writer, rows []tableRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "goal\trmqha\tanchor (same run)\tanchor\tratio\tCPU µs/msg\tallocs/msg\tnote")
	num := func(v float64, unit string) string {
		switch {
		case math.IsNaN(v) || v == 0:
			return "n/a"
		case unit == "µs":
			return fmt.Sprintf("%.0f µs", v)
		case v >= 100:
			return fmt.Sprintf("%.0f %s", v, unit)
		}
		return fmt.Sprintf("%.2f %s", v, unit)
	}
	for _, r := range rows {
		ratio, allocs := "n/a", "-"
		if r.Ratio > 0 && !math.IsInf(r.Ratio, 0) {
			ratio = fmt.Sprintf("%.3f", r.Ratio)
		}
		if r.Allocs >= 0 {
			allocs = fmt.Sprintf("%.1f", r.Allocs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Goal, num(r.Value, r.Unit), r.Anchor, num(r.AnchorVal, r.AnchorUnit),
			ratio, r.cpuString(), allocs, r.Note)
	}
	_ = tw.Flush()
}

// sample is one measured run: its value and the CPU it cost.
type sample struct {
	val    float64
	cpu    []procUS
	allocs float64
	p99    float64 // µs, a broker run's 99th percentile send latency
}

// median returns the sample with the median value (the lower middle for an even count).
func median(s []sample) sample {
	if len(s) == 0 {
		return sample{allocs: -1}
	}
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b sample) int {
		switch {
		case a.val < b.val:
			return -1
		case a.val > b.val:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

func ratio(v, anchor float64) float64 {
	if anchor <= 0 {
		return 0
	}
	return v / anchor
}

// selfCPU is this process's CPU time so far.
func selfCPU(t testing.TB) time.Duration {
	d, err := procCPU(os.Getpid())
	require.NoError(t, err)
	return d
}

// perMsg converts the bench tool's per-process CPU into µs per message.
func perMsg(res *Result) ([]procUS, float64) {
	n := float64(res.Sent + res.SendErrors)
	if n == 0 {
		return nil, -1
	}
	out := make([]procUS, 0, len(res.CPU))
	for _, p := range res.CPU {
		out = append(out, procUS{p.Name, float64(p.CPU.Nanoseconds()) / 1e3 / n})
	}
	return out, float64(res.Allocs) / n
}

// benchTable measures every row of the table in one run and returns them in order.
func benchTable(t *testing.T, sz tableSizes) []tableRow {
	const size = 1024
	dir := t.TempDir()
	var rows, storeRows []tableRow
	logf := func(f string, args ...any) { t.Logf("table: "+f, args...) }

	// --- Store rows, beside the disk they run on. ---
	syncRate, err := fdatasyncRate(dir, sz.SyncFor, size)
	require.NoError(t, err)
	// What 64 appenders can reach at most: 64 records per fsync of 64 KiB.
	sync64Rate, err := fdatasyncRate(dir, sz.SyncFor, 64*size)
	require.NoError(t, err)
	// The write anchors run in every round, beside the store runs they are compared with, and
	// keep their files until the test ends, as the stores do: on a virtual machine whose host
	// takes freed pages back, a page the page cache takes costs a fault there unless it was
	// freed a moment ago, so a run that wrote into pages another had just freed would be
	// measured on cheaper pages than the rest.
	writeAnchor := func(kind string, rep, block int) float64 {
		d := filepath.Join(dir, fmt.Sprintf("%s-%d", kind, rep))
		require.NoError(t, os.MkdirAll(d, 0o755))
		rate, remove, err := smallWriteRate(d, sz.DiskBytes, block)
		t.Cleanup(remove)
		require.NoError(t, err)
		return rate
	}
	var diskRates, smallRates, burstRates []float64
	var asyncS, burstS, syncS, queuedS []sample
	var perFsync, queuedPerFsync []float64
	for rep := 0; rep < sz.Reps; rep++ {
		diskRates = append(diskRates, writeAnchor("dd", rep, 1<<20))
		asyncS = append(asyncS, storeAppend(t, commitlog.AsyncFlush, 1, size, sz.Run, false, nil))
		smallRates = append(smallRates, writeAnchor("writes-1k", rep, size))
		// One write per burst of 64 records, as the broker's send path writes them.
		burstRates = append(burstRates, writeAnchor("writes-64k", rep, 64*size))
		burstS = append(burstS, storeAppendBursts(t, 64, size, sz.Run))
		var mpf float64
		syncS = append(syncS, storeAppend(t, commitlog.SyncFlush, 64, size, sz.Run, false, &mpf))
		perFsync = append(perFsync, mpf)
		queuedS = append(queuedS, storeAppend(t, commitlog.SyncFlush, 64, size, sz.Run, true, &mpf))
		queuedPerFsync = append(queuedPerFsync, mpf)
	}
	mid := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[(len(v)-1)/2] }
	diskRate, smallRate, burstRate := mid(diskRates), mid(smallRates), mid(burstRates)
	logf("disk sequential write %.0f MB/s, 1 KiB writes %.0f MB/s, 64 KiB writes %.0f MB/s (medians of %v, %v, %v MB/s), fdatasync %.0f/s (1 KiB), %.0f/s (64 KiB)",
		diskRate/1e6, smallRate/1e6, burstRate/1e6, mbps(diskRates), mbps(smallRates), mbps(burstRates), syncRate, sync64Rate)
	m := median(asyncS)
	storeRows = append(storeRows, tableRow{Goal: "store append ASYNC_FLUSH 1 KiB, 1 appender (+ final flush)", Value: m.val / 1e6, Unit: "MB/s",
		Anchor: "seq write 1 MiB blocks + fdatasync", AnchorVal: diskRate / 1e6, AnchorUnit: "MB/s", Ratio: ratio(m.val, diskRate),
		CPU: m.cpu, Allocs: -1, Note: fmt.Sprintf("anchor %d MiB per round; record bytes", sz.DiskBytes>>20)})
	storeRows = append(storeRows, tableRow{Goal: "store append ASYNC_FLUSH 1 KiB, 1 appender (+ final flush)", Value: m.val / 1e6, Unit: "MB/s",
		Anchor: "seq write 1 KiB per call + fdatasync", AnchorVal: smallRate / 1e6, AnchorUnit: "MB/s", Ratio: ratio(m.val, smallRate),
		CPU: m.cpu, Allocs: -1, Note: "one appender's bytes reach the kernel before each answer: one write per record, as here"})
	m = median(burstS)
	storeRows = append(storeRows, tableRow{Goal: "store append ASYNC_FLUSH 1 KiB, bursts of 64 (AppendQueued, the broker's send path)", Value: m.val / 1e6, Unit: "MB/s",
		Anchor: "seq write 1 MiB blocks + fdatasync", AnchorVal: diskRate / 1e6, AnchorUnit: "MB/s", Ratio: ratio(m.val, diskRate),
		CPU: m.cpu, Allocs: -1, Note: "one write per burst; record bytes"})
	storeRows = append(storeRows, tableRow{Goal: "store append ASYNC_FLUSH 1 KiB, bursts of 64 (AppendQueued, the broker's send path)", Value: m.val / 1e6, Unit: "MB/s",
		Anchor: "seq write 64 KiB per call + fdatasync", AnchorVal: burstRate / 1e6, AnchorUnit: "MB/s", Ratio: ratio(m.val, burstRate),
		CPU: m.cpu, Allocs: -1, Note: "one write per burst of 64 records, as here"})
	m = median(syncS)
	storeRows = append(storeRows, tableRow{Goal: "store SYNC_FLUSH group commit, 64 appenders 1 KiB", Value: m.val, Unit: "msg/s",
		Anchor: "1 KiB write + fdatasync, one writer", AnchorVal: syncRate, AnchorUnit: "fsync/s", Ratio: ratio(m.val, syncRate),
		CPU: m.cpu, Allocs: -1, Note: fmt.Sprintf("%.1f msgs per fsync", mid(perFsync))})
	storeRows = append(storeRows, tableRow{Goal: "store SYNC_FLUSH group commit, 64 appenders 1 KiB", Value: m.val, Unit: "msg/s",
		Anchor: "64 x (64 KiB write + fdatasync)/s", AnchorVal: 64 * sync64Rate, AnchorUnit: "msg/s", Ratio: ratio(m.val, 64*sync64Rate),
		CPU: m.cpu, Allocs: -1, Note: fmt.Sprintf("the most 64 appenders can reach: every fsync carrying all of them; %.0f fsync/s of 64 KiB, %.3f of the 1 KiB rate", sync64Rate, ratio(sync64Rate, syncRate))})
	m = median(queuedS)
	const queuedGoal = "store SYNC_FLUSH group commit, 64 senders 1 KiB, the broker's path (AppendQueued + FlushQueued)"
	storeRows = append(storeRows, tableRow{Goal: queuedGoal, Value: m.val, Unit: "msg/s",
		Anchor: "1 KiB write + fdatasync, one writer", AnchorVal: syncRate, AnchorUnit: "fsync/s", Ratio: ratio(m.val, syncRate),
		CPU: m.cpu, Allocs: -1, Note: fmt.Sprintf("%.1f msgs per fsync; the flusher writes what is queued right before each fsync", mid(queuedPerFsync))})
	storeRows = append(storeRows, tableRow{Goal: queuedGoal, Value: m.val, Unit: "msg/s",
		Anchor: "64 x (64 KiB write + fdatasync)/s", AnchorVal: 64 * sync64Rate, AnchorUnit: "msg/s", Ratio: ratio(m.val, 64*sync64Rate),
		CPU: m.cpu, Allocs: -1, Note: fmt.Sprintf("50x the 1 KiB rate would be %.3f of this bound", ratio(50*syncRate, 64*sync64Rate))})
	storeRows = append(storeRows, recoveryRow(t, sz.Recovery))

	// --- Machine anchors for the broker rows. ---
	var tcp, rtt []float64
	for rep := 0; rep < sz.Reps; rep++ {
		v, err := loopbackThroughput(sz.TCPBytes)
		require.NoError(t, err)
		tcp = append(tcp, v)
		d, err := loopbackRTT(sz.RTTs)
		require.NoError(t, err)
		rtt = append(rtt, float64(d.Nanoseconds())/1e3)
	}
	slices.Sort(tcp)
	slices.Sort(rtt)
	tcpRate, rttUS := tcp[(len(tcp)-1)/2], rtt[(len(rtt)-1)/2]
	logf("loopback TCP %.0f MB/s, RTT %.1f µs", tcpRate/1e6, rttUS)
	// The SYNC row's in-process anchor, before JetStream or any group runs beside it.
	var inP50, inCPU []float64
	for rep := 0; rep < sz.Reps; rep++ {
		p, c := inProcessSyncSend(t, sz.Run)
		inP50, inCPU = append(inP50, p), append(inCPU, c)
	}
	slices.Sort(inP50)
	slices.Sort(inCPU)
	inMed, inCPUMed := inP50[(len(inP50)-1)/2], inCPU[(len(inCPU)-1)/2]
	logf("in-process SYNC send p50 %.0f µs, %.1f CPU µs per send", inMed, inCPUMed)

	js1, err := startJetStream(t.TempDir(), 1, 30*time.Second)
	require.NoError(t, err)
	defer js1.close()
	jsRun := func(f func() (int64, time.Duration, error)) sample {
		c0 := selfCPU(t)
		n, el, err := f()
		require.NoError(t, err)
		c := selfCPU(t) - c0
		return sample{val: float64(n) / el.Seconds(), cpu: []procUS{{"bench+nats", float64(c.Nanoseconds()) / 1e3 / float64(n)}}, allocs: -1}
	}
	brokerRun := func(g *e2e.Group, cfg Config) (*Result, sample) {
		cfg.Namesrv, cfg.Consumers, cfg.Progress, cfg.Size = g.NamesrvAddr, 0, 0, size
		cfg.RegistrationSecretFile = g.RegistrationSecretFile
		cfg.CPUPids = fmt.Sprintf("master=%d,slave=%d", g.Master.PID(), g.Slave.PID())
		res, err := Run(context.Background(), cfg, io.Discard)
		require.NoError(t, err)
		require.Positive(t, res.Sent, res.FirstError)
		cpu, allocs := perMsg(res)
		v, _ := res.SendRate()
		return res, sample{val: v, cpu: cpu, allocs: allocs, p99: float64(Percentile(res.SendLatency, 99).Nanoseconds()) / 1e3}
	}
	stopGroup := func(g *e2e.Group) {
		g.Master.Kill()
		g.Slave.Kill()
		g.Namesrv.Kill()
	}

	// --- ASYNC_MASTER: 64 in flight, then the slave's catch-up of a backlog. ---
	gc := e2e.DefaultGroupConfig()
	gc.MasterRole = "ASYNC_MASTER"
	gc.MappedFileSizeCommitLog = 64 << 20
	ga := e2e.StartGroup(t, gc)
	var rmq, js []sample
	for rep := 0; rep < sz.Reps; rep++ {
		cfg := DefaultConfig()
		cfg.Topic, cfg.Client, cfg.Mode, cfg.Inflight, cfg.Producers, cfg.Duration = "TableAsync", ClientRaw, ModeAsync, 64, 1, sz.Run
		_, s := brokerRun(ga, cfg)
		rmq = append(rmq, s)
		js = append(js, jsRun(func() (int64, time.Duration, error) { return js1.jsAsyncPublish(size, 64, sz.Run) }))
	}
	m, a := median(rmq), median(js)
	async64 := m
	rows = append(rows, tableRow{Goal: "ASYNC_MASTER produce 1 KiB, 64 in flight (raw frames)", Value: m.val, Unit: "msg/s",
		Anchor: "JetStream R1 PublishAsync 1 KiB, 64 pending", AnchorVal: a.val, AnchorUnit: "msg/s", Ratio: ratio(m.val, a.val),
		CPU: m.cpu, Allocs: m.allocs, Note: fmt.Sprintf("JetStream CPU %s (client and server in one process)", tableRow{CPU: a.cpu}.cpuString())})
	rows = append(rows, indexCostRow(t, ga, gc, sz, brokerRun, stopGroup))
	catchUpNet, catchUpPC := catchUp(t, ga, sz, tcpRate, "")
	stopGroup(ga)

	// --- SYNC_MASTER: one producer's latency, then rocketmq-client-go SendSync c1/c4. ---
	gs := e2e.StartGroup(t, e2e.DefaultGroupConfig())
	var p50 []sample
	for rep := 0; rep < sz.Reps; rep++ {
		cfg := DefaultConfig()
		cfg.Topic, cfg.Client, cfg.Producers, cfg.Duration = "TableSyncLat", ClientRaw, 1, sz.Run
		res, s := brokerRun(gs, cfg)
		s.val = float64(Percentile(res.SendLatency, 50).Nanoseconds()) / 1e3
		p50 = append(p50, s)
	}
	m = median(p50)
	rows = append(rows, tableRow{Goal: "SYNC_MASTER 1 producer p50 (raw frames, 1 KiB)", Value: m.val, Unit: "µs",
		Anchor: "loopback TCP ping-pong 1 KiB/64 B", AnchorVal: rttUS, AnchorUnit: "µs", Ratio: ratio(m.val, rttUS),
		CPU: m.cpu, Allocs: m.allocs, Note: "ratio = round trips per send (master, slave, back)"})
	rows = append(rows, tableRow{Goal: "SYNC_MASTER 1 producer p50 (raw frames, 1 KiB)", Value: m.val, Unit: "µs",
		Anchor: "the same send, client + master + slave in one process", AnchorVal: inMed, AnchorUnit: "µs", Ratio: ratio(m.val, inMed),
		CPU: m.cpu, Allocs: m.allocs, Note: fmt.Sprintf("goal <= 1.6; in one process %.1f CPU µs per send, against %.1f for the three processes", inCPUMed, sumCPU(m.cpu))})
	// The same 64 in flight as the first row, each send now answered once the slave has it.
	var sync64 []sample
	for rep := 0; rep < sz.Reps; rep++ {
		cfg := DefaultConfig()
		cfg.Topic, cfg.Client, cfg.Mode, cfg.Inflight, cfg.Producers, cfg.Duration = "TableSync64", ClientRaw, ModeAsync, 64, 1, sz.Run
		_, s := brokerRun(gs, cfg)
		sync64 = append(sync64, s)
	}
	m = median(sync64)
	rows = append(rows, tableRow{Goal: "SYNC_MASTER produce 1 KiB, 64 in flight (raw frames)", Value: m.val, Unit: "msg/s",
		Anchor: "ASYNC_MASTER, the same sends (first row)", AnchorVal: async64.val, AnchorUnit: "msg/s", Ratio: ratio(m.val, async64.val),
		CPU: m.cpu, Allocs: m.allocs, Note: fmt.Sprintf("goal >= 0.9 and p99 <= async p99 + 1 ms: p99 %.0f µs, async p99 %.0f µs", m.p99, async64.p99)})
	var js3 *jsCluster
	var js3Err error
	if sz.R3 {
		js3, js3Err = startJetStream(t.TempDir(), 3, 60*time.Second)
		if js3 != nil {
			defer js3.close()
		}
	}
	for _, c := range []int{1, 4} {
		var rmq, r1, r3 []sample
		for rep := 0; rep < sz.Reps; rep++ {
			cfg := DefaultConfig()
			cfg.Topic, cfg.Client, cfg.Producers, cfg.Duration = "TableSyncGo", ClientGo, c, sz.Run
			_, s := brokerRun(gs, cfg)
			rmq = append(rmq, s)
			r1 = append(r1, jsRun(func() (int64, time.Duration, error) { return js1.jsSyncPublish(size, c, sz.Run) }))
			if js3 != nil {
				r3 = append(r3, jsRun(func() (int64, time.Duration, error) { return js3.jsSyncPublish(size, c, sz.Run) }))
			}
		}
		m, a := median(rmq), median(r1)
		rows = append(rows, tableRow{Goal: fmt.Sprintf("SYNC_MASTER rocketmq-client-go SendSync c%d", c), Value: m.val, Unit: "msg/s",
			Anchor: fmt.Sprintf("JetStream R1 sync publish c%d", c), AnchorVal: a.val, AnchorUnit: "msg/s", Ratio: ratio(m.val, a.val),
			CPU: m.cpu, Allocs: m.allocs, Note: fmt.Sprintf("JetStream file store (own sync interval, as ASYNC_FLUSH); CPU %s", tableRow{CPU: a.cpu}.cpuString())})
		switch {
		case js3 != nil:
			a3 := median(r3)
			rows = append(rows, tableRow{Goal: fmt.Sprintf("SYNC_MASTER rocketmq-client-go SendSync c%d", c), Value: m.val, Unit: "msg/s",
				Anchor: fmt.Sprintf("JetStream R3 sync publish c%d", c), AnchorVal: a3.val, AnchorUnit: "msg/s", Ratio: ratio(m.val, a3.val),
				CPU: m.cpu, Allocs: m.allocs, Note: fmt.Sprintf("3 nats-servers in one process, sharing the cores with the group; JetStream CPU %s", tableRow{CPU: a3.cpu}.cpuString())})
		case sz.R3:
			rows = append(rows, tableRow{Goal: fmt.Sprintf("SYNC_MASTER rocketmq-client-go SendSync c%d", c), Value: m.val, Unit: "msg/s",
				Anchor: fmt.Sprintf("JetStream R3 sync publish c%d", c), Allocs: -1, Note: fmt.Sprintf("R3 not measured: %v", js3Err)})
		}
	}
	stopGroup(gs)
	// In the order of the performance issue: broker rows, store rows, catch-up.
	return append(append(rows, storeRows...), catchUpNet, catchUpPC)
}

// indexCostRow measures what building the message index costs the send path: keyed raw sends
// (a unique KEYS key and UNIQ_KEY each, two index entries) to ga (messageIndexEnable=true, the
// default) against the same sends to a second group of the same shape started with
// messageIndexEnable=false, interleaved, median of sz.Reps. The ratio is on/off: the goal is a
// cost of at most 5% (ratio >= 0.95).
func indexCostRow(t *testing.T, ga *e2e.Group, gc e2e.GroupConfig, sz tableSizes,
	brokerRun func(*e2e.Group, Config) (*Result, sample), stopGroup func(*e2e.Group)) tableRow {
	gc.ExtraMaster = append(slices.Clone(gc.ExtraMaster), "messageIndexEnable=false")
	gc.ExtraSlave = append(slices.Clone(gc.ExtraSlave), "messageIndexEnable=false")
	gn := e2e.StartGroup(t, gc)
	defer stopGroup(gn)
	var on, off []sample
	for rep := 0; rep < sz.Reps; rep++ {
		// Alternate which goes first: the second run meets the first one's flush and dispatch.
		order := []*e2e.Group{ga, gn}
		if rep%2 == 1 {
			order = []*e2e.Group{gn, ga}
		}
		for _, g := range order {
			cfg := DefaultConfig()
			cfg.Topic, cfg.Client, cfg.Mode, cfg.Inflight, cfg.Producers, cfg.Duration, cfg.Keys = "TableIndex", ClientRaw, ModeAsync, 64, 1, sz.Run, true
			_, s := brokerRun(g, cfg)
			if g == ga {
				on = append(on, s)
			} else {
				off = append(off, s)
			}
		}
	}
	// Each pair ran back to back: the median of the pairs' ratios shrugs off a neighbour's burst
	// that one median of each side would not.
	pairs := make([]sample, len(on))
	for i := range on {
		pairs[i] = sample{val: ratio(on[i].val, off[i].val)}
	}
	m, a, p := median(on), median(off), median(pairs)
	return tableRow{Goal: "ASYNC_MASTER produce 1 KiB keyed, 64 in flight, messageIndexEnable=true", Value: m.val, Unit: "msg/s",
		Anchor: "same sends, messageIndexEnable=false", AnchorVal: a.val, AnchorUnit: "msg/s", Ratio: ratio(m.val, a.val),
		CPU: m.cpu, Allocs: m.allocs, Note: fmt.Sprintf("index cost %.1f%%, median of paired runs %.1f%% (goal <= 5%%); KEYS + UNIQ_KEY per message; CPU without index %s",
			100*(1-ratio(m.val, a.val)), 100*(1-p.val), tableRow{CPU: a.cpu}.cpuString())}
}

// countDone counts the appends a store answered (commitlog.AppendDone), failing the test on
// an error.
type countDone struct {
	t *testing.T
	n atomic.Int64
}

func (c *countDone) Appended(_ commitlog.AppendResult, err error) {
	if err != nil {
		c.t.Error(err)
	}
	c.n.Add(1)
}

// storeAppendBursts appends size-byte messages to a fresh ASYNC_FLUSH store as the broker's
// send path does: burst messages queued (AppendQueued), then one WriteQueued, for d, plus the
// final flush. It returns record bytes/s.
func storeAppendBursts(t *testing.T, burst, size int, d time.Duration) sample {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.SegmentSize = 64 << 20
	cfg.FlushDiskType = commitlog.AsyncFlush
	s, err := commitlog.Open(cfg)
	require.NoError(t, err)
	defer s.Close()
	m := &commitlog.Message{Topic: "TableStore", Body: make([]byte, size), BornTimestamp: time.Now().UnixMilli(),
		BornHost: netip.MustParseAddrPort("127.0.0.1:5555"), Properties: "UNIQ_KEY\x01" + strings.Repeat("A", 32) + "\x02"}
	done := &countDone{t: t}
	off0 := s.MaxOffset()
	c0 := selfCPU(t)
	start := time.Now()
	queued := int64(0)
	for time.Since(start) < d {
		for i := 0; i < burst; i++ {
			m.QueueID = int32(i % 8)
			require.NoError(t, s.AppendQueued(m, done))
		}
		queued += int64(burst)
		s.WriteQueued()
	}
	require.Equal(t, queued, done.n.Load(), "every queued append answered by WriteQueued")
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(time.Minute)))
	el := time.Since(start)
	cpu := selfCPU(t) - c0
	return sample{val: float64(s.MaxOffset()-off0) / el.Seconds(),
		cpu: []procUS{{"bench", float64(cpu.Nanoseconds()) / 1e3 / float64(max(queued, 1))}}, allocs: -1}
}

// mbps rounds byte rates to MB/s, for a log line.
func mbps(v []float64) []int {
	out := make([]int, len(v))
	for i, r := range v {
		out[i] = int(r/1e6 + 0.5)
	}
	return out
}

// flushWaiter registers its record's flush wait from the write's callback, as the broker's
// answer does, and hands the wait to its sender.
type flushWaiter struct {
	s  *commitlog.Store
	ch chan (<-chan error)
}

func (f *flushWaiter) Appended(res commitlog.AppendResult, err error) {
	if err != nil {
		c := make(chan error, 1)
		c <- err
		f.ch <- c
		return
	}
	f.ch <- f.s.WaitFlush(res.EndOffset, time.Now().Add(time.Minute))
}

// storeAppend appends size-byte messages to a fresh libs/commitlog store from workers
// goroutines for d. ASYNC_FLUSH counts the final flush in the time; SYNC_FLUSH waits for each
// append's flush (group commit joins concurrent ones). With queued (SYNC_FLUSH), each sender
// goes the broker's way instead: it queues its message (AppendQueued), ends its burst with
// FlushQueued and waits for the fsync its record's callback asked for. It returns record
// bytes/s (ASYNC_FLUSH) or messages/s (SYNC_FLUSH), and with perFsync set, messages per fsync.
func storeAppend(t *testing.T, mode commitlog.FlushDiskType, workers, size int, d time.Duration, queued bool, perFsync *float64) sample {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.SegmentSize = 64 << 20
	cfg.FlushDiskType = mode
	s, err := commitlog.Open(cfg)
	require.NoError(t, err)
	defer s.Close()
	body := make([]byte, size)
	fs0, off0 := s.Stats().Fsyncs, s.MaxOffset()
	var n atomic.Int64
	var wg sync.WaitGroup
	c0 := selfCPU(t)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			m := &commitlog.Message{Topic: "TableStore", QueueID: int32(w % 8), Body: body, BornTimestamp: time.Now().UnixMilli(),
				BornHost: netip.MustParseAddrPort("127.0.0.1:5555"), Properties: "UNIQ_KEY\x01" + strings.Repeat("A", 32) + "\x02"}
			fw := &flushWaiter{s: s, ch: make(chan (<-chan error), 1)}
			for time.Since(start) < d {
				var wait <-chan error
				if queued {
					if err := s.AppendQueued(m, fw); err != nil {
						t.Error(err)
						return
					}
					s.FlushQueued()
					wait = <-fw.ch
				} else {
					r, err := s.Append(m)
					if err != nil {
						t.Error(err)
						return
					}
					if mode == commitlog.SyncFlush {
						wait = s.WaitFlush(r.EndOffset, time.Now().Add(time.Minute))
					}
				}
				if wait != nil {
					if err := <-wait; err != nil {
						t.Error(err)
						return
					}
				}
				n.Add(1)
			}
		}(w)
	}
	wg.Wait()
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(time.Minute)))
	el := time.Since(start)
	cpu := selfCPU(t) - c0
	msgs := float64(max(n.Load(), 1))
	out := sample{cpu: []procUS{{"bench", float64(cpu.Nanoseconds()) / 1e3 / msgs}}, allocs: -1}
	if mode == commitlog.SyncFlush {
		out.val = msgs / el.Seconds()
	} else {
		out.val = float64(s.MaxOffset()-off0) / el.Seconds()
	}
	if perFsync != nil {
		*perFsync = msgs / float64(max(s.Stats().Fsyncs-fs0, 1))
	}
	return out
}

// catchUp stops the group's slave, produces sz.Backlog bytes to the master, restarts the slave
// and times it until it holds everything the master has: replication bytes/s against one
// loopback TCP stream, and (the second row) against a first write of as many bytes into a new
// file's page cache, measured right after it: the slave must put every byte it receives there.
// The time includes the slave's own start (store recovery, reconnect); the note splits it into
// the restart (until the slave's status port answers), the wait for the first replicated byte
// and the transfer. With a non-empty prof (both brokers started with
// httpPprofEnable=true), it also saves CPU profiles of the slave and the master taken during the
// catch-up as prof.slave.cpu.pprof and prof.master.cpu.pprof.
func catchUp(t *testing.T, g *e2e.Group, sz tableSizes, tcpRate float64, prof string) (tableRow, tableRow) {
	g.WaitSlaveCaughtUp(t)
	before, err := g.SlaveStatus()
	require.NoError(t, err)
	require.NoError(t, g.Slave.Stop(30*time.Second))
	cfg := DefaultConfig()
	n := int(max(sz.Backlog/int64(sz.BacklogMsg), 1))
	cfg.Namesrv, cfg.Topic, cfg.Client, cfg.Mode, cfg.Inflight = g.NamesrvAddr, "TableBacklog", ClientRaw, ModeAsync, 16
	cfg.RegistrationSecretFile = g.RegistrationSecretFile
	cfg.Size, cfg.N, cfg.Duration, cfg.Producers, cfg.Consumers, cfg.Progress = sz.BacklogMsg, n, 0, 1, 0, 0
	res, err := Run(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	require.EqualValues(t, n, res.Sent, res.FirstError)
	target, err := g.MasterStatus()
	require.NoError(t, err)
	backlog := target.MaxOffset - before.MaxOffset
	m0, err := procCPU(g.Master.PID())
	require.NoError(t, err)
	var profDone []func()
	if prof != "" {
		profDone = append(profDone, cpuProfile(t, g.MasterHTTP, prof+".master.cpu.pprof", 3))
	}
	start := time.Now()
	require.NoError(t, g.Slave.Restart())
	// A fixed 5 ms poll, not harness.Eventually's growing one (up to 200 ms), which would
	// add as much to a catch-up that takes well under a second.
	deadline := time.Now().Add(5 * time.Minute)
	var up, first time.Duration
	var openFsyncs, openFsyncSecs float64
	var startCPU time.Duration
	for {
		s, err := g.SlaveStatus()
		if err == nil && up == 0 {
			up = time.Since(start)
			// What the store's fsyncs took so far (almost all of them the open's), and the
			// CPU the start took: a slow start that used little of it waited.
			openFsyncs, openFsyncSecs = fsyncMetrics(g.SlaveHTTP)
			startCPU, _ = procCPU(g.Slave.PID())
			if prof != "" {
				profDone = append(profDone, cpuProfile(t, g.SlaveHTTP, prof+".slave.cpu.pprof", 3))
			}
		}
		if err == nil && first == 0 && s.MaxOffset > before.MaxOffset {
			first = time.Since(start)
		}
		if err == nil && s.MaxOffset >= target.MaxOffset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slave not caught up within 5m: %+v %v", s, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(start)
	for _, done := range profDone {
		done()
	}
	m1, err := procCPU(g.Master.PID())
	require.NoError(t, err)
	sl, err := procCPU(g.Slave.PID())
	require.NoError(t, err)
	rate := float64(backlog) / el.Seconds()
	// The file stays until the test ends: see pageCacheWrite.
	pcFirst, pcAgain, remove, err := pageCacheWrite(t.TempDir(), max(backlog>>20, 1)<<20)
	t.Cleanup(remove)
	require.NoError(t, err)
	cpu := []procUS{{"master", float64((m1 - m0).Nanoseconds()) / 1e3 / float64(n)}, {"slave", float64(sl.Nanoseconds()) / 1e3 / float64(n)}}
	goal := fmt.Sprintf("slave catch-up of a %d MiB backlog (%d KiB messages)", backlog>>20, sz.BacklogMsg>>10)
	netRow := tableRow{Goal: goal, Value: rate / 1e6, Unit: "MB/s", Anchor: "loopback TCP, one stream", AnchorVal: tcpRate / 1e6, AnchorUnit: "MB/s",
		Ratio: ratio(rate, tcpRate), Allocs: -1, CPU: cpu,
		Note: fmt.Sprintf("one run, %.2fs from slave restart: status port up %.0f ms, first byte %.0f ms; CPU per backlog message",
			el.Seconds(), float64(up.Microseconds())/1e3, float64(first.Microseconds())/1e3)}
	transfer := el - first
	// Where the restart went, from the restarted slave's own lines.
	slaveLog := g.Slave.LogTail(1 << 20)
	rec := func(field string) string { return lastLogField(slaveLog, "commitlog recovered", field) }
	netRow.Note += fmt.Sprintf(" (slave: store open %s ms [%s], clean=%s, %s bytes validated, dispatch again from %s and index from %s of %s; broker start %s ms; %.0f ms CPU and %.0f fsyncs taking %.0f ms by then)",
		rec("took_ms"), rec("phases_ms"), rec("clean"), rec("scanned_bytes"), rec("redispatch_from"), rec("index_from"), rec("max_offset"),
		lastLogField(slaveLog, "broker started", "startMs"),
		float64(startCPU.Microseconds())/1e3, openFsyncs, openFsyncSecs*1e3)
	pc := tableRow{Goal: goal, Value: rate / 1e6, Unit: "MB/s", Anchor: "first write of as many bytes to a new file", AnchorVal: pcFirst / 1e6, AnchorUnit: "MB/s",
		Ratio: ratio(rate, pcFirst), Allocs: -1, CPU: cpu,
		Note: fmt.Sprintf("1 MiB writes, no sync; the same writes into cached pages %.0f MB/s; from the first byte on, the catch-up ran at %.0f MB/s (%.3f of the first write)",
			pcAgain/1e6, float64(backlog)/transfer.Seconds()/1e6, ratio(float64(backlog)/transfer.Seconds(), pcFirst))}
	return netRow, pc
}

// fsyncMetrics returns the count and the seconds of a broker's store fsyncs so far, from its
// /metrics (0, 0 when it cannot be read).
func fsyncMetrics(statusAddr string) (count, secs float64) {
	m, err := harness.Metrics(statusAddr)
	if err != nil {
		return 0, 0
	}
	return m["rmqha_broker_store_fsync_seconds_count"], m["rmqha_broker_store_fsync_seconds_sum"]
}

// sumCPU adds the CPU µs per message of every process.
func sumCPU(cpu []procUS) float64 {
	var n float64
	for _, c := range cpu {
		n += c.US
	}
	return n
}

// lastLogField returns field's value in the last line of log that holds msg, in logrus's text
// (field=value) or JSON ("field":value) form; "?" when there is none.
func lastLogField(log, msg, field string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.Contains(l, msg) {
			continue
		}
		for _, key := range []string{" " + field + "=", `"` + field + `":`} {
			if _, v, ok := strings.Cut(l, key); ok {
				if end := strings.IndexAny(v, " ,}"); end >= 0 {
					v = v[:end]
				}
				return strings.Trim(v, `"`)
			}
		}
	}
	return "?"
}

// TestBenchTable prints the performance issue's goals as one table, each beside its anchor
// measured in the same run (make bench). It takes a few minutes, so it runs only with
// RMQHA_BENCH=1.
func TestBenchTable(t *testing.T) {
	if os.Getenv("RMQHA_BENCH") == "" {
		t.Skip("set RMQHA_BENCH=1 to run the benchmark table")
	}
	rows := benchTable(t, fullTable)
	var out strings.Builder
	printTable(&out, rows)
	fmt.Print("\n" + out.String() + "\n")
}

// TestIndexCostBench prints only the table's message-index row (make bench prints it with the
// others): keyed sends with messageIndexEnable on against off, interleaved, median of 3.
func TestIndexCostBench(t *testing.T) {
	if os.Getenv("RMQHA_BENCH") == "" {
		t.Skip("set RMQHA_BENCH=1 to run the index cost benchmark")
	}
	gc := e2e.DefaultGroupConfig()
	gc.MasterRole = "ASYNC_MASTER"
	gc.MappedFileSizeCommitLog = 64 << 20
	ga := e2e.StartGroup(t, gc)
	stopGroup := func(g *e2e.Group) {
		g.Master.Kill()
		g.Slave.Kill()
		g.Namesrv.Kill()
	}
	defer stopGroup(ga)
	brokerRun := func(g *e2e.Group, cfg Config) (*Result, sample) {
		cfg.Namesrv, cfg.Consumers, cfg.Progress = g.NamesrvAddr, 0, 0
		cfg.RegistrationSecretFile = g.RegistrationSecretFile
		cfg.CPUPids = fmt.Sprintf("master=%d,slave=%d", g.Master.PID(), g.Slave.PID())
		res, err := Run(context.Background(), cfg, io.Discard)
		require.NoError(t, err)
		require.Positive(t, res.Sent, res.FirstError)
		cpu, allocs := perMsg(res)
		v, _ := res.SendRate()
		t.Logf("master %s (index %v): %.0f msg/s", g.MasterAddr, g == ga, v)
		return res, sample{val: v, cpu: cpu, allocs: allocs}
	}
	row := indexCostRow(t, ga, gc, fullTable, brokerRun, stopGroup)
	var out strings.Builder
	printTable(&out, []tableRow{row})
	fmt.Print("\n" + out.String() + "\n")
}

// TestBenchTableSmoke runs the table code with tiny sizes and checks that every row has a value
// and a ratio against its anchor (never how fast anything is).
func TestBenchTableSmoke(t *testing.T) {
	sz := tableSizes{Run: 300 * time.Millisecond, Reps: 1, DiskBytes: 4 << 20, SyncFor: 100 * time.Millisecond,
		TCPBytes: 8 << 20, RTTs: 100, Backlog: 2 << 20, BacklogMsg: 16 << 10, R3: os.Getenv("RMQHA_TABLE_R3") != "",
		Recovery: 8 << 20}
	rows := benchTable(t, sz)
	var out strings.Builder
	printTable(&out, rows)
	t.Log("\n" + out.String())
	require.GreaterOrEqual(t, len(rows), 8)
	goals := make([]string, 0, len(rows))
	for _, r := range rows {
		goals = append(goals, r.Goal)
	}
	require.Contains(t, goals, "SYNC_MASTER produce 1 KiB, 64 in flight (raw frames)")
	for _, r := range rows {
		require.NotEmpty(t, r.Goal)
		require.Positive(t, r.Value, r.Goal)
		if sz.R3 || !strings.Contains(r.Anchor, "R3") {
			require.Positive(t, r.AnchorVal, r.Goal)
			require.Positive(t, r.Ratio, r.Goal)
			require.NotEmpty(t, r.CPU, r.Goal)
		}
		require.Contains(t, out.String(), r.Goal)
	}
}

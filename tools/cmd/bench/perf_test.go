package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// procSample is what /proc says about one process: CPU time (utime+stime) and the read and
// write syscalls it made (/proc/PID/io syscr+syscw; reads are syscr alone).
type procSample struct {
	cpu      time.Duration
	syscalls int64
	reads    int64
}

func sampleProc(pid int) (procSample, error) {
	var s procSample
	var err error
	if s.cpu, err = procCPU(pid); err != nil {
		return s, err
	}
	if io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(io), "\n") {
			k, v, ok := strings.Cut(line, ": ")
			if ok && (k == "syscr" || k == "syscw") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				s.syscalls += n
				if k == "syscr" {
					s.reads = n
				}
			}
		}
	}
	return s, nil
}

var (
	sentRE    = regexp.MustCompile(`send:\s+(\d+) messages in ([0-9.]+)s`)
	latencyRE = regexp.MustCompile(`latency: p50 (\S+)\s+p99 (\S+)`)
)

// perfRun is one bench run against one build's group.
type perfRun struct {
	rate              float64 // msg/s
	masterUS, slaveUS float64 // CPU µs per message
	benchUS           float64
	masterSys         float64 // read+write syscalls per message on the master
	masterReads       float64 // of which reads
	slaveSys          float64 // read+write syscalls per message on the slave
	p50, p99          float64 // send latency, µs
	line              string  // the bench's own cpu/alloc line, when it prints one
}

// TestPerfCompare runs the bench binary of two builds against groups of their own binaries in
// the same run (interleaved, median of 3) and prints msg/s, send latency p50/p99 and CPU µs per
// message of the master, the slave and the bench process, and read/write syscalls per message
// of the master (master_sc, master_rd the reads) and the slave (slave_sc). It runs only when RMQHA_PERF_BINS
// names the builds, e.g. RMQHA_PERF_BINS=base=/tmp/bin-main,new=$PWD/bin; RMQHA_PERF_SECONDS
// sets each run's length. RMQHA_PERF_CATCHUP=MiB also times each ASYNC_MASTER group's slave
// catching up a backlog of that size (interleaved, median of 3), beside one loopback TCP
// stream measured between the runs. RMQHA_PERF_PROFILE=DIR also turns on httpPprofEnable on
// the masters and slaves and saves, for each build and setting, a CPU and an allocation profile
// of the master taken during the first run (DIR/ROLE-SETTING-LABEL.cpu.pprof, and
// .allocs-before.pprof and .allocs.pprof to read with pprof -base for the allocations of the
// run alone), the same of the slave (DIR/ROLE-SETTING-LABEL.slave.cpu.pprof, ...), and a CPU
// profile of the bench process itself (DIR/ROLE-SETTING-LABEL.bench.cpu.pprof) when its build
// has -cpuprofile.
func TestPerfCompare(t *testing.T) {
	spec := os.Getenv("RMQHA_PERF_BINS")
	if spec == "" {
		t.Skip("set RMQHA_PERF_BINS=label=dir,label=dir to compare builds")
	}
	type build struct{ label, dir string }
	var builds []build
	for _, part := range strings.Split(spec, ",") {
		l, d, ok := strings.Cut(part, "=")
		require.True(t, ok, "RMQHA_PERF_BINS part %q is not label=dir", part)
		builds = append(builds, build{l, d})
	}
	secs := 4
	if v := os.Getenv("RMQHA_PERF_SECONDS"); v != "" {
		secs, _ = strconv.Atoi(v)
	}
	profDir := os.Getenv("RMQHA_PERF_PROFILE")
	roles := []string{"ASYNC_MASTER", "SYNC_MASTER"}
	if v := os.Getenv("RMQHA_PERF_ROLES"); v != "" {
		roles = strings.Split(v, ",")
	}
	settings := []struct {
		name string
		args []string
	}{
		{"inflight=64", []string{"-producers", "1", "-mode", "async", "-inflight", "64"}},
		{"inflight=1", []string{"-producers", "1", "-mode", "sync"}},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%-12s %-11s %-6s %9s %9s %9s %10s %10s %10s %10s %10s %10s\n", "role", "setting", "build", "msg/s", "p50_us", "p99_us", "master_us", "slave_us", "bench_us", "master_sc", "master_rd", "slave_sc")
	for _, role := range roles {
		groups := make([]*e2e.Group, len(builds))
		for i, b := range builds {
			gc := e2e.DefaultGroupConfig()
			gc.MasterRole = role
			gc.MappedFileSizeCommitLog = 256 << 20
			gc.BinDir = b.dir
			if profDir != "" {
				gc.ExtraMaster = append(gc.ExtraMaster, "httpPprofEnable=true")
				gc.ExtraSlave = append(gc.ExtraSlave, "httpPprofEnable=true")
			}
			groups[i] = e2e.StartGroup(t, gc)
		}
		for _, st := range settings {
			runs := make([][]perfRun, len(builds))
			for rep := 0; rep < 3; rep++ {
				for i, b := range builds {
					g := groups[i]
					args := append([]string{"-namesrv", g.NamesrvAddr, "-topic", "PerfTopic", "-size", "1024", "-client", "raw",
						"-consumers", "0", "-progress", "0", "-duration", fmt.Sprintf("%ds", secs)}, st.args...)
					bin := filepath.Join(b.dir, "bench")
					if benchHasFlag(bin, "registrationSecretFile") {
						args = append(args, "-registrationSecretFile", g.RegistrationSecretFile)
					}
					if benchHasFlag(bin, "cpu-pids") {
						args = append(args, "-cpu-pids", fmt.Sprintf("master=%d,slave=%d", g.Master.PID(), g.Slave.PID()))
					}
					var profs []func()
					if profDir != "" && rep == 0 && benchHasFlag(bin, "cpuprofile") {
						args = append(args, "-cpuprofile", filepath.Join(profDir, fmt.Sprintf("%s-%s-%s.bench.cpu.pprof", role, st.name, b.label)))
					}
					if profDir != "" && rep == 0 {
						prefix := filepath.Join(profDir, fmt.Sprintf("%s-%s-%s", role, st.name, b.label))
						profs = append(profs, startProfile(t, g.MasterHTTP, prefix, secs),
							startProfile(t, g.SlaveHTTP, prefix+".slave", secs))
					}
					runs[i] = append(runs[i], perfOnce(t, bin, args, g.Master, g.Slave))
					for _, prof := range profs {
						prof()
					}
				}
			}
			for i, b := range builds {
				med := func(f func(perfRun) float64) float64 {
					v := make([]float64, 0, 3)
					for _, r := range runs[i] {
						v = append(v, f(r))
					}
					slices.Sort(v)
					return v[len(v)/2]
				}
				fmt.Fprintf(&report, "%-12s %-11s %-6s %9.0f %9.0f %9.0f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f  %s\n", role, st.name, b.label,
					med(func(r perfRun) float64 { return r.rate }), med(func(r perfRun) float64 { return r.p50 }),
					med(func(r perfRun) float64 { return r.p99 }), med(func(r perfRun) float64 { return r.masterUS }),
					med(func(r perfRun) float64 { return r.slaveUS }), med(func(r perfRun) float64 { return r.benchUS }),
					med(func(r perfRun) float64 { return r.masterSys }), med(func(r perfRun) float64 { return r.masterReads }),
					med(func(r perfRun) float64 { return r.slaveSys }),
					runs[i][len(runs[i])-1].line)
			}
		}
		if mib, _ := strconv.Atoi(os.Getenv("RMQHA_PERF_CATCHUP")); mib > 0 && role == "ASYNC_MASTER" {
			perfCatchUp(t, &report, groups, func(i int) string { return builds[i].label }, int64(mib)<<20, profDir)
		}
		for _, g := range groups {
			g.Master.Kill()
			g.Slave.Kill()
			g.Namesrv.Kill()
		}
	}
	t.Log("\n" + report.String())
}

// benchHasFlag reports whether a bench binary knows -name (older builds do not).
func benchHasFlag(bin, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	return bytes.Contains(out, []byte("-"+name))
}

func perfOnce(t *testing.T, bin string, args []string, master, slave *harness.Process) perfRun {
	t.Helper()
	m0, err := sampleProc(master.PID())
	require.NoError(t, err)
	s0, err := sampleProc(slave.PID())
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), out.String())
	m1, err := sampleProc(master.PID())
	require.NoError(t, err)
	s1, err := sampleProc(slave.PID())
	require.NoError(t, err)
	sm := sentRE.FindStringSubmatch(out.String())
	require.NotNil(t, sm, out.String())
	n, _ := strconv.ParseFloat(sm[1], 64)
	secs, _ := strconv.ParseFloat(sm[2], 64)
	require.Positive(t, n, out.String())
	r := perfRun{
		rate:        n / secs,
		masterUS:    float64((m1.cpu - m0.cpu).Microseconds()) / n,
		slaveUS:     float64((s1.cpu - s0.cpu).Microseconds()) / n,
		benchUS:     float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()) / n,
		masterSys:   float64(m1.syscalls-m0.syscalls) / n,
		masterReads: float64(m1.reads-m0.reads) / n,
		slaveSys:    float64(s1.syscalls-s0.syscalls) / n,
	}
	if lm := latencyRE.FindStringSubmatch(out.String()); lm != nil {
		for i, v := range []*float64{&r.p50, &r.p99} {
			if d, err := time.ParseDuration(lm[i+1]); err == nil {
				*v = float64(d.Nanoseconds()) / 1e3
			}
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "allocs:") {
			r.line = strings.Join(strings.Fields(line), " ")
		}
	}
	return r
}

// startProfile starts a CPU profile of secs-1 seconds on a broker's status port, with its
// allocation counts read before; the returned function waits for the profile and saves it
// with the allocation counts before and after.
func startProfile(t *testing.T, statusAddr, prefix string, secs int) func() {
	t.Helper()
	get := func(path string) ([]byte, error) {
		resp, err := http.Get("http://" + statusAddr + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", path, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
	before, err := get("/debug/pprof/allocs")
	require.NoError(t, err)
	done := make(chan []byte, 1)
	go func() {
		cpu, err := get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(secs-1, 1)))
		if err != nil {
			t.Logf("cpu profile of %s: %v", statusAddr, err)
		}
		done <- cpu
	}()
	return func() {
		cpu := <-done
		after, err := get("/debug/pprof/allocs")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(prefix+".cpu.pprof", cpu, 0o644))
		require.NoError(t, os.WriteFile(prefix+".allocs-before.pprof", before, 0o644))
		require.NoError(t, os.WriteFile(prefix+".allocs.pprof", after, 0o644))
		t.Logf("profiles of %s in %s.{cpu,allocs,allocs-before}.pprof (go tool pprof -base ...allocs-before.pprof ...allocs.pprof)", statusAddr, prefix)
	}
}

// cpuProfile starts a CPU profile of secs seconds on a broker's status port; the returned
// function waits for it and saves it to path.
func cpuProfile(t *testing.T, statusAddr, path string, secs int) func() {
	t.Helper()
	done := make(chan []byte, 1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", statusAddr, secs))
		if err != nil {
			t.Logf("cpu profile of %s: %v", statusAddr, err)
			done <- nil
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Logf("cpu profile of %s: %s %v", statusAddr, resp.Status, err)
		}
		done <- b
	}()
	return func() {
		if b := <-done; len(b) > 0 {
			require.NoError(t, os.WriteFile(path, b, 0o644))
			t.Logf("CPU profile of %s during the catch-up in %s", statusAddr, path)
		}
	}
}

// perfCatchUp times each group's slave catching up a backlog of backlog bytes (catchUp, the
// table's row), interleaved across builds, median of 3, beside the loopback TCP rate measured
// before each round. With a profDir, every round saves CPU profiles of each build's slave and
// master (DIR/catchup-LABEL-ROUND.slave.cpu.pprof and .master.cpu.pprof).
func perfCatchUp(t *testing.T, report *strings.Builder, groups []*e2e.Group, label func(int) string, backlog int64, profDir string) {
	sz := tableSizes{Backlog: backlog, BacklogMsg: 16 << 10}
	rows := make([][]tableRow, len(groups))
	var tcp []float64
	for rep := 0; rep < 3; rep++ {
		v, err := loopbackThroughput(256 << 20)
		require.NoError(t, err)
		tcp = append(tcp, v)
		for i, g := range groups {
			prof := ""
			if profDir != "" {
				prof = filepath.Join(profDir, fmt.Sprintf("catchup-%s-%d", label(i), rep))
			}
			r, pc := catchUp(t, g, sz, v, prof)
			t.Logf("catch-up %s round %d: %.0f MB/s, ratio %.3f against loopback %.0f MB/s, CPU µs/msg %s (%s)", label(i), rep, r.Value, r.Ratio, v/1e6, r.cpuString(), r.Note)
			t.Logf("catch-up %s round %d: ratio %.3f against a first page-cache write of %.0f MB/s (%s)", label(i), rep, pc.Ratio, pc.AnchorVal, pc.Note)
			rows[i] = append(rows[i], r)
		}
	}
	slices.Sort(tcp)
	fmt.Fprintf(report, "catch-up of %d MiB (16 KiB messages), loopback TCP one stream %.0f MB/s (median)\n", backlog>>20, tcp[1]/1e6)
	for i, rs := range rows {
		slices.SortFunc(rs, func(a, b tableRow) int { return cmp.Compare(a.Ratio, b.Ratio) })
		m := rs[1]
		fmt.Fprintf(report, "  %-6s %8.0f MB/s  ratio %.3f  CPU µs/msg %s  (%s)\n", label(i), m.Value, m.Ratio, m.cpuString(), m.Note)
	}
}

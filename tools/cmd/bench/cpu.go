package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// namedPid is one process whose CPU time the run reports.
type namedPid struct {
	name string
	pid  int
}

// parsePids reads -cpu-pids ("name=pid,...").
func parsePids(s string) ([]namedPid, error) {
	var out []namedPid
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, v, ok := strings.Cut(part, "=")
		pid, err := strconv.Atoi(v)
		if !ok || name == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("%q is not name=pid", part)
		}
		out = append(out, namedPid{name, pid})
	}
	return out, nil
}

// userHZ is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// procCPU returns a process's CPU time so far (utime+stime of /proc/PID/stat).
func procCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Field 2, the command name, may hold spaces and parentheses: count after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// cpuMeter samples CPU time of the bench process and the named ones, and the bench's
// allocations and read/write syscalls, at the start and the end of producing.
type cpuMeter struct {
	pids     []namedPid
	start    []time.Duration // per pid; index len(pids) is the bench itself
	ok       []bool
	allocs   uint64
	syscalls int64 // -1: /proc/self/io unreadable
}

// procSyscalls returns the read and write syscalls a process made so far (syscr+syscw of
// /proc/PID/io), or -1.
func procSyscalls(pid int) int64 {
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	var n int64 = -1
	for _, line := range strings.Split(string(io), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "syscr" || k == "syscw") {
			c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			n = max(n, 0) + c
		}
	}
	return n
}

func startCPUMeter(pids []namedPid) *cpuMeter {
	m := &cpuMeter{pids: pids, start: make([]time.Duration, len(pids)+1), ok: make([]bool, len(pids)+1)}
	for i := range m.start {
		m.start[i], m.ok[i] = m.sample(i)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.allocs = ms.Mallocs
	m.syscalls = procSyscalls(os.Getpid())
	return m
}

func (m *cpuMeter) sample(i int) (time.Duration, bool) {
	pid := os.Getpid()
	if i < len(m.pids) {
		pid = m.pids[i].pid
	}
	d, err := procCPU(pid)
	return d, err == nil
}

// ProcCPU is one process's CPU time spent during producing.
type ProcCPU struct {
	Name string
	CPU  time.Duration
}

// stop returns the CPU spent by each process since the start ("bench" last), the bench's
// allocations and its read/write syscalls (-1: unknown).
func (m *cpuMeter) stop() ([]ProcCPU, uint64, int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocs := ms.Mallocs - m.allocs
	syscalls := int64(-1)
	if end := procSyscalls(os.Getpid()); end >= 0 && m.syscalls >= 0 {
		syscalls = end - m.syscalls
	}
	var out []ProcCPU
	for i := range m.start {
		end, ok := m.sample(i)
		if !ok || !m.ok[i] {
			continue
		}
		name := "bench"
		if i < len(m.pids) {
			name = m.pids[i].name
		}
		out = append(out, ProcCPU{Name: name, CPU: end - m.start[i]})
	}
	return out, allocs, syscalls
}

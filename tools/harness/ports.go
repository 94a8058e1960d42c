package harness

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports for the processes a test starts are picked before those processes bind them, so
// a pick must not be handed out again in the meantime. Two things did exactly that when
// ports came from binding port 0:
//   - the kernel may return a port this process picked a moment ago and has not yet
//     given to its owner (a Consul agent still starting, a broker not yet listening);
//   - port 0 draws from the ephemeral range, the same one every outgoing connection's
//     local port comes from, so a client's connection could take a picked port first.
//
// So ports come from below the ephemeral range, each handed out once per process, and a
// process starts at a point of the pool set by its pid, so that test binaries running side
// by side mostly walk different parts of it. Every candidate is still bound once on
// 127.0.0.1 and on the wildcard address to check nobody holds it.
const (
	portPoolLow  = 20000 // first port of the pool
	minPoolSize  = 2000  // below this the pool is not used: port 0 with in-process dedupe
	portStepSize = 127   // distance between neighbouring pids' starting points
)

var ports struct {
	mu     sync.Mutex
	inited bool
	lo, hi int // pool [lo, hi); hi == 0: no pool
	next   int
	given  map[int]bool
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 if unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 0 {
				return v
			}
		}
	}
	return 32768
}

func initPortsLocked() {
	ports.inited = true
	ports.given = make(map[int]bool)
	if hi := ephemeralLow(); hi-portPoolLow >= minPoolSize {
		ports.lo, ports.hi = portPoolLow, hi
		ports.next = ports.lo + (os.Getpid()*portStepSize)%(hi-portPoolLow)
	}
}

// portFree reports whether p can be bound on loopback and on every interface.
func portFree(p int) bool {
	for _, host := range []string{"127.0.0.1", "0.0.0.0"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago and that this
// process has not handed out before.
func FreePort() (int, error) {
	p, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// FreePorts returns n distinct free ports, none handed out before by this process.
func FreePorts(n int) ([]int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if !ports.inited {
		initPortsLocked()
	}
	out := make([]int, 0, n)
	if ports.hi == 0 {
		return freePortsKernelLocked(out, n)
	}
	size := ports.hi - ports.lo
	for tried := 0; len(out) < n; tried++ {
		if tried >= size {
			return nil, fmt.Errorf("harness: no free port left in [%d, %d)", ports.lo, ports.hi)
		}
		p := ports.next
		ports.next++
		if ports.next >= ports.hi {
			ports.next = ports.lo
		}
		if ports.given[p] || !portFree(p) {
			continue
		}
		ports.given[p] = true
		out = append(out, p)
	}
	return out, nil
}

// freePortsKernelLocked picks ports by binding port 0, skipping any handed out before.
func freePortsKernelLocked(out []int, n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for len(out) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		p := ln.Addr().(*net.TCPAddr).Port
		if ports.given[p] {
			continue
		}
		ports.given[p] = true
		out = append(out, p)
	}
	return out, nil
}

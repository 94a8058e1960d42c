package harness

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"
)

// WaitFor polls cond every step until it returns nil or timeout passes, and
// returns the last error then.
func WaitFor(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	step := 10 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, err)
		}
		time.Sleep(step)
		if step < 200*time.Millisecond {
			step *= 2
		}
	}
}

// Eventually fails t when cond does not return nil within timeout.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := WaitFor(timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// MustFreePorts is FreePorts for tests.
func MustFreePorts(t testing.TB, n int) []int {
	t.Helper()
	p, err := FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// DialOK returns nil once addr accepts TCP connections.
func DialOK(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// Addr joins 127.0.0.1 and port.
func Addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

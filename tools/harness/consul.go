package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ConsulBinary finds the consul agent: $RMQHA_CONSUL_BIN, then PATH, then
// the cache scripts/deps.sh fills.
func ConsulBinary() (string, error) {
	if p := os.Getenv("RMQHA_CONSUL_BIN"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("consul"); err == nil {
		return p, nil
	}
	if p := filepath.Join(cacheDir(), "bin", "consul"); fileExists(p) {
		return p, nil
	}
	return "", errors.New("harness: no consul binary: run scripts/deps.sh (or make deps), or set RMQHA_CONSUL_BIN")
}

func cacheDir() string {
	if d := os.Getenv("RMQHA_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "rmqha")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "rmqha")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Consul is a one-node Consul server agent on loopback.
type Consul struct {
	*Process
	HTTPPort int
	dataDir  string
}

// HTTPAddr is host:port of the HTTP API, the form CONSUL_HTTP_ADDR takes.
func (c *Consul) HTTPAddr() string { return Addr(c.HTTPPort) }

// consulNode is the test agent's node name.
const consulNode = "rmqha-test"

// StartConsul starts a one-node Consul server on free loopback ports, with its
// state in dir (so a restart keeps the catalog and KV), and waits until it
// has a leader.
func StartConsul(dir string, out io.Writer) (*Consul, error) {
	bin, err := ConsulBinary()
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "consul-data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	// A one-node server rather than -dev: -dev keeps its state in memory
	// only, and the fault tests restart the agent and expect its catalog
	// and KV back, as a real deployment would.
	args := []string{"agent", "-server", "-bootstrap-expect", "1", "-node", consulNode, "-bind", "127.0.0.1", "-client", "127.0.0.1",
		"-http-port", strconv.Itoa(ports[0]), "-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1",
		"-serf-lan-port", strconv.Itoa(ports[1]), "-serf-wan-port", strconv.Itoa(ports[2]),
		"-server-port", strconv.Itoa(ports[3]), "-data-dir", data, "-log-level", "warn",
		"-hcl", "performance { raft_multiplier = 1 }", "-hcl", "disable_update_check = true"}
	p, err := StartProcess(ProcessConfig{Name: "consul", Bin: bin, Args: args, Dir: dir, Stdout: out})
	if err != nil {
		return nil, err
	}
	c := &Consul{Process: p, HTTPPort: ports[0], dataDir: data}
	if err := c.WaitReady(60 * time.Second); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%w\n%s", err, p.LogTail(4096))
	}
	return c, nil
}

// WaitReady polls /v1/status/leader until it names a leader, then the node's health until
// its serfHealth check is registered and passing: a leader alone is not enough for sessions
// (the coordinator's locks), which Consul refuses with "Missing check 'serfHealth'
// registration" until the leader has registered its own node.
func (c *Consul) WaitReady(timeout time.Duration) error {
	get := func(path string) (int, []byte, error) {
		select {
		case <-c.Done():
			return 0, nil, errors.New("consul exited")
		default:
		}
		resp, err := http.Get("http://" + c.HTTPAddr() + path)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	return WaitFor(timeout, func() error {
		code, b, err := get("/v1/status/leader")
		if err != nil {
			return err
		}
		if s := strings.Trim(strings.TrimSpace(string(b)), `"`); code != 200 || s == "" {
			return fmt.Errorf("no leader yet (%d %q)", code, b)
		}
		code, b, err = get("/v1/health/node/" + consulNode)
		if err != nil {
			return err
		}
		var checks []struct{ CheckID, Status string }
		if code != 200 || json.Unmarshal(b, &checks) != nil {
			return fmt.Errorf("node health not readable yet (%d %q)", code, b)
		}
		for _, ch := range checks {
			if ch.CheckID == "serfHealth" && ch.Status == "passing" {
				return nil
			}
		}
		return fmt.Errorf("node %s has no passing serfHealth check yet: %s", consulNode, b)
	})
}

// Stop asks the agent to leave and exit (SIGINT), waiting up to timeout.
// Consul exits non-zero after a graceful leave, so the exit status is not an
// error here.
func (c *Consul) Stop(timeout time.Duration) error {
	_ = c.signal(syscall.SIGINT)
	select {
	case <-c.Done():
		return nil
	case <-time.After(timeout):
		c.Kill()
		return fmt.Errorf("harness: consul did not stop within %s, killed", timeout)
	}
}

// RestartAndWait restarts a stopped or killed agent on the same ports.
func (c *Consul) RestartAndWait() error {
	if err := c.Restart(); err != nil {
		return err
	}
	return c.WaitReady(60 * time.Second)
}

// StartConsulT starts Consul for a test and stops it at the end.
func StartConsulT(t testing.TB) *Consul {
	t.Helper()
	c, err := StartConsul(t.TempDir(), nil)
	if err != nil {
		t.Fatalf("start consul: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("--- consul log ---\n%s", c.LogTail(4096))
		}
	})
	return c
}

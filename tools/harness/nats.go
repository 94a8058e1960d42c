package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// NATS is an in-process NATS server.
type NATS struct {
	*natsserver.Server
	Port int
}

// URL is the client URL.
func (n *NATS) URL() string { return "nats://" + Addr(n.Port) }

// StartNATS starts an embedded NATS server on a free loopback port (port 0)
// or on the given port (to restart on the same address).
func StartNATS(port int) (*NATS, error) {
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("harness: nats server not ready")
	}
	return &NATS{Server: s, Port: port}, nil
}

// StartNATST starts an embedded NATS server for a test.
func StartNATST(t testing.TB) *NATS {
	t.Helper()
	n, err := StartNATS(0)
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(n.Shutdown)
	return n
}

// Restart shuts the server down and starts a new one on the same port.
func (n *NATS) Restart() (*NATS, error) {
	n.Shutdown()
	n.WaitForShutdown()
	return StartNATS(n.Port)
}

// NATSServerBinary finds the nats-server binary for deployments:
// $RMQHA_NATS_SERVER_BIN, PATH, then the deps cache.
func NATSServerBinary() (string, error) {
	if p := os.Getenv("RMQHA_NATS_SERVER_BIN"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	if p := filepath.Join(cacheDir(), "bin", "nats-server"); fileExists(p) {
		return p, nil
	}
	return "", errors.New("harness: no nats-server binary: run scripts/deps.sh")
}

// StartNATSProcess runs the nats-server binary on port (0 = free port).
func StartNATSProcess(dir string, port int, out io.Writer) (*Process, int, error) {
	bin, err := NATSServerBinary()
	if err != nil {
		return nil, 0, err
	}
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, 0, err
		}
	}
	p, err := StartProcess(ProcessConfig{Name: "nats", Bin: bin, Dir: dir, Stdout: out,
		Args: []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port)}})
	if err != nil {
		return nil, 0, err
	}
	if err := WaitFor(15*time.Second, func() error { return DialOK(Addr(port)) }); err != nil {
		p.Kill()
		return nil, 0, fmt.Errorf("nats-server: %w", err)
	}
	return p, port, nil
}

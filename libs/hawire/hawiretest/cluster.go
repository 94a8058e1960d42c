package hawiretest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/sirupsen/logrus"
)

// Retention is implemented by logs that can drop old segments; the
// offset-too-old scenarios need it and are skipped without it.
type Retention interface {
	DeleteBefore(offset int64) (newMin int64)
}

// Logger discards logs unless HAWIRE_TEST_LOG is set (then it writes to stderr).
func Logger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if os.Getenv("HAWIRE_TEST_LOG") != "" {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// Secret is a random secret drawn once per test process; MasterConfig and
// SlaveConfig use it.
var Secret = NewSecret()

// NewSecret returns a fresh random secret (32 hex characters).
func NewSecret() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// MasterConfig is a fast-timing master configuration on 127.0.0.1:0 with Secret.
func MasterConfig(epochDir string) hawire.MasterConfig {
	c := hawire.DefaultMasterConfig()
	c.ListenAddr = "127.0.0.1:0"
	c.HeartbeatInterval = 50 * time.Millisecond
	c.HousekeepingInterval = 3 * time.Second
	c.SlaveTimeout = time.Second
	c.EpochDir = epochDir
	c.Logger = Logger()
	c.Secret = Secret
	c.InlineSend = !sendLoopOnly.Load()
	return c
}

// SlaveConfig is a fast-timing slave configuration with Secret.
func SlaveConfig(epochDir string) hawire.SlaveConfig {
	c := hawire.DefaultSlaveConfig()
	c.HeartbeatInterval = 50 * time.Millisecond
	c.HousekeepingInterval = 3 * time.Second
	c.ReconnectMin = 10 * time.Millisecond
	c.ReconnectMax = 200 * time.Millisecond
	c.DialTimeout = time.Second
	c.ReconnectReset = 500 * time.Millisecond
	c.EpochDir = epochDir
	c.Logger = Logger()
	c.Secret = Secret
	return c
}

// StartMaster starts a master over l; it is closed with the test.
func StartMaster(t testing.TB, cfg hawire.MasterConfig, l hawire.Log) *hawire.Master {
	t.Helper()
	m, err := hawire.NewMaster(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// StartSlave starts a slave over l replicating from addr; it is closed with the test.
func StartSlave(t testing.TB, cfg hawire.SlaveConfig, l hawire.Log, addr string) *hawire.Slave {
	t.Helper()
	s, err := hawire.NewSlave(cfg, l, hawire.StaticDiscovery(addr))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Eventually polls cond every 5 ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %s: %s", timeout, fmt.Sprintf(format, args...))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitCaughtUp waits until the slave log ends where the master log ends.
func WaitCaughtUp(t testing.TB, master, slave hawire.Log, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() bool { return slave.MaxOffset() == master.MaxOffset() },
		"slave max %d, master max %d", slave.MaxOffset(), master.MaxOffset())
}

// RequireIdentical checks that both logs hold the same bytes from the
// slave's MinOffset (which must not be below the master's) to their common MaxOffset.
func RequireIdentical(t testing.TB, master, slave hawire.Log) {
	t.Helper()
	if slave.MaxOffset() != master.MaxOffset() {
		t.Fatalf("max offsets differ: master %d slave %d", master.MaxOffset(), slave.MaxOffset())
	}
	from := max(slave.MinOffset(), master.MinOffset())
	a, err := ReadRange(master, from, master.MaxOffset())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadRange(slave, from, slave.MaxOffset())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Fatalf("logs differ at offset %d (%d vs %d bytes)", from+int64(i), len(a), len(b))
	}
}

package metasync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

const (
	testCluster = "DefaultCluster"
	testBroker  = "broker-a"
)

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// newTables opens in-memory tables (dir "" ) or tables persisted under dir.
func newTables(t testing.TB, dir string) *meta.Tables {
	t.Helper()
	cfg := meta.DefaultConfig()
	cfg.BrokerClusterName = testCluster
	cfg.BrokerName = testBroker
	cfg.StorePathRootDir = dir
	cfg.Logger = quietLogger()
	tb, err := meta.Open(cfg)
	require.NoError(t, err)
	return tb
}

// memMaster is a MasterSource reading a master's tables in memory.
type memMaster struct {
	mu     sync.Mutex
	tables *meta.Tables
	down   bool
	pulls  int
}

func (m *memMaster) set(tb *meta.Tables) { m.mu.Lock(); m.tables = tb; m.mu.Unlock() }
func (m *memMaster) setDown(d bool)      { m.mu.Lock(); m.down = d; m.mu.Unlock() }

func (m *memMaster) Pull(_ context.Context, t Table) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, "", fmt.Errorf("%w: master down", ErrUnavailable)
	}
	m.pulls++
	return tableBody(m.tables, t), "127.0.0.1:10911", nil
}

func tableBody(tb *meta.Tables, t Table) []byte {
	switch t {
	case TableTopics:
		return tb.Topics.Snapshot()
	case TableSubscriptionGroups:
		return tb.Groups.Snapshot()
	case TableConsumerOffsets:
		return tb.Offsets.Snapshot()
	default:
		return tb.Delay.Snapshot()
	}
}

// memMetasync is a metasync stand-in: publish pulls the master's tables and
// announces the changed ones; Fetch serves the stored snapshots.
type memMetasync struct {
	mu     sync.Mutex
	master *memMaster
	bus    Bus
	snaps  map[Table]Snapshot
	resets []OffsetReset
	down   bool
	fetch  int
}

func newMemMetasync(m *memMaster, bus Bus) *memMetasync {
	return &memMetasync{master: m, bus: bus, snaps: map[Table]Snapshot{}}
}

func (s *memMetasync) setDown(d bool) { s.mu.Lock(); s.down = d; s.mu.Unlock() }

func (s *memMetasync) publish(t testing.TB) {
	t.Helper()
	for _, tbl := range AllTables {
		body, addr, err := s.master.Pull(context.Background(), tbl)
		require.NoError(t, err)
		snap, err := NewSnapshot(testCluster, testBroker, tbl, body, addr, 0, time.Now())
		require.NoError(t, err)
		s.mu.Lock()
		if tbl == TableConsumerOffsets {
			snap.Resets = s.resets
		}
		prev, ok := s.snaps[tbl]
		if ok && prev.SameContent(snap) && len(snap.Resets) == len(prev.Resets) {
			s.mu.Unlock()
			continue
		}
		snap.Sequence = prev.Sequence + 1
		s.snaps[tbl] = snap
		s.mu.Unlock()
		require.NoError(t, s.bus.Publish(Subject(DefaultSubjectPrefix, testCluster, testBroker, tbl), AppendAnnouncement(nil, snap.Announcement(""))))
	}
}

func (s *memMetasync) Fetch(_ context.Context, cluster, broker string, t Table, _ string) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetch++
	if s.down {
		return Snapshot{}, fmt.Errorf("%w: metasync down", ErrUnavailable)
	}
	snap, ok := s.snaps[t]
	if !ok || cluster != testCluster || broker != testBroker {
		return Snapshot{}, ErrNoSnapshot
	}
	return snap, nil
}

// busEnv runs a Bus whose transport can be stopped and restarted.
type busEnv interface {
	bus() Bus
	stop(t testing.TB)
	start(t testing.TB)
}

type memEnv struct{ b *MemBus }

func (e *memEnv) bus() Bus            { return e.b }
func (e *memEnv) stop(testing.TB)     { e.b.SetConnected(false) }
func (e *memEnv) start(testing.TB)    { e.b.SetConnected(true) }
func newMemEnv(testing.TB) busEnv     { return &memEnv{b: NewMemBus()} }
func (e *natsEnv) bus() Bus           { return e.b }
func (e *natsEnv) stop(testing.TB)    { e.srv.Shutdown(); e.srv.WaitForShutdown() }
func (e *natsEnv) start(t testing.TB) { e.srv = startNATS(t, e.port) }
func newNATSEnv(t testing.TB) busEnv  { return startNATSEnv(t) }
func (e *natsEnv) url() string        { return fmt.Sprintf("nats://127.0.0.1:%d", e.port) }
func (e *natsEnv) close()             { e.b.Close(); e.srv.Shutdown() }

type natsEnv struct {
	port int
	srv  *natsserver.Server
	b    *NATSBus
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startNATS(t testing.TB, port int) *natsserver.Server {
	t.Helper()
	s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("nats server not ready")
	}
	return s
}

func startNATSEnv(t testing.TB) *natsEnv {
	e := &natsEnv{port: freePort(t)}
	e.srv = startNATS(t, e.port)
	b, err := DialNATS(e.url(), "metasync-test")
	require.NoError(t, err)
	e.b = b
	t.Cleanup(e.close)
	require.Eventually(t, b.Connected, 5*time.Second, 10*time.Millisecond)
	return e
}

// forEachBus runs a test against the in-memory bus and a real NATS server.
func forEachBus(t *testing.T, fn func(t *testing.T, env busEnv)) {
	t.Run("mem", func(t *testing.T) { fn(t, newMemEnv(t)) })
	t.Run("nats", func(t *testing.T) { fn(t, newNATSEnv(t)) })
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v: %v", timeout, err)
}

var errNotYet = errors.New("not yet")

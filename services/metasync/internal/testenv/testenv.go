// Package testenv holds the fixtures of metasync's tests: a fake master
// answering GET_ALL_* from tables the test mutates, a slave running a
// Follower, NATS helpers and polling.
package testenv

import (
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

// Cluster and Broker name the broker group of the tests.
const (
	Cluster = "DefaultCluster"
	Broker  = "broker-a"
)

// QuietLogger discards everything.
func QuietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// OpenTables opens a broker's tables, in memory when dir is "".
func OpenTables(t testing.TB, dir string) *meta.Tables {
	t.Helper()
	cfg := meta.DefaultConfig()
	cfg.BrokerClusterName, cfg.BrokerName = Cluster, Broker
	cfg.StorePathRootDir = dir
	cfg.Logger = QuietLogger()
	tb, err := meta.Open(cfg)
	require.NoError(t, err)
	return tb
}

// Master answers the four GET_ALL_* requests from tables the test mutates;
// Swap replaces them (a master restarted from other files).
type Master struct {
	Addr   string
	mu     sync.Mutex
	tables *meta.Tables
}

// StartMaster starts a fake master on addr (a free port when "").
func StartMaster(t testing.TB, addr string) *Master {
	t.Helper()
	m := &Master{tables: OpenTables(t, "")}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = addr
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	for _, tbl := range metasync.AllTables {
		tbl := tbl
		srv.HandleFunc(tbl.RequestCode(), func(w remoting.ResponseWriter, req *remoting.Command) {
			tb := m.T()
			resp := remoting.NewResponse(req, remoting.Success, "")
			switch tbl {
			case metasync.TableTopics:
				resp.Body = tb.Topics.Snapshot()
			case metasync.TableSubscriptionGroups:
				resp.Body = tb.Groups.Snapshot()
			case metasync.TableConsumerOffsets:
				resp.Body = tb.Offsets.Snapshot()
			default:
				resp.Body = tb.Delay.Snapshot()
			}
			_ = w.Write(resp)
		})
	}
	require.NoError(t, srv.Start())
	m.Addr = srv.Addr().String()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

// T returns the master's current tables.
func (m *Master) T() *meta.Tables { m.mu.Lock(); defer m.mu.Unlock(); return m.tables }

// Swap replaces the master's tables.
func (m *Master) Swap(tb *meta.Tables) { m.mu.Lock(); m.tables = tb; m.mu.Unlock() }

// PutTopic creates or updates a topic with 4 queues.
func PutTopic(t testing.TB, tb *meta.Tables, name string) {
	t.Helper()
	_, err := tb.Topics.Put(meta.TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
	require.NoError(t, err)
}

// Slave is a slave's tables kept by a Follower.
type Slave struct {
	Tables *meta.Tables
	F      *metasync.Follower
}

// StartSlave runs a follower of the test group with its tables on disk.
func StartSlave(t testing.TB, bus metasync.Bus, urls []string, masterAddr func() string, fallback time.Duration) *Slave {
	t.Helper()
	sl := &Slave{Tables: OpenTables(t, t.TempDir())}
	cfg := metasync.DefaultFollowerConfig()
	cfg.Cluster, cfg.BrokerName = Cluster, Broker
	cfg.Tables = sl.Tables
	cfg.Bus = bus
	cfg.Snapshots = metasync.NewHTTPSnapshots(urls...)
	rc := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = rc.Close() })
	cfg.Master = &metasync.RemotingMaster{Client: rc, Addr: masterAddr}
	cfg.FallbackInterval = fallback
	cfg.CheckInterval = 50 * time.Millisecond
	cfg.Logger = QuietLogger()
	if os.Getenv("METASYNC_TEST_DEBUG") != "" {
		l := logrus.New()
		l.SetLevel(logrus.DebugLevel)
		cfg.Logger = l
	}
	f, err := metasync.NewFollower(cfg)
	require.NoError(t, err)
	require.NoError(t, f.Start())
	t.Cleanup(func() { _ = f.Close() })
	sl.F = f
	return sl
}

// HasTopic reports whether the slave holds topic name.
func (s *Slave) HasTopic(name string) bool { _, ok := s.Tables.Topics.Get(name); return ok }

// Offset returns the slave's offset of group g on topic queue 0.
func (s *Slave) Offset(topic string) int64 {
	off, _ := s.Tables.Offsets.Query("g", topic, 0)
	return off
}

// WaitFor polls cond every 10ms and fails t after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v", what, timeout)
}

// Distribution formats min/p50/p90/max of ds.
func Distribution(ds []time.Duration) string {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) string { return s[int(p*float64(len(s)-1))].Round(time.Millisecond).String() }
	return "n=" + strconv.Itoa(len(s)) + " min=" + q(0) + " p50=" + q(0.5) + " p90=" + q(0.9) + " max=" + q(1)
}

// DialBus connects to NATS and waits for the connection.
func DialBus(t testing.TB, url string) *metasync.NATSBus {
	t.Helper()
	b, err := metasync.DialNATS(url, t.Name())
	require.NoError(t, err)
	t.Cleanup(b.Close)
	WaitFor(t, 10*time.Second, "nats connected", b.Connected)
	return b
}

// Announcements records every announcement seen on a bus.
type Announcements struct {
	mu  sync.Mutex
	got []metasync.Announcement
}

// WatchAnnouncements subscribes to every announcement.
func WatchAnnouncements(t testing.TB, bus metasync.Bus) *Announcements {
	a := &Announcements{}
	cancel, err := bus.Subscribe(metasync.DefaultSubjectPrefix+".>", func(_ string, data []byte) {
		if an, err := metasync.DecodeAnnouncement(data); err == nil {
			a.mu.Lock()
			a.got = append(a.got, an)
			a.mu.Unlock()
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cancel() })
	return a
}

// List returns the announcements seen so far.
func (a *Announcements) List() []metasync.Announcement {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]metasync.Announcement(nil), a.got...)
}

// RegisterMaster registers the test group's master in Consul the way the
// name server does (service instance with a passing TTL check).
func RegisterMaster(t testing.TB, consulAddr, addr string, epoch int64) {
	t.Helper()
	c, err := discovery.NewClient(consulAddr)
	require.NoError(t, err)
	reg := discovery.Registration(discovery.Broker{Cluster: Cluster, BrokerName: Broker, BrokerID: 0, Addr: addr, Epoch: epoch}, 10*time.Minute, 0, time.Hour)
	require.NoError(t, c.Agent().ServiceRegister(reg))
}

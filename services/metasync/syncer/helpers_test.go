package syncer

import (
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/meta"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

const (
	cluster = "DefaultCluster"
	broker  = "broker-a"
)

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func openTables(t testing.TB, dir string) *meta.Tables {
	t.Helper()
	cfg := meta.DefaultConfig()
	cfg.BrokerClusterName, cfg.BrokerName = cluster, broker
	cfg.StorePathRootDir = dir
	cfg.Logger = quietLogger()
	tb, err := meta.Open(cfg)
	require.NoError(t, err)
	return tb
}

// fakeMaster answers the four GET_ALL_* requests from tables the test
// mutates; swap replaces them (a master restarted from other files).
type fakeMaster struct {
	mu     sync.Mutex
	tables *meta.Tables
	srv    *remoting.Server
	addr   string
}

func startFakeMaster(t testing.TB, addr string) *fakeMaster {
	t.Helper()
	m := &fakeMaster{tables: openTables(t, "")}
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
			m.mu.Lock()
			tb := m.tables
			m.mu.Unlock()
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
	m.srv, m.addr = srv, srv.Addr().String()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

func (m *fakeMaster) t() *meta.Tables { m.mu.Lock(); defer m.mu.Unlock(); return m.tables }
func (m *fakeMaster) swap(tb *meta.Tables) {
	m.mu.Lock()
	m.tables = tb
	m.mu.Unlock()
}

func putTopic(t testing.TB, tb *meta.Tables, name string) {
	t.Helper()
	_, err := tb.Topics.Put(meta.TopicConfig{TopicName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
	require.NoError(t, err)
}

type svcOpts struct {
	bus      metasync.Bus
	natsURL  string
	dir      string
	masters  []string
	interval time.Duration
	consul   string
}

func startService(t testing.TB, o svcOpts) *Service {
	t.Helper()
	cfg := DefaultConfig()
	cfg.StorePathRootDir = o.dir
	if cfg.StorePathRootDir == "" {
		cfg.StorePathRootDir = t.TempDir()
	}
	cfg.MasterAddrs = o.masters
	cfg.SyncInterval = o.interval
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = 200 * time.Millisecond
	}
	cfg.HTTPPort = 0
	cfg.BindAddress = "127.0.0.1"
	cfg.Bus = o.bus
	cfg.NatsURL = o.natsURL
	cfg.ConsulAddr = o.consul
	cfg.Logger = quietLogger()
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type slave struct {
	tables *meta.Tables
	f      *metasync.Follower
}

func startSlave(t testing.TB, bus metasync.Bus, urls []string, masterAddr func() string, fallback time.Duration) *slave {
	t.Helper()
	sl := &slave{tables: openTables(t, t.TempDir())}
	cfg := metasync.DefaultFollowerConfig()
	cfg.Cluster, cfg.BrokerName = cluster, broker
	cfg.Tables = sl.tables
	cfg.Bus = bus
	cfg.Snapshots = metasync.NewHTTPSnapshots(urls...)
	rc := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = rc.Close() })
	cfg.Master = &metasync.RemotingMaster{Client: rc, Addr: masterAddr}
	cfg.FallbackInterval = fallback
	cfg.CheckInterval = 50 * time.Millisecond
	cfg.Logger = quietLogger()
	f, err := metasync.NewFollower(cfg)
	require.NoError(t, err)
	require.NoError(t, f.Start())
	t.Cleanup(func() { _ = f.Close() })
	sl.f = f
	return sl
}

func (s *slave) hasTopic(name string) bool { _, ok := s.tables.Topics.Get(name); return ok }

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
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

// distribution formats min/p50/p90/max of ds.
func distribution(ds []time.Duration) string {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1))] }
	return "n=" + strconv.Itoa(len(s)) + " min=" + s[0].Round(time.Millisecond).String() + " p50=" + q(0.5).Round(time.Millisecond).String() +
		" p90=" + q(0.9).Round(time.Millisecond).String() + " max=" + s[len(s)-1].Round(time.Millisecond).String()
}

// announcements records every announcement seen on the bus.
type announcements struct {
	mu  sync.Mutex
	got []metasync.Announcement
}

func watchAnnouncements(t testing.TB, bus metasync.Bus) *announcements {
	a := &announcements{}
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

func (a *announcements) list() []metasync.Announcement {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]metasync.Announcement(nil), a.got...)
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

package syncer

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/services/metasync/internal/testenv"
	"github.com/stretchr/testify/require"
)

const (
	cluster = testenv.Cluster
	broker  = testenv.Broker
)

var (
	openTables         = testenv.OpenTables
	startFakeMaster    = testenv.StartMaster
	putTopic           = testenv.PutTopic
	startSlave         = testenv.StartSlave
	waitFor            = testenv.WaitFor
	distribution       = testenv.Distribution
	dialBus            = testenv.DialBus
	watchAnnouncements = testenv.WatchAnnouncements
	registerMaster     = testenv.RegisterMaster
	quietLogger        = testenv.QuietLogger
)

type svcOpts struct {
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
	cfg.NatsURL = o.natsURL
	cfg.ConsulAddr = o.consul
	cfg.Logger = quietLogger()
	s, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Close() })
	return s
}

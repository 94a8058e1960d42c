package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// Service is one metasync instance.
type Service struct {
	cfg    Config
	log    logrus.FieldLogger
	store  *Store
	bus    metasync.Bus
	ownBus *metasync.NATSBus
	consul *consul.Client
	puller metasync.Invoker
	rc     *remoting.Client
	disc   Discoverer
	locker Locker
	mode   string // how masters are found: static, consul, namesrv

	ln        net.Listener
	http      *http.Server
	unlock    func()
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	unsubRep  func() error
	unsubChg  func() error
	closeOnce sync.Once

	mu      sync.Mutex
	groups  map[groupKey]*group
	reports map[groupKey]map[int64]metasync.FollowerReport
}

type groupKey struct{ cluster, broker string }

// group syncs one broker group.
type group struct {
	key    groupKey
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // a master's "pull me now"

	mu     sync.Mutex
	target Target
	owned  bool
	tables map[metasync.Table]*tableSync
}

type tableSync struct {
	masterVersion metasync.DataVersion
	masterHas     bool
	masterDigest  string
	lastSuccess   time.Time
	lastAttempt   time.Time
	lastError     string
	announced     uint64
}

// New validates cfg and opens the store; Start begins the work.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		cfg:     cfg,
		log:     cfg.Logger.WithField("service", "metasync"),
		groups:  map[groupKey]*group{},
		reports: map[groupKey]map[int64]metasync.FollowerReport{},
	}
	return s, nil
}

// Start locks and loads the store, connects to NATS and Consul when
// configured, starts HTTP and begins syncing.
func (s *Service) Start() error {
	cfg := s.cfg
	unlock, err := lockStoreDir(cfg.StorePathRootDir)
	if err != nil {
		return err
	}
	s.unlock = unlock
	fail := func(err error) error {
		s.unlock()
		return err
	}
	if s.store, err = OpenStore(cfg.FS, cfg.StorePathRootDir, s.log); err != nil {
		return fail(fmt.Errorf("opening the snapshot store: %w", err))
	}
	s.ln, err = net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPPort)))
	if err != nil {
		return fail(fmt.Errorf("httpPort: %w", err))
	}
	if s.cfg.AdvertisedURL == "" {
		host, _ := os.Hostname()
		if cfg.BindAddress != "0.0.0.0" && cfg.BindAddress != "" {
			host = cfg.BindAddress
		}
		s.cfg.AdvertisedURL = "http://" + net.JoinHostPort(host, strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port))
	}
	if s.cfg.InstanceName == "" {
		s.cfg.InstanceName = s.cfg.AdvertisedURL
	}
	s.bus = cfg.Bus
	if s.bus == nil {
		url := cfg.NatsURL
		if url == "" {
			url = os.Getenv("NATS_URL")
		}
		if url != "" {
			nb, err := metasync.DialNATS(url, "metasync "+s.cfg.InstanceName)
			if err != nil {
				s.ln.Close()
				return fail(fmt.Errorf("natsUrl: %w", err))
			}
			s.bus, s.ownBus = nb, nb
		}
	}
	s.consul = cfg.Consul
	if s.consul == nil && (cfg.ConsulAddr != "" || os.Getenv("CONSUL_HTTP_ADDR") != "") {
		if s.consul, err = discovery.NewClient(cfg.ConsulAddr); err != nil {
			s.closeBus()
			s.ln.Close()
			return fail(fmt.Errorf("consul: %w", err))
		}
	}
	tc := cfg.Config
	if _, err := tc.ApplyFile(); err != nil {
		s.closeBus()
		s.ln.Close()
		return fail(err)
	}
	cliTLS, err := tc.ClientTLS()
	if err != nil {
		s.closeBus()
		s.ln.Close()
		return fail(err)
	}
	s.rc = remoting.NewClient(remoting.ClientConfig{RequestTimeout: cfg.PullTimeout, MaxFrameSize: 256 << 20, Logger: s.log, TLS: cliTLS,
		Signer: acl.CredentialsSigner(acl.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey})})
	s.puller = cfg.Puller
	if s.puller == nil {
		s.puller = s.rc
	}
	switch {
	case len(cfg.MasterAddrs) > 0:
		var ts []Target
		for _, m := range cfg.MasterAddrs {
			t, _ := ParseMasterAddr(m, cfg.BrokerClusterName)
			ts = append(ts, t)
		}
		s.disc, s.mode = StaticDiscoverer{Targets: ts}, "static"
	case s.consul != nil:
		s.disc, s.mode = ConsulDiscoverer{Client: s.consul, Log: s.log}, "consul"
	case cfg.NamesrvAddr != "":
		s.disc, s.mode = NamesrvDiscoverer{Client: s.rc, Addrs: splitNamesrv(cfg.NamesrvAddr), Interval: cfg.SyncInterval, Timeout: cfg.PullTimeout, Log: s.log}, "namesrv"
	default:
		s.disc, s.mode = StaticDiscoverer{}, "none"
		s.log.Warn("no masterAddrs, no Consul and no namesrvAddr: nothing to sync, serving stored snapshots only")
	}
	if s.consul != nil {
		val, _ := json.Marshal(map[string]string{"instance": s.cfg.InstanceName, "url": s.cfg.AdvertisedURL})
		s.locker = &ConsulLocker{Client: s.consul, SessionTTL: cfg.LockSessionTTL, Value: val}
	}
	if s.bus != nil {
		if s.unsubRep, err = s.bus.Subscribe(metasync.StatusWildcard(cfg.SubjectPrefix), s.onReport); err != nil {
			s.log.WithError(err).Warn("cannot subscribe to follower reports")
		}
		if s.unsubChg, err = s.bus.Subscribe(metasync.ChangedWildcard(cfg.SubjectPrefix), s.onChanged); err != nil {
			s.log.WithError(err).Warn("cannot subscribe to master doorbells")
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.WithError(err).Error("http server stopped")
		}
	}()
	go func() {
		defer s.wg.Done()
		s.disc.Run(s.ctx, s.setTargets)
	}()
	s.log.WithFields(logrus.Fields{
		"http": s.ln.Addr().String(), "advertised": s.cfg.AdvertisedURL, "masters": s.mode,
		"nats": s.bus != nil, "consulLocks": s.locker != nil, "store": s.store.dir, "syncInterval": cfg.SyncInterval,
	}).Info("metasync running")
	return nil
}

// HTTPAddr is the bound HTTP address.
func (s *Service) HTTPAddr() string { return s.ln.Addr().String() }

// URL is the advertised base URL.
func (s *Service) URL() string { return s.cfg.AdvertisedURL }

// Close stops syncing, releases the locks, stops HTTP and closes connections.
func (s *Service) Close() error {
	if s.cancel == nil {
		return nil // never started
	}
	s.closeOnce.Do(func() {
		s.cancel()
		s.mu.Lock()
		gs := make([]*group, 0, len(s.groups))
		for _, g := range s.groups {
			gs = append(gs, g)
		}
		s.mu.Unlock()
		for _, g := range gs {
			<-g.done
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
		s.wg.Wait()
		if s.unsubRep != nil {
			_ = s.unsubRep()
		}
		if s.unsubChg != nil {
			_ = s.unsubChg()
		}
		s.closeBus()
		_ = s.rc.Close()
		s.unlock()
	})
	return nil
}

func (s *Service) closeBus() {
	if s.ownBus != nil {
		s.ownBus.Close()
	}
}

// setTargets starts a group runner for every new master group, retargets
// moved ones and stops the ones that disappeared.
func (s *Service) setTargets(ts []Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	seen := map[groupKey]bool{}
	for _, t := range ts {
		k := groupKey{t.Cluster, t.BrokerName}
		seen[k] = true
		if g, ok := s.groups[k]; ok {
			g.mu.Lock()
			if g.target != t {
				s.log.WithFields(logrus.Fields{"cluster": t.Cluster, "broker": t.BrokerName, "addr": t.Addr, "epoch": t.Epoch}).Info("master moved")
			}
			g.target = t
			g.mu.Unlock()
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		g := &group{key: k, target: t, cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1), tables: map[metasync.Table]*tableSync{}}
		for _, tbl := range metasync.AllTables {
			g.tables[tbl] = &tableSync{}
		}
		s.groups[k] = g
		go s.runGroup(ctx, g)
	}
	for k, g := range s.groups {
		if !seen[k] {
			s.log.WithFields(logrus.Fields{"cluster": k.cluster, "broker": k.broker}).Info("master gone from discovery; stop syncing it (snapshots stay served)")
			g.cancel()
			delete(s.groups, k)
			go func() { <-g.done }()
		}
	}
}

func (s *Service) runGroup(ctx context.Context, g *group) {
	defer close(g.done)
	log := s.log.WithFields(logrus.Fields{"cluster": g.key.cluster, "broker": g.key.broker})
	backoff := time.Second
	for ctx.Err() == nil {
		var lost <-chan struct{}
		release := func() {}
		if s.locker != nil {
			l, r, err := s.locker.Lock(ctx, g.key.cluster, g.key.broker)
			if err != nil {
				if ctx.Err() == nil {
					log.WithError(err).Warn("cannot take the group lock; retrying")
					sleepCtx(ctx, backoff)
				}
				continue
			}
			lost, release = l, r
			log.Info("group lock acquired: this instance syncs the group")
		}
		g.mu.Lock()
		g.owned = true
		g.mu.Unlock()
		s.syncLoop(ctx, g, lost)
		g.mu.Lock()
		g.owned = false
		g.mu.Unlock()
		release()
		if ctx.Err() == nil {
			log.Warn("group lock lost; waiting to take it again")
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (s *Service) syncLoop(ctx context.Context, g *group, lost <-chan struct{}) {
	t := time.NewTicker(s.cfg.SyncInterval)
	defer t.Stop()
	for {
		s.syncGroup(ctx, g)
		select {
		case <-ctx.Done():
			return
		case <-lost:
			return
		case <-t.C:
		case <-g.kick:
		}
	}
}

// syncGroup pulls the four tables of g's master once.
func (s *Service) syncGroup(ctx context.Context, g *group) {
	g.mu.Lock()
	target := g.target
	g.mu.Unlock()
	for _, tbl := range metasync.AllTables {
		if ctx.Err() != nil {
			return
		}
		err := s.syncTable(ctx, g, target, tbl)
		now := s.cfg.Now()
		g.mu.Lock()
		ts := g.tables[tbl]
		ts.lastAttempt = now
		if err != nil {
			ts.lastError = err.Error()
		} else {
			ts.lastError, ts.lastSuccess = "", now
		}
		g.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			s.log.WithError(err).WithFields(logrus.Fields{"cluster": target.Cluster, "broker": target.BrokerName, "table": tbl, "master": target.Addr}).Warn("table sync failed")
		}
	}
}

func (s *Service) syncTable(ctx context.Context, g *group, target Target, tbl metasync.Table) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PullTimeout)
	body, err := metasync.PullTable(pctx, s.puller, target.Addr, tbl)
	cancel()
	if err != nil {
		return err
	}
	snap, err := metasync.NewSnapshot(target.Cluster, target.BrokerName, tbl, body, target.Addr, target.Epoch, s.cfg.Now())
	if err != nil {
		return err
	}
	g.mu.Lock()
	ts := g.tables[tbl]
	ts.masterVersion, ts.masterHas, ts.masterDigest = snap.DataVersion, snap.HasVersion, snap.Digest
	g.mu.Unlock()
	stored, changed, err := s.store.Put(snap)
	if err != nil {
		return fmt.Errorf("storing the snapshot: %w", err)
	}
	if !changed {
		return nil
	}
	s.log.WithFields(logrus.Fields{"cluster": target.Cluster, "broker": target.BrokerName, "table": tbl, "version": stored.DataVersion, "sequence": stored.Sequence}).Debug("new table version stored")
	if s.bus == nil {
		return nil
	}
	url := s.cfg.AdvertisedURL + metasync.SnapshotPath(target.Cluster, target.BrokerName, tbl)
	subj := metasync.Subject(s.cfg.SubjectPrefix, target.Cluster, target.BrokerName, tbl)
	if err := s.bus.Publish(subj, metasync.AppendAnnouncement(nil, stored.Announcement(url))); err != nil {
		// The snapshot is stored; followers catch up on their next full sync.
		s.log.WithError(err).WithField("subject", subj).Warn("announcement not published")
		return nil
	}
	g.mu.Lock()
	ts.announced++
	g.mu.Unlock()
	return nil
}

func (s *Service) onReport(_ string, data []byte) {
	r, err := metasync.DecodeFollowerReport(data)
	if err != nil {
		return
	}
	k := groupKey{r.Cluster, r.BrokerName}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.reports[k]
	if m == nil {
		m = map[int64]metasync.FollowerReport{}
		s.reports[k] = m
	}
	m[r.BrokerID] = r
}

// onChanged pulls a group at once when its master rings the doorbell.
func (s *Service) onChanged(subject string, _ []byte) {
	c, b, err := metasync.ParseChangedSubject(s.cfg.SubjectPrefix, subject)
	if err != nil {
		return
	}
	s.mu.Lock()
	g := s.groups[groupKey{c, b}]
	s.mu.Unlock()
	if g == nil {
		return
	}
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// owns reports whether this instance serves k's snapshots: it holds the lock,
// or there are no locks at all.
func (s *Service) owns(k groupKey) bool {
	if s.locker == nil {
		return true
	}
	s.mu.Lock()
	g := s.groups[k]
	s.mu.Unlock()
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.owned
}

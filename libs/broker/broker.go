package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/rmqha/rmqha/libs/broker/brokerstats"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/sirupsen/logrus"
)

// Broker is one RocketMQ-compatible broker: the remoting server with every request handler,
// the CommitLog store, the metadata tables, the HA master or slave, name-server registration
// and the status HTTP server. Its role (Config.BrokerRole) decides what requests may do.
type Broker struct {
	cfg Config
	log logrus.FieldLogger
	now func() time.Time
	// clusterPair is the CLUSTER property every stored message carries, serialised once.
	clusterPair string

	store   *commitlog.Store
	tables  *meta.Tables
	srv     *remoting.Server
	nsCli   *remoting.Client
	acl     *acl.Guard // nil unless aclEnable
	clients *clientRegistry
	holds   *holdService
	pipe    *sendPipeline
	txn     *txnService // transactional messages (transaction.go)
	levels  schedule.Levels
	// delivered is the delay-delivery progress seen in the log (a promoted slave resumes
	// after the deliveries it replicated).
	delivered *schedule.Delivered
	// timers serves timer messages (rmq_sys_wheel_timer) on every role; timerRules are its
	// send-side settings.
	timers     *timer.Service
	timerRules timer.Rules
	timerObs   atomic.Pointer[timer.Service] // b.timers for the dispatcher's hook
	locks      *queueLocks
	httpSrv    *httpServer
	metrics    *brokerMetrics
	role       roleState // in-process role switching (role.go)
	// autoc bounds the groups and retry topics client requests create (autocreate.go).
	autoc *autoCreator
	// rv is the role-dependent state (role, brokerId, HA master or slave, delay delivery),
	// replaced whole by a role switch and read without locks by request handlers (role.go).
	rv atomic.Pointer[roleView]

	// live holds the keys UPDATE_BROKER_CONFIG changes at runtime (brokerconfig.go).
	live liveConfig

	// langs remembers each connection's client language and version (stats.go).
	langs clientLangs

	// Claim watch (metrics.go): warnings when the configuration cannot deliver what it claims.
	syncClaim, replClaim                claimWatch
	claimAfter, claimRepeat, claimEvery time.Duration

	ln         net.Listener
	storeHost  netip.AddrPort
	brokerAddr string // brokerIP1:listenPort, advertised to clients
	physMem    int64

	masterAddr atomic.Value // string: the group master's client address, from registration
	regTime    atomic.Int64 // last registrationTime sent (ms), kept increasing (register.go)
	// regMu makes registration rounds (register, unregister) one at a time, so that they
	// reach each name server in registrationTime order (it refuses an older time).
	regMu sync.Mutex
	// unregistered is set (under regMu) once the broker has unregistered at shutdown: a
	// registration round waiting for regMu then sends nothing, so no name server takes the
	// stopped broker back after its unregistration.
	unregistered bool

	haSecret string // haSecret or the content of haSecretFile ("" with haAllowUnauthenticated)

	state      atomic.Int32
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	regTrigger chan struct{}
	stopOnce   sync.Once

	// TLS material resolved at New (tls.config.file applied): the remoting port's (nil when
	// tls.server.mode=disabled and the status port does not need it) and the name-server
	// client's (nil unless tls.enable).
	tlsSrv *tlsconf.Server
	tlsCli *tls.Config
	// haTLSSrv and haTLSCli are the HA link's TLS configurations (haTlsEnable), nil without it.
	haTLSSrv, haTLSCli *tls.Config

	sqlf    selectorStats // SQL92 evaluations and refusals (sqlfilter.go)
	replies replyStats    // request-reply pushes and refusals (reply.go)

	lateAnswers atomic.Int64 // answers written while stopping (flushed before connections close)
	sendRejects atomic.Uint64
	sends       atomic.Uint64
	pulls       atomic.Uint64

	// systemTopicSends counts client sends refused for naming a system topic.
	systemTopicSends atomic.Uint64

	// bstats counts puts and gets over time (VIEW_BROKER_STATS_DATA, consumeTps, the runtime
	// info's rates: statsitems.go); noStats turns the counting off (the benchmark's baseline).
	bstats  *brokerstats.Manager
	noStats atomic.Bool
}

// shutdownFlushGrace is how long Shutdown lets connection writers flush answers produced
// while stopping before it closes the connections.
const shutdownFlushGrace = 200 * time.Millisecond

const (
	stateNew int32 = iota
	stateRunning
	stateStopping
	stateStopped
)

// New validates cfg and prepares a broker; nothing is opened or bound until Start.
func New(cfg Config, logger logrus.FieldLogger) (*Broker, error) {
	if cfg.BrokerIP1 == "" {
		cfg.BrokerIP1 = defaultIP()
	}
	if cfg.BrokerIP2 == "" {
		cfg.BrokerIP2 = cfg.BrokerIP1
	}
	if cfg.BindAddress == "" {
		cfg.BindAddress = "0.0.0.0"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ClientExpiry <= 0 {
		cfg.ClientExpiry = 120 * time.Second
	}
	if cfg.ClientCallTimeout <= 0 {
		cfg.ClientCallTimeout = callClientTimeout
	}
	if cfg.OffsetPersistInterval <= 0 {
		cfg.OffsetPersistInterval = 5 * time.Second
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	haSecret, err := cfg.HASecretValue()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		l := logrus.New()
		l.SetLevel(logrus.WarnLevel)
		logger = l
	}
	b := &Broker{
		cfg: cfg,
		// brokerId and role as configured; after a role switch the lines that depend on the
		// current role carry it (role.go, metrics.go).
		log: logger.WithFields(logrus.Fields{
			"cluster": cfg.BrokerClusterName, "broker": cfg.BrokerName, "brokerId": cfg.BrokerID, "role": cfg.BrokerRole,
		}),
		now:         cfg.Now,
		regTrigger:  make(chan struct{}, 1),
		physMem:     physicalMemory(),
		claimAfter:  claimWarnAfter,
		claimRepeat: claimWarnRepeat,
		claimEvery:  claimCheckEvery,
		haSecret:    haSecret,
		clusterPair: clusterPairOf(cfg.BrokerClusterName),
	}
	if err := b.resolveTLS(); err != nil {
		return nil, err
	}
	b.rv.Store(&roleView{role: cfg.BrokerRole, id: cfg.BrokerID})
	b.live.init(cfg, route.NewDataVersion(cfg.Now()))
	b.autoc = newAutoCreator()
	if b.bstats, err = newBrokerStats(cfg); err != nil {
		return nil, err
	}
	b.metrics = newBrokerMetrics(b, cfg.MetricsEnable)
	b.masterAddr.Store("")
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b, nil
}

// Config returns the effective configuration (defaults filled in), with the current role and
// brokerId (they change on a role switch).
func (b *Broker) Config() Config {
	c := b.cfg
	v := b.view()
	c.BrokerRole, c.BrokerID = v.role, v.id
	b.live.overlay(&c)
	return c
}

// Addr is the bound remoting address ("" before Start).
func (b *Broker) Addr() string {
	if b.ln == nil {
		return ""
	}
	return b.ln.Addr().String()
}

// AdvertisedAddr is brokerIP1:listenPort, the address registered with name servers.
func (b *Broker) AdvertisedAddr() string { return b.brokerAddr }

// HAAddr is the bound HA address of a master ("" for a slave or before Start).
func (b *Broker) HAAddr() string {
	m := b.view().master
	if m == nil || m.Addr() == nil {
		return ""
	}
	return m.Addr().String()
}

// HTTPAddr is the bound status HTTP address ("" when disabled).
func (b *Broker) HTTPAddr() string {
	if b.httpSrv == nil {
		return ""
	}
	return b.httpSrv.addr()
}

// Store exposes the CommitLog store (for tests and tools in-process).
func (b *Broker) Store() *commitlog.Store { return b.store }

// Tables exposes the metadata tables.
func (b *Broker) Tables() *meta.Tables { return b.tables }

// Start binds the ports, opens the store and tables, starts replication, serves requests and
// registers with the name servers. On error everything already opened is closed again.
func (b *Broker) Start() error {
	if !b.state.CompareAndSwap(stateNew, stateRunning) {
		if b.state.Load() == stateRunning {
			return ErrStarted
		}
		return ErrClosed
	}
	b.warnHAOptOuts()
	began := time.Now()
	if err := b.start(); err != nil {
		b.state.Store(stateStopping)
		b.teardown(context.Background())
		b.state.Store(stateStopped)
		return err
	}
	b.log.WithFields(logrus.Fields{
		"role": b.view().role, "addr": b.Addr(), "advertised": b.brokerAddr,
		"haAddr": b.HAAddr(), "haServerAddr": b.view().haServerAddr, "http": b.HTTPAddr(),
		"startMs": time.Since(began).Milliseconds(),
	}).Info("broker started")
	return nil
}

func (b *Broker) start() error {
	cfg := b.cfg
	if err := b.startACL(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.ListenPort)))
	if err != nil {
		return fmt.Errorf("broker: listen on listenPort: %w", err)
	}
	b.ln = ln
	port := ln.Addr().(*net.TCPAddr).Port
	ip1, _ := netip.ParseAddr(cfg.BrokerIP1)
	b.storeHost = netip.AddrPortFrom(ip1.Unmap(), uint16(port))
	b.brokerAddr = net.JoinHostPort(cfg.BrokerIP1, strconv.Itoa(port))

	// Store.
	hours, _ := cfg.deleteHours()
	scfg := commitlog.DefaultConfig()
	scfg.Dir = cfg.StorePathRootDir
	scfg.SegmentSize = cfg.MappedFileSizeCommitLog
	scfg.FlushDiskType, err = commitlog.ParseFlushDiskType(cfg.FlushDiskType)
	if err != nil {
		return err
	}
	scfg.FlushInterval = cfg.FlushIntervalCommitLog
	scfg.SyncFlushTimeout = cfg.SyncFlushTimeout
	scfg.MaxMessageSize = cfg.MaxMessageSize
	scfg.FileReservedTime = time.Duration(cfg.FileReservedTime) * time.Hour
	scfg.DeleteWhen = hours
	scfg.DiskMaxUsedSpaceRatio = cfg.DiskMaxUsedSpaceRatio
	scfg.StoreHost = b.storeHost
	scfg.MessageIndexEnable = cfg.MessageIndexEnable
	// A slave indexes replicated bytes from the frames they came in, and its consumers are
	// sent to the master for fresh messages: its tail cache would be a copy of every byte
	// that nothing reads (8% of a slave's CPU at 64 sends in flight). Promote turns it on.
	scfg.TailCacheDeferred = !cfg.IsMaster()
	scfg.MaxHashSlotNum = cfg.MaxHashSlotNum
	scfg.MaxIndexNum = cfg.MaxIndexNum
	scfg.Logger = b.log.WithField("component", "store")
	scfg.Now = b.now
	// Schedule-topic units carry their delivery time as tags code (on slaves too, so their
	// consume queues match the master's).
	b.levels, err = schedule.ParseLevels(cfg.MessageDelayLevel)
	if err != nil {
		return err
	}
	b.delivered = schedule.NewDelivered(b.levels)
	delayTags := schedule.TagsCodeObserving(b.levels, b.delivered)
	// Delivered timer copies tell a replica how far its master got (b.timers is set right
	// after the store opens, before anything is served).
	scfg.TagsCode = func(topic string, props commitlog.Props, storeTimestamp int64) int64 {
		if t := b.timerObs.Load(); t != nil {
			t.Observe(topic, props)
		}
		return delayTags(topic, props, storeTimestamp)
	}
	if cfg.StoreFS != nil {
		scfg.FS = cfg.StoreFS
	}
	scfg.FS = b.metrics.storeFS(scfg.FS)
	b.store, err = commitlog.Open(scfg)
	if err != nil {
		return fmt.Errorf("broker: open store in %s: %w", cfg.StorePathRootDir, err)
	}
	if b.timers, err = b.newTimerService(scfg.FS); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.timerRules = b.timers.Rules()
	b.timerObs.Store(b.timers)
	b.store.OnDispatch(b.timers.OnDispatch)
	b.timers.Start()
	if rep := b.store.Recovery(); len(rep.CQRepairs) > 0 {
		b.log.WithFields(logrus.Fields{"queues": len(rep.CQRepairs), "restored": rep.CQRestored, "check": rep.CQCheck}).
			Warn("consume queues were incomplete at start and were rebuilt from the CommitLog (see the store's lines above and /status storeCheck)")
	}

	// Metadata tables.
	mcfg := meta.DefaultConfig()
	mcfg.StorePathRootDir = cfg.StorePathRootDir
	mcfg.BrokerClusterName = cfg.BrokerClusterName
	mcfg.BrokerName = cfg.BrokerName
	mcfg.AutoCreateTopicEnable = cfg.AutoCreateTopicEnable
	mcfg.DefaultTopicQueueNums = int32(cfg.DefaultTopicQueueNums)
	mcfg.AutoCreateSubscriptionGroup = cfg.AutoCreateSubscriptionGroup
	mcfg.AutoCreateSubscriptionGroupLimit = cfg.AutoCreateSubscriptionGroupLimit
	mcfg.AutoCreateTopicLimit = cfg.AutoCreateTopicLimit
	mcfg.PersistBatchInterval = cfg.MetadataFlushInterval
	mcfg.PersistBatchSize = cfg.MetadataFlushBatch
	mcfg.Now = b.now
	mcfg.Logger = b.log.WithField("component", "meta")
	b.tables, err = meta.Open(mcfg)
	if err != nil {
		return fmt.Errorf("broker: open metadata tables: %w", err)
	}

	// Replication (the same constructors a role switch uses).
	v := &roleView{role: cfg.BrokerRole, id: cfg.BrokerID}
	if cfg.IsMaster() {
		if v.master, v.haServerAddr, err = b.newHAMaster(cfg); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	} else {
		v.disc = newRegDiscovery(cfg.HAMasterAddress)
		if v.slave, err = b.newHASlave(cfg, v.disc); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}

	// Request handling.
	b.clients, err = newClientRegistry(b)
	if err != nil {
		return err
	}
	b.holds = newHoldService(b)
	b.pipe = newSendPipeline(b)
	b.locks = newQueueLocks(cfg.LockMaxQueuesPerGroup, cfg.LockMaxQueues)
	b.txn = newTxnService(b)
	b.store.OnDispatch(b.holds.notify)
	b.store.OnDispatch(func(topic string, queueID int32, max int64) {
		if d := b.view().delay; d != nil { // masters only; follows role switches
			d.OnDispatch(topic, queueID, max)
		}
	})
	if cfg.IsMaster() {
		// Delay delivery resumes after the deliveries the log holds (DELAY_SOURCE): let the
		// dispatcher index the log tail first (bounded; it is quick after a restart).
		if err := b.store.WaitDispatched(b.store.MaxOffset(), time.Now().Add(promoteDispatchWait)); err != nil {
			b.log.WithError(err).Warn("dispatcher behind at start: delay delivery may repeat deliveries the log holds")
		}
		d, err := b.newDelayService()
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		v.delay = d
		if err := d.Start(); err != nil {
			return fmt.Errorf("broker: delay service start: %w", err)
		}
		b.timers.StartDelivery()
	}
	// The role view is published complete, before anything serves.
	b.rv.Store(v)

	rc := remoting.DefaultServerConfig()
	rc.Logger = b.log.WithField("component", "remoting")
	cfg.ServerKeys.Apply(&rc)
	rc.TLSMode = remoting.TLSMode(cfg.TLSServerMode)
	if cfg.TLSServerMode != tlsconf.ModeDisabled {
		rc.TLS = b.tlsSrv.Config
	}
	if b.acl != nil {
		rc.Guard = b.acl
	} else {
		g, err := b.newAdminGuard()
		if err != nil {
			return err
		}
		rc.Guard = g
	}
	b.srv, err = remoting.NewServer(rc)
	if err != nil {
		return err
	}
	b.registerHandlers()
	b.srv.OnConnClose(b.clients.connClosed)

	nc := remoting.DefaultClientConfig()
	nc.RequestTimeout = 6 * time.Second
	nc.Logger = b.log.WithField("component", "namesrv-client")
	nc.TLS = b.tlsCli
	if nc.Signer, err = b.nsSigner(); err != nil {
		return err
	}
	b.nsCli = remoting.NewClient(nc)
	b.metrics.registerRemoting(b.srv, b.nsCli)

	if cfg.HTTPPort != 0 {
		b.httpSrv, err = startHTTP(b, net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPPort)))
		if err != nil {
			return err
		}
	}

	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = b.srv.Serve(ln)
	}()
	b.holds.start()
	b.pipe.start()
	b.clients.start()
	b.wg.Add(5)
	go func() {
		defer b.wg.Done()
		b.bstats.Run(b.ctx, b.now)
	}()
	go b.persistLoop()
	go b.registerLoop()
	go b.claimLoop()
	go b.txn.run()
	return nil
}

// ClientTLS is the TLS configuration of this broker's remoting clients (tls.enable), nil for
// plain TCP; the slave's metadata follower dials its master with it.
func (b *Broker) ClientTLS() *tls.Config { return b.tlsCli }

// resolveTLS applies tls.config.file and builds the TLS material once, so a bad certificate
// stops the broker before anything opens; it logs what the ports will speak.
func (b *Broker) resolveTLS() error {
	tc := b.cfg.Config
	applied, err := tc.ApplyFile()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := tc.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	b.cfg.Config = tc
	if tc.TLSServerMode != tlsconf.ModeDisabled || b.cfg.HTTPTLSEnable {
		if b.tlsSrv, err = tc.BuildServer(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if b.tlsCli, err = tc.ClientTLS(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if b.cfg.HATLSEnable {
		srv := b.tlsSrv
		if srv == nil {
			if srv, err = tc.BuildServer(); err != nil {
				return fmt.Errorf("%w: haTlsEnable: %w", ErrInvalidConfig, err)
			}
		}
		b.haTLSSrv = srv.Config
		cli := tc
		cli.TLSEnable = true // the HA link's client side, whatever the remoting clients do
		if b.haTLSCli, err = cli.ClientTLS(); err != nil {
			return fmt.Errorf("%w: haTlsEnable: %w", ErrInvalidConfig, err)
		}
	}
	f := logrus.Fields{"tls.server.mode": tc.TLSServerMode, "tls.enable": tc.TLSEnable, "httpTlsEnable": b.cfg.HTTPTLSEnable, "haTlsEnable": b.cfg.HATLSEnable}
	if len(applied) > 0 {
		f["tls.config.file"], f["fromFile"] = tc.TLSConfigFile, applied
	}
	if b.tlsSrv != nil {
		f["tls.server.need.client.auth"] = tc.TLSServerNeedClientAuth
		f["selfSigned"] = b.tlsSrv.SelfSigned
	}
	b.log.WithFields(f).Info("remoting TLS")
	if b.tlsSrv != nil && b.tlsSrv.SelfSigned {
		b.log.Warn("TLS: serving a self-signed certificate generated at start (tls.test.mode.enable=true and no tls.server.certPath); clients that verify servers will refuse it")
	}
	if b.cfg.HATLSEnable && !tc.TLSClientAuthServer && b.cfg.BrokerRole == RoleSlave {
		b.log.Warn("haTlsEnable: this slave does not verify its master's certificate (tls.client.authServer=false); " +
			"the HA secret's proofs still authenticate the master, but an on-path relay is only stopped by verification")
	}
	if tc.TLSEnable && !tc.TLSClientAuthServer {
		b.log.Warn("TLS: the name-server client does not verify server certificates (tls.client.authServer=false)")
	}
	return nil
}

// Shutdown stops the broker cleanly: it stops accepting requests, unregisters from the name
// servers, answers held pulls, completes pending sends, persists offsets, stops replication and
// closes the store (which flushes it). ctx bounds the unregistration calls.
func (b *Broker) Shutdown(ctx context.Context) error {
	switch b.state.Load() {
	case stateNew:
		b.state.Store(stateStopped)
		return nil
	case stateStopped, stateStopping:
		return nil
	}
	if !b.state.CompareAndSwap(stateRunning, stateStopping) {
		return nil
	}
	err := b.teardown(ctx)
	b.state.Store(stateStopped)
	b.log.Info("broker stopped")
	return err
}

func (b *Broker) teardown(ctx context.Context) error {
	var errs []error
	// Name servers first, so clients stop routing here while requests are still answered.
	if b.nsCli != nil && b.srv != nil {
		b.unregisterAll(ctx)
	}
	b.cancel()
	// New writes are refused from here on (the state is no longer running). Answer what is in
	// flight before the connections close: held pulls, then sends waiting for replication
	// (closing the HA master completes their waiters) or for the disk.
	if b.holds != nil {
		b.holds.stop()
	}
	// A role switch in progress finishes first (a switch that starts later sees the broker
	// stopping and does nothing), so the view closed here is the last one.
	b.role.mu.Lock()
	v := b.view()
	b.role.mu.Unlock()
	if v.master != nil {
		errs = append(errs, v.master.Close())
	}
	if b.pipe != nil {
		b.pipe.stop()
	}
	// remoting.Server.Close drops frames still queued for writing; give the connection writers
	// a moment to flush the answers just produced (bounded by ctx).
	if b.lateAnswers.Load() > 0 && b.srv != nil {
		if b.ln != nil {
			_ = b.ln.Close() // stop accepting meanwhile
		}
		t := time.NewTimer(shutdownFlushGrace)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if b.srv != nil {
		errs = append(errs, b.srv.Close())
	} else if b.ln != nil {
		b.ln.Close()
	}
	if v.slave != nil {
		errs = append(errs, v.slave.Close())
	}
	if v.delay != nil {
		errs = append(errs, v.delay.Stop())
	}
	if b.clients != nil {
		b.clients.stop()
	}
	b.wg.Wait()
	if b.httpSrv != nil {
		errs = append(errs, b.httpSrv.close())
	}
	if b.nsCli != nil {
		b.nsCli.Close()
	}
	if b.acl != nil {
		b.acl.Close()
	}
	if b.tables != nil {
		// Pending metadata batches, then the offsets.
		errs = append(errs, b.tables.Close())
	}
	if b.timers != nil {
		errs = append(errs, b.timers.Stop())
	}
	if b.store != nil {
		errs = append(errs, b.store.Close())
	}
	return errors.Join(errs...)
}

func (b *Broker) running() bool { return b.state.Load() == stateRunning }

// persistLoop writes the offset tables every OffsetPersistInterval.
func (b *Broker) persistLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.OffsetPersistInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			if err := b.tables.PersistOffsets(); err != nil {
				b.log.WithError(err).Warn("persisting consumer offsets failed")
			}
		}
	}
}

// storePutter delivers due delayed messages with a plain append: no flush or replication
// wait (the original send already waited, as RocketMQ does).
type storePutter struct{ s *commitlog.Store }

func (p storePutter) Put(m *commitlog.Message) error {
	_, err := p.s.Append(m)
	return err
}

package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// roleView is the broker's role-dependent state. A role switch builds a new view and stores it
// whole (Broker.rv) under roleState.mu; request handlers load it once per request without a
// lock and so always see one consistent role: a handler holding the previous view may still
// call a closed hawire.Master or Slave, which answers with an error, never a crash. Writes are
// fenced (refused) for the whole switch.
type roleView struct {
	role         string // SYNC_MASTER, ASYNC_MASTER or SLAVE
	id           int64  // brokerId registered with the name servers (0 for a master)
	master       *hawire.Master
	slave        *hawire.Slave
	disc         *regDiscovery     // a slave's view of its master's HA address
	delay        *schedule.Service // delay-level delivery, masters only
	haServerAddr string            // brokerIP2:haListenPort, advertised for HA (masters)
}

func (v *roleView) isMaster() bool { return isMasterRole(v.role) }

// view is the current role view (never nil after New).
func (b *Broker) view() *roleView { return b.rv.Load() }

// roleState is what in-process role switching (Promote, Demote) keeps beside the broker.
type roleState struct {
	mu            sync.Mutex
	fenced        atomic.Bool
	fenceReason   atomic.Value // string
	masterRole    string
	slaveID       int64
	beforePromote func(ctx context.Context) error
	switches      atomic.Int64
	slaveClosed   bool // a failed promotion stopped the HA slave
	status        atomic.Pointer[func() any]
}

// promoteSyncWait bounds the metadata sync before promotion: a slave that cannot reach
// metasync or the old master promotes with the tables it has (they were following) rather
// than leave the group without a master.
const promoteSyncWait = 2 * time.Second

// promoteDispatchWait bounds how long Promote waits for the dispatcher when ctx has no deadline.
const promoteDispatchWait = 10 * time.Second

// PromotionConfig configures what Promote turns a slave into.
type PromotionConfig struct {
	// MasterRole is SYNC_MASTER or ASYNC_MASTER. Default SYNC_MASTER.
	MasterRole string
	// SlaveID is the brokerId taken on Demote by a broker that started as a master. Default:
	// the configured brokerId of a slave, 1 for a master.
	SlaveID int64
	// BeforePromote runs after the HA slave stopped and before the broker becomes master (the
	// metadata follower's SyncNow). An error is logged; promotion continues with what the
	// tables hold.
	BeforePromote func(ctx context.Context) error
}

// SetPromotion configures Promote and Demote; call it before the first switch. A nil
// BeforePromote keeps the hook set by SetBeforePromote.
func (b *Broker) SetPromotion(p PromotionConfig) {
	b.role.mu.Lock()
	defer b.role.mu.Unlock()
	b.role.masterRole = p.MasterRole
	b.role.slaveID = p.SlaveID
	if p.BeforePromote != nil {
		b.role.beforePromote = p.BeforePromote
	}
}

// Role is the broker's current role: ASYNC_MASTER, SYNC_MASTER or SLAVE.
func (b *Broker) Role() string {
	return b.view().role
}

// Epoch is the HA epoch the broker registers with (its master epoch, or the last epoch it
// replicated as a slave).
func (b *Broker) Epoch() int64 {
	b.role.mu.Lock()
	defer b.role.mu.Unlock()
	return b.epoch()
}

// FenceWrites makes every write request fail with SERVICE_NOT_AVAILABLE until UnfenceWrites:
// a master that may no longer hold its lease stops acknowledging at once.
func (b *Broker) FenceWrites(reason string) {
	b.role.fenceReason.Store(reason)
	if !b.role.fenced.Swap(true) {
		b.log.WithField("reason", reason).Warn("writes fenced")
	}
}

// UnfenceWrites lets writes through again (a master that renewed its lease).
func (b *Broker) UnfenceWrites() {
	if b.role.fenced.Swap(false) {
		b.log.Info("writes unfenced")
	}
}

// WritesFenced reports whether writes are fenced.
func (b *Broker) WritesFenced() bool { return b.role.fenced.Load() }

func (b *Broker) fenceText() string {
	if s, _ := b.role.fenceReason.Load().(string); s != "" {
		return s
	}
	return "role switch in progress"
}

func (b *Broker) promotionRole() string {
	if r := b.role.masterRole; isMasterRole(r) {
		return r
	}
	return RoleSyncMaster
}

func (b *Broker) demotionID() int64 {
	if b.role.slaveID > 0 {
		return b.role.slaveID
	}
	return 1
}

// Promote turns a running slave into the group's master in this process: writes stay fenced
// while it stops the HA slave, waits until the dispatcher has indexed everything replicated,
// runs BeforePromote (metadata), starts a new epoch of at least epoch (recorded in the epoch
// file before anything is served), starts the HA master on haListenPort and delay delivery,
// registers as brokerId 0 with every name server, and only then accepts writes. It returns the
// epoch it serves. Promoting a master returns its epoch.
func (b *Broker) Promote(ctx context.Context, epoch int64) (int64, error) {
	b.role.mu.Lock()
	defer b.role.mu.Unlock()
	if !b.running() {
		return 0, ErrClosed
	}
	cur := b.view()
	if cur.isMaster() {
		if !b.role.fenced.Load() {
			return cur.master.Epoch(), nil
		}
		return 0, fmt.Errorf("%w: master is fenced; demote it first", ErrRoleSwitch)
	}
	mcfg := b.cfg
	mcfg.BrokerRole, mcfg.BrokerID, mcfg.HAMasterAddress = b.promotionRole(), 0, ""
	if err := mcfg.Validate(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrRoleSwitch, err)
	}
	start := b.now()
	b.role.fenceReason.Store("role switch in progress")
	b.role.fenced.Store(true)
	if b.role.slaveID == 0 {
		b.role.slaveID = cur.id
	}
	log := b.log.WithField("epochWanted", epoch)
	log.Warn("promoting to master")

	// 1. Stop replicating: nothing more is appended from the old master.
	if cur.slave != nil {
		_ = cur.slave.Close()
		b.role.slaveClosed = true
	}
	// Fresh reads (the dispatcher, HA sends, consumers) follow a master's log end from memory.
	b.store.EnableTailCache()
	// 2. Everything replicated is indexed before queues are served as a master's.
	max := b.store.MaxOffset()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(promoteDispatchWait)
	}
	if err := b.store.WaitDispatched(max, deadline); err != nil {
		return 0, b.promoteFailed(fmt.Errorf("%w: dispatcher behind: %w", ErrRoleSwitch, err))
	}
	// 3. Metadata (topics, groups, consumer and delay offsets) as fresh as metasync has it.
	if hook := b.role.beforePromote; hook != nil {
		hctx, hcancel := context.WithTimeout(ctx, promoteSyncWait)
		err := hook(hctx)
		hcancel()
		if err != nil {
			log.WithError(err).Warn("metadata sync before promotion failed; serving the tables as they are")
		}
	}
	// The log is the truth for which queues exist: a topic the tables do not know yet (created
	// on the old master after the last metadata sync) is taken from the consume queues.
	b.recoverTopicsFromLog(log)
	// 4. The new epoch, recorded before the HA master serves it.
	if err := prepareEpoch(b.cfg.StorePathRootDir, epoch, max); err != nil {
		return 0, b.promoteFailed(fmt.Errorf("%w: epoch file: %w", ErrRoleSwitch, err))
	}
	m, haAddr, err := b.newHAMaster(mcfg)
	if err != nil {
		return 0, b.promoteFailed(fmt.Errorf("%w: %w", ErrRoleSwitch, err))
	}
	// 5. Delay delivery (masters only).
	d, err := b.newDelayService()
	if err != nil {
		_ = m.Close()
		return 0, b.promoteFailed(fmt.Errorf("%w: %w", ErrRoleSwitch, err))
	}
	b.rv.Store(&roleView{role: mcfg.BrokerRole, id: 0, master: m, delay: d, haServerAddr: haAddr})
	b.masterAddr.Store(b.brokerAddr)
	if err := d.Start(); err != nil {
		log.WithError(err).Error("delay delivery not started")
	}
	b.timers.StartDelivery()
	// 6. Name servers: the slave entry goes, the master entry comes.
	b.unregisterID(ctx, cur.id)
	b.registerAll()
	b.role.switches.Add(1)
	// 7. Writes.
	b.role.fenced.Store(false)
	log.WithFields(logrus.Fields{"epoch": m.Epoch(), "maxOffset": max, "haServerAddr": haAddr,
		"took": b.now().Sub(start).String(), "role": mcfg.BrokerRole}).Warn("promoted to master")
	return m.Epoch(), nil
}

// recoverTopicsFromLog adds every topic that has consume queues in the store but no entry
// in the topic table, with as many queues as its highest queue id + 1 (read and write).
// Retry and dead-letter topics get their usual configuration.
func (b *Broker) recoverTopicsFromLog(log logrus.FieldLogger) {
	for topic, qids := range b.store.Queues() {
		if len(qids) == 0 || topic == schedule.Topic || topic == timer.Topic {
			continue
		}
		if _, ok := b.tables.Topics.Get(topic); ok {
			continue
		}
		n := qids[len(qids)-1] + 1
		var err error
		switch {
		case strings.HasPrefix(topic, meta.RetryGroupTopicPrefix):
			_, _, err = b.tables.Topics.CreateRetryTopic(strings.TrimPrefix(topic, meta.RetryGroupTopicPrefix), n, meta.Wait)
		case strings.HasPrefix(topic, meta.DLQGroupTopicPrefix):
			_, _, err = b.tables.Topics.CreateDLQTopic(strings.TrimPrefix(topic, meta.DLQGroupTopicPrefix))
		default:
			tc := route.NewTopicConfig(topic)
			tc.ReadQueueNums, tc.WriteQueueNums = n, n
			tc.Perm = route.PermRead | route.PermWrite
			_, _, err = b.tables.Topics.PutIfAbsent(tc)
		}
		f := log.WithFields(logrus.Fields{"topic": topic, "queues": n})
		if err != nil {
			f.WithError(err).Error("topic found in the log but not recorded")
			continue
		}
		f.Warn("topic missing from the synced metadata: recovered from the log")
	}
}

// promoteFailed leaves a broker whose promotion failed a fenced slave without replication;
// Demote starts replication again.
func (b *Broker) promoteFailed(err error) error {
	b.log.WithError(err).Error("promotion failed")
	return err
}

// Demote turns the master into a slave in this process: writes are fenced first, delay
// delivery stops, the HA master refuses its slaves (NOT_MASTER) and closes, and an HA slave
// starts that follows the master found through discovery (name-server answers, FollowMaster);
// a divergent tail is truncated by the slave's handshake. It re-registers with the name
// servers under the slave brokerId. Demoting a slave (re)starts its replication if it is not
// running.
func (b *Broker) Demote(ctx context.Context) error {
	b.role.mu.Lock()
	defer b.role.mu.Unlock()
	if !b.running() {
		return ErrClosed
	}
	b.role.fenceReason.Store("demoted: not the master")
	b.role.fenced.Store(true)
	cur := b.view()
	wasMaster := cur.isMaster()
	if wasMaster {
		b.log.Warn("demoting to slave")
		if b.role.masterRole == "" {
			b.role.masterRole = cur.role
		}
		if cur.delay != nil {
			_ = cur.delay.Stop()
		}
		b.timers.StopDelivery()
		if cur.master != nil {
			cur.master.Demote()
			_ = cur.master.Close()
		}
		b.quiesceAppends()
	}
	scfg := b.cfg
	scfg.BrokerRole, scfg.BrokerID = RoleSlave, b.demotionID()
	if !wasMaster {
		scfg.BrokerID = cur.id
	}
	if wasMaster || b.slaveStopped() {
		disc := cur.disc
		if disc == nil || (wasMaster && disc.static) {
			// A static haMasterAddress named the master this broker followed before it was
			// promoted; after a switch the master is whoever discovery says.
			disc = newRegDiscovery("")
		}
		s, err := b.newHASlave(scfg, disc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRoleSwitch, err)
		}
		b.rv.Store(&roleView{role: RoleSlave, id: scfg.BrokerID, slave: s, disc: disc})
		b.role.slaveClosed = false
	}
	if wasMaster {
		b.unregisterID(ctx, cur.id)
		b.registerAll()
		b.role.switches.Add(1)
		b.log.WithField("role", RoleSlave).Warn("demoted to slave")
	}
	return nil
}

// demoteQuiet is how long the log must stay still after writes were fenced before an HA
// slave may append to it: a send that passed the fence check just before it was raised appends
// within microseconds, and the HA slave must never interleave with it.
const demoteQuiet = 50 * time.Millisecond

// quiesceAppends waits (at most a second) until MaxOffset did not move for demoteQuiet.
func (b *Broker) quiesceAppends() {
	last := b.store.MaxOffset()
	t := time.NewTicker(demoteQuiet)
	defer t.Stop()
	for i := 0; i < 20; i++ {
		<-t.C
		cur := b.store.MaxOffset()
		if cur == last {
			return
		}
		last = cur
	}
}

// RoleSwitches counts completed promotions and demotions.
func (b *Broker) RoleSwitches() int64 { return b.role.switches.Load() }

// slaveStopped reports whether the slave's HA replication was stopped by a failed promotion.
func (b *Broker) slaveStopped() bool { return b.view().slave == nil || b.role.slaveClosed }

func (b *Broker) newHAMaster(cfg Config) (*hawire.Master, string, error) {
	mc := hawire.DefaultMasterConfig()
	mc.ListenAddr = net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.EffectiveHAListenPort()))
	mc.ClusterName, mc.BrokerName = cfg.BrokerClusterName, cfg.BrokerName
	mc.Secret, mc.AllowUnauthenticated = b.haSecret, b.haSecret == ""
	mc.TLS = b.haTLSSrv
	mc.TransferBatchSize = cfg.HATransferBatchSize
	mc.HousekeepingInterval = cfg.HAHousekeepingInterval
	mc.HeartbeatInterval = cfg.HASendHeartbeatInterval
	mc.MaxGapNotInSync = cfg.HAMaxGapNotInSync
	mc.InSyncReplicas = cfg.InSyncReplicas
	mc.MinInSyncReplicas = cfg.MinInSyncReplicas
	mc.SlaveTimeout = cfg.SlaveTimeout
	mc.InlineSend = cfg.BrokerRole == RoleSyncMaster
	mc.EpochDir = cfg.StorePathRootDir
	mc.Logger = b.log.WithField("component", "ha")
	mc.Now = b.now
	m, err := hawire.NewMaster(mc, b.store)
	if err != nil {
		return nil, "", fmt.Errorf("HA master: %w", err)
	}
	if err := m.Start(); err != nil {
		return nil, "", fmt.Errorf("HA master listen: %w", err)
	}
	haPort := m.Addr().(*net.TCPAddr).Port
	return m, net.JoinHostPort(cfg.BrokerIP2, strconv.Itoa(haPort)), nil
}

func (b *Broker) newHASlave(cfg Config, disc *regDiscovery) (*hawire.Slave, error) {
	sc := hawire.DefaultSlaveConfig()
	sc.ClusterName, sc.BrokerName, sc.BrokerID = cfg.BrokerClusterName, cfg.BrokerName, cfg.BrokerID
	sc.Secret, sc.AllowUnauthenticated = b.haSecret, b.haSecret == ""
	sc.TLS = b.haTLSCli
	if cfg.HAAllowWipe {
		sc.AllowWipe, sc.OnTooOld = true, hawire.OnTooOldWipe
	}
	sc.HeartbeatInterval = cfg.HASendHeartbeatInterval
	sc.HousekeepingInterval = cfg.HAHousekeepingInterval
	sc.EpochDir = cfg.StorePathRootDir
	sc.Logger = b.log.WithField("component", "ha")
	sc.Now = b.now
	s, err := hawire.NewSlave(sc, b.store, disc)
	if err != nil {
		return nil, fmt.Errorf("HA slave: %w", err)
	}
	if err := s.Start(); err != nil {
		return nil, fmt.Errorf("HA slave start: %w", err)
	}
	return s, nil
}

// newDelayService builds a delay-delivery service (the store's dispatch hook, registered at
// start, forwards to the current view's service).
func (b *Broker) newDelayService() (*schedule.Service, error) {
	dc := schedule.DefaultConfig()
	dc.Levels = b.levels
	dc.Delivered = b.delivered
	dc.Logger = b.log.WithField("component", "schedule")
	dc.Now = b.now
	d, err := schedule.New(dc, b.store, b.tables.Delay, storePutter{b.store})
	if err != nil {
		return nil, fmt.Errorf("delay service: %w", err)
	}
	return d, nil
}

// prepareEpoch makes the next hawire.NewMaster start epoch (at least) wanted: NewMaster starts
// last+1 and replaces an empty last epoch, so an empty placeholder wanted-1 at the log's end
// yields exactly wanted when wanted is ahead of the file.
func prepareEpoch(dir string, wanted, max int64) error {
	entries, err := hawire.LoadEpochFile(dir)
	if err != nil {
		return err
	}
	hist, err := hawire.NewEpochHistory(entries)
	if err != nil {
		return err
	}
	hist.TruncateTo(max + 1)
	last, ok := hist.Last()
	if wanted <= 1 || (ok && wanted <= last.Epoch+1) {
		return nil
	}
	if ok && last.StartOffset == max {
		// An empty last epoch would be replaced by NewMaster; lift it instead.
		entries = hist.Entries()
		entries[len(entries)-1].Epoch = wanted - 1
		return hawire.SaveEpochFile(dir, entries)
	}
	if err := hist.Append(hawire.EpochEntry{Epoch: wanted - 1, StartOffset: max}); err != nil {
		return err
	}
	return hawire.SaveEpochFile(dir, hist.Entries())
}

// unregisterID removes the broker's entry under brokerId id from every name server (after a
// role switch changed the id).
func (b *Broker) unregisterID(ctx context.Context, id int64) {
	if len(b.cfg.NamesrvAddrs()) == 0 || b.brokerAddr == "" {
		return
	}
	ext := map[string]string{
		"brokerName": b.cfg.BrokerName, "brokerAddr": b.brokerAddr,
		"clusterName": b.cfg.BrokerClusterName, "brokerId": strconv.FormatInt(id, 10),
	}
	b.regMu.Lock()
	defer b.regMu.Unlock()
	req := b.nsRequest(remoting.UnregisterBroker, ext, nil)
	var wg sync.WaitGroup
	for _, ns := range b.cfg.NamesrvAddrs() {
		wg.Add(1)
		go func(ns string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			resp, err := b.nsCli.Invoke(cctx, ns, req)
			if err != nil {
				b.log.WithError(err).WithField("namesrv", ns).Warn("unregister after role switch failed")
			} else if resp.Code != remoting.Success {
				b.log.WithFields(logrus.Fields{"namesrv": ns, "code": remoting.ResponseName(resp.Code), "remark": resp.Remark}).Warn("unregister after role switch refused")
			}
		}(ns)
	}
	wg.Wait()
}

// SetBeforePromote sets the hook Promote runs before the broker becomes master (the metadata
// follower's SyncNow), keeping the rest of the promotion configuration.
func (b *Broker) SetBeforePromote(fn func(ctx context.Context) error) {
	b.role.mu.Lock()
	defer b.role.mu.Unlock()
	b.role.beforePromote = fn
}

// InSyncSlaves lists the brokerIds of the slaves the HA master counts in sync (none on a
// slave).
func (b *Broker) InSyncSlaves() []int64 {
	v := b.view()
	if !v.isMaster() || v.master == nil {
		return nil
	}
	var out []int64
	for _, s := range v.master.Status().Slaves {
		if s.InSync && s.Streaming {
			out = append(out, s.BrokerID)
		}
	}
	return out
}

// SlaveCaughtUp reports whether the slave with brokerId id acknowledged everything the
// master's log holds (a graceful switchover waits for it with writes fenced).
func (b *Broker) SlaveCaughtUp(id int64) bool {
	v := b.view()
	if !v.isMaster() || v.master == nil {
		return false
	}
	max := b.store.MaxOffset()
	for _, s := range v.master.Status().Slaves {
		if s.BrokerID == id && s.Streaming && s.AckOffset >= max {
			return true
		}
	}
	return false
}

// LearnMaster tells a slave where its master's HA port is (the failover lock's holder).
func (b *Broker) LearnMaster(haAddr string) {
	if d := b.view().disc; d != nil && haAddr != "" {
		d.learn(haAddr)
	}
}

// LearnMasterAddr tells a slave its master's client address (the failover lock's holder): the
// metadata follower pulls the master's tables there without waiting for the next
// registration to name it.
func (b *Broker) LearnMasterAddr(addr string) {
	if addr != "" && !b.view().isMaster() {
		b.masterAddr.Store(addr)
	}
}

// HAServerAddr is the HA address advertised while the broker is master ("" as a slave).
func (b *Broker) HAServerAddr() string {
	return b.view().haServerAddr
}

// IsMaster reports whether the broker currently serves as master.
func (b *Broker) IsMaster() bool {
	return b.view().isMaster()
}

// SetFailoverStatus adds the election's view (epoch, lock holder, in-sync set) to Status.
func (b *Broker) SetFailoverStatus(fn func() any) { b.role.status.Store(&fn) }

// roleStatus completes Status after a role switch: the replaced HA side is not reported.
func (b *Broker) roleStatus(st *Status) {
	st.WritesFenced = b.role.fenced.Load()
	if fn := b.role.status.Load(); fn != nil {
		st.Failover = (*fn)()
	}
}

// warnHAOptOuts logs, at every start, the HA settings that weaken what the group guarantees.
func (b *Broker) warnHAOptOuts() {
	if b.haSecret == "" {
		b.log.WithField("key", "haAllowUnauthenticated").Warn("HA link runs without authentication (haAllowUnauthenticated=true): anyone who reaches the HA port can pose as a slave and turn SLAVE_NOT_AVAILABLE into SEND_OK, anyone at the master's HA address as the master; set haSecretFile or haSecret instead")
	}
	if b.cfg.HAAllowWipe {
		b.log.WithField("key", "haAllowWipe").Warn("haAllowWipe=true: a master that proves itself may make this broker, as a slave, wipe its whole log and copy everything again")
	}
}

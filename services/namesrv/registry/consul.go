package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/failover"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// ConsulConfig configures the Consul-backed registry.
type ConsulConfig struct {
	// Client talks to the local Consul agent (discovery.NewClient reads
	// CONSUL_HTTP_ADDR and friends).
	Client *consul.Client
	// TTL turns a broker's check critical when it has not registered for
	// this long. Default 120s (RocketMQ's broker expiry).
	TTL time.Duration
	// TCPInterval is how often the agent dials each broker's client port;
	// 0 disables the TCP check. Default 2s.
	TCPInterval time.Duration
	// DeregisterAfter removes an instance critical for this long (Consul's
	// minimum is 1m). Default 1m.
	DeregisterAfter time.Duration
	// Wait bounds one blocking query. Default 30s.
	Wait time.Duration
	// RetryInterval is how often registrations that Consul refused (it was
	// unreachable) are tried again. Default 1s.
	RetryInterval time.Duration
	// Limits bound registrations (zero: DefaultLimits).
	Limits Limits
	Logger logrus.FieldLogger
	Now    func() time.Time
}

// DefaultConsulConfig returns defaults; Client must still be set.
func DefaultConsulConfig() ConsulConfig {
	return ConsulConfig{TTL: 120 * time.Second, TCPInterval: 2 * time.Second, DeregisterAfter: time.Minute,
		Wait: 30 * time.Second, RetryInterval: time.Second}
}

// Consul keeps the registry in Consul: each registered broker is a service
// instance with health checks, each master's topic table a KV entry (layout
// in package discovery). Reads come from a local cache that blocking queries
// keep fresh, so a route lookup costs no Consul round trip, and any number
// of name servers give the same answers. While Consul is unreachable reads
// answer from the last known state, Status says it is stale, and
// registrations are retried until Consul is back.
//
// Groups with automatic failover (libs/failover) hold a lock at
// rmqha/leader/<cluster>/<brokerName> whose value names the master's address.
// While that lock is held it, not a declared epoch, decides who is master: a
// master registration from another address is refused with ErrNotLeader
// (after one consistent read of the lock, in case the watch is behind), a
// registered master at another address is left out of routes and out of the
// answers slaves get, and the holder's registration replaces it whatever its
// epoch. Groups without a lock, or whose lock is free (an election under
// way), follow the epoch rule.
type Consul struct {
	cfg ConsulConfig
	log logrus.FieldLogger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.RWMutex
	view        *Memory               // rebuilt from Consul on every change
	brokers     []discovery.Broker    // healthy instances, last seen
	topics      map[string]topicEntry // by KV key
	haveBrokers bool                  // first answer arrived
	haveTopics  bool
	leaders     map[string]failover.Leader // held failover locks by group (cluster/brokerName)
	stale       error                      // last Consul error, nil when fresh
	byConn      map[uint64][]string        // service IDs registered over each connection
	written     map[string]string          // service ID -> registration fingerprint last written
	topicsVer   map[string]route.DataVersion
	pending     map[string]Registration // waiting for Consul
	known       map[string]Registration // latest registration per service ID seen here
	conflicts   []string
	kick        chan struct{}
	closing     bool
}

type topicEntry struct {
	cluster, brokerName string
	table               map[string]route.TopicConfig
}

// NewConsul starts the watches and returns once the first answers arrived
// or ctx ends (then it keeps trying in the background and reports stale).
func NewConsul(ctx context.Context, cfg ConsulConfig) (*Consul, error) {
	if cfg.Client == nil {
		return nil, errors.New("registry: ConsulConfig.Client is required")
	}
	d := DefaultConsulConfig()
	if cfg.TTL <= 0 {
		cfg.TTL = d.TTL
	}
	if cfg.DeregisterAfter < time.Minute {
		cfg.DeregisterAfter = d.DeregisterAfter
	}
	if cfg.Wait <= 0 {
		cfg.Wait = d.Wait
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = d.RetryInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetLevel(logrus.PanicLevel)
		cfg.Logger = l
	}
	cfg.Limits = cfg.Limits.orDefault()
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	c := &Consul{cfg: cfg, log: cfg.Logger, view: newView(), topics: map[string]topicEntry{}, leaders: map[string]failover.Leader{},
		byConn: map[uint64][]string{}, written: map[string]string{}, topicsVer: map[string]route.DataVersion{},
		pending: map[string]Registration{}, known: map[string]Registration{}, kick: make(chan struct{}, 1), stale: errors.New("no answer from Consul yet")}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(4)
	go c.watchBrokers()
	go c.watchTopics()
	go c.watchLeaders()
	go c.retryLoop()
	for {
		c.mu.RLock()
		ready := c.haveBrokers && c.haveTopics
		c.mu.RUnlock()
		if ready {
			return c, nil
		}
		select {
		case <-ctx.Done():
			c.log.Warn("consul registry: starting without a first answer from Consul; serving stale (empty) state")
			return c, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Consul) setStale(err error) {
	c.mu.Lock()
	was := c.stale
	c.stale = err
	c.mu.Unlock()
	if err != nil && was == nil {
		c.log.WithError(err).Warn("consul unreachable: answering from the last known state")
	}
	if err == nil && was != nil {
		// An agent that restarted brings TTL checks back critical: refresh
		// every broker this name server knows at once instead of letting
		// them drop out of routes until their next registration.
		c.mu.Lock()
		for id, r := range c.known {
			if _, queued := c.pending[id]; !queued {
				c.pending[id] = r
			}
		}
		c.mu.Unlock()
		c.log.Info("consul reachable again: state fresh; refreshing registrations")
	}
}

func (c *Consul) watchBrokers() {
	defer c.wg.Done()
	discovery.Watch(c.ctx, c.cfg.Client, c.cfg.Wait, func(bs []discovery.Broker, err error) {
		if err != nil {
			c.setStale(err)
			return
		}
		c.mu.Lock()
		c.brokers, c.haveBrokers = bs, true
		c.rebuildLocked()
		c.mu.Unlock()
		c.setStale(nil)
	})
}

func (c *Consul) watchTopics() {
	defer c.wg.Done()
	var index uint64
	backoff := 100 * time.Millisecond
	for c.ctx.Err() == nil {
		q := (&consul.QueryOptions{WaitIndex: index, WaitTime: c.cfg.Wait}).WithContext(c.ctx)
		pairs, meta, err := c.cfg.Client.KV().List(discovery.KVTopicsPrefix, q)
		if c.ctx.Err() != nil {
			return
		}
		if err != nil {
			c.setStale(err)
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(backoff):
			}
			if backoff < 5*time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 100 * time.Millisecond
		if meta.LastIndex < index {
			index = 0
		} else {
			index = meta.LastIndex
		}
		topics := map[string]topicEntry{}
		for _, p := range pairs {
			cl, bn, ok := discovery.SplitTopicsKey(p.Key)
			if !ok {
				continue
			}
			w, err := route.DecodeTopicConfigSerializeWrapper(p.Value)
			if err != nil {
				c.log.WithError(err).WithField("key", p.Key).Warn("consul: unreadable topic table ignored")
				continue
			}
			topics[p.Key] = topicEntry{cluster: cl, brokerName: bn, table: w.TopicConfigTable}
		}
		c.mu.Lock()
		c.topics, c.haveTopics = topics, true
		c.rebuildLocked()
		c.mu.Unlock()
		c.setStale(nil)
	}
}

// rebuildLocked recomputes the cached view: masters first (one per group,
// as discovery.Resolve chose, and only a failover lock's holder where the
// lock is held), then slaves, then the topic tables.
func (c *Consul) rebuildLocked() {
	v := newView()
	now := c.cfg.Now()
	bs := append([]discovery.Broker(nil), c.brokers...)
	// Registrations this instance could not write yet count as live.
	for _, r := range c.pending {
		bs = append(bs, discovery.Broker{Cluster: r.Cluster, BrokerName: r.BrokerName, BrokerID: r.BrokerID, Epoch: r.Epoch, Addr: r.Addr, HAAddr: r.HAAddr})
	}
	bs = discovery.Resolve(bs)
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].IsMaster() && !bs[j].IsMaster() })
	for _, b := range bs {
		if l, held := c.leaders[groupKey(b.Cluster, b.BrokerName)]; b.IsMaster() && held && l.Addr != b.Addr {
			continue
		}
		v.restore(Registration{Cluster: b.Cluster, BrokerName: b.BrokerName, BrokerID: b.BrokerID, Addr: b.Addr, HAAddr: b.HAAddr, Epoch: b.Epoch}, now)
	}
	for _, te := range c.topics {
		if g := v.groups[te.brokerName]; g != nil && g.cluster == te.cluster {
			v.SetTopics(te.brokerName, te.table)
		}
	}
	for _, r := range c.pending {
		if r.BrokerID == route.MasterID && r.Topics.TopicConfigTable != nil {
			v.SetTopics(r.BrokerName, r.Topics.TopicConfigTable)
		}
	}
	c.view = v
}

func groupKey(cluster, brokerName string) string { return cluster + "/" + brokerName }

// watchLeaders keeps the held failover locks (rmqha/leader/<cluster>/<brokerName>) cached.
func (c *Consul) watchLeaders() {
	defer c.wg.Done()
	var index uint64
	backoff := 100 * time.Millisecond
	for c.ctx.Err() == nil {
		q := (&consul.QueryOptions{WaitIndex: index, WaitTime: c.cfg.Wait}).WithContext(c.ctx)
		pairs, meta, err := c.cfg.Client.KV().List(failover.KeyPrefix, q)
		if c.ctx.Err() != nil {
			return
		}
		if err != nil {
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if meta.LastIndex < index {
			index = 0
		} else {
			index = meta.LastIndex
		}
		leaders := map[string]failover.Leader{}
		for _, p := range pairs {
			if l, ok := heldLeader(p); ok {
				leaders[strings.TrimPrefix(p.Key, failover.KeyPrefix)] = l
			}
		}
		c.mu.Lock()
		c.leaders = leaders
		c.rebuildLocked()
		c.mu.Unlock()
	}
}

// heldLeader decodes a group's failover lock; ok only for a held lock key
// (rmqha/leader/<cluster>/<brokerName>, not its state or candidates) naming an address.
func heldLeader(p *consul.KVPair) (failover.Leader, bool) {
	rest := strings.TrimPrefix(p.Key, failover.KeyPrefix)
	if p.Session == "" || strings.Count(rest, "/") != 1 {
		return failover.Leader{}, false
	}
	var l failover.Leader
	if err := json.Unmarshal(p.Value, &l); err != nil || l.Addr == "" {
		return failover.Leader{}, false
	}
	return l, true
}

// leaderFor returns the held failover lock of r's group. A master registration that the
// cache would refuse or that would move the master (another holder cached, or no lock
// cached and another master registered) is judged on a consistent read of the lock, so
// that a registration right after an election does not depend on the watch's delay.
func (c *Consul) leaderFor(r Registration) (failover.Leader, bool) {
	gk := groupKey(r.Cluster, r.BrokerName)
	c.mu.RLock()
	l, held := c.leaders[gk]
	otherMaster := false
	if g := c.view.groups[r.BrokerName]; g != nil {
		if m := g.members[route.MasterID]; m != nil && m.reg.Addr != r.Addr {
			otherMaster = true
		}
	}
	c.mu.RUnlock()
	if r.BrokerID != route.MasterID || (held && l.Addr == r.Addr) || (!held && !otherMaster) {
		return l, held
	}
	p, _, err := c.cfg.Client.KV().Get(failover.LeaderKey(r.Cluster, r.BrokerName), (&consul.QueryOptions{RequireConsistent: true}).WithContext(c.ctx))
	if err != nil {
		return l, held // Consul unreachable: the cached holder stands
	}
	l, held = failover.Leader{}, false
	if p != nil {
		l, held = heldLeader(p)
	}
	c.mu.Lock()
	if held {
		c.leaders[gk] = l
	} else {
		delete(c.leaders, gk)
	}
	c.rebuildLocked()
	c.mu.Unlock()
	return l, held
}

func fingerprint(r Registration) string {
	return fmt.Sprintf("%s|%s|%d|%s|%s|%s|%t|%d", r.Cluster, r.BrokerName, r.BrokerID, r.Addr, r.HAAddr, r.HTTPAddr, r.HTTPTLS, r.Epoch)
}

func (c *Consul) conflict(s string) {
	c.conflicts = append([]string{s}, c.conflicts...)
	if len(c.conflicts) > maxConflicts {
		c.conflicts = c.conflicts[:maxConflicts]
	}
}

// Register implements Registry.
func (c *Consul) Register(r Registration, now time.Time) (RegisterResult, error) {
	r, err := prepare(r, c.cfg.Limits)
	if err != nil {
		return RegisterResult{}, err
	}
	leader, held := c.leaderFor(r)
	if held && r.BrokerID == route.MasterID && r.Addr != leader.Addr {
		c.mu.Lock()
		c.conflict(fmt.Sprintf("%s: master %s/%s at %s refused: the failover lock is held by node %d at %s",
			now.Format(time.RFC3339), r.Cluster, r.BrokerName, r.Addr, leader.Node, leader.Addr))
		c.mu.Unlock()
		return RegisterResult{}, fmt.Errorf("%w: the failover lock of %s is held by node %d at %s", ErrNotLeader, r.BrokerName, leader.Node, leader.Addr)
	}
	// Conflict rules are the in-memory registry's, checked against the
	// cached view of the whole group (all name servers' registrations), with
	// the connections this name server saw them on.
	c.mu.Lock()
	probe := NewMemoryWithLimits(c.cfg.Limits)
	for name, g := range c.view.groups {
		pg := &group{cluster: g.cluster, topics: g.topics, members: map[int64]*liveBroker{}}
		for id, b := range g.members {
			pr := b.reg
			if k, ok := c.known[discovery.ServiceID(g.cluster, name, id)]; ok && k.Addr == pr.Addr {
				pr.ConnID = k.ConnID
			}
			if held && id == route.MasterID && name == r.BrokerName && pr.Addr != leader.Addr {
				continue // not the lock holder: not the master, whatever it declared
			}
			pg.members[id] = &liveBroker{reg: pr, last: now}
		}
		probe.groups[name] = pg
	}
	res, err := probe.registerLocked(r, now)
	if err != nil {
		if len(probe.conflicts) > 0 {
			c.conflict(probe.conflicts[0])
		}
		c.mu.Unlock()
		return res, err
	}
	id := discovery.ServiceID(r.Cluster, r.BrokerName, r.BrokerID)
	c.known[id] = r
	if r.ConnID != 0 {
		known := false
		for _, s := range c.byConn[r.ConnID] {
			known = known || s == id
		}
		if !known {
			c.byConn[r.ConnID] = append(c.byConn[r.ConnID], id)
		}
	}
	// An id at the same address that the rules let go (role switch) goes from Consul too.
	var replaced []string
	if g := c.view.groups[r.BrokerName]; g != nil {
		for oid, b := range g.members {
			if oid != r.BrokerID && b.reg.Addr == r.Addr {
				replaced = append(replaced, discovery.ServiceID(r.Cluster, r.BrokerName, oid))
			}
		}
	}
	c.mu.Unlock()
	if len(replaced) > 0 {
		c.deregister(replaced)
	}

	if err := c.write(r); err != nil {
		c.mu.Lock()
		c.pending[id] = r
		c.rebuildLocked()
		c.mu.Unlock()
		c.setStale(err)
		c.log.WithError(err).WithField("broker", id).Warn("consul: registration not written; will retry")
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return res, nil
}

// write puts one registration into Consul: the service instance (or just
// its TTL check when nothing changed) and, for a master, its topic table
// when the table's DataVersion moved.
func (c *Consul) write(r Registration) error {
	id := discovery.ServiceID(r.Cluster, r.BrokerName, r.BrokerID)
	fp := fingerprint(r)
	c.mu.RLock()
	same := c.written[id] == fp
	lastVer, haveVer := c.topicsVer[id]
	c.mu.RUnlock()
	agent := c.cfg.Client.Agent()
	if same {
		if err := agent.UpdateTTL(id+"/ttl", "registered", consul.HealthPassing); err != nil {
			same = false // the agent lost it (restarted): register again
		}
	}
	if !same {
		b := discovery.Broker{Cluster: r.Cluster, BrokerName: r.BrokerName, BrokerID: r.BrokerID, Epoch: r.Epoch, Addr: r.Addr, HAAddr: r.HAAddr, HTTPAddr: r.HTTPAddr, HTTPTLS: r.HTTPTLS}
		if err := agent.ServiceRegister(discovery.Registration(b, c.cfg.TTL, c.cfg.TCPInterval, c.cfg.DeregisterAfter)); err != nil {
			return err
		}
	}
	if r.BrokerID == route.MasterID && (!haveVer || !lastVer.Equal(r.Topics.DataVersion) || !same) {
		body, err := json.Marshal(r.Topics)
		if err != nil {
			return err
		}
		if _, err := c.cfg.Client.KV().Put(&consul.KVPair{Key: discovery.TopicsKey(r.Cluster, r.BrokerName), Value: body}, nil); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.written[id] = fp
	if r.BrokerID == route.MasterID {
		c.topicsVer[id] = r.Topics.DataVersion
		key := discovery.TopicsKey(r.Cluster, r.BrokerName)
		c.topics[key] = topicEntry{cluster: r.Cluster, brokerName: r.BrokerName, table: r.Topics.TopicConfigTable}
	}
	delete(c.pending, id)
	// Reads on this name server see the write at once; the watches confirm
	// it (and bring other name servers' writes) shortly after.
	c.brokers = append(removeID(c.brokers, id), discovery.Broker{Cluster: r.Cluster, BrokerName: r.BrokerName,
		BrokerID: r.BrokerID, Epoch: r.Epoch, Addr: r.Addr, HAAddr: r.HAAddr})
	c.rebuildLocked()
	c.mu.Unlock()
	return nil
}

func (c *Consul) retryLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
			continue // wait for the next tick: Consul just failed
		}
		c.mu.RLock()
		todo := make([]Registration, 0, len(c.pending))
		for _, r := range c.pending {
			todo = append(todo, r)
		}
		c.mu.RUnlock()
		for _, r := range todo {
			if err := c.write(r); err != nil {
				c.setStale(err)
				break
			}
			c.log.WithField("broker", discovery.ServiceID(r.Cluster, r.BrokerName, r.BrokerID)).Info("consul: pending registration written")
		}
	}
}

func (c *Consul) deregister(ids []string) {
	for _, id := range ids {
		if err := c.cfg.Client.Agent().ServiceDeregister(id); err != nil {
			c.log.WithError(err).WithField("broker", id).Warn("consul: deregistration failed; the health checks will remove it")
		}
		c.mu.Lock()
		delete(c.written, id)
		delete(c.pending, id)
		delete(c.known, id)
		c.brokers = removeID(c.brokers, id)
		c.rebuildLocked()
		c.mu.Unlock()
	}
}

func removeID(bs []discovery.Broker, id string) []discovery.Broker {
	out := bs[:0:0]
	for _, b := range bs {
		if discovery.ServiceID(b.Cluster, b.BrokerName, b.BrokerID) != id {
			out = append(out, b)
		}
	}
	return out
}

// Unregister implements Registry: only the connection this name server saw the
// registration on may remove it.
func (c *Consul) Unregister(cluster, brokerName string, brokerID int64, addr string, connID uint64) error {
	id := discovery.ServiceID(cluster, brokerName, brokerID)
	c.mu.RLock()
	k, ok := c.known[id]
	var inView bool
	if g := c.view.groups[brokerName]; g != nil && g.cluster == cluster {
		b := g.members[brokerID]
		inView = b != nil && (addr == "" || b.reg.Addr == addr)
	}
	c.mu.RUnlock()
	switch {
	case ok && addr != "" && k.Addr != addr:
		return nil
	case ok && k.ConnID != connID, !ok && inView:
		return fmt.Errorf("%w: brokerId %d of %s was registered over another connection", ErrNotOwner, brokerID, quote(brokerName))
	case !ok:
		return nil
	}
	c.deregister([]string{id})
	return nil
}

// DropConn implements Registry: the brokers registered over a connection that
// closed are deregistered at once (their process is gone or cut off), unless
// this name server is shutting down (then the connection closed because of us).
func (c *Consul) DropConn(connID uint64) []string {
	c.mu.Lock()
	var ids []string
	closing := c.closing
	var addrs []string
	for _, id := range c.byConn[connID] {
		// A broker that re-registered over another connection took its entry along.
		if r, ok := c.known[id]; ok && r.ConnID == connID {
			ids = append(ids, id)
			addrs = append(addrs, r.Addr)
		}
	}
	delete(c.byConn, connID)
	c.mu.Unlock()
	if closing || len(ids) == 0 {
		return nil
	}
	c.deregister(ids)
	sort.Strings(addrs)
	return addrs
}

// Expire implements Registry: Consul's TTL checks expire brokers.
func (c *Consul) Expire(time.Time, time.Duration) []string { return nil }

func (c *Consul) current() *Memory {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.view
}

// Route implements Registry.
func (c *Consul) Route(topic string) (route.TopicRouteData, bool) { return c.current().Route(topic) }

// ClusterInfo implements Registry.
func (c *Consul) ClusterInfo() route.ClusterInfo { return c.current().ClusterInfo() }

// Topics implements Registry.
func (c *Consul) Topics() []string { return c.current().Topics() }

// Status implements Registry.
func (c *Consul) Status() Status {
	st := c.current().Status()
	c.mu.RLock()
	defer c.mu.RUnlock()
	st.Conflicts = append([]string(nil), c.conflicts...)
	if c.stale != nil {
		st.Stale, st.StaleWhy = true, c.stale.Error()
	}
	return st
}

// Close stops the watches. Brokers stay registered: they are still alive,
// other name servers serve them, and this one finds them again on restart.
func (c *Consul) Close() error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// PrepareClose marks the registry as shutting down so that connections the
// name server closes on its way out do not deregister their brokers.
func (c *Consul) PrepareClose() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
}

package registry

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/route"
)

type liveBroker struct {
	reg  Registration
	last time.Time
}

type group struct {
	cluster string
	// topics is the topic table of the group's latest master registration;
	// kept while any member is alive.
	topics  map[string]route.TopicConfig
	members map[int64]*liveBroker
}

// Memory is an in-memory Registry. It is the name server's state when Consul
// is not used and the local cache of the Consul-backed registry.
type Memory struct {
	mu        sync.RWMutex
	lim       Limits
	groups    map[string]*group // by broker name
	conflicts []string
}

// NewMemory returns an empty registry with DefaultLimits.
func NewMemory() *Memory { return NewMemoryWithLimits(DefaultLimits()) }

// NewMemoryWithLimits returns an empty registry with l (a zero Limits means the defaults).
func NewMemoryWithLimits(l Limits) *Memory {
	return &Memory{lim: l.orDefault(), groups: map[string]*group{}}
}

const maxConflicts = 32

func (m *Memory) conflict(s string) {
	m.conflicts = append([]string{s}, m.conflicts...)
	if len(m.conflicts) > maxConflicts {
		m.conflicts = m.conflicts[:maxConflicts]
	}
}

// Register implements Registry.
func (m *Memory) Register(r Registration, now time.Time) (RegisterResult, error) {
	r, err := prepare(r, m.lim)
	if err != nil {
		return RegisterResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registerLocked(r, now)
}

// owns reports whether r may change b: b was registered over r's connection, or over no
// connection this registry knows of (the Consul view's entries from other name servers).
func owns(b *liveBroker, connID uint64) bool {
	return b.reg.ConnID == 0 || b.reg.ConnID == connID
}

// registerLocked applies the registry's rules to a prepared registration and stores it
// (caller holds m.mu).
func (m *Memory) registerLocked(r Registration, now time.Time) (RegisterResult, error) {
	g := m.groups[r.BrokerName]
	if g != nil && g.cluster != r.Cluster {
		m.conflict(fmt.Sprintf("%s: broker %s of cluster %s refused: the name belongs to cluster %s", now.Format(time.RFC3339), r.BrokerName, quote(r.Cluster), g.cluster))
		return RegisterResult{}, fmt.Errorf("%w: %q is in cluster %q", ErrClusterConflict, r.BrokerName, g.cluster)
	}
	if err := m.checkCountsLocked(r, m.lim); err != nil {
		return RegisterResult{}, err
	}
	if g == nil {
		g = &group{cluster: r.Cluster, members: map[int64]*liveBroker{}}
		m.groups[r.BrokerName] = g
	}
	var moved string
	if r.BrokerID == route.MasterID {
		if cur := g.members[route.MasterID]; cur != nil && cur.reg.Addr != r.Addr {
			if r.Epoch <= cur.reg.Epoch {
				m.conflict(fmt.Sprintf("%s: master %s/%s at %s (epoch %d) refused: %s holds epoch %d",
					now.Format(time.RFC3339), r.Cluster, r.BrokerName, r.Addr, r.Epoch, cur.reg.Addr, cur.reg.Epoch))
				return RegisterResult{}, fmt.Errorf("%w: %s holds epoch %d (yours %d)", ErrMasterConflict, cur.reg.Addr, cur.reg.Epoch, r.Epoch)
			}
			moved = fmt.Sprintf("%s: master %s/%s moved from %s (epoch %d) to %s (epoch %d)",
				now.Format(time.RFC3339), r.Cluster, r.BrokerName, cur.reg.Addr, cur.reg.Epoch, r.Addr, r.Epoch)
		}
	}
	if err := m.checkOwnerLocked(g, r); err != nil {
		return RegisterResult{}, err
	}
	if moved != "" {
		m.conflict(moved)
	}
	// One address holds one id: a broker that switched role re-registers
	// under its new id (RocketMQ does the same). checkOwnerLocked made sure
	// the entries removed here are the registering connection's own.
	for id, b := range g.members {
		if id != r.BrokerID && b.reg.Addr == r.Addr {
			delete(g.members, id)
		}
	}
	g.members[r.BrokerID] = &liveBroker{reg: r, last: now}
	if r.BrokerID == route.MasterID {
		g.topics = make(map[string]route.TopicConfig, len(r.Topics.TopicConfigTable))
		for k, v := range r.Topics.TopicConfigTable {
			g.topics[k] = v
		}
	}
	var res RegisterResult
	if r.BrokerID != route.MasterID {
		if mb := g.members[route.MasterID]; mb != nil {
			res = RegisterResult{MasterAddr: mb.reg.Addr, MasterHAAddr: mb.reg.HAAddr}
		}
	}
	return res, nil
}

// checkOwnerLocked applies the connection rules of a registration to an existing group:
//
//   - an entry registered over another live connection is changed only by an
//     authenticated registration (a broker that reconnected takes its entry over); an
//     unauthenticated one is refused;
//   - an entry under another id at the registration's address is removed (role switch) only
//     when the registering connection owns it;
//   - a master registration with no topics empties the group's topic table only when it
//     comes over the connection that registered the group's current master.
func (m *Memory) checkOwnerLocked(g *group, r Registration) error {
	if cur := g.members[r.BrokerID]; cur != nil && !owns(cur, r.ConnID) && !r.Authenticated {
		return fmt.Errorf("%w: brokerId %d of %s is registered over another connection (unauthenticated registrations may not take it over)",
			ErrNotOwner, r.BrokerID, quote(r.BrokerName))
	}
	for id, b := range g.members {
		if id != r.BrokerID && b.reg.Addr == r.Addr && !owns(b, r.ConnID) {
			return fmt.Errorf("%w: address %s is brokerId %d of %s, registered over another connection",
				ErrNotOwner, r.Addr, id, quote(r.BrokerName))
		}
	}
	if r.BrokerID == route.MasterID && len(r.Topics.TopicConfigTable) == 0 && len(g.topics) > 0 {
		if cur := g.members[route.MasterID]; cur == nil || !owns(cur, r.ConnID) {
			return fmt.Errorf("%w: an empty topic table replaces the %d topics of %s only over the connection that registered its master",
				ErrNotOwner, len(g.topics), quote(r.BrokerName))
		}
	}
	return nil
}

// removeIf deletes matching members; caller holds the lock.
func (m *Memory) removeIf(match func(name string, id int64, b *liveBroker) bool) []string {
	var gone []string
	for name, g := range m.groups {
		for id, b := range g.members {
			if match(name, id, b) {
				gone = append(gone, b.reg.Addr)
				delete(g.members, id)
			}
		}
		if len(g.members) == 0 {
			delete(m.groups, name)
		}
	}
	sort.Strings(gone)
	return gone
}

// Unregister implements Registry.
func (m *Memory) Unregister(cluster, brokerName string, brokerID int64, addr string, connID uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[brokerName]
	if g == nil || g.cluster != cluster {
		return nil
	}
	b := g.members[brokerID]
	if b == nil || (addr != "" && b.reg.Addr != addr) {
		return nil
	}
	if b.reg.ConnID != connID {
		return fmt.Errorf("%w: brokerId %d of %s was registered over another connection", ErrNotOwner, brokerID, quote(brokerName))
	}
	m.removeIf(func(name string, id int64, _ *liveBroker) bool { return name == brokerName && id == brokerID })
	return nil
}

// DropConn implements Registry.
func (m *Memory) DropConn(connID uint64) []string {
	if connID == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeIf(func(_ string, _ int64, b *liveBroker) bool { return b.reg.ConnID == connID })
}

// Expire implements Registry.
func (m *Memory) Expire(now time.Time, ttl time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeIf(func(_ string, _ int64, b *liveBroker) bool { return now.Sub(b.last) > ttl })
}

func brokerData(name string, g *group) route.BrokerData {
	bd := route.BrokerData{Cluster: g.cluster, BrokerName: name, BrokerAddrs: make(map[int64]string, len(g.members))}
	for id, b := range g.members {
		bd.BrokerAddrs[id] = b.reg.Addr
	}
	return bd
}

// Route implements Registry.
func (m *Memory) Route(topic string) (route.TopicRouteData, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rd := route.TopicRouteData{QueueDatas: []route.QueueData{}, BrokerDatas: []route.BrokerData{}, FilterServerTable: map[string][]string{}}
	names := make([]string, 0, len(m.groups))
	for name := range m.groups {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := m.groups[name]
		tc, ok := g.topics[topic]
		if !ok {
			continue
		}
		rd.QueueDatas = append(rd.QueueDatas, route.QueueData{BrokerName: name, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicSysFlag: tc.TopicSysFlag})
		rd.BrokerDatas = append(rd.BrokerDatas, brokerData(name, g))
	}
	return rd, len(rd.QueueDatas) > 0
}

// ClusterInfo implements Registry.
func (m *Memory) ClusterInfo() route.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := route.ClusterInfo{BrokerAddrTable: map[string]route.BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for name, g := range m.groups {
		ci.BrokerAddrTable[name] = brokerData(name, g)
		ci.ClusterAddrTable[g.cluster] = append(ci.ClusterAddrTable[g.cluster], name)
	}
	for _, l := range ci.ClusterAddrTable {
		sort.Strings(l)
	}
	return ci
}

// Topics implements Registry.
func (m *Memory) Topics() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := map[string]struct{}{}
	for _, g := range m.groups {
		for t := range g.topics {
			set[t] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Status implements Registry.
func (m *Memory) Status() Status {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var st Status
	for name, g := range m.groups {
		for id, b := range g.members {
			st.Brokers = append(st.Brokers, BrokerInfo{Cluster: g.cluster, BrokerName: name, BrokerID: id, Addr: b.reg.Addr,
				HAAddr: b.reg.HAAddr, Epoch: b.reg.Epoch, LastUpdate: b.last, TopicCount: len(b.reg.Topics.TopicConfigTable), ConnectionID: b.reg.ConnID})
		}
	}
	sort.Slice(st.Brokers, func(i, j int) bool {
		a, b := st.Brokers[i], st.Brokers[j]
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.BrokerID < b.BrokerID
	})
	st.Conflicts = append([]string(nil), m.conflicts...)
	return st
}

// Close implements Registry.
func (m *Memory) Close() error { return nil }

// newView returns an unbounded registry for a view rebuilt from state that name servers
// already checked (the Consul cache).
func newView() *Memory {
	const n = int(^uint(0) >> 1)
	return &Memory{groups: map[string]*group{}, lim: Limits{MaxClusterNameLength: n, MaxBrokerNameLength: n,
		MaxTopicsPerRegistration: n, MaxBodySize: n, MaxBrokersPerCluster: n, MaxBrokerGroupsPerCluster: n, MaxClusters: n}}
}

// restore stores r as it is, without prepare (its epoch was judged when it was written);
// the conflict rules still keep one master per group and one id per address.
func (m *Memory) restore(r Registration, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.registerLocked(r, now)
}

// SetTopics replaces a group's topic table without a master registration; the
// Consul-backed registry uses it to rebuild its cache from KV, where the
// table outlives the master's service instance.
func (m *Memory) SetTopics(brokerName string, topics map[string]route.TopicConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[brokerName]; g != nil {
		g.topics = topics
	}
}

package registry

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/broker/route"
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
	groups    map[string]*group // by broker name
	conflicts []string
}

// NewMemory returns an empty registry.
func NewMemory() *Memory { return &Memory{groups: map[string]*group{}} }

const maxConflicts = 32

func (m *Memory) conflict(s string) {
	m.conflicts = append([]string{s}, m.conflicts...)
	if len(m.conflicts) > maxConflicts {
		m.conflicts = m.conflicts[:maxConflicts]
	}
}

// Register implements Registry.
func (m *Memory) Register(r Registration, now time.Time) (RegisterResult, error) {
	if r.Cluster == "" || r.BrokerName == "" || r.Addr == "" || r.BrokerID < 0 {
		return RegisterResult{}, fmt.Errorf("%w: cluster, brokerName, brokerAddr and a brokerId >= 0 are required", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[r.BrokerName]
	if g != nil && g.cluster != r.Cluster {
		m.conflict(fmt.Sprintf("%s: broker %s of cluster %s refused: the name belongs to cluster %s", now.Format(time.RFC3339), r.BrokerName, r.Cluster, g.cluster))
		return RegisterResult{}, fmt.Errorf("%w: %q is in cluster %q", ErrClusterConflict, r.BrokerName, g.cluster)
	}
	if g == nil {
		g = &group{cluster: r.Cluster, members: map[int64]*liveBroker{}}
		m.groups[r.BrokerName] = g
	}
	if r.BrokerID == route.MasterID {
		if cur := g.members[route.MasterID]; cur != nil && cur.reg.Addr != r.Addr {
			if r.Epoch <= cur.reg.Epoch {
				m.conflict(fmt.Sprintf("%s: master %s/%s at %s (epoch %d) refused: %s holds epoch %d",
					now.Format(time.RFC3339), r.Cluster, r.BrokerName, r.Addr, r.Epoch, cur.reg.Addr, cur.reg.Epoch))
				return RegisterResult{}, fmt.Errorf("%w: %s holds epoch %d (yours %d)", ErrMasterConflict, cur.reg.Addr, cur.reg.Epoch, r.Epoch)
			}
			m.conflict(fmt.Sprintf("%s: master %s/%s moved from %s (epoch %d) to %s (epoch %d)",
				now.Format(time.RFC3339), r.Cluster, r.BrokerName, cur.reg.Addr, cur.reg.Epoch, r.Addr, r.Epoch))
		}
	}
	// One address holds one id: a broker that switched role re-registers
	// under its new id (RocketMQ does the same).
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
func (m *Memory) Unregister(cluster, brokerName string, brokerID int64, addr string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeIf(func(name string, id int64, b *liveBroker) bool {
		return name == brokerName && id == brokerID && b.reg.Cluster == cluster && (addr == "" || b.reg.Addr == addr)
	})
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

package clients

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// DefaultChannelExpiredTimeout is how long a member may stay silent before
// Expire drops it (Java channelExpiredTimeout).
const DefaultChannelExpiredTimeout = 120 * time.Second

// Config configures a Registry.
type Config struct {
	// Logger receives membership changes. Default a new logrus logger.
	Logger logrus.FieldLogger
	// Filters compiles the selectors of non-TAG subscriptions; the broker shares it with
	// its pull path. Default nil: the registry makes its own.
	Filters *FilterCache
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{Logger: logrus.New()} }

// Validate reports the first unusable field.
func (c Config) Validate() error {
	if c.Logger == nil {
		return fmt.Errorf("clients: invalid config: Logger is nil")
	}
	return nil
}

// Member is one client in a group.
type Member struct {
	// ClientID is the client's "ip@pid" style id.
	ClientID string
	// Conn is the connection handle of the member's latest heartbeat.
	Conn any
	// LastSeen is the time of the latest heartbeat.
	LastSeen time.Time
}

// ConsumerGroupInfo is a snapshot of one consumer group.
type ConsumerGroupInfo struct {
	Group            string
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	UnitMode         bool
	// Subscriptions by topic.
	Subscriptions map[string]SubscriptionData
	// Members sorted by client id.
	Members []Member
}

type consumerGroup struct {
	consumeType, messageModel, consumeFromWhere string
	unitMode                                    bool
	subs                                        map[string]*SubscriptionData
	members                                     map[string]*Member
}

// RegisterResult says what a heartbeat changed.
type RegisterResult struct {
	// MembershipChanged lists consumer groups (sorted) that gained a client
	// id; their members should receive NOTIFY_CONSUMER_IDS_CHANGED.
	MembershipChanged []string
	// SubscriptionChanged lists consumer groups (sorted) whose subscription
	// table changed.
	SubscriptionChanged []string
	// SubscriptionMissing lists consumer groups (sorted) of a WithoutSub
	// heartbeat for which no subscription is registered; the caller should
	// ask the client for a full heartbeat (5.x: ext IS_SUB_CHANGE=true).
	SubscriptionMissing []string
}

// Registry tracks the clients connected to a broker. It is safe for
// concurrent use.
type Registry struct {
	log       logrus.FieldLogger
	filters   *FilterCache
	mu        sync.RWMutex
	producers map[string]map[string]*Member
	consumers map[string]*consumerGroup
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Filters == nil {
		cfg.Filters = NewFilterCache(0, 0)
	}
	return &Registry{
		log:       cfg.Logger,
		filters:   cfg.Filters,
		producers: map[string]map[string]*Member{},
		consumers: map[string]*consumerGroup{},
	}, nil
}

func isComparable(conn any) bool {
	return conn == nil || reflect.ValueOf(conn).Comparable()
}

// Register records a heartbeat received on conn at now. Subscriptions are
// normalised and their code sets recomputed with JavaStringHash; a TAG
// subscription whose expression holds no tag is rejected. Other types are
// compiled (Selector); one that does not compile is registered with its
// error and logged, and the rest of the heartbeat stands.
func (r *Registry) Register(hb *HeartbeatData, conn any, now time.Time) (RegisterResult, error) {
	if err := hb.Validate(); err != nil {
		return RegisterResult{}, err
	}
	if !isComparable(conn) {
		return RegisterResult{}, fmt.Errorf("%w: %T", ErrConnNotComparable, conn)
	}
	// Normalise subscriptions before taking the lock.
	subsets := make([][]*SubscriptionData, len(hb.ConsumerDataSet))
	for i, cd := range hb.ConsumerDataSet {
		for _, s := range cd.SubscriptionDataSet {
			sd := s.clone()
			if err := sd.rebuild(r.filters); err != nil {
				return RegisterResult{}, fmt.Errorf("%w: group %q topic %q: %w", ErrInvalidHeartbeat, cd.GroupName, sd.Topic, err)
			}
			subsets[i] = append(subsets[i], &sd)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	var res RegisterResult
	for _, pd := range hb.ProducerDataSet {
		g := r.producers[pd.GroupName]
		if g == nil {
			g = map[string]*Member{}
			r.producers[pd.GroupName] = g
		}
		if _, ok := g[hb.ClientID]; !ok {
			r.log.WithField("group", pd.GroupName).WithField("client", hb.ClientID).Info("producer registered")
		}
		g[hb.ClientID] = &Member{ClientID: hb.ClientID, Conn: conn, LastSeen: now}
	}
	for i, cd := range hb.ConsumerDataSet {
		g := r.consumers[cd.GroupName]
		if g == nil {
			g = &consumerGroup{subs: map[string]*SubscriptionData{}, members: map[string]*Member{}}
			r.consumers[cd.GroupName] = g
		}
		g.consumeType, g.messageModel, g.consumeFromWhere, g.unitMode =
			cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere, cd.UnitMode
		if _, ok := g.members[hb.ClientID]; !ok {
			res.MembershipChanged = append(res.MembershipChanged, cd.GroupName)
			r.log.WithField("group", cd.GroupName).WithField("client", hb.ClientID).Info("consumer joined group")
		}
		g.members[hb.ClientID] = &Member{ClientID: hb.ClientID, Conn: conn, LastSeen: now}
		switch {
		case hb.WithoutSub && len(subsets[i]) == 0:
			if len(g.subs) == 0 {
				res.SubscriptionMissing = append(res.SubscriptionMissing, cd.GroupName)
			}
		case g.updateSubscriptions(subsets[i], r, cd.GroupName):
			res.SubscriptionChanged = append(res.SubscriptionChanged, cd.GroupName)
		}
	}
	for _, l := range []*[]string{&res.MembershipChanged, &res.SubscriptionChanged, &res.SubscriptionMissing} {
		sort.Strings(*l)
		*l = dedup(*l)
	}
	return res, nil
}

// updateSubscriptions applies Java's rule: add new topics, replace a topic
// when the heartbeat's subVersion is higher, drop topics not listed. Each
// added or replaced subscription of group is logged through r.
func (g *consumerGroup) updateSubscriptions(subs []*SubscriptionData, r *Registry, group string) bool {
	changed := false
	listed := make(map[string]bool, len(subs))
	for _, sd := range subs {
		listed[sd.Topic] = true
		old, ok := g.subs[sd.Topic]
		if !ok || sd.SubVersion > old.SubVersion {
			g.subs[sd.Topic] = sd
			changed = true
			r.logSubscription(group, sd)
		}
	}
	for topic := range g.subs {
		if !listed[topic] {
			delete(g.subs, topic)
			changed = true
		}
	}
	return changed
}

// logSubscription logs a new or replaced subscription of group: a non-TAG
// one with its expression, as a warning when it does not compile (its pulls
// are refused) or when RocketMQ's parser ignores part of it (a typo there
// silently widens the subscription).
func (r *Registry) logSubscription(group string, sd *SubscriptionData) {
	if sd.IsTagType() {
		return
	}
	l := r.log.WithFields(logrus.Fields{"group": group, "topic": sd.Topic, "type": sd.ExpressionType, "expression": sd.SubString})
	switch expr, err := sd.Selector(); {
	case err != nil:
		l.WithError(err).Warn("subscription selector does not compile; the group's pulls of this topic are refused")
	case expr.Trailing() != "":
		l.WithField("ignored", expr.Trailing()).Warn("subscription selector registered; text after the expression is ignored, as RocketMQ does")
	default:
		l.Info("subscription selector registered")
	}
}

// UnregisterConn removes every member whose latest heartbeat came on conn
// (the connection closed). It returns the consumer groups whose membership
// changed, sorted.
func (r *Registry) UnregisterConn(conn any) []string {
	if !isComparable(conn) {
		return nil
	}
	return r.remove(func(m *Member) bool { return m.Conn == conn }, "connection closed")
}

// Expire removes members whose last heartbeat is more than timeout before
// now and returns the consumer groups whose membership changed, sorted.
func (r *Registry) Expire(now time.Time, timeout time.Duration) []string {
	return r.remove(func(m *Member) bool { return now.Sub(m.LastSeen) > timeout }, "heartbeat expired")
}

func (r *Registry) remove(match func(*Member) bool, reason string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, g := range r.producers {
		for id, m := range g {
			if match(m) {
				delete(g, id)
				r.log.WithField("group", name).WithField("client", id).WithField("reason", reason).Info("producer removed")
			}
		}
		if len(g) == 0 {
			delete(r.producers, name)
		}
	}
	var changed []string
	for name, g := range r.consumers {
		removed := false
		for id, m := range g.members {
			if match(m) {
				delete(g.members, id)
				removed = true
				r.log.WithField("group", name).WithField("client", id).WithField("reason", reason).Info("consumer left group")
			}
		}
		if removed {
			changed = append(changed, name)
		}
		if len(g.members) == 0 {
			delete(r.consumers, name)
		}
	}
	sort.Strings(changed)
	return changed
}

// ConsumerIDs returns the client ids of a consumer group, sorted (the body
// of GET_CONSUMER_LIST_BY_GROUP). Unknown groups give nil.
func (r *Registry) ConsumerIDs(group string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Consumers returns the members of a consumer group sorted by client id
// (to push NOTIFY_CONSUMER_IDS_CHANGED to their connections).
func (r *Registry) Consumers(group string) []Member {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return nil
	}
	return sortedMembers(g.members)
}

// Producers returns the members of a producer group sorted by client id.
func (r *Registry) Producers(group string) []Member {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedMembers(r.producers[group])
}

// ProducerConn returns the connection of the latest producer heartbeat of clientID, across
// all producer groups (RocketMQ's ProducerManager.findChannel, which request-reply uses to
// push a reply to its requester). ok is false when no producer of that id is registered.
func (r *Registry) ProducerConn(clientID string) (conn any, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var latest *Member
	for _, g := range r.producers {
		if m := g[clientID]; m != nil && (latest == nil || m.LastSeen.After(latest.LastSeen)) {
			latest = m
		}
	}
	if latest == nil {
		return nil, false
	}
	return latest.Conn, true
}

// Subscription returns a copy of a consumer group's subscription to topic.
func (r *Registry) Subscription(group, topic string) (SubscriptionData, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return SubscriptionData{}, false
	}
	sd, ok := g.subs[topic]
	if !ok {
		return SubscriptionData{}, false
	}
	return sd.clone(), true
}

// ConsumerGroup returns a snapshot of a consumer group.
func (r *Registry) ConsumerGroup(group string) (ConsumerGroupInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return ConsumerGroupInfo{}, false
	}
	info := ConsumerGroupInfo{
		Group:            group,
		ConsumeType:      g.consumeType,
		MessageModel:     g.messageModel,
		ConsumeFromWhere: g.consumeFromWhere,
		UnitMode:         g.unitMode,
		Subscriptions:    make(map[string]SubscriptionData, len(g.subs)),
		Members:          sortedMembers(g.members),
	}
	for t, sd := range g.subs {
		info.Subscriptions[t] = sd.clone()
	}
	return info, true
}

// ConsumerGroups returns the names of all consumer groups, sorted.
func (r *Registry) ConsumerGroups() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedNames(r.consumers)
}

// ProducerGroups returns the names of all producer groups, sorted.
func (r *Registry) ProducerGroups() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedNames(r.producers)
}

func sortedMembers(m map[string]*Member) []Member {
	if len(m) == 0 {
		return nil
	}
	out := make([]Member, 0, len(m))
	for _, mem := range m {
		out = append(out, *mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

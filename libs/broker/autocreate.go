package broker

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/broker/clients"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// Client-created metadata: heartbeats, pulls, send-backs and sends to %RETRY% topics create
// subscription groups and retry topics on first use (RocketMQ's autoCreateSubscriptionGroup).
// Three bounds apply to every creation, checked in this order:
//
//   - per request: a heartbeat creates at most autoCreatePerHeartbeat groups plus retry topics
//     (the groups beyond are refused; the client's next heartbeat creates more);
//   - per connection: the requests of one connection create at most autoCreatePerConnection
//     over the connection's life;
//   - in total: no group is auto-created once the table holds autoCreateSubscriptionGroupLimit
//     groups (meta.ErrGroupLimit). Retry topics exist only for groups, so they are bounded too.
//
// A refused group is answered as RocketMQ answers a group that does not exist and cannot be
// created: SUBSCRIPTION_GROUP_NOT_EXIST. Nothing created this way expires (RocketMQ does not
// expire subscription groups either: a consumer group that is offline for a weekend keeps its
// settings, retry topic and offsets); an operator removes groups with deleteSubGroup.
//
// Sends to unknown topics create them from TBW102 (autoCreateTopicEnable) until the topic table
// holds autoCreateTopicLimit topics; beyond it they are answered TOPIC_NOT_EXIST, as RocketMQ
// answers a topic it cannot create, with a remark naming the key (counted as reason
// topic_limit).
//
// Heartbeat bodies are bounded as well: at most heartbeatMaxGroups producer plus consumer
// entries and heartbeatMaxSubscriptions subscriptions per heartbeat, names as RocketMQ's client
// validators allow, and at most heartbeatMaxGroups (client id, group) registrations held per
// connection, so one connection cannot grow the client registry without bound.

// Refusal reasons (metric label values).
const (
	refusedTableLimit    = "table_limit"
	refusedPerHeartbeat  = "per_heartbeat"
	refusedPerConnection = "per_connection"
	refusedDisabled      = "disabled"
	refusedInvalid       = "invalid_name"
	refusedTooLarge      = "too_large"
	refusedRegistrations = "connection_registrations"
	refusedTopicLimit    = "topic_limit"
)

var refusedReasons = []string{refusedTableLimit, refusedPerHeartbeat, refusedPerConnection, refusedDisabled, refusedInvalid, refusedTopicLimit}

var heartbeatRefusedReasons = []string{refusedInvalid, refusedTooLarge, refusedRegistrations}

// errAutoCreateRefused is returned by ensureGroup and ensureRetryTopic when a bound refuses
// the creation; Error names the bound.
type errAutoCreateRefused struct {
	reason string
	detail string
}

func (e *errAutoCreateRefused) Error() string { return e.detail }

// connUsage is what one connection created and registered.
type connUsage struct {
	created int
	regs    map[string]struct{} // "p"|"c" + group + "\x00" + clientID
}

// autoCreator holds the per-connection accounting and the counters of the bounds.
type autoCreator struct {
	mu    sync.Mutex
	conns map[*remoting.ServerConn]*connUsage

	createdGroups, createdRetry atomic.Uint64
	createdTopics               atomic.Uint64             // by sends (autoCreateTopicEnable)
	refused                     map[string]*atomic.Uint64 // by reason (groups and retry topics)
	hbRefused                   map[string]*atomic.Uint64 // whole heartbeats, by reason

	logMu      sync.Mutex
	lastLog    time.Time
	suppressed int
}

func newAutoCreator() *autoCreator {
	a := &autoCreator{conns: map[*remoting.ServerConn]*connUsage{}, refused: map[string]*atomic.Uint64{}, hbRefused: map[string]*atomic.Uint64{}}
	for _, r := range refusedReasons {
		a.refused[r] = new(atomic.Uint64)
	}
	for _, r := range heartbeatRefusedReasons {
		a.hbRefused[r] = new(atomic.Uint64)
	}
	return a
}

func (a *autoCreator) usage(c *remoting.ServerConn) *connUsage {
	u := a.conns[c]
	if u == nil {
		u = &connUsage{regs: map[string]struct{}{}}
		a.conns[c] = u
	}
	return u
}

// connClosed forgets a closed connection.
func (a *autoCreator) connClosed(c *remoting.ServerConn) {
	a.mu.Lock()
	delete(a.conns, c)
	a.mu.Unlock()
}

// logRefusal logs a refusal, at most once a second (the lines in between are counted and
// reported with the next one), so a flood does not flood the log.
func (a *autoCreator) logRefusal(log logrus.FieldLogger, now time.Time, fields logrus.Fields, msg string) {
	a.logMu.Lock()
	if !a.lastLog.IsZero() && now.Sub(a.lastLog) < time.Second {
		a.suppressed++
		a.logMu.Unlock()
		return
	}
	a.lastLog = now
	n := a.suppressed
	a.suppressed = 0
	a.logMu.Unlock()
	if n > 0 {
		fields["suppressed"] = n
	}
	log.WithFields(fields).Warn(msg)
}

// budget is what one request may still create; nil (pulls, send-backs, sends) means no
// per-request bound.
type budget struct{ left int }

func (b *Broker) heartbeatBudget() *budget {
	if b.cfg.AutoCreatePerHeartbeat <= 0 {
		return nil
	}
	return &budget{left: b.cfg.AutoCreatePerHeartbeat}
}

// admit checks the per-request and per-connection bounds of one creation; on success it
// charges them.
func (b *Broker) admitCreate(conn *remoting.ServerConn, bud *budget, what string) error {
	if bud != nil && bud.left <= 0 {
		return &errAutoCreateRefused{refusedPerHeartbeat, fmt.Sprintf("%s not created: this heartbeat already created %d groups and retry topics (autoCreatePerHeartbeat)", what, b.cfg.AutoCreatePerHeartbeat)}
	}
	if conn != nil && b.cfg.AutoCreatePerConnection > 0 {
		b.autoc.mu.Lock()
		u := b.autoc.usage(conn)
		if u.created >= b.cfg.AutoCreatePerConnection {
			b.autoc.mu.Unlock()
			return &errAutoCreateRefused{refusedPerConnection, fmt.Sprintf("%s not created: this connection already created %d groups and retry topics (autoCreatePerConnection)", what, b.cfg.AutoCreatePerConnection)}
		}
		u.created++
		b.autoc.mu.Unlock()
	}
	if bud != nil {
		bud.left--
	}
	return nil
}

// refund gives back a charge that created nothing.
func (b *Broker) refundCreate(conn *remoting.ServerConn, bud *budget) {
	if bud != nil {
		bud.left++
	}
	if conn != nil && b.cfg.AutoCreatePerConnection > 0 {
		b.autoc.mu.Lock()
		if u := b.autoc.conns[conn]; u != nil && u.created > 0 {
			u.created--
		}
		b.autoc.mu.Unlock()
	}
}

func (b *Broker) countRefused(err error) {
	var r *errAutoCreateRefused
	if errors.As(err, &r) {
		if c := b.autoc.refused[r.reason]; c != nil {
			c.Add(1)
		}
	}
}

// ensureGroup returns group's subscription group config, auto-creating it (durable as d)
// within the bounds. A refusal is an *errAutoCreateRefused; the caller answers
// SUBSCRIPTION_GROUP_NOT_EXIST.
func (b *Broker) ensureGroup(conn *remoting.ServerConn, bud *budget, group string, d meta.Durability) (meta.SubscriptionGroupConfig, error) {
	if g, ok := b.tables.Groups.Get(group); ok {
		return g, nil
	}
	what := "subscription group " + strconv.Quote(group)
	if !b.cfg.AutoCreateSubscriptionGroup {
		err := &errAutoCreateRefused{refusedDisabled, what + " does not exist (autoCreateSubscriptionGroup=false)"}
		b.countRefused(err)
		return meta.SubscriptionGroupConfig{}, err
	}
	if err := b.admitCreate(conn, bud, what); err != nil {
		b.countRefused(err)
		return meta.SubscriptionGroupConfig{}, err
	}
	g, created, err := b.tables.Groups.FindOrCreate(group, d)
	if !created {
		b.refundCreate(conn, bud)
	}
	switch {
	case err == nil:
	case errors.Is(err, meta.ErrGroupLimit):
		err := &errAutoCreateRefused{refusedTableLimit, fmt.Sprintf("%s not created: the broker holds %d groups (autoCreateSubscriptionGroupLimit)", what, b.cfg.AutoCreateSubscriptionGroupLimit)}
		b.countRefused(err)
		return meta.SubscriptionGroupConfig{}, err
	case errors.Is(err, meta.ErrGroupNotExist):
		err := &errAutoCreateRefused{refusedDisabled, what + " does not exist"}
		b.countRefused(err)
		return meta.SubscriptionGroupConfig{}, err
	case errors.Is(err, meta.ErrInvalidGroup):
		err := &errAutoCreateRefused{refusedInvalid, what + " is not a valid group name"}
		b.countRefused(err)
		return meta.SubscriptionGroupConfig{}, err
	case created:
		b.log.WithError(err).WithField("group", group).Warn("subscription group created but not persisted; retried with the next write")
	default:
		return meta.SubscriptionGroupConfig{}, err
	}
	if created {
		b.autoc.createdGroups.Add(1)
	}
	return g, nil
}

// ensureRetryTopic makes sure group's retry topic exists, creating it within the bounds,
// durable as d. With Wait an existing topic is waited for as well (a send-back stores a
// message that names it). It reports whether it created the topic.
func (b *Broker) ensureRetryTopic(conn *remoting.ServerConn, bud *budget, group string, queues int32, d meta.Durability) (bool, error) {
	name := meta.RetryTopic(group)
	if _, ok := b.tables.Topics.Get(name); ok {
		if d == meta.Wait {
			if err := b.tables.Topics.WaitDurable(name); err != nil {
				b.log.WithError(err).WithField("topic", name).Warn("retry topic not persisted; retried with the next write")
			}
		}
		return false, nil
	}
	if err := b.admitCreate(conn, bud, "retry topic "+name); err != nil {
		b.countRefused(err)
		return false, err
	}
	_, created, err := b.tables.Topics.CreateRetryTopic(group, queues, d)
	if !created {
		b.refundCreate(conn, bud)
	}
	if err != nil {
		if !created {
			return false, err
		}
		b.log.WithError(err).WithField("topic", name).Warn("retry topic created but not persisted; retried with the next write")
	}
	if created {
		b.autoc.createdRetry.Add(1)
		b.triggerRegister()
	}
	return created, nil
}

// admitRegistrations refuses a heartbeat that would make its connection hold more than
// heartbeatMaxGroups (client id, group) registrations; on success it records them.
func (b *Broker) admitRegistrations(conn *remoting.ServerConn, hb *clients.HeartbeatData) error {
	if conn == nil {
		return nil
	}
	keys := make([]string, 0, len(hb.ProducerDataSet)+len(hb.ConsumerDataSet))
	for _, p := range hb.ProducerDataSet {
		keys = append(keys, "p"+p.GroupName+"\x00"+hb.ClientID)
	}
	for _, c := range hb.ConsumerDataSet {
		keys = append(keys, "c"+c.GroupName+"\x00"+hb.ClientID)
	}
	b.autoc.mu.Lock()
	defer b.autoc.mu.Unlock()
	u := b.autoc.usage(conn)
	n := len(u.regs)
	for _, k := range keys {
		if _, ok := u.regs[k]; !ok {
			n++
		}
	}
	if n > b.cfg.HeartbeatMaxGroups {
		return fmt.Errorf("%w: this connection would hold %d client/group registrations, at most %d (heartbeatMaxGroups)", clients.ErrHeartbeatTooLarge, n, b.cfg.HeartbeatMaxGroups)
	}
	for _, k := range keys {
		u.regs[k] = struct{}{}
	}
	return nil
}

package broker

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/broker/meta"
	"github.com/rmqha/rmqha/libs/broker/route"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// heartbeatData is the HEART_BEAT body. codeSet is not read: the broker computes tag codes
// itself with Java's String.hashCode (the Go client hashes UTF-8 bytes, which differs for
// non-ASCII tags), and Java sends numbers where Go sends strings.
type heartbeatData struct {
	ClientID        string `json:"clientID"`
	ProducerDataSet []struct {
		GroupName string `json:"groupName"`
	} `json:"producerDataSet"`
	ConsumerDataSet []struct {
		GroupName           string `json:"groupName"`
		ConsumeType         string `json:"consumeType"`
		MessageModel        string `json:"messageModel"`
		ConsumeFromWhere    string `json:"consumeFromWhere"`
		UnitMode            bool   `json:"unitMode"`
		SubscriptionDataSet []struct {
			Topic          string          `json:"topic"`
			SubString      string          `json:"subString"`
			TagsSet        []string        `json:"tagsSet"`
			SubVersion     json.RawMessage `json:"subVersion"`
			ExpressionType string          `json:"expressionType"`
		} `json:"subscriptionDataSet"`
	} `json:"consumerDataSet"`
}

// subscription is a consumer group's filter on one topic.
type subscription struct {
	Topic   string   `json:"topic"`
	Expr    string   `json:"subString"`
	Tags    []string `json:"tagsSet"`
	all     bool
	codes   map[int32]struct{}
	exprTyp string
}

// newSubscription builds a TAG subscription from an expression ("*", "a || b") and, when
// given, the client's tag list.
func newSubscription(topic, expr string, tags []string, exprType string) *subscription {
	s := &subscription{Topic: topic, Expr: expr, exprTyp: exprType, codes: map[int32]struct{}{}}
	e := strings.TrimSpace(expr)
	if e == "" || e == "*" {
		s.all = true
		s.Tags = []string{}
		return s
	}
	if len(tags) == 0 {
		for _, t := range strings.Split(e, "||") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
	}
	s.Tags = tags
	for _, t := range tags {
		s.codes[commitlog.JavaStringHash(t)] = struct{}{}
	}
	if len(s.codes) == 0 {
		s.all = true
	}
	return s
}

// match is the consume-queue filter: tags codes are compared as Java ints. Collisions pass and
// are removed by the client's exact tag check.
func (s *subscription) match(tagsCode int64) bool {
	if s == nil || s.all {
		return true
	}
	_, ok := s.codes[int32(tagsCode)]
	return ok
}

type clientChannel struct {
	conn     *remoting.ServerConn
	clientID string
	lastSeen time.Time
}

type consumerGroup struct {
	members          map[uint64]*clientChannel // by connection id
	subs             map[string]*subscription  // by topic
	consumeType      string
	messageModel     string
	consumeFromWhere string
}

// clientRegistry keeps the producers and consumers that heartbeat this broker (slaves
// included: pulls on a slave need the subscriptions too). A closed connection unregisters its
// clients at once; silent ones expire after Config.ClientExpiry.
type clientRegistry struct {
	b         *Broker
	log       logrus.FieldLogger
	mu        sync.Mutex
	consumers map[string]*consumerGroup
	producers map[string]map[uint64]*clientChannel
	done      chan struct{}
	wg        sync.WaitGroup
}

func newClientRegistry(b *Broker) *clientRegistry {
	return &clientRegistry{
		b: b, log: b.log.WithField("component", "clients"),
		consumers: map[string]*consumerGroup{},
		producers: map[string]map[uint64]*clientChannel{},
		done:      make(chan struct{}),
	}
}

func (r *clientRegistry) start() {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-r.done:
				return
			case <-t.C:
				r.expire(r.b.now())
			}
		}
	}()
}

func (r *clientRegistry) stop() {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	r.wg.Wait()
}

// registerConsumer records one consumer group entry of a heartbeat; it reports whether the
// group's membership changed.
func (r *clientRegistry) registerConsumer(conn *remoting.ServerConn, clientID, group string, cg *consumerGroup, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.consumers[group]
	if g == nil {
		g = &consumerGroup{members: map[uint64]*clientChannel{}, subs: map[string]*subscription{}}
		r.consumers[group] = g
	}
	g.consumeType, g.messageModel, g.consumeFromWhere = cg.consumeType, cg.messageModel, cg.consumeFromWhere
	for t, s := range cg.subs {
		g.subs[t] = s
	}
	changed := false
	if c, ok := g.members[conn.ID()]; ok {
		if c.clientID != clientID {
			c.clientID = clientID
			changed = true
		}
		c.lastSeen = now
	} else {
		g.members[conn.ID()] = &clientChannel{conn: conn, clientID: clientID, lastSeen: now}
		changed = true
	}
	return changed
}

func (r *clientRegistry) registerProducer(conn *remoting.ServerConn, clientID, group string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.producers[group]
	if g == nil {
		g = map[uint64]*clientChannel{}
		r.producers[group] = g
	}
	if c, ok := g[conn.ID()]; ok {
		c.lastSeen = now
		c.clientID = clientID
		return
	}
	g[conn.ID()] = &clientChannel{conn: conn, clientID: clientID, lastSeen: now}
}

// removeWhere drops every channel matching keep==false and returns the consumer groups whose
// membership changed.
func (r *clientRegistry) removeWhere(drop func(group string, c *clientChannel) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var changed []string
	for group, g := range r.consumers {
		n := len(g.members)
		for id, c := range g.members {
			if drop(group, c) {
				delete(g.members, id)
			}
		}
		if len(g.members) != n {
			changed = append(changed, group)
		}
		if len(g.members) == 0 {
			delete(r.consumers, group)
		}
	}
	for group, g := range r.producers {
		for id, c := range g {
			if drop(group, c) {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(r.producers, group)
		}
	}
	return changed
}

// connClosed unregisters the clients of a closed connection (the Go client never sends
// UNREGISTER_CLIENT).
func (r *clientRegistry) connClosed(conn *remoting.ServerConn) {
	id := conn.ID()
	changed := r.removeWhere(func(_ string, c *clientChannel) bool { return c.conn.ID() == id })
	for _, g := range changed {
		r.log.WithFields(logrus.Fields{"group": g, "peer": conn.RemoteAddr()}).Info("consumer left (connection closed)")
		r.notify(g)
	}
}

func (r *clientRegistry) expire(now time.Time) {
	limit := r.b.cfg.ClientExpiry
	var stale []*remoting.ServerConn
	changed := r.removeWhere(func(_ string, c *clientChannel) bool {
		if now.Sub(c.lastSeen) > limit {
			stale = append(stale, c.conn)
			return true
		}
		return false
	})
	for _, c := range stale {
		r.log.WithField("peer", c.RemoteAddr()).Info("client expired: no heartbeat")
		_ = c.Close()
	}
	for _, g := range changed {
		r.notify(g)
	}
}

// notify pushes NOTIFY_CONSUMER_IDS_CHANGED to every member of group so they rebalance.
func (r *clientRegistry) notify(group string) {
	if gc, ok := r.b.tables.Groups.Get(group); ok && !gc.NotifyConsumerIdsChangedEnable {
		return
	}
	r.mu.Lock()
	var conns []*remoting.ServerConn
	if g := r.consumers[group]; g != nil {
		for _, c := range g.members {
			conns = append(conns, c.conn)
		}
	}
	r.mu.Unlock()
	for _, c := range conns {
		req := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": group}, nil)
		if err := c.SendOneway(req); err != nil {
			r.log.WithError(err).WithField("peer", c.RemoteAddr()).Debug("notify consumer ids changed failed")
		}
	}
}

// consumerIDs lists the client ids of a group, sorted and deduplicated.
func (r *clientRegistry) consumerIDs(group string) ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.consumers[group]
	if g == nil {
		return nil, false
	}
	seen := map[string]bool{}
	var ids []string
	for _, c := range g.members {
		if !seen[c.clientID] {
			seen[c.clientID] = true
			ids = append(ids, c.clientID)
		}
	}
	sort.Strings(ids)
	return ids, true
}

// findSubscription returns group's subscription to topic.
func (r *clientRegistry) findSubscription(group, topic string) (*subscription, bool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.consumers[group]
	if g == nil {
		return nil, false, false
	}
	s, ok := g.subs[topic]
	return s, true, ok
}

// counts returns the number of consumer and producer channels.
func (r *clientRegistry) counts() (consumers, producers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.consumers {
		consumers += len(g.members)
	}
	for _, g := range r.producers {
		producers += len(g)
	}
	return
}

func (b *Broker) handleHeartbeat(w remoting.ResponseWriter, req *remoting.Command) {
	var hb heartbeatData
	if err := json.Unmarshal(req.Body, &hb); err != nil {
		b.reply(w, req, remoting.SystemError, "heartbeat body is not valid JSON: "+err.Error())
		return
	}
	now := b.now()
	conn := w.Conn()
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		gc, _, err := b.tables.Groups.FindOrCreate(cd.GroupName)
		if err != nil && gc.GroupName == "" {
			b.reply(w, req, remoting.SubscriptionGroupNotExist, "subscription group "+cd.GroupName+" does not exist: "+err.Error())
			return
		}
		if !cd.UnitMode {
			_, created, err := b.tables.Topics.CreateRetryTopic(cd.GroupName, max(gc.RetryQueueNums, 1))
			if err != nil && !created {
				b.log.WithError(err).WithField("group", cd.GroupName).Warn("creating retry topic failed")
			}
			if created {
				b.triggerRegister()
			}
		}
		cg := &consumerGroup{
			subs:        map[string]*subscription{},
			consumeType: cd.ConsumeType, messageModel: cd.MessageModel, consumeFromWhere: cd.ConsumeFromWhere,
		}
		for _, sd := range cd.SubscriptionDataSet {
			cg.subs[sd.Topic] = newSubscription(sd.Topic, sd.SubString, sd.TagsSet, sd.ExpressionType)
		}
		if conn != nil && b.clients.registerConsumer(conn, hb.ClientID, cd.GroupName, cg, now) {
			b.log.WithFields(logrus.Fields{"group": cd.GroupName, "client": hb.ClientID}).Info("consumer joined")
			b.clients.notify(cd.GroupName)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		if pd.GroupName != "" && conn != nil {
			b.clients.registerProducer(conn, hb.ClientID, pd.GroupName, now)
		}
	}
	b.replyOK(w, req, nil)
}

func (b *Broker) handleUnregisterClient(w remoting.ResponseWriter, req *remoting.Command) {
	clientID := req.Ext("clientID")
	pg, cgName := req.Ext("producerGroup"), req.Ext("consumerGroup")
	changed := b.clients.removeWhere(func(group string, c *clientChannel) bool {
		if c.clientID != clientID {
			return false
		}
		return group == pg || group == cgName
	})
	for _, g := range changed {
		b.clients.notify(g)
	}
	b.replyOK(w, req, nil)
}

func (b *Broker) handleGetConsumerList(w remoting.ResponseWriter, req *remoting.Command) {
	group := req.Ext("consumerGroup")
	ids, ok := b.clients.consumerIDs(group)
	if !ok {
		b.reply(w, req, remoting.SystemError, "no consumer for group "+group+" on broker "+b.cfg.BrokerName)
		return
	}
	body := []byte(`{"consumerIdList":`)
	body = route.AppendStringList(body, ids)
	body = append(body, '}')
	b.replyOK(w, req, body)
}

// groupConfig returns a group's config or Java's defaults when it is unknown.
func (b *Broker) groupConfig(group string) meta.SubscriptionGroupConfig {
	if g, ok := b.tables.Groups.Get(group); ok {
		return g
	}
	return meta.NewSubscriptionGroupConfig(group)
}

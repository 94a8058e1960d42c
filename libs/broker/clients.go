package broker

import (
	"fmt"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/broker/clients"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// clientRegistry drives the heartbeat registry of package clients for this broker (slaves
// included: pulls on a slave need the subscriptions too): it feeds it heartbeats, closed
// connections (the Go client never sends UNREGISTER_CLIENT) and expiry ticks, and pushes
// NOTIFY_CONSUMER_IDS_CHANGED to a group's members whenever its membership changes.
type clientRegistry struct {
	b       *Broker
	log     logrus.FieldLogger
	reg     *clients.Registry
	filters *clients.FilterCache // compiled selectors, shared by heartbeats and pulls
	done    chan struct{}
	wg      sync.WaitGroup
}

func newClientRegistry(b *Broker) (*clientRegistry, error) {
	cfg := clients.DefaultConfig()
	cfg.Logger = b.log.WithField("component", "clients")
	cfg.Filters = clients.NewFilterCache(0, 0)
	reg, err := clients.NewRegistry(cfg)
	if err != nil {
		return nil, err
	}
	return &clientRegistry{b: b, log: cfg.Logger, reg: reg, filters: cfg.Filters, done: make(chan struct{})}, nil
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

// connClosed unregisters the clients of a closed connection.
func (r *clientRegistry) connClosed(conn *remoting.ServerConn) {
	r.b.autoc.connClosed(conn)
	for _, g := range r.reg.UnregisterConn(conn) {
		r.log.WithFields(logrus.Fields{"group": g, "peer": conn.RemoteAddr()}).Info("consumer left (connection closed)")
		r.notify(g)
	}
}

// expire drops clients silent for longer than Config.ClientExpiry.
func (r *clientRegistry) expire(now time.Time) {
	for _, g := range r.reg.Expire(now, r.b.cfg.ClientExpiry) {
		r.log.WithField("group", g).Info("consumer expired: no heartbeat")
		r.notify(g)
	}
}

// notify pushes NOTIFY_CONSUMER_IDS_CHANGED to every member of group so they rebalance.
func (r *clientRegistry) notify(group string) {
	if gc, ok := r.b.tables.Groups.Get(group); ok && !gc.NotifyConsumerIdsChangedEnable {
		return
	}
	for _, m := range r.reg.Consumers(group) {
		c, ok := m.Conn.(*remoting.ServerConn)
		if !ok || c == nil {
			continue
		}
		req := remoting.NewRequest(remoting.NotifyConsumerIdsChanged, map[string]string{"consumerGroup": group}, nil)
		if err := c.SendOneway(req); err != nil {
			r.log.WithError(err).WithField("peer", c.RemoteAddr()).Debug("notify consumer ids changed failed")
		}
	}
}

// consumerIDs lists the client ids of a group; ok is false for an unknown group.
func (r *clientRegistry) consumerIDs(group string) ([]string, bool) {
	ids := r.reg.ConsumerIDs(group)
	return ids, ids != nil
}

// findSubscription returns group's subscription to topic, whether the group is known, and
// whether it subscribes to topic.
func (r *clientRegistry) findSubscription(group, topic string) (*clients.SubscriptionData, bool, bool) {
	if _, ok := r.reg.ConsumerGroup(group); !ok {
		return nil, false, false
	}
	s, ok := r.reg.Subscription(group, topic)
	if !ok {
		return nil, true, false
	}
	return &s, true, true
}

// counts returns the number of consumer and producer members.
func (r *clientRegistry) counts() (consumers, producers int) {
	for _, g := range r.reg.ConsumerGroups() {
		consumers += len(r.reg.Consumers(g))
	}
	for _, g := range r.reg.ProducerGroups() {
		producers += len(r.reg.Producers(g))
	}
	return
}

// handleHeartbeat registers the client's producer and consumer groups. For every consumer
// group it finds or creates the subscription group and the retry topic %RETRY%group (and
// registers a new one with the name servers), as RocketMQ does, within the bounds of
// autocreate.go; what it creates is written with the next metadata batch. Groups refused
// by a bound are not registered, the others are, and the answer is then
// SUBSCRIPTION_GROUP_NOT_EXIST naming the first refused group and the bound. The response
// carries the broker's version, which the Go client requires for TAG subscriptions.
func (b *Broker) handleHeartbeat(w remoting.ResponseWriter, req *remoting.Command) {
	hb, err := clients.DecodeHeartbeat(req.Body)
	if err != nil {
		b.refuseHeartbeat(w, req, refusedInvalid, err)
		return
	}
	if err := hb.CheckLimits(clients.Limits{MaxGroups: b.cfg.HeartbeatMaxGroups, MaxSubscriptions: b.cfg.HeartbeatMaxSubscriptions}); err != nil {
		b.refuseHeartbeat(w, req, refusedTooLarge, err)
		return
	}
	conn := w.Conn()
	bud := b.heartbeatBudget()
	var refused []string
	var firstErr error
	kept := make([]clients.ConsumerData, 0, len(hb.ConsumerDataSet))
	for _, cd := range hb.ConsumerDataSet {
		gc, err := b.ensureGroup(conn, bud, cd.GroupName, meta.Batch)
		if err != nil {
			refused = append(refused, cd.GroupName)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		kept = append(kept, cd)
		if cd.UnitMode {
			continue
		}
		if _, err := b.ensureRetryTopic(conn, bud, cd.GroupName, max(gc.RetryQueueNums, 1), meta.Batch); err != nil {
			// The group is usable; a later heartbeat or a send-back creates the retry topic.
			b.log.WithError(err).WithField("group", cd.GroupName).Debug("retry topic not created")
		}
	}
	hb.ConsumerDataSet = kept
	if err := b.admitRegistrations(conn, hb); err != nil {
		b.refuseHeartbeat(w, req, refusedRegistrations, err)
		return
	}
	var handle any
	if conn != nil {
		handle = conn
	}
	res, err := b.clients.reg.Register(hb, handle, b.now())
	if err != nil {
		b.reply(w, req, remoting.SubscriptionParseFailed, err.Error())
		return
	}
	for _, g := range res.MembershipChanged {
		b.log.WithFields(logrus.Fields{"group": g, "client": hb.ClientID}).Info("consumer joined")
		b.clients.notify(g)
	}
	if len(refused) > 0 {
		f := logrus.Fields{"client": hb.ClientID, "refused": len(refused), "first": refused[0], "reason": firstErr.Error()}
		if conn != nil {
			f["peer"] = conn.RemoteAddr()
		}
		b.autoc.logRefusal(b.log, b.now(), f, "heartbeat names subscription groups that do not exist and may not be created")
		remark := fmt.Sprintf("subscription group [%s] does not exist: %v (%d of %d groups of this heartbeat refused)", refused[0], firstErr, len(refused), len(refused)+len(kept))
		b.reply(w, req, remoting.SubscriptionGroupNotExist, remark)
		return
	}
	b.replyOK(w, req, nil)
}

// refuseHeartbeat answers a heartbeat refused whole (SYSTEM_ERROR, as a header or body
// RocketMQ cannot decode), counts and logs it.
func (b *Broker) refuseHeartbeat(w remoting.ResponseWriter, req *remoting.Command, reason string, err error) {
	if c := b.autoc.hbRefused[reason]; c != nil {
		c.Add(1)
	}
	f := logrus.Fields{"reason": reason, "error": err.Error(), "bytes": len(req.Body)}
	if c := w.Conn(); c != nil {
		f["peer"] = c.RemoteAddr()
	}
	b.autoc.logRefusal(b.log, b.now(), f, "heartbeat refused")
	b.reply(w, req, remoting.SystemError, err.Error())
}

// handleUnregisterClient removes the client's connection from the registry (Java clients send
// it on shutdown; the Go client never does).
func (b *Broker) handleUnregisterClient(w remoting.ResponseWriter, req *remoting.Command) {
	clientID := req.Ext("clientID")
	var conns []any
	for _, g := range []string{req.Ext("consumerGroup")} {
		for _, m := range b.clients.reg.Consumers(g) {
			if m.ClientID == clientID {
				conns = append(conns, m.Conn)
			}
		}
	}
	for _, m := range b.clients.reg.Producers(req.Ext("producerGroup")) {
		if m.ClientID == clientID {
			conns = append(conns, m.Conn)
		}
	}
	for _, c := range conns {
		for _, g := range b.clients.reg.UnregisterConn(c) {
			b.clients.notify(g)
		}
	}
	b.replyOK(w, req, nil)
}

// handleGetConsumerList answers {"consumerIdList":[...]}; an unknown group gets SYSTEM_ERROR
// without a body, as from Java (the Go client then sees an empty list).
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

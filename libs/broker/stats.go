package broker

import (
	"fmt"
	"sort"
	"sync"

	"github.com/rmqha/rmqha/libs/broker/clients"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// clientLangs remembers the language and version each connection's heartbeats carry (the
// remoting header's), for the connection lists.
type clientLangs struct {
	mu sync.Mutex
	m  map[*remoting.ServerConn]route.Connection
}

func (c *clientLangs) note(conn *remoting.ServerConn, req *remoting.Command) {
	if conn == nil {
		return
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[*remoting.ServerConn]route.Connection{}
	}
	c.m[conn] = route.Connection{Language: req.Language, Version: int32(req.Version)}
	c.mu.Unlock()
}

func (c *clientLangs) forget(conn *remoting.ServerConn) {
	c.mu.Lock()
	delete(c.m, conn)
	c.mu.Unlock()
}

func (c *clientLangs) connection(m clients.Member) route.Connection {
	out := route.Connection{ClientID: m.ClientID}
	if conn, ok := m.Conn.(*remoting.ServerConn); ok && conn != nil {
		out.ClientAddr = conn.RemoteAddr()
		c.mu.Lock()
		l := c.m[conn]
		c.mu.Unlock()
		out.Language, out.Version = l.Language, l.Version
	}
	return out
}

// withClientLang wraps the heartbeat handler so that the connection lists know each client's
// language and version.
func (b *Broker) withClientLang(h func(remoting.ResponseWriter, *remoting.Command)) func(remoting.ResponseWriter, *remoting.Command) {
	b.srv.OnConnClose(b.langs.forget)
	return func(w remoting.ResponseWriter, req *remoting.Command) {
		b.langs.note(w.Conn(), req)
		h(w, req)
	}
}

// handleConsumerConnectionList answers GET_CONSUMER_CONNECTION_LIST (consumerGroup) with
// ConsumerConnection; CONSUMER_NOT_ONLINE "the consumer group[g] not online" as RocketMQ when
// the group has no connected client.
func (b *Broker) handleConsumerConnectionList(w remoting.ResponseWriter, req *remoting.Command) {
	group := req.Ext("consumerGroup")
	info, ok := b.clients.reg.ConsumerGroup(group)
	if group == "" || !ok || len(info.Members) == 0 {
		b.reply(w, req, remoting.ConsumerNotOnline, fmt.Sprintf("the consumer group[%s] not online", group))
		return
	}
	cc := route.ConsumerConnection{ConsumeFromWhere: info.ConsumeFromWhere, ConsumeType: info.ConsumeType,
		MessageModel: info.MessageModel, SubscriptionTable: map[string]route.Subscription{}}
	for _, m := range info.Members {
		cc.ConnectionSet = append(cc.ConnectionSet, b.langs.connection(m))
	}
	for topic, sd := range info.Subscriptions {
		cc.SubscriptionTable[topic] = route.Subscription{ClassFilterMode: sd.ClassFilterMode, CodeSet: append([]int32{}, sd.CodeSet...),
			ExpressionType: sd.ExpressionType, SubString: sd.SubString, SubVersion: sd.SubVersion,
			TagsSet: append([]string{}, sd.TagsSet...), Topic: sd.Topic}
	}
	b.replyOK(w, req, route.AppendConsumerConnection(nil, cc))
}

// handleProducerConnectionList answers GET_PRODUCER_CONNECTION_LIST (producerGroup) with
// ProducerConnection; SYSTEM_ERROR "the producer group[g] not exist" as RocketMQ when none.
func (b *Broker) handleProducerConnectionList(w remoting.ResponseWriter, req *remoting.Command) {
	group := req.Ext("producerGroup")
	ms := b.clients.reg.Producers(group)
	if group == "" || len(ms) == 0 {
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("the producer group[%s] not exist", group))
		return
	}
	var pc route.ProducerConnection
	for _, m := range ms {
		pc.ConnectionSet = append(pc.ConnectionSet, b.langs.connection(m))
	}
	sort.Slice(pc.ConnectionSet, func(i, j int) bool { return pc.ConnectionSet[i].ClientID < pc.ConnectionSet[j].ClientID })
	b.replyOK(w, req, route.AppendProducerConnection(nil, pc))
}

// handleConsumeStats answers GET_CONSUME_STATS (consumerGroup, topic optional) as RocketMQ's
// AdminBrokerProcessor does: for each read queue of the topic (or of every topic the group has
// offsets on; topics an online group does not subscribe to are left out) the broker's max
// offset, the group's committed offset (0 when none; also as pullOffset) and the store time of
// the last consumed message. consumeTps sums the minute tps of the group's GROUP_GET_NUMS
// over those topics, as RocketMQ does.
func (b *Broker) handleConsumeStats(w remoting.ResponseWriter, req *remoting.Command) {
	group, topic := req.Ext("consumerGroup"), req.Ext("topic")
	if group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext consumerGroup")
		return
	}
	var topics []string
	if topic != "" {
		topics = []string{topic}
	} else {
		for t := range b.tables.Offsets.GroupOffsets(group) {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	}
	info, online := b.clients.reg.ConsumerGroup(group)
	table := map[route.MessageQueue]route.OffsetWrapper{}
	var tps float64
	for _, t := range topics {
		tc, ok := b.tables.Topics.Get(t)
		if !ok {
			continue
		}
		if online && len(info.Subscriptions) > 0 {
			if _, subscribed := info.Subscriptions[t]; !subscribed {
				continue
			}
		}
		tps += b.bstats.GroupGetTps(t, group)
		for i := int32(0); i < int32(tc.ReadQueueNums); i++ {
			o := route.OffsetWrapper{BrokerOffset: max(b.store.QueueMaxOffset(t, i), 0)}
			if off, found := b.tables.Offsets.Query(group, t, i); found && off > 0 {
				o.ConsumerOffset = off
				o.LastTimestamp, _ = b.store.MessageStoreTime(t, i, off-1)
			}
			o.PullOffset = o.ConsumerOffset
			table[route.MessageQueue{Topic: t, BrokerName: b.cfg.BrokerName, QueueID: i}] = o
		}
	}
	b.replyOK(w, req, route.AppendConsumeStats(nil, tps, table))
}

// handleTopicStatsInfo answers GET_TOPIC_STATS_INFO (topic) with TopicStatsTable: per write
// queue its min and max offsets and the store time of its last message; TOPIC_NOT_EXIST
// "topic[t] not exist" as RocketMQ.
func (b *Broker) handleTopicStatsInfo(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	tc, ok := b.tables.Topics.Get(topic)
	if topic == "" || !ok {
		b.reply(w, req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist", topic))
		return
	}
	table := map[route.MessageQueue]route.TopicOffset{}
	for i := int32(0); i < int32(tc.WriteQueueNums); i++ {
		o := route.TopicOffset{MinOffset: max(b.store.QueueMinOffset(topic, i), 0), MaxOffset: max(b.store.QueueMaxOffset(topic, i), 0)}
		if o.MaxOffset > 0 {
			o.LastUpdateTimestamp, _ = b.store.MessageStoreTime(topic, i, o.MaxOffset-1)
		}
		table[route.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: i}] = o
	}
	b.replyOK(w, req, route.AppendTopicStatsTable(nil, table))
}

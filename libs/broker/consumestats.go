package broker

import (
	"sort"

	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// handleSystemTopicList answers GET_SYSTEM_TOPIC_LIST_FROM_BROKER with a TopicList: RocketMQ's
// system topic set with this broker's own (cluster and broker names, the reply topic) and the
// rmq_sys_ topics: the timer topic when timers are served (RocketMQ 5 adds it at start) and
// any other of its topic table.
func (b *Broker) handleSystemTopicList(w remoting.ResponseWriter, req *remoting.Command) {
	topics := meta.SystemTopics(b.cfg.BrokerClusterName, b.cfg.BrokerName)
	if b.cfg.TimerWheelEnable {
		topics = append(topics, timer.Topic)
	}
	seen := map[string]bool{}
	for _, t := range topics {
		seen[t] = true
	}
	for _, tc := range b.tables.Topics.All() {
		if !seen[tc.TopicName] && meta.IsSystemTopic(tc.TopicName, b.cfg.BrokerClusterName, b.cfg.BrokerName) {
			seen[tc.TopicName] = true
			topics = append(topics, tc.TopicName)
		}
	}
	b.replyOK(w, req, route.AppendTopicList(nil, topics, ""))
}

// handleTopicConsumeByWho answers QUERY_TOPIC_CONSUME_BY_WHO (topic) with a GroupList: the
// groups of connected consumers subscribed to the topic and the groups holding offsets on it,
// as RocketMQ's AdminBrokerProcessor does. An unknown topic has no groups.
func (b *Broker) handleTopicConsumeByWho(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	if topic == "" {
		b.reply(w, req, remoting.SystemError, "missing ext topic")
		return
	}
	set := map[string]bool{}
	for _, g := range b.clients.reg.ConsumerGroups() {
		if _, ok := b.clients.reg.Subscription(g, topic); ok {
			set[g] = true
		}
	}
	for _, p := range b.tables.Offsets.Pairs() {
		if p.Topic == topic {
			set[p.Group] = true
		}
	}
	groups := make([]string, 0, len(set))
	for g := range set {
		groups = append(groups, g)
	}
	b.replyOK(w, req, route.AppendGroupList(nil, groups))
}

// handleBrokerConsumeStats answers GET_BROKER_CONSUME_STATS (isOrder) with ConsumeStatsList, as
// RocketMQ's fetchAllConsumeStatsInBroker: for every subscription group, one ConsumeStats per
// topic it holds offsets on (topics gone from the topic table left out; with isOrder=true only
// ordered topics; a topic an online group no longer subscribes to left out), per write queue
// the broker's max offset, the group's offset and the store time of the last consumed
// message; totalDiff sums broker minus consumer offsets; consumeTps is the minute tps of the
// group's GROUP_GET_NUMS on the topic.
func (b *Broker) handleBrokerConsumeStats(w remoting.ResponseWriter, req *remoting.Command) {
	onlyOrder := req.Ext("isOrder") == "true"
	byGroup := map[string][]string{}
	for _, p := range b.tables.Offsets.Pairs() {
		byGroup[p.Group] = append(byGroup[p.Group], p.Topic)
	}
	var names []string
	for _, g := range b.tables.Groups.All() {
		names = append(names, g.GroupName)
	}
	sort.Strings(names)
	out := route.ConsumeStatsList{BrokerAddr: b.brokerAddr}
	for _, group := range names {
		gs := route.GroupConsumeStats{Group: group}
		info, online := b.clients.reg.ConsumerGroup(group)
		for _, topic := range byGroup[group] {
			tc, ok := b.tables.Topics.Get(topic)
			if !ok || (onlyOrder && !tc.Order) {
				continue
			}
			if online && len(info.Subscriptions) > 0 {
				if _, subscribed := info.Subscriptions[topic]; !subscribed {
					continue
				}
			}
			cs := route.ConsumeStats{ConsumeTps: b.bstats.GroupGetTps(topic, group), OffsetTable: map[route.MessageQueue]route.OffsetWrapper{}}
			for i := int32(0); i < tc.WriteQueueNums; i++ {
				o := route.OffsetWrapper{BrokerOffset: max(b.store.QueueMaxOffset(topic, i), 0)}
				if off, found := b.tables.Offsets.Query(group, topic, i); found && off > 0 {
					o.ConsumerOffset = off
					o.LastTimestamp, _ = b.store.MessageStoreTime(topic, i, off-1)
				}
				o.PullOffset = o.ConsumerOffset
				out.TotalDiff += o.BrokerOffset - o.ConsumerOffset
				cs.OffsetTable[route.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: i}] = o
			}
			gs.Stats = append(gs.Stats, cs)
		}
		out.Groups = append(out.Groups, gs)
	}
	b.replyOK(w, req, route.AppendConsumeStatsList(nil, out))
}

package broker

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// handleResetOffset answers INVOKE_BROKER_TO_RESET_OFFSET (ResetOffsetRequestHeader: topic,
// group, timestamp, isForce; 5.x adds queueId and offset) as RocketMQ's Broker2Client.resetOffset
// does: for every write queue of the topic the offset of the first message stored at or after
// timestamp (-1: the queue's max offset), kept only where it is below the group's committed
// offset unless isForce; RESET_CONSUMER_CLIENT_OFFSET with that table goes to every online
// consumer of the group, and the answer carries it (ResetOffsetBody). Unlike RocketMQ the broker
// also stores the table as an explicit reset, so slaves follow it (metasync) and a consumer that
// was not sent it (it joins later) starts there. Refused as RocketMQ refuses: TOPIC_NOT_EXIST,
// SYSTEM_ERROR "THe consumer group <g> not exist" for a group without offsets on a queue,
// CONSUMER_NOT_ONLINE when no consumer of the group is connected (nothing is changed then).
// With queueId ≥ 0 (5.x) only that queue is reset, to offset (or by timestamp when offset is
// -1), and no client is told.
func (b *Broker) handleResetOffset(w remoting.ResponseWriter, req *remoting.Command) {
	topic, group := req.Ext("topic"), req.Ext("group")
	if topic == "" || group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext topic or group")
		return
	}
	ts, err := req.ExtInt64("timestamp")
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	force := false
	if req.Ext("isForce") != "" {
		if force, err = req.ExtBool("isForce"); err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return
		}
	}
	tc, ok := b.tables.Topics.Get(topic)
	if !ok {
		b.reply(w, req, remoting.TopicNotExist, "[reset-offset] reset offset failed, no topic in this broker. topic="+topic)
		return
	}
	offsetAt := func(qid int32) int64 {
		var off int64
		if ts == -1 {
			off = b.store.QueueMaxOffset(topic, qid)
		} else {
			off = b.store.OffsetByTime(topic, qid, ts)
		}
		return max(off, 0)
	}
	if req.Ext("queueId") != "" {
		qid, err := req.ExtInt32In("queueId", -1, math.MaxInt32)
		if err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return
		}
		if qid >= 0 {
			off := int64(-1)
			if req.Ext("offset") != "" {
				if off, err = req.ExtInt64In("offset", -1, math.MaxInt64); err != nil {
					b.reply(w, req, remoting.SystemError, err.Error())
					return
				}
			}
			if off == -1 {
				off = offsetAt(qid)
			}
			b.tables.Offsets.Reset(group, topic, map[int32]int64{qid: off})
			b.logReset(topic, group, ts, map[int32]int64{qid: off}, 0)
			mq := route.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: qid}
			b.replyOK(w, req, route.AppendResetOffsetBody(nil, map[route.MessageQueue]int64{mq: off}))
			return
		}
	}
	table := map[route.MessageQueue]int64{}
	offsets := map[int32]int64{}
	for i := int32(0); i < int32(tc.WriteQueueNums); i++ {
		committed, found := b.tables.Offsets.Query(group, topic, i)
		if !found {
			b.reply(w, req, remoting.SystemError, fmt.Sprintf("THe consumer group <%s> not exist", group))
			return
		}
		off := offsetAt(i)
		if !force && off >= committed {
			off = committed
		}
		table[route.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: i}] = off
		offsets[i] = off
	}
	members := b.clients.reg.Consumers(group)
	var conns []*remoting.ServerConn
	for _, m := range members {
		if c, ok := m.Conn.(*remoting.ServerConn); ok && c != nil {
			conns = append(conns, c)
		}
	}
	if len(conns) == 0 {
		b.reply(w, req, remoting.ConsumerNotOnline, fmt.Sprintf("Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d", group, topic, ts))
		return
	}
	body := route.AppendResetOffsetBody(nil, table)
	b.tables.Offsets.Reset(group, topic, offsets)
	ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force)}
	told := 0
	for _, c := range conns {
		if err := c.SendOneway(remoting.NewRequest(remoting.ResetConsumerClientOffset, ext, body)); err != nil {
			b.log.WithError(err).WithFields(logrus.Fields{"peer": c.RemoteAddr(), "group": group, "topic": topic}).Warn("[reset-offset] could not tell a consumer")
			continue
		}
		told++
	}
	b.logReset(topic, group, ts, offsets, told)
	b.replyOK(w, req, body)
}

func (b *Broker) logReset(topic, group string, ts int64, offsets map[int32]int64, told int) {
	b.log.WithFields(logrus.Fields{"topic": topic, "group": group, "timestamp": ts, "queues": len(offsets), "consumers_told": told}).
		Info("consumer offsets reset by admin request")
}

// handleCloneGroupOffset answers CLONE_GROUP_OFFSET (srcGroup, destGroup, topic, offline) as
// RocketMQ's AdminBrokerProcessor does: destGroup gets srcGroup's committed offsets, on topic or,
// when topic is empty, on every topic srcGroup has offsets for; topics this broker does not
// serve are skipped, and so (unless offline) are topics an online srcGroup does not subscribe to.
// The copy is an explicit reset, so slaves follow it.
func (b *Broker) handleCloneGroupOffset(w remoting.ResponseWriter, req *remoting.Command) {
	src, dest, topic := req.Ext("srcGroup"), req.Ext("destGroup"), req.Ext("topic")
	if src == "" || dest == "" {
		b.reply(w, req, remoting.SystemError, "missing ext srcGroup or destGroup")
		return
	}
	offline := false
	if req.Ext("offline") != "" {
		var err error
		if offline, err = req.ExtBool("offline"); err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return
		}
	}
	all := b.tables.Offsets.GroupOffsets(src)
	var topics []string
	if topic != "" {
		topics = []string{topic}
	} else {
		for t := range all {
			topics = append(topics, t)
		}
		sort.Strings(topics)
	}
	info, online := b.clients.reg.ConsumerGroup(src)
	for _, t := range topics {
		if _, ok := b.tables.Topics.Get(t); !ok {
			continue
		}
		if !offline && online && len(info.Subscriptions) > 0 {
			if _, subscribed := b.clients.reg.Subscription(src, t); !subscribed {
				continue
			}
		}
		if offs := all[t]; len(offs) > 0 {
			b.tables.Offsets.Reset(dest, t, offs)
			b.log.WithFields(logrus.Fields{"src": src, "dest": dest, "topic": t, "queues": len(offs)}).Info("consumer offsets cloned by admin request")
		}
	}
	b.replyOK(w, req, nil)
}

// handleQueryConsumeTimeSpan answers QUERY_CONSUME_TIME_SPAN (topic, group) as RocketMQ's
// AdminBrokerProcessor does: per write queue the store times of its first and last message, of
// the last message the group consumed (the first message's when it consumed none), and how long
// ago the next message to consume was stored (0 when it is caught up).
func (b *Broker) handleQueryConsumeTimeSpan(w remoting.ResponseWriter, req *remoting.Command) {
	topic, group := req.Ext("topic"), req.Ext("group")
	if topic == "" || group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext topic or group")
		return
	}
	tc, ok := b.tables.Topics.Get(topic)
	if !ok {
		b.reply(w, req, remoting.TopicNotExist, "topic "+topic+" not exist")
		return
	}
	now := b.now().UnixMilli()
	spans := make([]route.QueueTimeSpan, 0, tc.WriteQueueNums)
	for i := int32(0); i < int32(tc.WriteQueueNums); i++ {
		sp := route.QueueTimeSpan{MessageQueue: route.MessageQueue{Topic: topic, BrokerName: b.cfg.BrokerName, QueueID: i}}
		sp.MinTimeStamp, _ = b.store.EarliestMessageTime(topic, i)
		maxOff := b.store.QueueMaxOffset(topic, i)
		if maxOff > 0 {
			sp.MaxTimeStamp, _ = b.store.MessageStoreTime(topic, i, maxOff-1)
		}
		committed, found := b.tables.Offsets.Query(group, topic, i)
		if !found {
			committed = -1
		}
		if committed > 0 {
			sp.ConsumeTimeStamp, _ = b.store.MessageStoreTime(topic, i, committed-1)
		} else {
			sp.ConsumeTimeStamp = sp.MinTimeStamp
		}
		if committed >= 0 && committed < maxOff {
			if next, err := b.store.MessageStoreTime(topic, i, committed); err == nil {
				sp.DelayTime = now - next
			}
		}
		spans = append(spans, sp)
	}
	b.replyOK(w, req, route.AppendQueryConsumeTimeSpanBody(nil, spans))
}

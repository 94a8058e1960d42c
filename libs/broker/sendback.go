package broker

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
)

// handleSendBack implements CONSUMER_SEND_MSG_BACK: the consumed message (found by its
// CommitLog offset) is stored again in %RETRY%group, or in %DLQ%group once it has been
// reconsumed maxReconsumeTimes times (or when delayLevel < 0).
//
// The retry copy waits in SCHEDULE_TOPIC_XXXX for its delay level (3 + reconsumeTimes unless
// the consumer asked for one) before the delay service stores it in the retry topic.
func (b *Broker) handleSendBack(w remoting.ResponseWriter, req *remoting.Command) {
	if b.refuseWrite(b.view(), w, req) || b.refuseUnwritable(w, req) {
		return
	}
	group := req.Ext("group")
	if group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext group")
		return
	}
	// ConsumerSendMsgBackRequestHeader: offset Long, delayLevel Integer (negative: straight
	// to the dead-letter topic), maxReconsumeTimes Integer (optional).
	off, err := req.ExtInt64In("offset", 0, math.MaxInt64)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	var delayLevel int32
	if req.HasExt("delayLevel") {
		if delayLevel, err = req.ExtInt32("delayLevel"); err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return
		}
	}
	maxRe := int32(-1)
	if req.HasExt("maxReconsumeTimes") {
		if maxRe, err = req.ExtInt32In("maxReconsumeTimes", 0, math.MaxInt32); err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return
		}
	}
	g, gerr := b.ensureGroup(w.Conn(), nil, group, meta.Batch)
	if gerr != nil {
		b.reply(w, req, remoting.SubscriptionGroupNotExist, "subscription group not exist, "+group+": "+gerr.Error())
		return
	}
	// The copy stored below names the retry topic: it is in topics.json before the answer.
	if _, err := b.ensureRetryTopic(w.Conn(), nil, group, max(g.RetryQueueNums, 1), meta.Wait); err != nil {
		b.reply(w, req, remoting.SystemError, "topic["+meta.RetryTopic(group)+"] not exist: "+err.Error())
		return
	}
	retry, ok := b.tables.Topics.Get(meta.RetryTopic(group))
	if !ok {
		b.reply(w, req, remoting.SystemError, "topic["+meta.RetryTopic(group)+"] not exist")
		return
	}
	raw, err := b.store.ReadRecord(off)
	if err != nil {
		b.reply(w, req, remoting.SystemError, "look message by offset failed, "+strconv.FormatInt(off, 10)+": "+err.Error())
		return
	}
	rec, _, err := commitlog.DecodeRecord(raw)
	if err != nil {
		b.reply(w, req, remoting.SystemError, "stored message at "+strconv.FormatInt(off, 10)+" unreadable: "+err.Error())
		return
	}
	props := commitlog.ParseProperties(rec.Properties)
	if props == nil {
		props = map[string]string{}
	}
	if props[propRetryTopic] == "" {
		props[propRetryTopic] = rec.Topic
	}
	if props[propOriginMsgID] == "" {
		origin := req.Ext("originMsgId")
		if origin == "" {
			origin = props[propUniqKey]
		}
		if origin == "" {
			origin = commitlog.OffsetMsgID(rec.StoreHost, rec.PhysicalOffset)
		}
		props[propOriginMsgID] = origin
	}
	delete(props, propWait)
	props[propCluster] = b.cfg.BrokerClusterName

	if maxRe < 0 {
		maxRe = g.RetryMaxTimes
	}
	topic := retry.TopicName
	qid := rand.Int32N(max(retry.WriteQueueNums, 1))
	if rec.ReconsumeTimes >= maxRe || delayLevel < 0 {
		dlq, dcreated, derr := b.tables.Topics.CreateDLQTopic(group)
		if derr != nil && !dcreated && dlq.TopicName == "" {
			b.reply(w, req, remoting.SystemError, "creating "+meta.DLQTopic(group)+": "+derr.Error())
			return
		}
		if dcreated {
			b.triggerRegister()
		}
		topic, qid = dlq.TopicName, 0
	}
	props[propMaxReconsumeTime] = strconv.Itoa(int(maxRe))
	level := 0
	if topic == retry.TopicName {
		// RocketMQ's retry back-off: level 3 + reconsumeTimes unless the consumer chose one.
		level = int(delayLevel)
		if level == 0 {
			level = 3 + int(rec.ReconsumeTimes)
		}
	}
	msg := &commitlog.Message{
		Topic:          topic,
		QueueID:        qid,
		Flag:           rec.Flag,
		Body:           rec.Body,
		Properties:     string(commitlog.AppendProperties(nil, props)),
		SysFlag:        rec.SysFlag,
		BornTimestamp:  rec.BornTimestamp,
		BornHost:       rec.BornHost,
		ReconsumeTimes: rec.ReconsumeTimes + 1,
	}
	if level > 0 {
		if err := b.levels.ToSchedule(msg, level); err != nil {
			b.reply(w, req, remoting.SystemError, "delay level: "+err.Error())
			return
		}
	}
	if _, err := b.store.Append(msg); err != nil {
		b.replyStoreError(w, req, err)
		return
	}
	if !b.noStats.Load() {
		b.bstats.SendBack(props[propRetryTopic], group) // the topic the message came from, as RocketMQ
	}
	// Send-back copies never wait for flush or replication (RocketMQ writes them with WAIT=false).
	b.replyOK(w, req, nil)
}

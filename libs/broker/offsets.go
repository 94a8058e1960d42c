package broker

import (
	"errors"
	"math"
	"strconv"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
)

// queueArgs reads ext topic and queueId; it answers the request itself when they are bad.
func (b *Broker) queueArgs(w remoting.ResponseWriter, req *remoting.Command) (string, int32, bool) {
	topic := req.Ext("topic")
	if topic == "" {
		b.reply(w, req, remoting.SystemError, "missing ext topic")
		return "", 0, false
	}
	qid, err := req.ExtInt32In("queueId", 0, math.MaxInt32)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return "", 0, false
	}
	return topic, qid, true
}

func (b *Broker) handleQueryConsumerOffset(w remoting.ResponseWriter, req *remoting.Command) {
	topic, qid, ok := b.queueArgs(w, req)
	if !ok {
		return
	}
	group := req.Ext("consumerGroup")
	if group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext consumerGroup")
		return
	}
	if off, found := b.tables.Offsets.Query(group, topic, qid); found {
		b.replyOK(w, req, nil, "offset", strconv.FormatInt(off, 10))
		return
	}
	// No committed offset: a queue that still starts at 0 is consumed from its beginning
	// (a new group on a young queue must not miss its first messages); otherwise the client
	// applies its consumeFromWhere.
	if b.store.QueueMinOffset(topic, qid) <= 0 {
		b.replyOK(w, req, nil, "offset", "0")
		return
	}
	b.reply(w, req, remoting.QueryNotFound, "Not found, maybe this group consumer boot first")
}

func (b *Broker) handleUpdateConsumerOffset(w remoting.ResponseWriter, req *remoting.Command) {
	topic, qid, ok := b.queueArgs(w, req)
	if !ok {
		return
	}
	group := req.Ext("consumerGroup")
	if group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext consumerGroup")
		return
	}
	off, err := req.ExtInt64In("commitOffset", 0, math.MaxInt64)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	b.tables.Offsets.Commit(group, topic, qid, off)
	b.replyOK(w, req, nil)
}

func (b *Broker) handleGetMaxOffset(w remoting.ResponseWriter, req *remoting.Command) {
	topic, qid, ok := b.queueArgs(w, req)
	if !ok {
		return
	}
	b.replyOK(w, req, nil, "offset", strconv.FormatInt(b.store.QueueMaxOffset(topic, qid), 10))
}

func (b *Broker) handleGetMinOffset(w remoting.ResponseWriter, req *remoting.Command) {
	topic, qid, ok := b.queueArgs(w, req)
	if !ok {
		return
	}
	b.replyOK(w, req, nil, "offset", strconv.FormatInt(b.store.QueueMinOffset(topic, qid), 10))
}

func (b *Broker) handleEarliestMsgStoreTime(w remoting.ResponseWriter, req *remoting.Command) {
	topic, qid, ok := b.queueArgs(w, req)
	if !ok {
		return
	}
	ts, err := b.store.EarliestMessageTime(topic, qid)
	if err != nil {
		b.reply(w, req, remoting.SystemError, "no message in "+topic+":"+strconv.Itoa(int(qid))+": "+err.Error())
		return
	}
	b.replyOK(w, req, nil, "timestamp", strconv.FormatInt(ts, 10))
}

func (b *Broker) handleSearchOffsetByTimestamp(w remoting.ResponseWriter, req *remoting.Command) {
	topic, qid, ok := b.queueArgs(w, req)
	if !ok {
		return
	}
	ts, err := req.ExtInt64("timestamp")
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	b.replyOK(w, req, nil, "offset", strconv.FormatInt(b.store.OffsetByTime(topic, qid, ts), 10))
}

// handleViewMessageByID answers the stored record at the physical offset of an offset msgId.
func (b *Broker) handleViewMessageByID(w remoting.ResponseWriter, req *remoting.Command) {
	off, err := req.ExtInt64In("offset", 0, math.MaxInt64)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	rec, err := b.store.ReadRecord(off)
	if err != nil {
		code := remoting.SystemError
		if errors.Is(err, commitlog.ErrNotFound) || errors.Is(err, commitlog.ErrOffsetTooOld) ||
			errors.Is(err, commitlog.ErrOffsetBeyondEnd) || errors.Is(err, commitlog.ErrBadOffset) {
			code = remoting.QueryNotFound
		}
		b.reply(w, req, code, "no message at commit log offset "+strconv.FormatInt(off, 10)+": "+err.Error())
		return
	}
	b.replyOK(w, req, rec)
}

package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// Request-reply (RocketMQ's ReplyMessageProcessor).
//
// A requester (rocketmq-client-go Producer.Request / RequestAsync, Java's
// DefaultMQProducer.request) sends an ordinary message carrying CORRELATION_ID, TTL and
// REPLY_TO_CLIENT (its own client id). The consumer that handles it builds a reply
// (CreateReplyMessage: topic <cluster>_REPLY_TOPIC, MSG_TYPE=reply, the same CORRELATION_ID
// and REPLY_TO_CLIENT) and sends it with SEND_REPLY_MESSAGE (324; Java may use
// SEND_REPLY_MESSAGE_V2, 325, with SendMessageRequestHeaderV2's short names). The broker that
// takes the reply pushes it to the requester over the requester's own connection:
//
//	replier --SEND_REPLY_MESSAGE (header as SEND_MESSAGE, body)--> broker
//	broker  --PUSH_REPLY_MESSAGE_TO_CLIENT (326)---------------------> requester's connection
//	          ext: producerGroup topic defaultTopic defaultTopicQueueNums queueId sysFlag
//	               bornTimestamp flag properties(+PUSH_REPLY_TIME) reconsumeTimes unitMode
//	               bornHost(replier ip:port) storeHost(broker ip:port) storeTimestamp(ms)
//	          body: the reply's body, as sent
//	requester --SUCCESS--> broker ; broker --answer--> replier
//
// The requester's connection is the one of its latest producer heartbeat with that client id
// (ProducerManager.findChannel). The answer to the replier, as RocketMQ gives it:
//
//	REPLY_TO_CLIENT missing          SYSTEM_ERROR "reply message properties[REPLY_TO_CLIENT] is null"
//	no producer heartbeat of that id SYSTEM_ERROR "push reply message fail, channel of <id> not found."
//	requester answered an error or   SYSTEM_ERROR "push reply message to <id>fail."
//	  did not answer in 10 s
//	pushed                           SUCCESS (msgId "0", queueOffset 0 unless stored)
//
// With storeReplyMessageEnable (RocketMQ's default, true) the reply is also stored in its topic
// whether or not it was pushed; the answer then carries its msgId and queueOffset and, when
// pushed, the store's status (FLUSH_SLAVE_TIMEOUT, ... as for a send). Two deliberate
// differences, both so that nothing is accepted and then dropped: a reply that cannot be
// stored is answered with the store's error (RocketMQ logs it and answers SUCCESS); and a
// slave, which cannot store, refuses replies with SERVICE_NOT_AVAILABLE before pushing
// (RocketMQ pushes, then fails to store on the slave and only logs it). With
// storeReplyMessageEnable=false nothing is stored and a slave pushes like a master.

// replyPushTimeout bounds the wait for the requester's answer to a push (RocketMQ's
// Broker2Client.callClient: 10 s).
const replyPushTimeout = 10 * time.Second

// Properties of request-reply (MessageConst).
const (
	propReplyToClient = "REPLY_TO_CLIENT"
	propPushReplyTime = "PUSH_REPLY_TIME"
)

// replyStats counts what happened to replies since start (read at scrape time).
type replyStats struct {
	pushed      atomic.Uint64 // pushed to the requester, which answered SUCCESS
	noReplyTo   atomic.Uint64 // no REPLY_TO_CLIENT property
	notFound    atomic.Uint64 // no producer heartbeat of the requester's client id
	pushFailed  atomic.Uint64 // the requester answered an error, or did not answer in time
	stored      atomic.Uint64 // stored (storeReplyMessageEnable)
	refused     atomic.Uint64 // refused before any push (slave, bad header, bad topic, ...)
	storeFailed atomic.Uint64 // could not be stored
}

// handleSendReply serves SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2.
func (b *Broker) handleSendReply(w remoting.ResponseWriter, req *remoting.Command) {
	st := &b.replies
	v := b.view()
	store := b.live.storeReplyMessageEnable.Load()
	if store {
		// Storing is a write: a slave, a fenced or stopping master, a read-only store refuse.
		if b.refuseWrite(v, w, req) {
			st.refused.Add(1)
			return
		}
	} else if !b.running() {
		st.refused.Add(1)
		b.reply(w, req, remoting.ServiceNotAvailable, "broker is shutting down")
		return
	}
	// SEND_REPLY_MESSAGE_V2 carries SendMessageRequestHeaderV2's short names, as
	// SEND_MESSAGE_V2 does.
	hreq := *req
	if req.Code == remoting.SendReplyMessageV2 {
		hreq.Code = remoting.SendMessageV2
	}
	h, err := decodeSendHeader(&hreq)
	if err != nil {
		st.refused.Add(1)
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	if len(req.Body) > b.cfg.MaxMessageSize {
		st.refused.Add(1)
		b.reply(w, req, remoting.MessageIllegal, fmt.Sprintf("message body size %d exceeds maxMessageSize %d", len(req.Body), b.cfg.MaxMessageSize))
		return
	}
	// The topic checks of a send (name, system topics, auto-creation); a broker that does
	// not store never creates a topic.
	var tcOK bool
	tc, found := b.tables.Topics.Get(h.topic)
	switch {
	case store:
		tc, tcOK = b.resolveTopic(w, req, &h)
	case !found:
		b.reply(w, req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.topic))
	default:
		tcOK = true
	}
	if !tcOK {
		st.refused.Add(1)
		return
	}
	qid, ok := b.pickQueue(w, req, tc, h.queueID)
	if !ok {
		st.refused.Add(1)
		return
	}
	pushed, remark := b.pushReply(w, &h, req.Body, qid, unitModeOf(req))

	resp := remoting.NewResponse(req, remoting.Success, "")
	if !pushed {
		resp.Code, resp.Remark = remoting.SystemError, remark
	}
	resp.ExtFields["msgId"] = "0"
	resp.ExtFields["queueId"] = strconv.Itoa(int(qid))
	resp.ExtFields["queueOffset"] = "0"
	resp.ExtFields["MSG_REGION"] = regionDefault
	resp.ExtFields["TRACE_ON"] = "true"
	if !store {
		_ = w.Write(resp)
		return
	}
	_, pm, wait := b.fixProperties(h.properties)
	if v.master != nil {
		if err := v.master.CanAccept(); err != nil {
			b.replyNotStored(w, req, resp, pushed, fmt.Errorf("in-sync replicas not enough: fewer than minInSyncReplicas=%d copies in sync", b.cfg.MinInSyncReplicas))
			return
		}
	}
	arrival := b.now()
	res, err := b.store.Append(&commitlog.Message{
		Topic:          tc.TopicName,
		QueueID:        qid,
		Flag:           h.flag,
		Body:           req.Body,
		Properties:     h.properties, // as sent, like RocketMQ (no CLUSTER added)
		SysFlag:        h.sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       bornHostOf(w),
		ReconsumeTimes: h.reconsumeTimes,
	})
	if err != nil {
		b.replyNotStored(w, req, resp, pushed, err)
		return
	}
	st.stored.Add(1)
	b.countPut(tc.TopicName, 1, len(req.Body)) // as RocketMQ's ReplyMessageProcessor
	resp.ExtFields["msgId"] = res.MsgID
	resp.ExtFields["queueOffset"] = strconv.FormatInt(res.QueueOffset, 10)
	if u := pm[propUniqKey]; u != "" {
		resp.ExtFields["transactionId"] = u
	}
	if !pushed {
		// Stored, not delivered: the requester is told nothing, the replier SYSTEM_ERROR.
		resp.ExtFields["stored"] = "true"
		_ = w.Write(resp)
		return
	}
	b.complete(v, w, mapAnswer{resp}, res.EndOffset, wait, arrival, false)
}

// replyNotStored answers a reply that could not be stored with the code a send gets for the
// same store error, saying whether the reply was delivered all the same.
func (b *Broker) replyNotStored(w remoting.ResponseWriter, req, resp *remoting.Command, pushed bool, storeErr error) {
	b.replies.storeFailed.Add(1)
	what := "reply not pushed (" + resp.Remark + ") and not stored: "
	if pushed {
		what = "reply pushed to the requester but not stored: "
	}
	b.log.WithError(storeErr).WithFields(logrus.Fields{"topic": req.ExtFields["topic"], "peer": bornHostOfString(w)}).Warn("reply not stored")
	b.replyStoreError(prefixRemark{w, what}, req, storeErr)
}

// prefixRemark is a ResponseWriter that puts a prefix before the remark it writes.
type prefixRemark struct {
	remoting.ResponseWriter
	prefix string
}

func (p prefixRemark) Write(resp *remoting.Command) error {
	resp.Remark = p.prefix + resp.Remark
	return p.ResponseWriter.Write(resp)
}

// pushReply sends PUSH_REPLY_MESSAGE_TO_CLIENT to the requester named by REPLY_TO_CLIENT and
// reports whether it answered SUCCESS, with RocketMQ's remark when not.
func (b *Broker) pushReply(w remoting.ResponseWriter, h *sendHeader, body []byte, qid int32, unitMode bool) (bool, string) {
	st := &b.replies
	props := commitlog.ParseProperties(h.properties)
	requester := props[propReplyToClient]
	log := b.log.WithFields(logrus.Fields{"topic": h.topic, "peer": bornHostOfString(w), "requester": requester})
	if requester == "" {
		st.noReplyTo.Add(1)
		log.Warn("reply without REPLY_TO_CLIENT: nobody to push it to")
		return false, "reply message properties[" + propReplyToClient + "] is null"
	}
	handle, ok := b.clients.reg.ProducerConn(requester)
	conn, _ := handle.(*remoting.ServerConn)
	if !ok || conn == nil {
		st.notFound.Add(1)
		remark := "push reply message fail, channel of <" + requester + "> not found."
		log.Warn("reply's requester has no connection here")
		return false, remark
	}
	now := b.now()
	props[propPushReplyTime] = strconv.FormatInt(now.UnixMilli(), 10)
	ext := map[string]string{
		"producerGroup":         h.producerGroup,
		"topic":                 h.topic,
		"defaultTopic":          h.defaultTopic,
		"defaultTopicQueueNums": strconv.Itoa(int(h.defaultQueueNums)),
		"queueId":               strconv.Itoa(int(qid)),
		"sysFlag":               strconv.Itoa(int(h.sysFlag)),
		"bornTimestamp":         strconv.FormatInt(h.bornTimestamp, 10),
		"flag":                  strconv.Itoa(int(h.flag)),
		"properties":            string(commitlog.AppendProperties(nil, props)),
		"reconsumeTimes":        strconv.Itoa(int(h.reconsumeTimes)),
		"unitMode":              strconv.FormatBool(unitMode),
		"bornHost":              bornHostOfString(w),
		"storeHost":             b.storeHost.String(),
		"storeTimestamp":        strconv.FormatInt(now.UnixMilli(), 10),
	}
	ctx, cancel := context.WithTimeout(b.ctx, replyPushTimeout)
	defer cancel()
	resp, err := conn.SendRequest(ctx, remoting.NewRequest(remoting.PushReplyMessageToClient, ext, body))
	if err != nil || resp.Code != remoting.Success {
		st.pushFailed.Add(1)
		f := logrus.Fields{"requesterAddr": conn.RemoteAddr()}
		if err != nil {
			f["error"] = err.Error()
		} else {
			f["code"], f["remark"] = resp.Code, resp.Remark
		}
		log.WithFields(f).Warn("push reply message to the requester failed")
		// RocketMQ's remark, without a space before "fail".
		return false, "push reply message to " + requester + "fail."
	}
	st.pushed.Add(1)
	return true, ""
}

// unitModeOf is the request header's unitMode ("k" in SEND_REPLY_MESSAGE_V2's short names).
func unitModeOf(req *remoting.Command) bool {
	v, ok := req.ExtFields["unitMode"]
	if !ok && req.Code == remoting.SendReplyMessageV2 {
		v = req.ExtFields["k"]
	}
	return strings.EqualFold(v, "true")
}

// Metrics of request-reply, read at scrape time (served with or without metricsEnable).
var (
	descReplyPushed    = desc("reply_pushed_total", "Replies (SEND_REPLY_MESSAGE) pushed to their requester's connection, which answered SUCCESS.")
	descReplyNotPushed = desc("reply_not_pushed_total", "Replies that could not be pushed, by reason: requester_not_found (no producer heartbeat of the REPLY_TO_CLIENT id on this broker), no_reply_to (REPLY_TO_CLIENT missing), push_failed (the requester answered an error or did not answer within 10 s). Answered SYSTEM_ERROR.", "reason")
	descReplyStored    = desc("reply_stored_total", "Replies stored in their topic (storeReplyMessageEnable).")
	descReplyRefused   = desc("reply_refused_total", "Replies refused before a push: role (a slave or fenced master while storeReplyMessageEnable), header, size, topic or queue.")
	descReplyStoreFail = desc("reply_store_failed_total", "Replies the store refused (answered with the store's error, pushed or not).")
)

// replyCollector serves the request-reply metrics.
type replyCollector struct{ b *Broker }

func (c *replyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReplyPushed, descReplyNotPushed, descReplyStored, descReplyRefused, descReplyStoreFail} {
		ch <- d
	}
}

func (c *replyCollector) Collect(ch chan<- prometheus.Metric) {
	st := &c.b.replies
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descReplyPushed, st.pushed.Load())
	counter(descReplyNotPushed, st.notFound.Load(), "requester_not_found")
	counter(descReplyNotPushed, st.noReplyTo.Load(), "no_reply_to")
	counter(descReplyNotPushed, st.pushFailed.Load(), "push_failed")
	counter(descReplyStored, st.stored.Load())
	counter(descReplyRefused, st.refused.Load())
	counter(descReplyStoreFail, st.storeFailed.Load())
}

// replyRuntimeInfo adds the request-reply keys to GET_BROKER_RUNTIME_INFO.
func (b *Broker) replyRuntimeInfo(t map[string]string) {
	st := &b.replies
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	t["storeReplyMessageEnable"] = strconv.FormatBool(b.live.storeReplyMessageEnable.Load())
	t["replyPushed"] = u(st.pushed.Load())
	t["replyRequesterNotFound"] = u(st.notFound.Load())
	t["replyPushFailed"] = u(st.pushFailed.Load() + st.noReplyTo.Load())
}

package broker

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/broker/clients"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// Pull sysFlag bits (PullSysFlag).
const (
	pullFlagCommitOffset = 0x1
	pullFlagSuspend      = 0x2
	pullFlagSubscription = 0x4
)

// Per-pull transfer caps (RocketMQ's in-memory limits), and the most pulls held at once:
// past it an empty pull is answered at once rather than held, so a client flooding the broker
// with suspended pulls cannot grow its memory without bound.
const (
	maxHeldPulls = 1 << 16
	maxPullMsgs  = 32
	maxPullBytes = 256 << 10
)

// pullRequest is a decoded PULL_MESSAGE, kept while it is held by long polling.
type pullRequest struct {
	w            remoting.ResponseWriter
	req          *remoting.Command
	group        string
	topic        string
	queueID      int32
	offset       int64
	maxMsgs      int
	sysFlag      int32
	commitOffset int64
	suspend      time.Duration
	sub          *clients.SubscriptionData
	rf           *recordFilter // per-record properties filter (SQL92), nil for none
	deadline     time.Time
}

// decodePull reads PULL_MESSAGE's header; every numeric field with its width in Java's
// PullMessageRequestHeader and the values it can mean (a bad one is SYSTEM_ERROR).
func decodePull(req *remoting.Command) (*pullRequest, error) {
	pr := &pullRequest{req: req, group: req.Ext("consumerGroup"), topic: req.Ext("topic")}
	var err error
	if pr.group == "" || pr.topic == "" {
		return nil, errExt("consumerGroup/topic")
	}
	if pr.queueID, err = req.ExtInt32In("queueId", 0, math.MaxInt32); err != nil {
		return nil, extFieldErr(err)
	}
	if pr.offset, err = req.ExtInt64In("queueOffset", 0, math.MaxInt64); err != nil {
		return nil, extFieldErr(err)
	}
	n, err := req.ExtInt32("maxMsgNums")
	if err != nil {
		return nil, extFieldErr(err)
	}
	pr.maxMsgs = int(min(max(n, 1), maxPullMsgs))
	if pr.sysFlag, err = req.ExtInt32In("sysFlag", 0, math.MaxInt32); err != nil {
		return nil, extFieldErr(err)
	}
	pr.commitOffset = -1
	if req.HasExt("commitOffset") {
		// -1: nothing to commit (what clients send without one).
		if pr.commitOffset, err = req.ExtInt64In("commitOffset", -1, math.MaxInt64); err != nil {
			return nil, extFieldErr(err)
		}
	}
	if req.HasExt("suspendTimeoutMillis") {
		ms, err := req.ExtInt64In("suspendTimeoutMillis", 0, math.MaxInt64/int64(time.Millisecond))
		if err != nil {
			return nil, extFieldErr(err)
		}
		pr.suspend = time.Duration(ms) * time.Millisecond
	}
	if req.HasExt("subVersion") {
		if _, err := req.ExtInt64("subVersion"); err != nil {
			return nil, extFieldErr(err)
		}
	}
	return pr, nil
}

// extFieldErr marks a remoting ext accessor error as a bad request.
func extFieldErr(err error) error { return fmt.Errorf("%w: %w", ErrBadRequest, err) }

func errExt(name string) error {
	return &extError{name}
}

type extError struct{ name string }

func (e *extError) Error() string { return "missing or invalid ext field " + e.name }
func (e *extError) Unwrap() error { return ErrBadRequest }

func (b *Broker) handlePull(w remoting.ResponseWriter, req *remoting.Command) {
	b.pulls.Add(1)
	w = b.metrics.instrumentPull(w)
	pr, err := decodePull(req)
	if err != nil {
		b.pullError(w, req, remoting.SystemError, err.Error())
		return
	}
	pr.w = w
	if !b.running() {
		b.pullError(w, req, remoting.SystemBusy, "broker is shutting down")
		return
	}
	if !b.readable() {
		b.pullError(w, req, remoting.NoPermission, "the broker["+b.brokerHost()+"] pulling message is forbidden")
		return
	}
	g, err := b.ensureGroup(w.Conn(), nil, pr.group, meta.Batch)
	if err != nil {
		b.pullError(w, req, remoting.SubscriptionGroupNotExist, "subscription group ["+pr.group+"] does not exist, "+err.Error())
		return
	}
	if !g.ConsumeEnable {
		b.pullError(w, req, remoting.NoPermission, "subscription group no permission, "+pr.group)
		return
	}
	tc, ok := b.tables.Topics.Get(pr.topic)
	if ok {
		if !route.IsReadable(tc.Perm) {
			b.pullError(w, req, remoting.NoPermission, "the topic["+pr.topic+"] pulling message is forbidden")
			return
		}
		if pr.queueID < 0 || pr.queueID >= max(tc.ReadQueueNums, tc.WriteQueueNums) {
			b.pullError(w, req, remoting.SystemError, "queueId["+strconv.Itoa(int(pr.queueID))+"] is illegal, topic:["+pr.topic+"]")
			return
		}
	} else if b.view().isMaster() {
		// A slave may hold replicated queues before its topic table learns of them.
		b.pullError(w, req, remoting.TopicNotExist, "topic["+pr.topic+"] not exist, apply first please!")
		return
	}
	if pr.sysFlag&pullFlagSubscription != 0 {
		sub, err := clients.BuildSelector(pr.topic, req.Ext("subscription"), req.Ext("expressionType"), b.clients.filters)
		if err != nil {
			b.sqlf.countParseFailure(req.Ext("expressionType"))
			b.pullError(w, req, remoting.SubscriptionParseFailed, "subscription "+strconv.Quote(req.Ext("subscription"))+": "+err.Error())
			return
		}
		pr.sub = sub
	} else {
		s, groupKnown, found := b.clients.findSubscription(pr.group, pr.topic)
		if !groupKnown {
			b.pullError(w, req, remoting.SubscriptionNotExist, "the consumer's group info not exist: "+pr.group+" (no heartbeat on this broker)")
			return
		}
		if !found {
			b.pullError(w, req, remoting.SubscriptionNotExist, "the consumer's subscription not exist: "+pr.group+" on "+pr.topic)
			return
		}
		pr.sub = s
	}
	if pr.rf, ok = b.checkSelector(w, req, pr); !ok {
		return
	}
	// Commit-offset piggyback: only on the master (offsets live there), only on arrival.
	if pr.sysFlag&pullFlagCommitOffset != 0 && b.view().isMaster() && pr.commitOffset >= 0 {
		b.tables.Offsets.Commit(pr.group, pr.topic, pr.queueID, pr.commitOffset)
	}
	b.executePull(pr, pr.sysFlag&pullFlagSuspend != 0)
}

// executePull reads the queue and answers, or, when nothing is there yet and holding is
// allowed, parks the request with the long-polling service.
func (b *Broker) executePull(pr *pullRequest, allowHold bool) {
	f := commitlog.Filter{Tags: pr.sub.MatchTagsCode}
	if pr.rf != nil {
		f.Properties = pr.rf.match
	}
	res := b.store.GetFiltered(pr.topic, pr.queueID, pr.offset, pr.maxMsgs, maxPullBytes, f)
	if pr.rf != nil {
		pr.rf.flush(&b.sqlf)
	}
	code, next, notYet := b.mapPullStatus(pr, &res)
	b.countGet(pr, code, &res)
	if allowHold && (code == remoting.PullNotFound || notYet) {
		hold := min(pr.suspend, b.cfg.BrokerSuspendMaxTime)
		if hold > 0 && b.holds.heldCount() < maxHeldPulls {
			pr.deadline = b.now().Add(hold)
			b.holds.hold(pr)
			return
		}
	}
	remark := ""
	if code != remoting.Success {
		remark = res.Status.String()
	}
	ans := newPullAnswer(pr.req, code, remark)
	ans.next, ans.min, ans.max = next, res.MinOffset, res.MaxOffset
	ans.suggest = b.suggestBroker(pr, &res, notYet)
	resp := &ans.resp
	if code == remoting.Success {
		n := 0
		for _, r := range res.Records {
			n += len(r)
		}
		body := make([]byte, 0, n)
		for _, r := range res.Records {
			body = append(body, r...)
		}
		resp.Body = body
	}
	_ = pr.w.Write(resp)
}

// mapPullStatus turns the store's status into the response code and nextBeginOffset as RocketMQ
// does. On a slave, an offset beyond what it has replicated is "not yet" (PULL_RETRY_IMMEDIATELY
// with the requested offset), never a correction: the master may well have those messages.
func (b *Broker) mapPullStatus(pr *pullRequest, res *commitlog.GetResult) (code int32, next int64, notYet bool) {
	next = res.NextBeginOffset
	switch res.Status {
	case commitlog.Found:
		return remoting.Success, next, false
	case commitlog.NoMatchedMessage, commitlog.MessageWasRemoving:
		return remoting.PullRetryImmediately, next, false
	case commitlog.OffsetOverflowOne, commitlog.OffsetFoundNull:
		return remoting.PullNotFound, next, false
	case commitlog.NoMessageInQueue, commitlog.NoMatchedLogicQueue:
		if pr.offset == 0 {
			return remoting.PullNotFound, next, false
		}
		if !b.view().isMaster() {
			return remoting.PullRetryImmediately, pr.offset, true
		}
		return remoting.PullOffsetMoved, next, false
	case commitlog.OffsetOverflowBadly:
		if !b.view().isMaster() {
			return remoting.PullRetryImmediately, pr.offset, true
		}
		return remoting.PullOffsetMoved, next, false
	case commitlog.OffsetTooSmall:
		if !b.view().isMaster() {
			// The master may still hold those messages (a fresh slave starts at the master's
			// last segment): send the consumer back there while it is reachable; without a
			// master, skip to what this slave has.
			if b.masterReachable() {
				return remoting.PullRetryImmediately, pr.offset, false
			}
			return remoting.PullRetryImmediately, res.MinOffset, false
		}
		return remoting.PullOffsetMoved, next, false
	}
	return remoting.SystemError, pr.offset, false
}

// masterReachable reports whether a slave currently replicates from its master.
func (b *Broker) masterReachable() bool {
	s := b.view().slave
	return s != nil && s.Status().Connected
}

// suggestBroker computes suggestWhichBrokerId (§7.1).
func (b *Broker) suggestBroker(pr *pullRequest, res *commitlog.GetResult, notYet bool) int64 {
	g := b.groupConfig(pr.group)
	if notYet || (res.Status == commitlog.OffsetTooSmall && !b.view().isMaster()) {
		return 0
	}
	if !b.live.slaveReadEnable.Load() {
		return 0
	}
	if res.Status == commitlog.Found && b.physMem > 0 {
		diff := b.store.MaxOffset() - res.MaxPhysOffsetScanned
		if diff > b.physMem*int64(b.cfg.AccessMessageInMemoryMaxRatio)/100 {
			return g.WhichBrokerWhenConsumeSlowly
		}
	}
	return g.BrokerID
}

// physicalMemory reads MemTotal from /proc/meminfo; 24 GiB when unknown, as Java assumes.
func physicalMemory() int64 {
	const fallback = 24 << 30
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return fallback
}

// pullError answers a refused pull. It still carries nextBeginOffset (the requested offset),
// minOffset, maxOffset and suggestWhichBrokerId: a client missing nextBeginOffset would
// restart the queue at 0.
func (b *Broker) pullError(w remoting.ResponseWriter, req *remoting.Command, code int32, remark string) {
	resp := remoting.NewResponse(req, code, remark)
	next := "0"
	if off, err := req.ExtInt64In("queueOffset", 0, math.MaxInt64); err == nil {
		next = strconv.FormatInt(off, 10)
	}
	resp.ExtFields["nextBeginOffset"] = next
	resp.ExtFields["minOffset"] = "0"
	resp.ExtFields["maxOffset"] = "0"
	resp.ExtFields["suggestWhichBrokerId"] = "0"
	_ = w.Write(resp)
}

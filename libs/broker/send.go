package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/broker/txn"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// Property keys the broker reads or writes.
const (
	propWait             = "WAIT"
	propCluster          = "CLUSTER"
	propUniqKey          = "UNIQ_KEY"
	propRetryTopic       = "RETRY_TOPIC"
	propOriginMsgID      = "ORIGIN_MESSAGE_ID"
	propMaxReconsumeTime = "MAX_RECONSUME_TIMES"
	propDelay            = "DELAY"
	regionDefault        = "DefaultRegion"
)

// Transaction type bits of sysFlag (MessageSysFlag).
const (
	sysFlagTransactionMask   = 0xC
	sysFlagTransactionCommit = 0x8
)

// sendHeader is SEND_MESSAGE's header (long names) or SEND_MESSAGE_V2's / SEND_BATCH_MESSAGE's
// (short names a..n), decoded.
type sendHeader struct {
	producerGroup     string
	topic             string
	defaultTopic      string
	defaultQueueNums  int32
	queueID           int32
	sysFlag           int32
	bornTimestamp     int64
	flag              int32
	properties        string
	reconsumeTimes    int32
	maxReconsumeTimes int32
	hasMaxReconsume   bool
	batch             bool
}

// v2Names maps SendMessageRequestHeaderV2's short names to the long ones.
var v2Names = map[string]string{
	"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
	"e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
	"j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}

// The fields of SendMessageRequestHeader a send reads, by their index in sendExtReader.
const (
	sfProducerGroup = iota
	sfTopic
	sfDefaultTopic
	sfDefaultQueueNums
	sfQueueID
	sfSysFlag
	sfBornTimestamp
	sfFlag
	sfProperties
	sfReconsumeTimes
	sfMaxReconsumeTimes
	sfBatch
	sendFields
)

// sendExtReader reads a send header's fields by their long name, or by the short one for a
// SEND_MESSAGE_V2 header, straight from the request's ext fields: no renamed copy of the map.
// A short name wins over a long one present in the same header. The first bad number is kept.
// The fields are taken in one pass over the ext fields (take), the last of a repeated key
// winning as in ExtLookup, instead of one search of them per field.
type sendExtReader struct {
	short bool // SEND_MESSAGE_V2 (or batch) with short names
	err   error
	val   [2][sendFields]string // [0] by long name, [1] by short name
	has   [2][sendFields]bool
}

// take files one ext field under its index, by long (0) or short (1) name.
func (r *sendExtReader) take(k, v string) {
	form, f := 0, -1
	switch k {
	case "producerGroup":
		f = sfProducerGroup
	case "topic":
		f = sfTopic
	case "defaultTopic":
		f = sfDefaultTopic
	case "defaultTopicQueueNums":
		f = sfDefaultQueueNums
	case "queueId":
		f = sfQueueID
	case "sysFlag":
		f = sfSysFlag
	case "bornTimestamp":
		f = sfBornTimestamp
	case "flag":
		f = sfFlag
	case "properties":
		f = sfProperties
	case "reconsumeTimes":
		f = sfReconsumeTimes
	case "maxReconsumeTimes":
		f = sfMaxReconsumeTimes
	case "batch":
		f = sfBatch
	default:
		if len(k) != 1 {
			return
		}
		form = 1
		switch k[0] {
		case 'a':
			f = sfProducerGroup
		case 'b':
			f = sfTopic
		case 'c':
			f = sfDefaultTopic
		case 'd':
			f = sfDefaultQueueNums
		case 'e':
			f = sfQueueID
		case 'f':
			f = sfSysFlag
		case 'g':
			f = sfBornTimestamp
		case 'h':
			f = sfFlag
		case 'i':
			f = sfProperties
		case 'j':
			f = sfReconsumeTimes
		case 'l':
			f = sfMaxReconsumeTimes
		case 'm':
			f = sfBatch
		default:
			return
		}
	}
	r.val[form][f], r.has[form][f] = v, true
}

func (r *sendExtReader) get(f int) (string, bool) {
	if r.short && r.has[1][f] {
		return r.val[1][f], true
	}
	return r.val[0][f], r.has[0][f]
}

// num parses a field with its width in Java's SendMessageRequestHeader and checks it against
// the values it can mean; long is the field's name in errors.
func (r *sendExtReader) num(f int, long string, required bool, bits int, lo, hi int64) int64 {
	s, ok := r.get(f)
	if !ok || blank(s) {
		if required && r.err == nil {
			r.err = fmt.Errorf("%w: ext %s missing", ErrBadRequest, long)
		}
		return 0
	}
	v, err := remoting.ParseExtInt(long, s, bits, lo, hi)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return v
}

// blank is strings.TrimSpace(s) == "" (a field Java's header decoder leaves null), trimming
// only a value that starts with a space: a number does not.
func blank(s string) bool {
	return s == "" || (s[0] <= ' ' || s[0] >= utf8.RuneSelf) && strings.TrimSpace(s) == ""
}

func decodeSendHeader(req *remoting.Command) (sendHeader, error) {
	var r sendExtReader
	req.RangeExt(r.take)
	if req.Code == remoting.SendMessageV2 || req.Code == remoting.SendBatchMessage {
		r.short = r.has[1][sfTopic]
	}
	var h sendHeader
	// Every numeric field is checked; the first bad one refuses the request (SYSTEM_ERROR, as
	// RocketMQ answers a header it cannot decode).
	h.producerGroup, _ = r.get(sfProducerGroup)
	h.topic, _ = r.get(sfTopic)
	if h.topic == "" {
		return h, fmt.Errorf("%w: ext topic missing", ErrBadRequest)
	}
	h.defaultTopic, _ = r.get(sfDefaultTopic)
	h.defaultQueueNums = int32(r.num(sfDefaultQueueNums, "defaultTopicQueueNums", false, 32, math.MinInt32, math.MaxInt32))
	// Negative: any writable queue (RocketMQ's rule); beyond the topic's queues: refused later.
	h.queueID = int32(r.num(sfQueueID, "queueId", true, 32, math.MinInt32, math.MaxInt32))
	h.sysFlag = int32(r.num(sfSysFlag, "sysFlag", false, 32, 0, math.MaxInt32))
	h.bornTimestamp = r.num(sfBornTimestamp, "bornTimestamp", false, 64, math.MinInt64, math.MaxInt64)
	h.flag = int32(r.num(sfFlag, "flag", false, 32, math.MinInt32, math.MaxInt32))
	h.properties, _ = r.get(sfProperties)
	h.reconsumeTimes = int32(r.num(sfReconsumeTimes, "reconsumeTimes", false, 32, 0, math.MaxInt32))
	if v, _ := r.get(sfMaxReconsumeTimes); strings.TrimSpace(v) != "" {
		h.maxReconsumeTimes = int32(r.num(sfMaxReconsumeTimes, "maxReconsumeTimes", false, 32, 0, math.MaxInt32))
		h.hasMaxReconsume = true
	}
	batch, _ := r.get(sfBatch)
	h.batch = strings.EqualFold(batch, "true")
	if h.defaultQueueNums <= 0 {
		h.defaultQueueNums = 4
	}
	return h, r.err
}

// batchMember is one message of a SEND_BATCH_MESSAGE body (§4.5).
type batchMember struct {
	flag       int32
	body       []byte
	properties string
}

// decodeBatch splits a batch body; every member must be whole and sizes must agree.
func decodeBatch(b []byte) ([]batchMember, error) {
	var out []batchMember
	for len(b) > 0 {
		if len(b) < 20 {
			return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadBatch, len(b))
		}
		total := int(int32(binary.BigEndian.Uint32(b)))
		if total < 22 || total > len(b) {
			return nil, fmt.Errorf("%w: member size %d with %d bytes left", ErrBadBatch, total, len(b))
		}
		m := b[:total]
		flag := int32(binary.BigEndian.Uint32(m[12:]))
		bodyLen := int(int32(binary.BigEndian.Uint32(m[16:])))
		if bodyLen < 0 || 20+bodyLen+2 > total {
			return nil, fmt.Errorf("%w: body length %d in member of %d bytes", ErrBadBatch, bodyLen, total)
		}
		body := m[20 : 20+bodyLen]
		propLen := int(int16(binary.BigEndian.Uint16(m[20+bodyLen:])))
		if propLen < 0 || 22+bodyLen+propLen != total {
			return nil, fmt.Errorf("%w: properties length %d in member of %d bytes", ErrBadBatch, propLen, total)
		}
		props := string(m[22+bodyLen : 22+bodyLen+propLen])
		out = append(out, batchMember{flag: flag, body: body, properties: props})
		b = b[total:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrBadBatch)
	}
	return out, nil
}

// fixProperties drops WAIT (reporting whether the sender asked to wait) and adds CLUSTER.
func (b *Broker) fixProperties(props string) (string, map[string]string, bool) {
	m := commitlog.ParseProperties(props)
	if m == nil {
		m = map[string]string{}
	}
	wait := true
	if v, ok := m[propWait]; ok {
		wait = !strings.EqualFold(v, "false")
		delete(m, propWait)
	}
	// TIMER_SOURCE marks a copy this broker's timer service delivered; replicas follow the
	// service's progress by it, so a client may not set it.
	delete(m, timer.PropertySource)
	m[propCluster] = b.cfg.BrokerClusterName
	return string(commitlog.AppendProperties(nil, m)), m, wait
}

func bornHostOf(w remoting.ResponseWriter) netip.AddrPort {
	if w == nil || w.Conn() == nil {
		return netip.AddrPort{}
	}
	return w.Conn().RemoteAddrPort()
}

// refuseWrite answers a write on a broker that cannot take one; it reports whether it did.
// v is the role view the request is handled in, from start to answer.
func (b *Broker) refuseWrite(v *roleView, w remoting.ResponseWriter, req *remoting.Command) bool {
	var remark string
	switch {
	case !v.isMaster():
		remark = "slave is read-only: send to the master (brokerId 0) of " + b.cfg.BrokerName
	case !b.running():
		remark = "broker is shutting down"
	case b.role.fenced.Load():
		remark = "writes fenced: " + b.fenceText()
	case b.store.Err() != nil:
		remark = "store is read-only: " + b.store.Err().Error()
	default:
		return false
	}
	b.sendRejects.Add(1) // before the answer: a client that has it finds it counted
	b.reply(w, req, remoting.ServiceNotAvailable, remark)
	return true
}

// resolveTopic finds the topic of a send, auto-creating it (from the default topic, or as a
// retry topic) when allowed. It answers the request itself on failure.
func (b *Broker) resolveTopic(w remoting.ResponseWriter, req *remoting.Command, h *sendHeader) (route.TopicConfig, bool) {
	if err := meta.ValidateTopicName(h.topic); err != nil {
		b.reply(w, req, remoting.MessageIllegal, fmt.Sprintf("topic %q is not allowed: %v", h.topic, err))
		return route.TopicConfig{}, false
	}
	if meta.IsNotAllowedSendTopic(h.topic) {
		// Only the broker stores into these (RocketMQ's TopicValidator.isNotAllowedSendTopic).
		b.systemTopicSends.Add(1)
		b.autoc.logRefusal(b.log, b.now(), logrus.Fields{"topic": h.topic, "peer": bornHostOfString(w)}, "client send to a system topic refused")
		b.reply(w, req, remoting.NoPermission, "Sending message to topic["+h.topic+"] is forbidden.")
		return route.TopicConfig{}, false
	}
	if h.topic == meta.AutoCreateTopicKey {
		b.reply(w, req, remoting.NoPermission, "topic "+h.topic+" is the auto-create template and cannot take messages")
		return route.TopicConfig{}, false
	}
	tc, ok := b.tables.Topics.Get(h.topic)
	if ok {
		// A topic a heartbeat created may still wait for its batch: the message about to be
		// acknowledged must not name a topic topics.json lacks.
		if err := b.tables.Topics.WaitDurable(h.topic); err != nil {
			b.log.WithError(err).WithField("topic", h.topic).Warn("topic not persisted; retried with the next write")
		}
		return tc, true
	}
	// The names are about to go into tables: they get copies of their own, as the header's
	// strings of a send share their connection's chunk (remoting's header arena).
	h.topic, h.defaultTopic = strings.Clone(h.topic), strings.Clone(h.defaultTopic)
	var created bool
	var err error
	if strings.HasPrefix(h.topic, meta.RetryGroupTopicPrefix) {
		group := strings.TrimPrefix(h.topic, meta.RetryGroupTopicPrefix)
		g, gerr := b.ensureGroup(w.Conn(), nil, group, meta.Batch)
		if gerr != nil {
			b.reply(w, req, remoting.SubscriptionGroupNotExist, "subscription group not exist, "+group+": "+gerr.Error())
			return route.TopicConfig{}, false
		}
		if created, err = b.ensureRetryTopic(w.Conn(), nil, group, max(g.RetryQueueNums, 1), meta.Wait); err == nil {
			var found bool
			if tc, found = b.tables.Topics.Get(h.topic); !found {
				err = fmt.Errorf("%w: %s", meta.ErrTopicNotExist, h.topic)
			}
		}
	} else {
		def := h.defaultTopic
		if def == "" {
			def = meta.AutoCreateTopicKey
		}
		tc, created, err = b.tables.Topics.CreateTopicInSendMessage(h.topic, def, h.defaultQueueNums)
	}
	if err != nil && !created {
		if errors.Is(err, meta.ErrTopicLimit) {
			// RocketMQ answers a topic a send cannot create TOPIC_NOT_EXIST; the remark
			// names the bound so that an operator sees why.
			b.autoc.refused[refusedTopicLimit].Add(1)
			b.autoc.logRefusal(b.log, b.now(), logrus.Fields{"topic": h.topic, "peer": bornHostOfString(w), "limit": b.cfg.AutoCreateTopicLimit},
				"topic not auto-created by a send: the topic table is at autoCreateTopicLimit")
			b.reply(w, req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please! (not auto-created: the broker holds %d topics, autoCreateTopicLimit)", h.topic, b.cfg.AutoCreateTopicLimit))
		} else if errors.Is(err, meta.ErrTopicNotExist) || errors.Is(err, meta.ErrNoInheritPerm) {
			b.reply(w, req, remoting.TopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please! (autoCreateTopicEnable=%v)", h.topic, b.cfg.AutoCreateTopicEnable))
		} else {
			b.reply(w, req, remoting.SystemError, "creating topic "+h.topic+": "+err.Error())
		}
		return route.TopicConfig{}, false
	}
	if err != nil {
		b.log.WithError(err).WithField("topic", h.topic).Warn("topic created but not persisted")
	}
	if created {
		if !strings.HasPrefix(h.topic, meta.RetryGroupTopicPrefix) {
			b.autoc.createdTopics.Add(1)
		}
		b.log.WithField("topic", h.topic).Info("topic auto-created by a send")
		b.triggerRegister()
	}
	return tc, true
}

// pickQueue applies RocketMQ's queueId rules: negative means any writable queue; a queue at or
// beyond max(read, write) is refused.
func (b *Broker) pickQueue(w remoting.ResponseWriter, req *remoting.Command, tc route.TopicConfig, qid int32) (int32, bool) {
	if qid < 0 {
		if tc.WriteQueueNums <= 0 {
			b.reply(w, req, remoting.NoPermission, "topic "+tc.TopicName+" has no write queue")
			return 0, false
		}
		return rand.Int32N(tc.WriteQueueNums), true
	}
	if lim := max(tc.ReadQueueNums, tc.WriteQueueNums); qid >= lim {
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.writeQueueNums:[%d] consumer:[%s]", qid, tc.TopicName, tc.WriteQueueNums, bornHostOfString(w)))
		return 0, false
	}
	return qid, true
}

func bornHostOfString(w remoting.ResponseWriter) string {
	if w == nil || w.Conn() == nil {
		return ""
	}
	return w.Conn().RemoteAddr()
}

// inlineSend serves SEND_MESSAGE and SEND_MESSAGE_V2 on the connection's reader
// (remoting.InlineHandler): each send is checked and queued for the store (AppendQueued), and
// the reader's EndBatch writes everything its burst queued with one write, whose completion
// answers each send. Nothing in a send's path blocks on another request of its connection.
type inlineSend struct{ b *Broker }

func (s *inlineSend) ServeRemoting(w remoting.ResponseWriter, req *remoting.Command) {
	s.b.serveSend(w, req, true)
}

// EndBatch writes the sends the burst queued: a lone send's write is led here (no hand-off
// for a single producer waiting for its answer); under ASYNC_MASTER a burst's is handed to the
// store's writer, so the reader goes on decoding the next burst while it is written, on the
// other core. A SYNC_MASTER's reader writes its burst itself, as it does a lone send: the
// write sends the burst on to an idle slave link (hawire's inline send), and the burst's
// answers wait for that slave's ack, so the next burst rarely arrives before the write is
// done and the hand-off would only add a wake-up to every burst's round trip. Under
// SYNC_FLUSH the answers wait for the fsync anyway, so the flusher
// writes the records right before it (store.FlushQueued): one write per fsync for every
// connection's sends.
func (s *inlineSend) EndBatch(requests int) {
	if s.b.cfg.FlushDiskType == FlushSync {
		s.b.store.FlushQueued()
		return
	}
	if requests > 1 && s.b.view().role != RoleSyncMaster {
		s.b.store.KickQueued()
		return
	}
	s.b.store.WriteQueued()
}

// handleSend serves a send on its own goroutine: the store write is led at once (AppendAsync).
func (b *Broker) handleSend(w remoting.ResponseWriter, req *remoting.Command) {
	b.serveSend(w, req, false)
}

// serveSend serves a send; queued: the caller ends the burst with store.WriteQueued.
func (b *Broker) serveSend(w remoting.ResponseWriter, req *remoting.Command, queued bool) {
	// Nothing of the request's ext map is used once the send is handled (its strings may be:
	// they stay valid), so the next request's fields go into it.
	defer req.ReleaseExt()
	b.sends.Add(1)
	// The answer (and the instrumented writer within it) is taken once, up front, from a slab
	// (newSendAnswer).
	ans := newSendAnswer(req)
	// One clock read for the answer's latency and the waits' deadlines.
	arrival := b.now()
	w = b.metrics.instrumentSendIn(&ans.sw, w, arrival)
	// One role view for the whole request: a send that passed the role check waits for the
	// replication of the HA master it was appended under (closed by a demotion: not SEND_OK).
	v := b.view()
	if b.refuseWrite(v, w, req) || b.refuseUnwritable(w, req) {
		return
	}
	h, err := decodeSendHeader(req)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	if req.Code == remoting.SendBatchMessage || h.batch {
		b.sendBatch(v, w, req, &h, ans, arrival)
		return
	}
	if len(req.Body) > b.cfg.MaxMessageSize {
		b.reply(w, req, remoting.MessageIllegal, fmt.Sprintf("message body size %d exceeds maxMessageSize %d", len(req.Body), b.cfg.MaxMessageSize))
		return
	}
	tc, ok := b.resolveTopic(w, req, &h)
	if !ok {
		return
	}
	if !route.IsWriteable(tc.Perm) {
		b.reply(w, req, remoting.NoPermission, "the topic["+h.topic+"] sending message is forbidden")
		return
	}
	// A plain message (the usual case) is stored without parsing its properties into a map.
	ps, plain := b.plainProperties(h.properties)
	var pm map[string]string
	if !plain || txn.IsHalfSend(nil, h.sysFlag) {
		plain = false
		ps.props, pm, ps.wait = b.fixProperties(h.properties)
		ps.uniq = pm[propUniqKey]
	}
	topic := tc.TopicName
	qid, ok := b.pickQueue(w, req, tc, h.queueID)
	if !ok {
		return
	}
	// A retry-topic message past its reconsume limit goes to the dead-letter topic.
	if strings.HasPrefix(topic, meta.RetryGroupTopicPrefix) {
		group := strings.TrimPrefix(topic, meta.RetryGroupTopicPrefix)
		maxRe := meta.NewSubscriptionGroupConfig(group).RetryMaxTimes
		if g, ok := b.tables.Groups.Get(group); ok {
			maxRe = g.RetryMaxTimes
		}
		if h.hasMaxReconsume {
			maxRe = h.maxReconsumeTimes
		}
		// The client's fallback send carries the count already raised (old + 1); like RocketMQ,
		// reaching maxReconsumeTimes is enough.
		if h.reconsumeTimes >= maxRe {
			dlq, dcreated, derr := b.tables.Topics.CreateDLQTopic(group)
			if derr != nil && dlq.TopicName == "" {
				b.reply(w, req, remoting.SystemError, "creating "+meta.DLQTopic(group)+": "+derr.Error())
				return
			}
			topic, qid = dlq.TopicName, 0
			if dcreated {
				b.triggerRegister()
			}
		}
	}
	if v.master != nil {
		if err := v.master.CanAccept(); err != nil {
			b.sendRejects.Add(1)
			b.reply(w, req, remoting.SystemError, fmt.Sprintf("in-sync replicas not enough: fewer than minInSyncReplicas=%d copies in sync, message not stored", b.cfg.MinInSyncReplicas))
			return
		}
	}
	msg := &commitlog.Message{
		Topic:          topic,
		QueueID:        qid,
		Flag:           h.flag,
		Body:           req.Body,
		Properties:     ps.props,
		SysFlag:        h.sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       bornHostOf(w),
		ReconsumeTimes: h.reconsumeTimes,
	}
	if !plain && queued {
		// A transaction half, a timer or a delay may keep the message past this call; the
		// body of an inline request is the connection's read buffer (remoting.InlineHandler).
		msg.Body = bytes.Clone(msg.Body)
	}
	if !plain && !b.specialSend(w, req, msg, pm, &h, topic) {
		return
	}
	// The store answers through ans.Appended once the record is written: this goroutine does
	// not wait for the write (commitlog group.go), so it can take the connection's next request.
	ans.queueID, ans.txID = qid, ps.uniq
	ans.b, ans.view, ans.w, ans.topic, ans.size, ans.waits, ans.arrival = b, v, w, topic, len(req.Body), ps.wait, arrival
	if queued {
		err = b.store.AppendQueued(msg, ans)
	} else {
		err = b.store.AppendAsync(msg, ans)
	}
	if err != nil {
		b.replyStoreError(w, req, err)
	}
}

// specialSend applies what a message's properties ask for beyond an append (a transaction
// half, a timer, a delay level) to msg, whose parsed properties are pm. It answers the request
// itself and reports false when the message is refused.
func (b *Broker) specialSend(w remoting.ResponseWriter, req *remoting.Command, msg *commitlog.Message, pm map[string]string, h *sendHeader, topic string) bool {
	// A transactional half waits in RMQ_SYS_TRANS_HALF_TOPIC for its commit (transaction.go).
	if txn.IsHalfSend(pm, h.sysFlag) && !b.prepareHalf(w, req, msg, pm, h.producerGroup) {
		return false
	}
	// A timer message waits in rmq_sys_wheel_timer (timer.go); a DELAY level wins over it.
	// Halves are left to their commit, as in RocketMQ.
	if !b.timerSend(w, req, msg, h.sysFlag) {
		return false
	}
	// A delayed message waits in SCHEDULE_TOPIC_XXXX until the delay service moves it to its
	// topic (not for dead letters, nor for transactional half or rollback messages).
	if level := schedule.DelayLevel(pm); level > 0 && !strings.HasPrefix(topic, meta.DLQGroupTopicPrefix) && msg.Topic != txn.HalfTopic {
		if tt := h.sysFlag & sysFlagTransactionMask; tt == 0 || tt == sysFlagTransactionCommit {
			if err := b.levels.ToSchedule(msg, level); err != nil {
				b.reply(w, req, remoting.MessageIllegal, "delay level: "+err.Error())
				return false
			}
		}
	}
	return true
}

func (b *Broker) sendBatch(v *roleView, w remoting.ResponseWriter, req *remoting.Command, h *sendHeader, ans *sendAnswer, arrival time.Time) {
	if b.refuseBatchTxn(w, req, h.sysFlag) {
		return
	}
	members, err := decodeBatch(req.Body)
	if err != nil {
		b.reply(w, req, remoting.MessageIllegal, err.Error())
		return
	}
	if strings.HasPrefix(h.topic, meta.RetryGroupTopicPrefix) {
		b.reply(w, req, remoting.MessageIllegal, "batch request does not support retry group "+h.topic)
		return
	}
	tc, ok := b.resolveTopic(w, req, h)
	if !ok {
		return
	}
	if !route.IsWriteable(tc.Perm) {
		b.reply(w, req, remoting.NoPermission, "the topic["+h.topic+"] sending message is forbidden")
		return
	}
	qid, ok := b.pickQueue(w, req, tc, h.queueID)
	if !ok {
		return
	}
	if v.master != nil {
		if err := v.master.CanAccept(); err != nil {
			b.sendRejects.Add(1)
			b.reply(w, req, remoting.SystemError, fmt.Sprintf("in-sync replicas not enough: fewer than minInSyncReplicas=%d copies in sync, message not stored", b.cfg.MinInSyncReplicas))
			return
		}
	}
	born := bornHostOf(w)
	wait := true
	msgs := make([]*commitlog.Message, len(members))
	for i, m := range members {
		if len(m.body) > b.cfg.MaxMessageSize {
			b.reply(w, req, remoting.MessageIllegal, fmt.Sprintf("batch member %d body size %d exceeds maxMessageSize %d", i, len(m.body), b.cfg.MaxMessageSize))
			return
		}
		ps, plain := b.plainProperties(m.properties)
		if !plain {
			var pm map[string]string
			ps.props, pm, ps.wait = b.fixProperties(m.properties)
			if pm[propDelay] != "" && pm[propDelay] != "0" {
				b.reply(w, req, remoting.MessageIllegal, "batch messages cannot be delayed")
				return
			}
			if timer.IsTimer(pm) {
				b.reply(w, req, remoting.MessageIllegal, "batch messages cannot be timer messages")
				return
			}
		}
		wait = wait && ps.wait
		msgs[i] = &commitlog.Message{
			Topic: tc.TopicName, QueueID: qid, Flag: m.flag, Body: m.body, Properties: ps.props,
			SysFlag: h.sysFlag, BornTimestamp: h.bornTimestamp, BornHost: born, ReconsumeTimes: h.reconsumeTimes,
		}
	}
	results, err := b.store.AppendBatch(msgs)
	if err != nil {
		b.replyStoreError(w, req, err)
		return
	}
	size := 0
	for _, m := range members {
		size += len(m.body)
	}
	b.countPut(tc.TopicName, len(msgs), size)
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.MsgID
	}
	ans.msgID, ans.queueID, ans.queueOffset = strings.Join(ids, ","), qid, results[0].QueueOffset
	b.complete(v, w, ans, results[len(results)-1].EndOffset, wait, arrival, false)
}

func (b *Broker) replyStoreError(w remoting.ResponseWriter, req *remoting.Command, err error) {
	code, remark := storeErrorAnswer(err)
	b.reply(w, req, code, remark)
}

// storeErrorAnswer is the response code and remark for a store that refused or failed an
// append.
func storeErrorAnswer(err error) (int32, string) {
	switch {
	case errors.Is(err, commitlog.ErrMessageTooLarge), errors.Is(err, commitlog.ErrTopicEmpty),
		errors.Is(err, commitlog.ErrTopicTooLong), errors.Is(err, commitlog.ErrTopicInvalid),
		errors.Is(err, commitlog.ErrPropertiesTooLarge), errors.Is(err, commitlog.ErrBatchMixed):
		return remoting.MessageIllegal, err.Error()
	case errors.Is(err, commitlog.ErrReadOnly), errors.Is(err, commitlog.ErrClosed):
		return remoting.ServiceNotAvailable, "message not stored: " + err.Error()
	default:
		return remoting.SystemError, "message not stored: " + err.Error()
	}
}

// writeNoWait writes resp to w unless w's connection is congested (its queue over the cap):
// then it reports false and nothing was written. A writer that cannot skip the wait
// (remoting.NoWaitWriter) writes as Write does.
func writeNoWait(w remoting.ResponseWriter, resp *remoting.Command) (bool, error) {
	nw, ok := w.(remoting.NoWaitWriter)
	if !ok {
		return true, w.Write(resp)
	}
	queued, err := nw.WriteNoWait(resp)
	return queued || err != nil, err
}

// answerNoWait writes resp to w without waiting for a congested connection; when the
// connection's queue is full a goroutine writes it (rare: only store failures answer so).
func (b *Broker) answerNoWait(w remoting.ResponseWriter, resp *remoting.Command) {
	if written, _ := writeNoWait(w, resp); !written {
		go func() { _ = w.Write(resp) }()
	}
}

// complete finishes a stored send: with nothing to wait for it answers at once; otherwise the
// flush and replication waits are registered now (deadlines fixed at arrival) and the send
// pipeline answers when they complete.
//
// noWait (the store's writer calls it, commitlog.AppendDone): an answer due at once is queued
// without waiting for a congested connection, which then gets it from the pipeline.
func (b *Broker) complete(v *roleView, w remoting.ResponseWriter, ans storedAnswer, endOffset int64, wait bool, arrival time.Time, noWait bool) {
	syncFlush := wait && b.cfg.FlushDiskType == FlushSync
	syncRepl := wait && v.role == RoleSyncMaster && v.master != nil
	if !syncFlush && !syncRepl {
		flushKnown := b.cfg.FlushDiskType == FlushSync
		ans.setOutcome(1, flushKnown, flushKnown && b.store.FlushedOffset() >= endOffset)
		if noWait {
			if written, _ := writeNoWait(w, ans.command()); written {
				return
			}
			p := ans.pending()
			if p == nil {
				p = &pendingSend{}
			}
			*p = pendingSend{w: w, ans: ans, arrival: arrival, ready: true}
			b.pipe.add(p)
			return
		}
		_ = w.Write(ans.command())
		return
	}
	p := ans.pending()
	if p == nil {
		p = &pendingSend{}
	}
	*p = pendingSend{w: w, ans: ans, arrival: arrival}
	if syncRepl && !syncFlush {
		// Only the slaves' ack to wait for: the goroutine that reads the ack answers the
		// send (no pipeline hand-off), through p itself (no closure to allocate).
		p.b = b
		v.master.WaitReplicatedTo(endOffset, arrival.Add(b.cfg.SlaveTimeout), p)
		return
	}
	if syncFlush {
		p.flush = b.store.WaitFlush(endOffset, arrival.Add(b.cfg.SyncFlushTimeout))
	}
	if syncRepl {
		p.repl = v.master.WaitReplicated(endOffset, arrival.Add(b.cfg.SlaveTimeout))
	}
	b.pipe.add(p)
}

// pendingSend is a stored message whose answer waits for fsync and/or replication.
type pendingSend struct {
	w       remoting.ResponseWriter
	ans     storedAnswer
	flush   <-chan error
	repl    <-chan hawire.ReplStatus
	arrival time.Time // for the wait metrics
	// replCounted: the replication wait is already in the metrics (an ack answered it, and
	// the pipeline only writes the answer to a congested connection).
	replCounted bool
	// ready: the answer is complete (nothing to wait for); the pipeline only writes it to a
	// congested connection.
	ready bool
	// b is set for a wait on replication alone, answered by Replicated.
	b *Broker
}

var _ hawire.ReplCallback = (*pendingSend)(nil)

// Replicated answers a send that waited for replication alone (hawire.ReplCallback).
func (p *pendingSend) Replicated(st hawire.ReplStatus) { p.b.replAnswered(p, st) }

// finish combines the wait results into the response code, as RocketMQ does: a replication
// failure overrides a flush failure, which overrides SEND_OK.
func (b *Broker) finish(p *pendingSend, flushErr error, repl hawire.ReplStatus, haveRepl bool) {
	b.writeAnswer(p.w, b.answerOf(p, flushErr, repl, haveRepl))
}

// writeAnswer writes a stored send's answer, counting one written after shutdown began.
func (b *Broker) writeAnswer(w remoting.ResponseWriter, resp *remoting.Command) {
	if w.Write(resp) == nil && !b.running() {
		b.lateAnswers.Add(1)
	}
}

// replAnswered answers a send that waited only for replication, on the goroutine that read the
// covering ack (or the deadline sweep). When the client's connection is congested (it does not
// read its answers) that goroutine, which answers for every connection, must not wait for it:
// the pipeline writes this answer instead.
func (b *Broker) replAnswered(p *pendingSend, st hawire.ReplStatus) {
	b.metrics.replWaited(p.arrival, st)
	if b.finishNoWait(p, st) {
		return
	}
	done := make(chan hawire.ReplStatus, 1)
	done <- st
	p.repl, p.replCounted = done, true
	b.pipe.add(p)
}

// finishNoWait answers a send that waited only for replication without waiting for its
// connection's writer; false when the connection is congested and nothing was written.
func (b *Broker) finishNoWait(p *pendingSend, repl hawire.ReplStatus) bool {
	written, err := writeNoWait(p.w, b.answerOf(p, nil, repl, true))
	if !written {
		return false
	}
	if err == nil && !b.running() {
		b.lateAnswers.Add(1)
	}
	return true
}

// answerOf is the answer of a send whose waits ended so.
func (b *Broker) answerOf(p *pendingSend, flushErr error, repl hawire.ReplStatus, haveRepl bool) *remoting.Command {
	resp := p.ans.command()
	code := remoting.Success
	replicas := 1
	if p.flush != nil && flushErr != nil {
		code = remoting.FlushDiskTimeout
		resp.Remark = "flush disk timeout: " + flushErr.Error()
	}
	if haveRepl {
		switch repl {
		case hawire.ReplOK:
			replicas = b.cfg.InSyncReplicas
		case hawire.ReplTimeout:
			code = remoting.FlushSlaveTimeout
			resp.Remark = fmt.Sprintf("stored on the master, not confirmed by enough slaves within slaveTimeout %v", b.cfg.SlaveTimeout)
		case hawire.ReplSlaveNotAvailable:
			code = remoting.SlaveNotAvailable
			resp.Remark = "stored on the master only: no slave in sync"
		}
	}
	resp.Code = code
	p.ans.setOutcome(replicas, p.flush != nil, flushErr == nil)
	return resp
}

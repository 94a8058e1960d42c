package txn

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// IsHalfSend reports whether a send is a transactional half: TRAN_MSG=true (what RocketMQ's
// send processor keys on) or a PREPARED transaction type in the header's sysFlag.
func IsHalfSend(props map[string]string, sysFlag int32) bool {
	if v, ok := props[PropTranMsg]; ok && parseJavaBool(v) {
		return true
	}
	return sysFlag&TypeMask == TypePrepared
}

// parseJavaBool is Boolean.parseBoolean: "true" in any case, anything else false.
func parseJavaBool(s string) bool {
	return len(s) == 4 && (s[0]|0x20) == 't' && (s[1]|0x20) == 'r' && (s[2]|0x20) == 'u' && (s[3]|0x20) == 'e'
}

// ToHalf rewrites a message for its half queue (RocketMQ's parseHalfMessageInner): its topic
// and queue move to REAL_TOPIC and REAL_QID, PGROUP is set from the send header's producer
// group when the client did not set it, the transaction type of sysFlag is cleared (so the
// half is indexed in the half queue) and it goes to RMQ_SYS_TRANS_HALF_TOPIC queue 0. props
// is m's parsed properties; it is updated and m.Properties rebuilt from it.
func ToHalf(m *commitlog.Message, props map[string]string, producerGroup string) error {
	if m.Topic == "" || m.Topic == HalfTopic {
		return fmt.Errorf("%w: a message for %q cannot be a half", ErrNotHalf, m.Topic)
	}
	props[PropRealTopic] = m.Topic
	props[PropRealQueueID] = strconv.Itoa(int(m.QueueID))
	if props[PropProducerGroup] == "" && producerGroup != "" {
		props[PropProducerGroup] = producerGroup
	}
	m.Properties = string(commitlog.AppendProperties(nil, props))
	m.SysFlag = ResetType(m.SysFlag, TypeNot)
	m.Topic = HalfTopic
	m.QueueID = 0
	return nil
}

// realOf returns a half record's parsed properties with its real topic and queue.
func realOf(rec *commitlog.Record) (map[string]string, string, int32, error) {
	return realOfProps(rec, commitlog.ParseProperties(rec.Properties))
}

func realOfProps(rec *commitlog.Record, props map[string]string) (map[string]string, string, int32, error) {
	if rec.Topic != HalfTopic {
		return nil, "", 0, fmt.Errorf("%w: record of topic %q", ErrNotHalf, rec.Topic)
	}
	topic := props[PropRealTopic]
	if topic == "" || topic == HalfTopic {
		return nil, "", 0, fmt.Errorf("%w: REAL_TOPIC %q", ErrNotHalf, topic)
	}
	q, err := strconv.ParseInt(props[PropRealQueueID], 10, 32)
	if err != nil || q < 0 {
		return nil, "", 0, fmt.Errorf("%w: REAL_QID %q", ErrNotHalf, props[PropRealQueueID])
	}
	return props, topic, int32(q), nil
}

// Restore rebuilds the message a commit stores in the real topic from its half record
// (RocketMQ's endMessageTransaction): real topic and queue, body, flag, born time and host,
// reconsume times and every property but REAL_TOPIC, REAL_QID and TRAN_MSG (cleared on
// commit, as RocketMQ does); sysFlag keeps its other bits with the COMMIT type, and
// PreparedTransactionOffset is the half's CommitLog offset.
func Restore(rec *commitlog.Record) (*commitlog.Message, error) {
	return RestoreProps(rec, commitlog.ParseProperties(rec.Properties))
}

// RestoreProps is Restore with the record's properties already parsed; props is modified.
func RestoreProps(rec *commitlog.Record, props map[string]string) (*commitlog.Message, error) {
	props, topic, qid, err := realOfProps(rec, props)
	if err != nil {
		return nil, err
	}
	delete(props, PropRealTopic)
	delete(props, PropRealQueueID)
	delete(props, PropTranMsg)
	delete(props, PropWait)
	return &commitlog.Message{
		Topic: topic, QueueID: qid, Flag: rec.Flag, Body: rec.Body,
		Properties:                string(commitlog.AppendProperties(nil, props)),
		SysFlag:                   ResetType(rec.SysFlag, TypeCommit),
		BornTimestamp:             rec.BornTimestamp,
		BornHost:                  rec.BornHost,
		ReconsumeTimes:            rec.ReconsumeTimes,
		PreparedTransactionOffset: rec.PhysicalOffset,
	}, nil
}

// HalfOf reads what the Checker needs from a half record.
func HalfOf(rec *commitlog.Record) Half {
	return HalfOfProps(rec, commitlog.ParseProperties(rec.Properties))
}

// HalfOfProps is HalfOf with the record's properties already parsed.
func HalfOfProps(rec *commitlog.Record, props map[string]string) Half {
	h := Half{
		QueueOffset: rec.QueueOffset, BornTimestamp: rec.BornTimestamp, StoreTimestamp: rec.StoreTimestamp,
		Key: props[PropUniqKey],
	}
	if n, err := strconv.Atoi(props[PropCheckTimes]); err == nil && n > 0 {
		h.CheckTimes = n
	}
	if s, err := strconv.ParseInt(props[PropImmunitySeconds], 10, 64); err == nil && s > 0 && s < math.MaxInt64/int64(time.Second) {
		h.Immunity = time.Duration(s) * time.Second
	}
	return h
}

// CheckCopy is the copy of a half appended to the half queue before it is checked
// (RocketMQ's putBackHalfMsgQueue): the same message with TRANSACTION_CHECK_TIMES raised by
// one; the check-back names the copy, so the producer's answer resolves the copy.
func CheckCopy(rec *commitlog.Record) (*commitlog.Message, error) {
	props, _, _, err := realOf(rec)
	if err != nil {
		return nil, err
	}
	props[PropCheckTimes] = strconv.Itoa(HalfOf(rec).CheckTimes + 1)
	return &commitlog.Message{
		Topic: HalfTopic, QueueID: 0, Flag: rec.Flag, Body: rec.Body,
		Properties: string(commitlog.AppendProperties(nil, props)),
		SysFlag:    rec.SysFlag, BornTimestamp: rec.BornTimestamp, BornHost: rec.BornHost,
		ReconsumeTimes: rec.ReconsumeTimes,
	}, nil
}

// Discarded is the message a half checked CheckMax times becomes: the same message in
// TRANS_CHECK_MAX_TIME_TOPIC queue 0, REAL_TOPIC and REAL_QID kept so an operator can
// resend it (RocketMQ's resolveDiscardMsg).
func Discarded(rec *commitlog.Record) *commitlog.Message {
	return &commitlog.Message{
		Topic: CheckMaxTimeTopic, QueueID: 0, Flag: rec.Flag, Body: rec.Body,
		Properties: rec.Properties, SysFlag: rec.SysFlag, BornTimestamp: rec.BornTimestamp,
		BornHost: rec.BornHost, ReconsumeTimes: rec.ReconsumeTimes,
	}
}

// OpMessage is the op record resolving the half at queue offset halfOffset: TAGS=d, body
// the offset (see AppendOpBody), in RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0. It also carries the
// half's UNIQ_KEY (RocketMQ's op records do not; readers that do not know it ignore it), so
// that after a restart the other halves of a resolved transaction (check copies) are known.
func OpMessage(halfOffset int64, key string) *commitlog.Message {
	// name\x01value\x02 pairs, as commitlog.AppendProperties writes them (sorted names).
	p := PropTags + "\x01" + OpTag + "\x02"
	if key != "" {
		p += PropUniqKey + "\x01" + key + "\x02"
	}
	p += PropWait + "\x01false\x02"
	return &commitlog.Message{Topic: OpTopic, QueueID: 0, Body: AppendOpBody(nil, halfOffset), Properties: p}
}

// OpOf reads an op queue record: whether it is a removal record (TAGS=d) and its key.
func OpOf(rec *commitlog.Record) (isOp bool, key string) {
	p := commitlog.ParseProperties(rec.Properties)
	return p[PropTags] == OpTag, p[PropUniqKey]
}

// CheckBody encodes the message a CHECK_TRANSACTION_STATE carries, as RocketMQ's
// MessageDecoder.encode does for the check listener: the stored record of the half (the
// check copy) with its real topic and queue, in the V1 stored layout the clients decode.
func CheckBody(dst []byte, rec *commitlog.Record) ([]byte, error) {
	_, topic, qid, err := realOf(rec)
	if err != nil {
		return dst, err
	}
	r := *rec
	r.Topic, r.QueueID = topic, qid
	r.BodyCRC = commitlog.BodyCRC(r.Body)
	return commitlog.AppendRecord(dst, &r), nil
}

package schedule

import (
	"fmt"
	"strconv"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// Topic is RocketMQ's schedule topic: queue level-1 holds the messages of a
// delay level in arrival order.
const Topic = "SCHEDULE_TOPIC_XXXX"

// Property names this package reads or writes.
const (
	PropertyDelay     = "DELAY"
	PropertyRealTopic = "REAL_TOPIC"
	PropertyRealQID   = "REAL_QID"
	propertyWait      = "WAIT"
)

// DelayLevel returns the DELAY property of a properties string: 0 when absent
// or not a number (no delay), as RocketMQ's getDelayTimeLevel.
func DelayLevel(props map[string]string) int { return parseLevel(props[PropertyDelay]) }

// parseLevel reads a DELAY value; 0 when missing or not a number.
func parseLevel(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

// ToSchedule rewrites a message bound for a delay: its topic and queue move
// to REAL_TOPIC and REAL_QID, DELAY is set to the level (clamped to Max, as
// RocketMQ does), the topic becomes SCHEDULE_TOPIC_XXXX and the queue
// level-1. Other properties are kept (re-serialized in sorted order).
//
// Transactional prepared and rollback messages are left unchanged (RocketMQ
// delays only normal and committed messages); callers can tell by m.Topic.
// A level below 1 returns ErrInvalidLevel, a message for SCHEDULE_TOPIC_XXXX
// itself ErrNoRealTopic; both leave m unchanged.
func (l Levels) ToSchedule(m *commitlog.Message, level int) error {
	if level < 1 {
		return fmt.Errorf("%w: %d", ErrInvalidLevel, level)
	}
	if len(l) == 0 {
		return fmt.Errorf("%w: empty level table", ErrInvalidLevel)
	}
	if tx := m.SysFlag & commitlog.SysFlagTxMask; tx == commitlog.SysFlagTxPrepared || tx == commitlog.SysFlagTxRollback {
		return nil
	}
	if m.Topic == Topic || m.Topic == "" {
		return fmt.Errorf("%w: a message for %q cannot be delayed", ErrNoRealTopic, m.Topic)
	}
	level = l.Clamp(level)
	props := commitlog.ParseProperties(m.Properties)
	props[PropertyRealTopic] = m.Topic
	props[PropertyRealQID] = strconv.Itoa(int(m.QueueID))
	props[PropertyDelay] = strconv.Itoa(level)
	m.Properties = string(commitlog.AppendProperties(nil, props))
	m.Topic = Topic
	m.QueueID = int32(level - 1)
	return nil
}

// Restore rebuilds the message a scheduled record stands for, ready for a new
// append: topic and queue from REAL_TOPIC and REAL_QID, DELAY and WAIT
// removed (the delivery neither delays again nor waits for flush or
// replication), every other property kept, REAL_TOPIC and REAL_QID included
// (RocketMQ keeps them on the delivered message). Flag, body, sysflag, born
// timestamp and host and reconsume times are copied; the store timestamp is
// not (the append sets a new one). Body aliases rec.Body. A record whose
// REAL_TOPIC is missing, empty or SCHEDULE_TOPIC_XXXX itself is
// ErrNoRealTopic: it is delivered nowhere.
func Restore(rec *commitlog.Record) (*commitlog.Message, error) { return restore(rec, 0) }

// restore is Restore; with level > 0 the copy carries PropertyDelaySource (level, the
// record's queue offset).
func restore(rec *commitlog.Record, level int) (*commitlog.Message, error) {
	if rec.Topic != Topic {
		return nil, fmt.Errorf("%w: topic %q", ErrNotScheduled, rec.Topic)
	}
	props := commitlog.ParseProperties(rec.Properties)
	topic := props[PropertyRealTopic]
	if topic == "" || topic == Topic {
		// Delivered into its own topic the copy would be read and delivered again, forever
		// (what one client send into SCHEDULE_TOPIC_XXXX with DELAY set used to start).
		return nil, fmt.Errorf("%w: %w: REAL_TOPIC %q", ErrNotScheduled, ErrNoRealTopic, topic)
	}
	if err := commitlog.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: REAL_TOPIC %q: %w", ErrNotScheduled, topic, err)
	}
	qid, err := strconv.ParseInt(props[PropertyRealQID], 10, 32)
	if err != nil || qid < 0 {
		return nil, fmt.Errorf("%w: REAL_QID %q", ErrNotScheduled, props[PropertyRealQID])
	}
	delete(props, PropertyDelay)
	delete(props, propertyWait)
	if level > 0 {
		props[PropertyDelaySource] = deliverySource(level, rec.QueueOffset)
	}
	return &commitlog.Message{
		Topic:          topic,
		QueueID:        int32(qid),
		Flag:           rec.Flag,
		Body:           rec.Body,
		Properties:     string(commitlog.AppendProperties(nil, props)),
		SysFlag:        rec.SysFlag &^ (commitlog.SysFlagBornHostV6 | commitlog.SysFlagStoreHostV6),
		BornTimestamp:  rec.BornTimestamp,
		BornHost:       rec.BornHost,
		ReconsumeTimes: rec.ReconsumeTimes,
	}, nil
}

// TagsCode returns the commitlog Config.TagsCode hook: for SCHEDULE_TOPIC_XXXX
// the delivery timestamp in ms (storeTimestamp + the delay of the DELAY
// level, clamped to Max; storeTimestamp itself — due at once — when DELAY is
// missing or below 1), for any other topic Java String.hashCode of TAGS,
// sign-extended, or 0 without tags. It reads the two properties in place,
// without a map: it runs for every record a store dispatches.
func TagsCode(l Levels) func(topic string, props commitlog.Props, storeTimestamp int64) int64 {
	return func(topic string, props commitlog.Props, storeTimestamp int64) int64 {
		if topic == Topic {
			v, _ := props.Get(PropertyDelay)
			d, _ := l.Delay(l.Clamp(parseLevel(v)))
			return storeTimestamp + d.Milliseconds()
		}
		h, _ := props.JavaHash(commitlog.PropertyTags)
		return int64(h)
	}
}

// RetryLevel is the delay level of a consumer's send-back
// (CONSUMER_SEND_MSG_BACK): the level the client asked for, or 3 +
// reconsumeTimes when it asked for 0, as RocketMQ's broker does. The caller
// routes requested < 0 and exhausted retries to the DLQ before asking;
// ToSchedule clamps the result to the highest level.
func RetryLevel(requested, reconsumeTimes int32) int {
	if requested > 0 {
		return int(requested)
	}
	return 3 + int(max(reconsumeTimes, 0))
}

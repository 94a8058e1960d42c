package timer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// Topic is RocketMQ's timer topic: queue 0 holds every timer message in arrival order.
const Topic = "rmq_sys_wheel_timer"

// Property names of RocketMQ 5 timer messages (MessageConst).
const (
	PropertyDeliverMs  = "TIMER_DELIVER_MS"  // absolute delivery time, ms since the epoch
	PropertyDelaySec   = "TIMER_DELAY_SEC"   // delay after the broker received the message, s
	PropertyDelayMs    = "TIMER_DELAY_MS"    // delay after the broker received the message, ms
	PropertyOutMs      = "TIMER_OUT_MS"      // the slot the broker fires the timer in, ms
	PropertyEnqueueMs  = "TIMER_ENQUEUE_MS"  // on the delivered copy: store time of the timer record
	PropertyDequeueMs  = "TIMER_DEQUEUE_MS"  // on the delivered copy: when it was delivered
	PropertyRollTimes  = "TIMER_ROLL_TIMES"  // RocketMQ's re-enqueue count past its wheel; never set here
	PropertyDelUniqKey = "TIMER_DEL_UNIQKEY" // a delete marker: DeleteKey of the timer it cancels
	PropertyUniqKey    = "UNIQ_KEY"          // the client's message id (MessageClientIDSetter)
	PropertySource     = "TIMER_SOURCE"      // on the delivered copy: "<slot>:<queue offset>" of its index entry (this broker's)
	PropertyRealTopic  = "REAL_TOPIC"
	PropertyRealQID    = "REAL_QID"
	propertyDelay      = "DELAY"
	propertyWait       = "WAIT"
)

// Rules are the send-side settings Transform applies.
type Rules struct {
	Enabled     bool  // timerWheelEnable
	PrecisionMs int64 // timerPrecisionMs
	MaxDelayMs  int64 // timerMaxDelaySec * 1000
}

// IsTimer reports whether a send's properties ask for a timer (RocketMQ's
// checkIfTimerMessage without its DELAY and TIMER_OUT_MS exceptions).
func IsTimer(props map[string]string) bool {
	_, a := props[PropertyDeliverMs]
	_, b := props[PropertyDelaySec]
	_, c := props[PropertyDelayMs]
	return a || b || c
}

// Transform applies RocketMQ 5's send-side timer rules (HookUtils.handleScheduleMessage) to
// a normal or committed message whose properties are props (parsed from m.Properties),
// received at nowMs:
//
//   - with a DELAY level >= 1 the timer properties are removed and the delay level applies
//     (transformed reports false);
//   - a message already for the timer topic or carrying TIMER_OUT_MS is left as it is;
//   - timer off (Rules.Enabled false): ErrNotEnabled;
//   - deliver time = receive time + TIMER_DELAY_SEC*1000, else + TIMER_DELAY_MS, else
//     TIMER_DELIVER_MS (that order); not a number: ErrIllegal;
//   - a deliver time not after nowMs: stored as it is, in its own topic (due already), except
//     with TIMER_DEL_UNIQKEY (ErrIllegal);
//   - more than MaxDelayMs ahead: ErrIllegal;
//   - otherwise rounded down to the precision (an exact multiple to the slot before),
//     written to TIMER_OUT_MS, the topic and queue saved in REAL_TOPIC and REAL_QID, and the
//     message moved to rmq_sys_wheel_timer queue 0 (transformed reports true).
//
// A delete marker (TIMER_DEL_UNIQKEY set, for a future time) is transformed like any timer:
// it is indexed in its slot and cancels the timers of that slot it names (DeleteKey).
func (r Rules) Transform(m *commitlog.Message, props map[string]string, nowMs int64) (transformed bool, err error) {
	if lvl, e := strconv.Atoi(props[propertyDelay]); e == nil && lvl > 0 {
		if IsTimer(props) {
			delete(props, PropertyDeliverMs)
			delete(props, PropertyDelaySec)
			delete(props, PropertyDelayMs)
			m.Properties = string(commitlog.AppendProperties(nil, props))
		}
		return false, nil
	}
	if _, out := props[PropertyOutMs]; out || m.Topic == Topic || !IsTimer(props) {
		return false, nil
	}
	if !r.Enabled {
		return false, ErrNotEnabled
	}
	var deliver int64
	if v, ok := props[PropertyDelaySec]; ok {
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil || n > (1<<62)/1000 || n < -(1<<62)/1000 {
			return false, fmt.Errorf("%w: %s %q", ErrIllegal, PropertyDelaySec, v)
		}
		deliver = nowMs + n*1000
	} else if v, ok := props[PropertyDelayMs]; ok {
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil || n > 1<<62 || n < -(1<<62) {
			return false, fmt.Errorf("%w: %s %q", ErrIllegal, PropertyDelayMs, v)
		}
		deliver = nowMs + n
	} else {
		n, e := strconv.ParseInt(props[PropertyDeliverMs], 10, 64)
		if e != nil {
			return false, fmt.Errorf("%w: %s %q", ErrIllegal, PropertyDeliverMs, props[PropertyDeliverMs])
		}
		deliver = n
	}
	if deliver <= nowMs {
		if _, del := props[PropertyDelUniqKey]; del {
			return false, fmt.Errorf("%w: a delete request must be for a future time", ErrIllegal)
		}
		return false, nil
	}
	if deliver-nowMs > r.MaxDelayMs {
		return false, fmt.Errorf("%w: delay %dms beyond timerMaxDelaySec", ErrIllegal, deliver-nowMs)
	}
	if deliver%r.PrecisionMs == 0 {
		deliver -= r.PrecisionMs
	} else {
		deliver = deliver / r.PrecisionMs * r.PrecisionMs
	}
	props[PropertyOutMs] = strconv.FormatInt(deliver, 10)
	props[PropertyRealTopic] = m.Topic
	props[PropertyRealQID] = strconv.Itoa(int(m.QueueID))
	m.Properties = string(commitlog.AppendProperties(nil, props))
	m.Topic = Topic
	m.QueueID = 0
	return true, nil
}

// DeleteKey is the TIMER_DEL_UNIQKEY value that cancels the timer for topic whose UNIQ_KEY
// (message id) is uniqKey: RocketMQ's TimerMessageStore.buildDeleteKey, topic+"+"+uniqKey.
// The marker must ask for the same deliver time (the same slot) as the timer.
func DeleteKey(topic, uniqKey string) string { return topic + "+" + uniqKey }

// OutMs is the TIMER_OUT_MS of a timer record's properties.
func OutMs(props map[string]string) (int64, bool) {
	v, ok := props[PropertyOutMs]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Restore rebuilds the message a timer record stands for, as RocketMQ's TimerMessageStore
// does when it fires: topic and queue from REAL_TOPIC and REAL_QID (both then removed), the
// other properties kept (TIMER_OUT_MS and the client's TIMER_* included),
// TIMER_ENQUEUE_MS set to the record's store time and TIMER_DEQUEUE_MS to nowMs; WAIT is
// dropped (a delivery waits for neither flush nor replication). Body aliases rec.Body.
func Restore(rec *commitlog.Record, nowMs int64) (*commitlog.Message, error) {
	return restore(rec, nowMs, "")
}

// restore is Restore; a non-empty src is set as TIMER_SOURCE: the copies in the log then tell
// a replica exactly how far delivery got (DeliveredSource).
func restore(rec *commitlog.Record, nowMs int64, src string) (*commitlog.Message, error) {
	if rec.Topic != Topic {
		return nil, fmt.Errorf("%w: topic %q", ErrNotTimer, rec.Topic)
	}
	props := commitlog.ParseProperties(rec.Properties)
	topic := props[PropertyRealTopic]
	if topic == "" || topic == Topic {
		return nil, fmt.Errorf("%w: REAL_TOPIC %q", ErrNotTimer, topic)
	}
	if err := commitlog.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: REAL_TOPIC %q: %w", ErrNotTimer, topic, err)
	}
	qid, err := strconv.ParseInt(props[PropertyRealQID], 10, 32)
	if err != nil || qid < 0 {
		return nil, fmt.Errorf("%w: REAL_QID %q", ErrNotTimer, props[PropertyRealQID])
	}
	if _, ok := OutMs(props); !ok {
		return nil, fmt.Errorf("%w: %s %q", ErrNotTimer, PropertyOutMs, props[PropertyOutMs])
	}
	delete(props, PropertyRealTopic)
	delete(props, PropertyRealQID)
	delete(props, propertyWait)
	props[PropertyEnqueueMs] = strconv.FormatInt(rec.StoreTimestamp, 10)
	props[PropertyDequeueMs] = strconv.FormatInt(nowMs, 10)
	if src != "" {
		props[PropertySource] = src
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

// DeliveredSource is the index entry (slot, queue offset) a delivered copy (a record outside
// the timer topic with TIMER_SOURCE and TIMER_DEQUEUE_MS) was fired from, for a replica's
// progress.
func DeliveredSource(topic string, props map[string]string) (slot, qoff int64, ok bool) {
	if topic == Topic {
		return 0, 0, false
	}
	if _, ok := props[PropertyDequeueMs]; !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(props[PropertySource], ":")
	if !ok {
		return 0, 0, false
	}
	slot, err1 := strconv.ParseInt(a, 10, 64)
	qoff, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || slot < 0 || qoff < 0 {
		return 0, 0, false
	}
	return slot, qoff, true
}

func sourceOf(e Entry) string {
	return strconv.FormatInt(e.Slot, 10) + ":" + strconv.FormatInt(e.QueueOffset, 10)
}

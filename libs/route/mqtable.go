package route

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// MessageQueue is RocketMQ's MessageQueue as its bodies carry it.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// sortQueues orders queues by topic, broker name, queue id.
func sortQueues(qs []MessageQueue) {
	sort.Slice(qs, func(i, j int) bool {
		a, b := qs[i], qs[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.QueueID < b.QueueID
	})
}

// AppendMessageQueue writes q as fastjson does: fields in name order.
//
//	{"brokerName":"broker-a","queueId":0,"topic":"T"}
func AppendMessageQueue(dst []byte, q MessageQueue) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = AppendString(dst, q.BrokerName)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(q.QueueID), 10)
	dst = append(dst, `,"topic":`...)
	dst = AppendString(dst, q.Topic)
	return append(dst, '}')
}

// AppendResetOffsetBody writes ResetOffsetBody in Java's fastjson form, a map keyed by
// MessageQueue objects (not valid JSON; rocketmq-client-go parses exactly this), queues in
// order:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12,{...}:7}}
func AppendResetOffsetBody(dst []byte, table map[MessageQueue]int64) []byte {
	qs := make([]MessageQueue, 0, len(table))
	for q := range table {
		qs = append(qs, q)
	}
	sortQueues(qs)
	dst = append(dst, `{"offsetTable":{`...)
	for i, q := range qs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendMessageQueue(dst, q)
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, table[q], 10)
	}
	return append(dst, "}}"...)
}

// mqScanner reads the object-keyed map form with a sticky error.
type mqScanner struct {
	b   []byte
	pos int
	err error
}

func (s *mqScanner) fail(format string, a ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s at byte %d", ErrSyntax, fmt.Sprintf(format, a...), s.pos)
	}
}

func (s *mqScanner) space() {
	for s.pos < len(s.b) && (s.b[s.pos] == ' ' || s.b[s.pos] == '\n' || s.b[s.pos] == '\r' || s.b[s.pos] == '\t') {
		s.pos++
	}
}

func (s *mqScanner) peek() byte {
	s.space()
	if s.err != nil || s.pos >= len(s.b) {
		return 0
	}
	return s.b[s.pos]
}

func (s *mqScanner) expect(lit string) {
	s.space()
	if s.err != nil {
		return
	}
	if len(s.b)-s.pos < len(lit) || string(s.b[s.pos:s.pos+len(lit)]) != lit {
		s.fail("want %q", lit)
		return
	}
	s.pos += len(lit)
}

// object returns the bytes of one flat JSON object (strings may hold braces).
func (s *mqScanner) object() []byte {
	s.space()
	if s.err != nil {
		return nil
	}
	if s.pos >= len(s.b) || s.b[s.pos] != '{' {
		s.fail("want an object")
		return nil
	}
	start := s.pos
	for i := s.pos + 1; i < len(s.b); i++ {
		switch s.b[i] {
		case '"':
			j, ok := skipString(s.b, i)
			if !ok {
				s.fail("unterminated string")
				return nil
			}
			i = j - 1
		case '{', '[':
			s.fail("nested value in a map key")
			return nil
		case '}':
			s.pos = i + 1
			return s.b[start:s.pos]
		}
	}
	s.fail("unterminated object")
	return nil
}

func (s *mqScanner) integer() int64 {
	s.space()
	if s.err != nil {
		return 0
	}
	start := s.pos
	if s.pos < len(s.b) && s.b[s.pos] == '-' {
		s.pos++
	}
	for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
		s.pos++
	}
	v, err := strconv.ParseInt(string(s.b[start:s.pos]), 10, 64)
	if err != nil {
		s.pos = start
		s.fail("want an integer")
	}
	return v
}

// maxResetOffsetQueues bounds what one decoded body may hold.
const maxResetOffsetQueues = 1 << 16

// DecodeResetOffsetBody parses what AppendResetOffsetBody writes (the Java broker's form too).
func DecodeResetOffsetBody(b []byte) (map[MessageQueue]int64, error) {
	s := &mqScanner{b: b}
	out := map[MessageQueue]int64{}
	s.expect("{")
	s.expect(`"offsetTable"`)
	s.expect(":")
	s.expect("{")
	if s.peek() == '}' {
		s.pos++
	} else {
		for s.err == nil {
			obj := s.object()
			var q MessageQueue
			if s.err == nil {
				if err := json.Unmarshal(obj, &q); err != nil {
					s.fail("message queue: %v", err)
				}
			}
			s.expect(":")
			v := s.integer()
			if s.err != nil {
				break
			}
			out[q] = v
			if len(out) > maxResetOffsetQueues {
				s.fail("more than %d queues", maxResetOffsetQueues)
				break
			}
			if s.peek() == ',' {
				s.pos++
				continue
			}
			s.expect("}")
			break
		}
	}
	s.expect("}")
	if s.err != nil {
		return nil, s.err
	}
	return out, nil
}

// QueueTimeSpan is one entry of QueryConsumeTimeSpanBody.
type QueueTimeSpan struct {
	MessageQueue     MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64        `json:"minTimeStamp"`
	MaxTimeStamp     int64        `json:"maxTimeStamp"`
	ConsumeTimeStamp int64        `json:"consumeTimeStamp"`
	DelayTime        int64        `json:"delayTime"`
}

// AppendQueryConsumeTimeSpanBody writes QueryConsumeTimeSpanBody as fastjson does (fields in
// name order; valid JSON):
//
//	{"consumeTimeSpanSet":[{"consumeTimeStamp":1,"delayTime":0,"maxTimeStamp":2,
//	  "messageQueue":{"brokerName":"b","queueId":0,"topic":"T"},"minTimeStamp":0}]}
func AppendQueryConsumeTimeSpanBody(dst []byte, spans []QueueTimeSpan) []byte {
	dst = append(dst, `{"consumeTimeSpanSet":[`...)
	for i, s := range spans {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"consumeTimeStamp":`...)
		dst = strconv.AppendInt(dst, s.ConsumeTimeStamp, 10)
		dst = append(dst, `,"delayTime":`...)
		dst = strconv.AppendInt(dst, s.DelayTime, 10)
		dst = append(dst, `,"maxTimeStamp":`...)
		dst = strconv.AppendInt(dst, s.MaxTimeStamp, 10)
		dst = append(dst, `,"messageQueue":`...)
		dst = AppendMessageQueue(dst, s.MessageQueue)
		dst = append(dst, `,"minTimeStamp":`...)
		dst = strconv.AppendInt(dst, s.MinTimeStamp, 10)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// DecodeQueryConsumeTimeSpanBody parses QueryConsumeTimeSpanBody.
func DecodeQueryConsumeTimeSpanBody(b []byte) ([]QueueTimeSpan, error) {
	var v struct {
		Set *[]QueueTimeSpan `json:"consumeTimeSpanSet"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if v.Set == nil {
		return nil, fmt.Errorf("%w: no consumeTimeSpanSet", ErrSyntax)
	}
	return *v.Set, nil
}

package route

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// Connection is one client connection of ConsumerConnection and ProducerConnection.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// Subscription is SubscriptionData as these bodies carry it.
type Subscription struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	CodeSet         []int32  `json:"codeSet"`
	ExpressionType  string   `json:"expressionType"`
	SubString       string   `json:"subString"`
	SubVersion      int64    `json:"subVersion"`
	TagsSet         []string `json:"tagsSet"`
	Topic           string   `json:"topic"`
}

// ConsumerConnection is GET_CONSUMER_CONNECTION_LIST's body.
type ConsumerConnection struct {
	ConnectionSet     []Connection            `json:"connectionSet"`
	ConsumeFromWhere  string                  `json:"consumeFromWhere"`
	ConsumeType       string                  `json:"consumeType"`
	MessageModel      string                  `json:"messageModel"`
	SubscriptionTable map[string]Subscription `json:"subscriptionTable"`
}

// ProducerConnection is GET_PRODUCER_CONNECTION_LIST's body.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

func appendConnections(dst []byte, cs []Connection) []byte {
	dst = append(dst, '[')
	for i, c := range cs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"clientAddr":`...)
		dst = AppendString(dst, c.ClientAddr)
		dst = append(dst, `,"clientId":`...)
		dst = AppendString(dst, c.ClientID)
		dst = append(dst, `,"language":`...)
		dst = AppendString(dst, c.Language)
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, int64(c.Version), 10)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// AppendConsumerConnection writes c as fastjson does (fields in name order; valid JSON).
func AppendConsumerConnection(dst []byte, c ConsumerConnection) []byte {
	dst = append(dst, `{"connectionSet":`...)
	dst = appendConnections(dst, c.ConnectionSet)
	dst = append(dst, `,"consumeFromWhere":`...)
	dst = AppendString(dst, c.ConsumeFromWhere)
	dst = append(dst, `,"consumeType":`...)
	dst = AppendString(dst, c.ConsumeType)
	dst = append(dst, `,"messageModel":`...)
	dst = AppendString(dst, c.MessageModel)
	dst = append(dst, `,"subscriptionTable":{`...)
	topics := make([]string, 0, len(c.SubscriptionTable))
	for t := range c.SubscriptionTable {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for i, t := range topics {
		if i > 0 {
			dst = append(dst, ',')
		}
		s := c.SubscriptionTable[t]
		dst = AppendString(dst, t)
		dst = append(dst, `:{"classFilterMode":`...)
		dst = strconv.AppendBool(dst, s.ClassFilterMode)
		dst = append(dst, `,"codeSet":[`...)
		for j, code := range s.CodeSet {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(code), 10)
		}
		dst = append(dst, `],"expressionType":`...)
		dst = AppendString(dst, s.ExpressionType)
		dst = append(dst, `,"subString":`...)
		dst = AppendString(dst, s.SubString)
		dst = append(dst, `,"subVersion":`...)
		dst = strconv.AppendInt(dst, s.SubVersion, 10)
		dst = append(dst, `,"tagsSet":`...)
		dst = AppendStringList(dst, s.TagsSet)
		dst = append(dst, `,"topic":`...)
		dst = AppendString(dst, s.Topic)
		dst = append(dst, '}')
	}
	return append(dst, "}}"...)
}

// AppendProducerConnection writes p as fastjson does.
func AppendProducerConnection(dst []byte, p ProducerConnection) []byte {
	dst = append(dst, `{"connectionSet":`...)
	dst = appendConnections(dst, p.ConnectionSet)
	return append(dst, '}')
}

// DecodeConsumerConnection parses a ConsumerConnection body.
func DecodeConsumerConnection(b []byte) (ConsumerConnection, error) {
	var c ConsumerConnection
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return c, nil
}

// DecodeProducerConnection parses a ProducerConnection body.
func DecodeProducerConnection(b []byte) (ProducerConnection, error) {
	var p ProducerConnection
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return p, nil
}

// OffsetWrapper is one queue of ConsumeStats.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	PullOffset     int64 `json:"pullOffset"`
}

// TopicOffset is one queue of TopicStatsTable.
type TopicOffset struct {
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	MaxOffset           int64 `json:"maxOffset"`
	MinOffset           int64 `json:"minOffset"`
}

// appendMQTable writes a MessageQueue-keyed map (fastjson's object keys) with val for values.
func appendMQTable[V any](dst []byte, m map[MessageQueue]V, val func([]byte, V) []byte) []byte {
	qs := make([]MessageQueue, 0, len(m))
	for q := range m {
		qs = append(qs, q)
	}
	sortQueues(qs)
	dst = append(dst, '{')
	for i, q := range qs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendMessageQueue(dst, q)
		dst = append(dst, ':')
		dst = val(dst, m[q])
	}
	return append(dst, '}')
}

// AppendConsumeStats writes ConsumeStats as fastjson does:
//
//	{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:
//	  {"brokerOffset":9,"consumerOffset":7,"lastTimestamp":1700000000000,"pullOffset":7}}}
func AppendConsumeStats(dst []byte, tps float64, table map[MessageQueue]OffsetWrapper) []byte {
	dst = append(dst, `{"consumeTps":`...)
	dst = AppendJavaDouble(dst, tps) // all its digits: consumeTps 0.35 is not 0.3
	dst = append(dst, `,"offsetTable":`...)
	dst = appendMQTable(dst, table, func(d []byte, o OffsetWrapper) []byte {
		d = append(d, `{"brokerOffset":`...)
		d = strconv.AppendInt(d, o.BrokerOffset, 10)
		d = append(d, `,"consumerOffset":`...)
		d = strconv.AppendInt(d, o.ConsumerOffset, 10)
		d = append(d, `,"lastTimestamp":`...)
		d = strconv.AppendInt(d, o.LastTimestamp, 10)
		d = append(d, `,"pullOffset":`...)
		d = strconv.AppendInt(d, o.PullOffset, 10)
		return append(d, '}')
	})
	return append(dst, '}')
}

// AppendTopicStatsTable writes TopicStatsTable as fastjson does:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:
//	  {"lastUpdateTimestamp":1700000000000,"maxOffset":9,"minOffset":0}}}
func AppendTopicStatsTable(dst []byte, table map[MessageQueue]TopicOffset) []byte {
	dst = append(dst, `{"offsetTable":`...)
	dst = appendMQTable(dst, table, func(d []byte, o TopicOffset) []byte {
		d = append(d, `{"lastUpdateTimestamp":`...)
		d = strconv.AppendInt(d, o.LastUpdateTimestamp, 10)
		d = append(d, `,"maxOffset":`...)
		d = strconv.AppendInt(d, o.MaxOffset, 10)
		d = append(d, `,"minOffset":`...)
		d = strconv.AppendInt(d, o.MinOffset, 10)
		return append(d, '}')
	})
	return append(dst, '}')
}

// rawValue reads one JSON value (scalar, or object/array with nested strings) as bytes.
func (s *mqScanner) rawValue() []byte {
	s.space()
	if s.err != nil {
		return nil
	}
	start := s.pos
	depth := 0
	for i := s.pos; i < len(s.b); i++ {
		switch c := s.b[i]; c {
		case '"':
			j, ok := skipString(s.b, i)
			if !ok {
				s.fail("unterminated string")
				return nil
			}
			i = j - 1
			if depth == 0 {
				s.pos = j
				return s.b[start:s.pos]
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				s.pos = i
				if i == start {
					s.fail("want a value")
					return nil
				}
				return s.b[start:i]
			}
			depth--
			if depth == 0 {
				s.pos = i + 1
				return s.b[start:s.pos]
			}
		case ',':
			if depth == 0 {
				s.pos = i
				if i == start {
					s.fail("want a value")
					return nil
				}
				return s.b[start:i]
			}
		}
	}
	s.fail("unterminated value")
	return nil
}

// decodeMQTableBody parses a top-level object whose "offsetTable" is a MessageQueue-keyed map;
// other fields come back raw.
func decodeMQTableBody(b []byte) (map[string][]byte, map[MessageQueue][]byte, error) {
	return decodeMQKeyed(b, "offsetTable", true)
}

// decodeMQKeyed parses a top-level object whose field tableKey is a MessageQueue-keyed map
// (required: the field must be there); other fields come back raw.
func decodeMQKeyed(b []byte, tableKey string, required bool) (map[string][]byte, map[MessageQueue][]byte, error) {
	s := &mqScanner{b: b}
	fields := map[string][]byte{}
	table := map[MessageQueue][]byte{}
	seenTable := false
	s.expect("{")
	for s.err == nil && s.peek() != '}' {
		kb := s.rawValue()
		var key string
		if s.err == nil {
			if err := json.Unmarshal(kb, &key); err != nil {
				s.fail("field name: %v", err)
			}
		}
		s.expect(":")
		if key == tableKey && s.err == nil {
			seenTable = true
			s.expect("{")
			for s.err == nil && s.peek() != '}' {
				obj := s.object()
				var q MessageQueue
				if s.err == nil {
					if err := json.Unmarshal(obj, &q); err != nil {
						s.fail("message queue: %v", err)
					}
				}
				s.expect(":")
				v := s.rawValue()
				if s.err == nil {
					table[q] = v
					if len(table) > maxResetOffsetQueues {
						s.fail("more than %d queues", maxResetOffsetQueues)
					}
				}
				if s.peek() == ',' {
					s.pos++
				}
			}
			s.expect("}")
		} else {
			fields[key] = s.rawValue()
		}
		if s.peek() == ',' {
			s.pos++
		}
	}
	s.expect("}")
	if s.err == nil && !seenTable && required {
		s.fail("no %s", tableKey)
	}
	if s.err != nil {
		return nil, nil, s.err
	}
	return fields, table, nil
}

// DecodeConsumeStats parses what AppendConsumeStats writes (a Java broker's body too).
func DecodeConsumeStats(b []byte) (float64, map[MessageQueue]OffsetWrapper, error) {
	fields, raw, err := decodeMQTableBody(b)
	if err != nil {
		return 0, nil, err
	}
	var tps float64
	if v, ok := fields["consumeTps"]; ok {
		if err := json.Unmarshal(v, &tps); err != nil {
			return 0, nil, fmt.Errorf("%w: consumeTps: %v", ErrSyntax, err)
		}
	}
	out := make(map[MessageQueue]OffsetWrapper, len(raw))
	for q, v := range raw {
		var o OffsetWrapper
		if err := json.Unmarshal(v, &o); err != nil {
			return 0, nil, fmt.Errorf("%w: offset of %v: %v", ErrSyntax, q, err)
		}
		out[q] = o
	}
	return tps, out, nil
}

// DecodeTopicStatsTable parses what AppendTopicStatsTable writes.
func DecodeTopicStatsTable(b []byte) (map[MessageQueue]TopicOffset, error) {
	_, raw, err := decodeMQTableBody(b)
	if err != nil {
		return nil, err
	}
	out := make(map[MessageQueue]TopicOffset, len(raw))
	for q, v := range raw {
		var o TopicOffset
		if err := json.Unmarshal(v, &o); err != nil {
			return nil, fmt.Errorf("%w: offsets of %v: %v", ErrSyntax, q, err)
		}
		out[q] = o
	}
	return out, nil
}

package clients

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/rmqha/rmqha/libs/filter"
)

// Values of ConsumerData fields sent by clients.
const (
	ConsumeActively  = "CONSUME_ACTIVELY"
	ConsumePassively = "CONSUME_PASSIVELY"
	Clustering       = "CLUSTERING"
	Broadcasting     = "BROADCASTING"
	// ExpressionTypeTag is the tag filter; "" means the same.
	ExpressionTypeTag = "TAG"
	// SubAll is the subscription expression matching every tag.
	SubAll = "*"
)

// HeartbeatData is the body of HEART_BEAT (34).
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
	// HeartbeatFingerprint is a 5.x Java client's hash of its subscriptions
	// (0 from older clients and from rocketmq-client-go).
	HeartbeatFingerprint int64 `json:"heartbeatFingerprint,omitempty"`
	// WithoutSub marks a 5.x lightweight heartbeat whose consumer data omits
	// the (unchanged) subscriptions; the registry then keeps the registered
	// ones. Decoded from "withoutSub" or "isWithoutSub".
	WithoutSub bool `json:"withoutSub,omitempty"`
}

// UnmarshalJSON decodes a heartbeat, accepting both spellings of the 5.x
// withoutSub flag.
func (hb *HeartbeatData) UnmarshalJSON(b []byte) error {
	type plain HeartbeatData
	var v struct {
		plain
		IsWithoutSub bool `json:"isWithoutSub"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*hb = HeartbeatData(v.plain)
	hb.WithoutSub = hb.WithoutSub || v.IsWithoutSub
	return nil
}

// ProducerData names one producer group of the client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData describes one consumer group of the client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`

	// selector is the compiled subString of a non-TAG subscription, selectorErr why it did
	// not compile (set by rebuild; shared, immutable).
	selector    *filter.Expr
	selectorErr error
}

// CodeSet holds tag hash codes. It decodes from JSON strings (Go client) or
// numbers (Java) and encodes as numbers.
type CodeSet []int32

// UnmarshalJSON accepts ["2598919"] and [2598919].
func (c *CodeSet) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*c = nil
		return nil
	}
	out := make(CodeSet, 0, len(raw))
	for _, r := range raw {
		s := string(r)
		if len(r) > 0 && r[0] == '"' {
			if err := json.Unmarshal(r, &s); err != nil {
				return err
			}
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fmt.Errorf("%w: codeSet entry %s", ErrInvalidHeartbeat, r)
		}
		out = append(out, int32(v))
	}
	*c = out
	return nil
}

// DecodeHeartbeat parses and checks a HEART_BEAT body.
func DecodeHeartbeat(data []byte) (*HeartbeatData, error) {
	var hb HeartbeatData
	if err := json.Unmarshal(data, &hb); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidHeartbeat, err)
	}
	if err := hb.Validate(); err != nil {
		return nil, err
	}
	return &hb, nil
}

// Name bounds of a heartbeat, as RocketMQ's client validators allow
// (Validators.checkGroup, checkTopic): group names 1..255 and topic names
// 1..127 characters of [%|a-zA-Z0-9_-]. RocketMQ does not bound client ids
// or subscription expressions; MaxClientIDLen and MaxExpressionLen are
// generous bounds of our own so one heartbeat cannot park megabytes in the
// registry.
const (
	MaxGroupNameLen  = 255
	MaxTopicNameLen  = 127
	MaxClientIDLen   = 1024
	MaxExpressionLen = 64 << 10 // subString plus every tagsSet entry, bytes
)

// Limits bound how much one heartbeat may register.
type Limits struct {
	// MaxGroups is the most producer plus consumer entries in one heartbeat;
	// 0 means no bound.
	MaxGroups int
	// MaxSubscriptions is the most subscriptions of all consumer entries of
	// one heartbeat together; 0 means no bound.
	MaxSubscriptions int
}

// CheckLimits returns ErrHeartbeatTooLarge when hb has more entries than l allows.
func (hb *HeartbeatData) CheckLimits(l Limits) error {
	if n := len(hb.ProducerDataSet) + len(hb.ConsumerDataSet); l.MaxGroups > 0 && n > l.MaxGroups {
		return fmt.Errorf("%w: %d producer and consumer groups, at most %d (heartbeatMaxGroups)", ErrHeartbeatTooLarge, n, l.MaxGroups)
	}
	if l.MaxSubscriptions > 0 {
		n := 0
		for _, c := range hb.ConsumerDataSet {
			n += len(c.SubscriptionDataSet)
		}
		if n > l.MaxSubscriptions {
			return fmt.Errorf("%w: %d subscriptions, at most %d (heartbeatMaxSubscriptions)", ErrHeartbeatTooLarge, n, l.MaxSubscriptions)
		}
	}
	return nil
}

// ValidName reports whether name is 1..maxLen characters of RocketMQ's
// topic and group alphabet [%|a-zA-Z0-9_-].
func ValidName(name string, maxLen int) bool {
	if name == "" || len(name) > maxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c == '%' || c == '|' || c == '_' || c == '-' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// Validate checks the client id, every group name (RocketMQ's group rules),
// every subscription's topic (RocketMQ's topic rules) and expression length.
func (hb *HeartbeatData) Validate() error {
	if hb == nil || hb.ClientID == "" {
		return fmt.Errorf("%w: empty clientID", ErrInvalidHeartbeat)
	}
	if len(hb.ClientID) > MaxClientIDLen {
		return fmt.Errorf("%w: clientID of %d bytes, at most %d", ErrInvalidHeartbeat, len(hb.ClientID), MaxClientIDLen)
	}
	for _, p := range hb.ProducerDataSet {
		if p.GroupName == "" {
			return fmt.Errorf("%w: producer without groupName", ErrInvalidHeartbeat)
		}
		if !ValidName(p.GroupName, MaxGroupNameLen) {
			return fmt.Errorf("%w: producer group %.64q: 1..%d characters of [%%|a-zA-Z0-9_-]", ErrInvalidHeartbeat, p.GroupName, MaxGroupNameLen)
		}
	}
	for _, c := range hb.ConsumerDataSet {
		if c.GroupName == "" {
			return fmt.Errorf("%w: consumer without groupName", ErrInvalidHeartbeat)
		}
		if !ValidName(c.GroupName, MaxGroupNameLen) {
			return fmt.Errorf("%w: consumer group %.64q: 1..%d characters of [%%|a-zA-Z0-9_-]", ErrInvalidHeartbeat, c.GroupName, MaxGroupNameLen)
		}
		for _, s := range c.SubscriptionDataSet {
			if s.Topic == "" {
				return fmt.Errorf("%w: group %q subscription without topic", ErrInvalidHeartbeat, c.GroupName)
			}
			if !ValidName(s.Topic, MaxTopicNameLen) {
				return fmt.Errorf("%w: group %q subscribes to topic %.64q: 1..%d characters of [%%|a-zA-Z0-9_-]", ErrInvalidHeartbeat, c.GroupName, s.Topic, MaxTopicNameLen)
			}
			n := len(s.SubString)
			for _, tag := range s.TagsSet {
				n += len(tag)
			}
			if n > MaxExpressionLen {
				return fmt.Errorf("%w: group %q topic %q: subscription expression of %d bytes, at most %d", ErrInvalidHeartbeat, c.GroupName, s.Topic, n, MaxExpressionLen)
			}
		}
	}
	return nil
}

// AppendHeartbeat writes hb as JSON (codeSet as numbers, nil lists as []).
func AppendHeartbeat(dst []byte, hb *HeartbeatData) []byte {
	cp := *hb
	if cp.ProducerDataSet == nil {
		cp.ProducerDataSet = []ProducerData{}
	}
	if cp.ConsumerDataSet == nil {
		cp.ConsumerDataSet = []ConsumerData{}
	}
	cp.ConsumerDataSet = append([]ConsumerData(nil), cp.ConsumerDataSet...)
	for i := range cp.ConsumerDataSet {
		cd := &cp.ConsumerDataSet[i]
		subs := make([]SubscriptionData, len(cd.SubscriptionDataSet))
		for j, s := range cd.SubscriptionDataSet {
			if s.TagsSet == nil {
				s.TagsSet = []string{}
			}
			if s.CodeSet == nil {
				s.CodeSet = CodeSet{}
			}
			subs[j] = s
		}
		cd.SubscriptionDataSet = subs
	}
	b, err := json.Marshal(&cp)
	if err != nil { // unreachable: only strings, numbers, bools and lists
		return dst
	}
	return append(dst, b...)
}

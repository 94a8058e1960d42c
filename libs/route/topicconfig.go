package route

import (
	"encoding/json"
	"fmt"
	"maps"
)

// TopicFilterTypeSingleTag is the only filter type classic brokers use.
const TopicFilterTypeSingleTag = "SINGLE_TAG"

// Defaults of a Java TopicConfig created without explicit values.
const (
	DefaultReadQueueNums  = 16
	DefaultWriteQueueNums = 16
	DefaultTopicPerm      = PermRead | PermWrite
)

// TopicConfig is one entry of a broker's topic table (topics.json,
// GET_ALL_TOPIC_CONFIG, REGISTER_BROKER).
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"`
}

// NewTopicConfig returns a config for name with Java's defaults.
func NewTopicConfig(name string) TopicConfig {
	return TopicConfig{
		TopicName:       name,
		ReadQueueNums:   DefaultReadQueueNums,
		WriteQueueNums:  DefaultWriteQueueNums,
		Perm:            DefaultTopicPerm,
		TopicFilterType: TopicFilterTypeSingleTag,
	}
}

// Clone returns a deep copy (the attribute map is not shared; an empty map
// becomes nil).
func (c TopicConfig) Clone() TopicConfig {
	if len(c.Attributes) == 0 {
		c.Attributes = nil
	} else {
		c.Attributes = maps.Clone(c.Attributes)
	}
	return c
}

// Equal reports whether two configs have the same content; a nil and an
// empty attribute map are equal.
func (c TopicConfig) Equal(o TopicConfig) bool {
	return c.TopicName == o.TopicName && c.ReadQueueNums == o.ReadQueueNums &&
		c.WriteQueueNums == o.WriteQueueNums && c.Perm == o.Perm &&
		c.TopicFilterType == o.TopicFilterType && c.TopicSysFlag == o.TopicSysFlag &&
		c.Order == o.Order && maps.Equal(c.Attributes, o.Attributes)
}

// AppendTopicConfig writes c with fastjson's key order; attributes is always
// present ({} when empty).
func AppendTopicConfig(dst []byte, c TopicConfig) []byte {
	dst = append(dst, `{"attributes":`...)
	dst = AppendStringMap(dst, c.Attributes)
	dst = append(dst, `,"order":`...)
	dst = appendBool(dst, c.Order)
	dst = append(dst, `,"perm":`...)
	dst = appendInt(dst, int64(c.Perm))
	dst = append(dst, `,"readQueueNums":`...)
	dst = appendInt(dst, int64(c.ReadQueueNums))
	dst = append(dst, `,"topicFilterType":`...)
	dst = appendString(dst, c.TopicFilterType)
	dst = append(dst, `,"topicName":`...)
	dst = appendString(dst, c.TopicName)
	dst = append(dst, `,"topicSysFlag":`...)
	dst = appendInt(dst, int64(c.TopicSysFlag))
	dst = append(dst, `,"writeQueueNums":`...)
	dst = appendInt(dst, int64(c.WriteQueueNums))
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler with AppendTopicConfig.
func (c TopicConfig) MarshalJSON() ([]byte, error) { return AppendTopicConfig(nil, c), nil }

// UnmarshalJSON decodes on top of Java's defaults, so absent fields keep them.
func (c *TopicConfig) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	type plain TopicConfig
	v := plain(NewTopicConfig(""))
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = TopicConfig(v)
	return nil
}

// TopicConfigSerializeWrapper is the body of GET_ALL_TOPIC_CONFIG, the
// content of topics.json and the topicConfigSerializeWrapper of
// REGISTER_BROKER.
type TopicConfigSerializeWrapper struct {
	DataVersion      DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
}

// AppendTopicConfigSerializeWrapper writes w with topics sorted by name.
func AppendTopicConfigSerializeWrapper(dst []byte, w TopicConfigSerializeWrapper) []byte {
	dst = append(dst, `{"dataVersion":`...)
	dst = AppendDataVersion(dst, w.DataVersion)
	dst = append(dst, `,"topicConfigTable":{`...)
	for i, k := range sortedKeys(w.TopicConfigTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = AppendTopicConfig(dst, w.TopicConfigTable[k])
	}
	return append(dst, '}', '}')
}

// MarshalJSON implements json.Marshaler.
func (w TopicConfigSerializeWrapper) MarshalJSON() ([]byte, error) {
	return AppendTopicConfigSerializeWrapper(nil, w), nil
}

// DecodeTopicConfigSerializeWrapper parses the wrapper (fastjson keys
// accepted). A table entry whose topicName is empty takes its map key; an
// empty attributes object decodes as nil.
func DecodeTopicConfigSerializeWrapper(data []byte) (TopicConfigSerializeWrapper, error) {
	var w TopicConfigSerializeWrapper
	if err := decodeLenient(data, &w); err != nil {
		return TopicConfigSerializeWrapper{}, err
	}
	fixTopicNames(w.TopicConfigTable)
	return w, nil
}

func fixTopicNames(t map[string]TopicConfig) {
	for k, c := range t {
		if c.TopicName == "" {
			c.TopicName = k
		}
		t[k] = c.Clone()
	}
}

// decodeLenient runs Lenient and then encoding/json.
func decodeLenient(data []byte, v any) error {
	clean, err := Lenient(data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(clean, v); err != nil {
		return fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return nil
}

package route

import (
	"encoding/json"
	"fmt"
)

// ProcessQueueInfo is one queue of a consumer's running info: what its process queue holds.
type ProcessQueueInfo struct {
	CommitOffset         int64 `json:"commitOffset"`
	CachedMsgMinOffset   int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset   int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount       int64 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB   int64 `json:"cachedMsgSizeInMiB"`
	Locked               bool  `json:"locked"`
	Dropped              bool  `json:"dropped"`
	LastPullTimestamp    int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp int64 `json:"lastConsumeTimestamp"`
}

// ConsumerRunningInfo is the body a client answers GET_CONSUMER_RUNNING_INFO with (Java's
// ConsumerRunningInfo; rocketmq-client-go writes the same fields):
//
//	{"properties":{"consumeType":"CONSUME_PASSIVELY",...},"statusTable":{"T":{"pullRT":..}},
//	 "subscriptionSet":[{"topic":"T","subString":"*",...}],
//	 "mqTable":{{"topic":"T","brokerName":"b","queueId":0}:{"commitOffset":3,...}},"jstack":""}
//
// The broker relays it unread; mqadmin decodes it.
type ConsumerRunningInfo struct {
	Properties    map[string]string
	Subscriptions []Subscription
	MQTable       map[MessageQueue]ProcessQueueInfo
	StatusTable   map[string]map[string]float64
	JStack        string
	Other         []string // names of top-level fields not decoded here
}

// DecodeConsumerRunningInfo parses a ConsumerRunningInfo body (fields in any order).
func DecodeConsumerRunningInfo(b []byte) (ConsumerRunningInfo, error) {
	var out ConsumerRunningInfo
	fields, table, err := decodeMQKeyed(b, "mqTable", false)
	if err != nil {
		return out, err
	}
	out.MQTable = make(map[MessageQueue]ProcessQueueInfo, len(table))
	for q, v := range table {
		var p ProcessQueueInfo
		if err := json.Unmarshal(v, &p); err != nil {
			return ConsumerRunningInfo{}, fmt.Errorf("%w: process queue of %v: %v", ErrSyntax, q, err)
		}
		out.MQTable[q] = p
	}
	for k, v := range fields {
		var err error
		switch k {
		case "properties":
			err = json.Unmarshal(v, &out.Properties)
		case "subscriptionSet":
			err = json.Unmarshal(v, &out.Subscriptions)
		case "statusTable":
			err = json.Unmarshal(v, &out.StatusTable)
		case "jstack":
			err = json.Unmarshal(v, &out.JStack)
		default:
			out.Other = append(out.Other, k)
		}
		if err != nil {
			return ConsumerRunningInfo{}, fmt.Errorf("%w: %s: %v", ErrSyntax, k, err)
		}
	}
	return out, nil
}

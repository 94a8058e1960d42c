package meta

import (
	"sort"
	"strings"
)

// RocketMQ's other system topic names (TopicValidator, 4.9).
const (
	TransHalfTopic         = "RMQ_SYS_TRANS_HALF_TOPIC"
	TransOpHalfTopic       = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TransCheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	TraceTopic             = "RMQ_SYS_TRACE_TOPIC"
	// SystemTopicPrefix starts every topic RocketMQ reserves by prefix.
	SystemTopicPrefix = "rmq_sys_"
	// ReplyTopicPostfix: <cluster>_REPLY_TOPIC is the cluster's request-reply topic.
	ReplyTopicPostfix = "REPLY_TOPIC"
)

// notAllowedSend are the topics no client may send to (TopicValidator's
// NOT_ALLOWED_SEND_TOPIC_SET): only the broker itself stores into them.
var notAllowedSend = map[string]bool{
	ScheduleTopic:          true,
	TransHalfTopic:         true,
	TransOpHalfTopic:       true,
	TransCheckMaxTimeTopic: true,
	SelfTestTopic:          true,
	OffsetMovedEvent:       true,
}

// systemTopicSet are TopicValidator's SYSTEM_TOPIC_SET before a broker adds its own.
var systemTopicSet = map[string]bool{
	AutoCreateTopicKey:     true,
	ScheduleTopic:          true,
	BenchmarkTopic:         true,
	TransHalfTopic:         true,
	TraceTopic:             true,
	TransOpHalfTopic:       true,
	TransCheckMaxTimeTopic: true,
	SelfTestTopic:          true,
	OffsetMovedEvent:       true,
}

// SystemTopics lists the system topics of a broker of cluster and broker: TopicValidator's
// set with the ones a broker adds at start (its cluster and broker names, the cluster's reply
// topic), sorted. GET_SYSTEM_TOPIC_LIST_FROM_BROKER adds the rmq_sys_ topics it holds.
func SystemTopics(cluster, broker string) []string {
	set := map[string]bool{cluster: true, broker: true, cluster + "_" + ReplyTopicPostfix: true}
	for t := range systemTopicSet {
		set[t] = true
	}
	out := make([]string, 0, len(set))
	for t := range set {
		if t != "" {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// IsNotAllowedSendTopic reports whether clients may not send to topic: RocketMQ answers such
// a send NO_PERMISSION "Sending message to topic[<topic>] is forbidden.". RMQ_SYS_TRACE_TOPIC,
// BenchmarkTest and TBW102 are system topics clients may send to (TBW102 is refused by this
// broker anyway: it is only the auto-create template).
func IsNotAllowedSendTopic(topic string) bool { return notAllowedSend[topic] }

// IsSystemTopic reports whether topic is one of RocketMQ's system topics for a broker of
// cluster and broker (their names are system topics too, as is <cluster>_REPLY_TOPIC), or
// starts with rmq_sys_. RocketMQ refuses to create, update or delete them by admin request
// (SYSTEM_ERROR "The topic[<topic>] is conflict with system topic.").
func IsSystemTopic(topic, cluster, broker string) bool {
	return systemTopicSet[topic] || strings.HasPrefix(topic, SystemTopicPrefix) ||
		topic == cluster || topic == broker || topic == cluster+"_"+ReplyTopicPostfix
}

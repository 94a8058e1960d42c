package acl

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rmqha/rmqha/libs/remoting"
)

// Need is one resource a request touches and the permission it needs there.
type Need struct {
	// Name is the topic, or the group (without %RETRY%) when Group is set.
	Name  string
	Group bool
	Perm  Perm
}

// Needs are the resources of one request (Read). The first few live inline, so reading the
// needs of a send, pull or offset commit allocates nothing.
type Needs struct {
	inline [4]Need
	n      int
	more   []Need
	// tracePub: the request sends into RMQ_SYS_TRACE_TOPIC (permission check skipped).
	tracePub bool
}

// Len is the number of needs.
func (ns *Needs) Len() int { return ns.n + len(ns.more) }

// At returns the i-th need.
func (ns *Needs) At(i int) Need {
	if i < ns.n {
		return ns.inline[i]
	}
	return ns.more[i-ns.n]
}

func (ns *Needs) add(n Need) {
	if ns.n < len(ns.inline) {
		ns.inline[ns.n] = n
		ns.n++
		return
	}
	ns.more = append(ns.more, n)
}

// topic adds topic with perm; a retry topic (%RETRY%g) is group g.
func (ns *Needs) topic(name string, perm Perm) {
	if g, ok := strings.CutPrefix(name, RetryGroupTopicPrefix); ok {
		ns.add(Need{Name: g, Group: true, Perm: PermSub})
		return
	}
	ns.add(Need{Name: name, Perm: perm})
}

func (ns *Needs) group(name string) { ns.add(Need{Name: name, Group: true, Perm: PermSub}) }

// send adds the target of a send: PUB on the topic; a retry topic is the group's SUB (a
// consumer sending a message back); RMQ_SYS_TRACE_TOPIC needs no permission.
func (ns *Needs) send(topic string) {
	if topic == traceTopic {
		ns.tracePub = true
		return
	}
	ns.topic(topic, PermPub)
}

// Read fills ns with the resources req touches, as RocketMQ's PlainAccessValidator.parse maps
// request codes (a field the code needs but the request lacks is checked as the empty name,
// which only a default permission can grant):
//
//	SEND_MESSAGE, SEND_REPLY_MESSAGE            topic PUB ("topic"); %RETRY%g → group g SUB
//	SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,        the same from "b" (rocketmq-client-go's batch
//	SEND_REPLY_MESSAGE_V2                        sends use the V2 names)
//	CONSUMER_SEND_MSG_BACK                      group SUB ("group")
//	PULL_MESSAGE                                topic SUB + group SUB ("consumerGroup")
//	QUERY_MESSAGE                               topic SUB
//	HEART_BEAT                                  every consumer group SUB + each subscribed topic SUB
//	UNREGISTER_CLIENT                           group SUB, when it names a consumer group
//	GET_CONSUMER_LIST_BY_GROUP                  group SUB
//	UPDATE_CONSUMER_OFFSET, QUERY_CONSUMER_OFFSET  group SUB + topic SUB
//	LOCK_BATCH_MQ, UNLOCK_BATCH_MQ              group SUB (the body's consumerGroup)
//
// Differences from RocketMQ 4.9: SEND_BATCH_MESSAGE and the reply sends are mapped (RocketMQ
// leaves them to the signature alone); QUERY_CONSUMER_OFFSET and the queue locks are mapped;
// a send into %RETRY%g is checked as group g taken from the topic (RocketMQ reads a "group"
// field SEND_MESSAGE does not carry, so it checks nothing). Every other code needs only the
// signature (and NeedsAdmin's codes an admin account). A heartbeat or lock body that does not
// decode is an error (RocketMQ refuses it too).
func (ns *Needs) Read(req *remoting.Command) error {
	ext := req.ExtFields
	switch req.Code {
	case remoting.SendMessage, remoting.SendReplyMessage:
		ns.send(ext["topic"])
	case remoting.SendMessageV2, remoting.SendBatchMessage, remoting.SendReplyMessageV2:
		ns.send(ext["b"])
	case remoting.ConsumerSendMsgBack:
		ns.group(ext["group"])
	case remoting.PullMessage:
		ns.topic(ext["topic"], PermSub)
		ns.group(ext["consumerGroup"])
	case remoting.QueryMessage:
		ns.topic(ext["topic"], PermSub)
	case remoting.HeartBeat:
		var hb heartbeatBody
		if err := json.Unmarshal(req.Body, &hb); err != nil {
			return fmt.Errorf("heartbeat body: %v", err)
		}
		for _, c := range hb.ConsumerDataSet {
			ns.group(c.GroupName)
			for _, s := range c.SubscriptionDataSet {
				ns.topic(s.Topic, PermSub)
			}
		}
	case remoting.UnregisterClient:
		if g := ext["consumerGroup"]; g != "" {
			ns.group(g)
		}
	case remoting.GetConsumerListByGroup:
		ns.group(ext["consumerGroup"])
	case remoting.UpdateConsumerOffset, remoting.QueryConsumerOffset:
		ns.group(ext["consumerGroup"])
		ns.topic(ext["topic"], PermSub)
	case remoting.LockBatchMQ, remoting.UnlockBatchMQ:
		var lb lockBody
		if err := json.Unmarshal(req.Body, &lb); err != nil {
			return fmt.Errorf("lock body: %v", err)
		}
		ns.group(lb.ConsumerGroup)
	}
	return nil
}

// heartbeatBody is the part of HeartbeatData the ACL reads, decoded with the same library and
// field names as the broker's handler (libs/broker/clients), so both see the same groups.
type heartbeatBody struct {
	ConsumerDataSet []struct {
		GroupName           string `json:"groupName"`
		SubscriptionDataSet []struct {
			Topic string `json:"topic"`
		} `json:"subscriptionDataSet"`
	} `json:"consumerDataSet"`
}

// lockBody is the part of LockBatchRequestBody the ACL reads (as libs/broker/locks.go).
type lockBody struct {
	ConsumerGroup string `json:"consumerGroup"`
}

// NeedsAdmin reports whether code may only come from an admin account. The table, one place:
//
//	RocketMQ's admin codes     UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG, DELETE_TOPIC_IN_BROKER,
//	                           UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP
//	broker registration        REGISTER_BROKER, UNREGISTER_BROKER, QUERY_DATA_VERSION, BROKER_HEARTBEAT
//	metadata dumps (slaves,    GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
//	metasync)                  GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET
//	other writes               PUT_KV_CONFIG, DELETE_KV_CONFIG, WIPE_WRITE_PERM_OF_BROKER,
//	                           ADD_WRITE_PERM_OF_BROKER, DELETE_TOPIC_IN_NAMESRV, TRIGGER_DELETE_FILES,
//	                           INVOKE_BROKER_TO_RESET_OFFSET, GET_BROKER_CONFIG, GET_NAMESRV_CONFIG,
//	                           UPDATE_NAMESRV_CONFIG
//
// Read-only lookups (routes, cluster and topic lists, runtime info, offsets) need only a valid
// signature of any account.
func NeedsAdmin(code int32) bool {
	switch code {
	case remoting.UpdateAndCreateTopic, remoting.UpdateBrokerConfig, remoting.DeleteTopicInBroker,
		remoting.UpdateAndCreateSubscriptionGroup, remoting.DeleteSubscriptionGroup,
		remoting.RegisterBroker, remoting.UnregisterBroker, remoting.QueryDataVersion, remoting.BrokerHeartbeat,
		remoting.GetAllTopicConfig, remoting.GetAllSubscriptionGroupConfig, remoting.GetAllConsumerOffset, remoting.GetAllDelayOffset,
		remoting.PutKVConfig, remoting.DeleteKVConfig, remoting.WipeWritePermOfBroker, remoting.AddWritePermOfBroker,
		remoting.DeleteTopicInNameSrv, remoting.TriggerDeleteFiles, remoting.InvokeBrokerToResetOffset, remoting.GetBrokerConfig,
		remoting.GetNamesrvConfig, remoting.UpdateNamesrvConfig:
		return true
	}
	return false
}

// Package replytest holds process-level tests of request-reply (SEND_REPLY_MESSAGE and
// PUSH_REPLY_MESSAGE_TO_CLIENT): a name server, a SYNC_MASTER and its slave started from this
// checkout's binaries (the tools/e2e fixture), driven by the unmodified rocketmq-client-go.
//
// What the tests check:
//
//   - a round trip: Producer.Request and RequestAsync send requests, a push consumer answers
//     each with consumer.CreateReplyMessage sent by a producer (SEND_REPLY_MESSAGE), and every
//     requester gets its own reply, byte for byte, once; the replies are stored in
//     DefaultCluster_REPLY_TOPIC (storeReplyMessageEnable) and replicated to the slave; the
//     master's metrics count every push;
//   - the requester gone: a requester that shut down before its reply was sent is no longer
//     known to the broker; the replier's send is answered SYSTEM_ERROR "push reply message
//     fail, channel of <id> not found." (RocketMQ's answer), the reply is still stored, and
//     the metric counts requester_not_found;
//   - a reply sent to the slave (SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2) is refused with
//     SERVICE_NOT_AVAILABLE and pushed to nobody; the master's answer to a V2 reply shows the
//     short header names are understood.
//
// rocketmq-client-go's CreateReplyMessage parses the reply body as properties and leaves the
// message's Body empty (consumer/message_util.go); the tests set the body on the message it
// returns, which is what its users have to do.
package replytest

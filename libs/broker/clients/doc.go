// Package clients is the broker's registry of connected producers and
// consumers, fed by HEART_BEAT requests.
//
// # Heartbeats
//
// DecodeHeartbeat parses the HEART_BEAT body exactly as rocketmq-client-go
// sends it: clientID, producerDataSet [{groupName}], consumerDataSet with
// groupName, consumeType, messageModel, consumeFromWhere, unitMode and
// subscriptionDataSet {classFilterMode, topic, subString, tagsSet, codeSet,
// subVersion, expressionType}. codeSet entries arrive as JSON strings from
// the Go client and as numbers from Java; both are accepted. Unknown keys
// are ignored.
//
// Validate applies RocketMQ's client-side name rules (group names 1..255 and
// topics 1..127 characters of [%|a-zA-Z0-9_-]) and bounds of its own on the
// client id (1 KiB) and each subscription expression (64 KiB); CheckLimits
// bounds the number of groups and subscriptions of one heartbeat (the broker's
// heartbeatMaxGroups and heartbeatMaxSubscriptions).
//
// # Registry
//
// Members are keyed by client id inside each group and remember the
// connection handle (any comparable value, typically the server's
// connection pointer) of their latest heartbeat and the time of it.
// Register reports the consumer groups whose member list changed (a new
// client id joined); the caller pushes NOTIFY_CONSUMER_IDS_CHANGED to the
// members of those groups. rocketmq-client-go never sends UNREGISTER_CLIENT,
// so members leave only through UnregisterConn (the TCP connection closed)
// or Expire (no heartbeat for the channel-expiry timeout, 120 s by default);
// both return the consumer groups that changed. A group whose last member
// leaves is removed together with its subscriptions. Producer groups are
// tracked the same way but never trigger notifications.
//
// A group's subscription table follows its latest heartbeat, as in Java: a
// new topic is added, a topic with a higher subVersion replaces the old
// entry, and topics absent from the heartbeat are removed. A 5.x Java
// client's lightweight heartbeat (withoutSub) leaves the table as it is.
//
// # Tag filtering
//
// The consume queue stores, per message, the Java String.hashCode of its
// TAGS property (UTF-16 code units, signed 32-bit, sign-extended to 64 bits).
// The Go client hashes UTF-8 bytes instead, so its codeSet is wrong for
// non-ASCII tags. The registry therefore ignores the client's codeSet and
// recomputes it from tagsSet (or from subString when tagsSet is empty) with
// JavaStringHash. BuildSubscription builds the same data from a
// subscription expression ("*", or tags joined by "||"), and
// (*SubscriptionData).MatchTagsCode applies the broker-side filter: "*"
// matches everything, otherwise the message's tag code must be in the code
// set. Hash collisions pass; the client re-checks tags by exact string.
//
// # SQL92 selectors
//
// Only "" and "TAG" (exactly) are tag subscriptions, as in RocketMQ. A
// subscription of type SQL92 is compiled with package filter when it is
// registered (Selector returns the compiled expression) and its
// MatchTagsCode passes everything: the broker evaluates the selector against
// each record's properties instead. A selector that does not compile, and
// any other expression type, is registered with its error rather than
// refusing the heartbeat (RocketMQ keeps such heartbeats; the group's pulls
// of that topic are refused): one heartbeat carries every group of a client,
// and refusing it whole would also unregister the client's healthy groups.
// BuildSelector builds the subscription a pull request carries, where a
// selector that does not compile is an error. A FilterCache, shared by the
// registry and the pull path, compiles each distinct selector once.
package clients

// Package broker is a RocketMQ-compatible broker that unmodified rocketmq-client-go (and Java)
// producers and consumers use: the remoting request handlers, long polling, role rules,
// name-server registration, and the wiring of the CommitLog store (libs/commitlog), the HA
// replication drivers (libs/hawire) and the metadata tables (meta) behind them. The master and
// slave binaries are thin mains around New, Start and Shutdown (see package service).
//
// # Roles
//
// ASYNC_MASTER answers a send once the message is appended; SYNC_MASTER also waits until
// inSyncReplicas copies (the master included; default 2) hold it. The wait's deadline is fixed
// when the send arrives (now + slaveTimeout, default 2 s, below the Go client's 3 s), and the
// answer states what happened: SEND_OK, FLUSH_SLAVE_TIMEOUT (stored on the master, not
// confirmed in time), SLAVE_NOT_AVAILABLE (no slave in sync when it arrived). Every stored
// send's answer also carries ext stored=true and replicas=<copies confirmed> (plus flushed=
// true|false under SYNC_FLUSH), so durability is explicit rather than inferred from the code.
// With minInSyncReplicas (strict mode) a send is refused before it is stored while too few
// copies are in sync (SYSTEM_ERROR "in-sync replicas not enough"; the Go client then tries
// another broker group).
//
// A SLAVE replicates its master's CommitLog (from haMasterAddress, or the haServerAddr the
// name servers return on registration) and serves reads. Writes get SERVICE_NOT_AVAILABLE
// "slave is read-only". A slave never serves an offset it has not replicated: beyond its end
// it answers PULL_RETRY_IMMEDIATELY with the requested offset ("not yet", after holding the
// pull like a long poll), never an offset correction; below its start it sends the consumer
// back to the master while the master is reachable.
//
// Master and slaves of a group (failover nodes included) prove to each other on every HA
// connection that they hold the group's shared secret (haSecret or haSecretFile, at least 16
// bytes; see libs/hawire): no role starts without one unless haAllowUnauthenticated=true, a
// peer without it never counts as a copy, and a slave never truncates, wipes or takes data for
// a master that did not prove it. A slave wipes its whole log for a master it shares nothing
// with only under haAllowWipe=true. Both opt-outs are warnings at every start.
//
// # Answers without parked goroutines
//
// SEND_MESSAGE and SEND_MESSAGE_V2 run on their connection's reader (a remoting
// InlineHandler): each send is checked and queued for the store (commitlog AppendQueued), and
// when the reader has no further request buffered, the burst it ran is written with one write
// (by the reader for a lone send, by the store's writer goroutine for more, so the reader goes
// on with the next burst). The write's completion continues every send it held: an answer due
// at once is queued on the connection without waiting for it (a client that does not read its
// answers gets them from the send pipeline), and the waits below are registered.
//
// Handlers never block on durability. A send that waits only for the slaves registers a
// callback (hawire WaitReplicatedFunc): the goroutine that reads the covering ack, or the
// deadline sweeper, answers it directly. A send that waits for a flush (and maybe the slaves)
// registers its flush waiter (commitlog WaitFlush) and replication waiter (hawire
// WaitReplicated) and hands them to the send pipeline, one goroutine that completes answers
// in arrival order. A pull with nothing to
// return is held by the long-polling service, one goroutine woken by the store's dispatch
// callback for that queue or by the hold deadline (min(suspendTimeoutMillis,
// brokerSuspendMaxTimeMillis)).
//
// # Clients
//
// Heartbeats feed the registry of package clients on every broker, slaves included (pulls
// take their subscription from it). A closed connection unregisters its clients at once and
// silent ones expire after 120 s; any change of a consumer group's members pushes
// NOTIFY_CONSUMER_IDS_CHANGED to the group. Heartbeats create the group's subscription config
// and its retry topic %RETRY%group, within the bounds described in autocreate.go
// (autoCreateSubscriptionGroupLimit, autoCreatePerHeartbeat, autoCreatePerConnection,
// heartbeatMaxGroups, heartbeatMaxSubscriptions); what they create is written to the table
// files in batches (metadataFlushInterval, metadataFlushBatch) and never expires. Sends create
// unknown topics from TBW102 until the topic table holds autoCreateTopicLimit topics
// (TOPIC_NOT_EXIST beyond), and the queue locks of orderly consumers (LOCK_BATCH_MQ) are bounded
// per group and in total (lockMaxQueuesPerGroup, lockMaxQueues; SYSTEM_BUSY beyond), see
// locks.go.
//
// # Stats over time
//
// Stored sends, pulls that found messages and send-backs are counted into RocketMQ's stats
// items (package brokerstats, statsitems.go): VIEW_BROKER_STATS_DATA, the consumeTps of
// GET_CONSUME_STATS and the rate keys of GET_BROKER_RUNTIME_INFO read them; statsMaxKeys bounds
// the keys of each family.
//
// # Delays and retries
//
// A message with DELAY=n (levels from messageDelayLevel, RocketMQ's "1s 5s ... 2h" by default;
// n beyond the table is clamped to its last level) is stored in SCHEDULE_TOPIC_XXXX queue n-1
// with its topic and queue in REAL_TOPIC and REAL_QID. On a writable master the delay service
// (package schedule) stores it in its topic when due, in order per level, and keeps each
// level's progress in delayOffset.json (GET_ALL_DELAY_OFFSET); package schedule states how many
// deliveries a kill -9 repeats.
//
// CONSUMER_SEND_MSG_BACK stores the consumed message again for %RETRY%group at level
// 3 + reconsumeTimes (or the level the consumer asked for), with reconsumeTimes + 1 and the
// first ORIGIN_MESSAGE_ID and RETRY_TOPIC kept. Once reconsumeTimes reaches maxReconsumeTimes
// (the request's, else the group's retryMaxTimes, 16 by default), or when the consumer asks for
// a negative level, it goes to %DLQ%group at once instead; that topic is created with one
// readable and writable queue and registered with the name servers. A consumer's fallback send
// to %RETRY%group follows the same limit. The retry topic itself is created on the consumer's
// heartbeat and registered (see Clients); clients pick up its route on their next refresh.
//
// # SQL92 filters
//
// With enablePropertyFilter, consumers subscribing with expressionType SQL92 (from their
// heartbeat, or carried by each pull) get only the messages whose properties the selector
// (package filter) is TRUE for; refusals and their codes, retry topics (filterSupportRetry) and
// the metrics are described in sqlfilter.go.
//
// # Request-reply
//
// SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 push a consumer's reply to its requester's
// connection (PUSH_REPLY_MESSAGE_TO_CLIENT, found by REPLY_TO_CLIENT among the producers that
// heartbeat this broker) and, with storeReplyMessageEnable, store it in its topic
// (<cluster>_REPLY_TOPIC, one queue, a system topic every broker creates). The answers, the
// differences from RocketMQ and the metrics are described in reply.go.
//
// # Transactional messages
//
// Half sends (TRAN_MSG=true) are stored in RMQ_SYS_TRANS_HALF_TOPIC and answered like any send;
// END_TRANSACTION commits (the message is stored in its topic once) or rolls back, and the
// master checks back unresolved halves with their producers (CHECK_TRANSACTION_STATE) every
// transactionCheckInterval; see transaction.go and package txn.
//
// # Not implemented
//
// Java's VIP port (listenPort-2) is not served.
package broker

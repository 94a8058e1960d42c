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
// # Answers without parked goroutines
//
// Handlers never block on durability. A send that must wait registers its flush waiter
// (commitlog WaitFlush) and replication waiter (hawire WaitReplicated) and hands them to the
// send pipeline, one goroutine that completes answers in arrival order; a pull with nothing to
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
// and its retry topic %RETRY%group.
//
// # Delays and retries
//
// A message with DELAY=n (and a message a consumer sends back, at level 3+reconsumeTimes) is
// stored in SCHEDULE_TOPIC_XXXX queue n-1; on a master the delay service (package schedule)
// moves it to its topic when due. Past maxReconsumeTimes a sent-back message goes to
// %DLQ%group at once.
//
// # Not implemented
//
// Transactions, SQL92 filters and Java's VIP port (listenPort-2) are not served.
package broker

// Package failover elects the master of one broker group (cluster, brokerName) through a
// coordinator (Consul in production) and drives the broker's role switches.
//
// # Layout in Consul
//
//	check   "rmqha-failover/<cluster>/<brokerName>/<node>"   one TTL check per node (LeaseTTL),
//	                                                       passed every PassInterval
//	session bound to that check (and serfHealth), LockDelay ~0, behaviour release
//	KV      rmqha/leader/<cluster>/<brokerName>            the lock: held by the master's session,
//	                                                       value = Leader JSON (node, addr, haAddr, epoch)
//	KV      rmqha/leader/<cluster>/<brokerName>/state      State JSON (epoch, master, inSync,
//	                                                       handover), written with compare-and-set
//	KV      rmqha/leader/<cluster>/<brokerName>/switchover a graceful switchover request
//
// A node is identified by its slave brokerId (unique within the group and stable across role
// switches; a master registers as brokerId 0).
//
// # Election
//
// Every node starts as a slave. A slave whose node is in the published in-sync set (or any
// slave when no state was ever published, or with Unclean) acquires the lock when nobody holds
// it, bumps the epoch in State with compare-and-set on its modify index (two writers cannot both
// win), promotes its broker to that epoch and publishes itself as the only in-sync member. The
// master republishes the in-sync set (slaves its HA master counts in sync) whenever it changes,
// again with compare-and-set: a master that loses a compare-and-set to a higher epoch steps down.
//
// # Lease and fencing
//
// The session lives as long as the node's check passes, and the node passes it only while
// its broker reports itself healthy (store writable, replication not failed); Consul marks the
// check critical LeaseTTL after the last pass it received, which invalidates the session and
// releases the lock. The master counts its lease from the moment it *sent* its last successful pass (the
// agent received it later, so the agent's expiry is no earlier) and fences writes at
// lastPassSent + LeaseTTL - SafetyMargin, even when clients can still reach it. The margin
// covers clock-rate differences and the time a write takes from the fence check to its
// acknowledgement; with the defaults (LeaseTTL 2s, SafetyMargin 600ms, PassInterval 250ms) a
// master cut off from Consul stops acknowledging 1.4s after its last successful pass, and a
// killed master's lock is free about 2s after its last pass.
//
// Trade-off: a shorter LeaseTTL fails over sooner but fences a master on shorter Consul hiccups
// (GC pauses, a loaded agent); the margin must exceed the worst pause between the fence check
// and a write's acknowledgement.
//
// # Configuration (broker keys)
//
//	enableFailover=true          off by default; every node runs the slave binary with
//	                             brokerRole=SLAVE, its own brokerId (the node id) and no
//	                             haMasterAddress; CONSUL_HTTP_ADDR names the Consul agent
//	failoverMasterRole           SYNC_MASTER (default) or ASYNC_MASTER for a promoted node
//	failoverLeaseTtl             LeaseTTL in ms (default 2000)
//	failoverSafetyMargin         SafetyMargin in ms (default 600)
//	uncleanFailover=true         a slave outside the in-sync set may take over (logged)
//	haSecretFile / haSecret      the group's HA secret: the same on every node, since any
//	                             node may serve as master or slave
//
// The election's view (lock holder, epoch, in-sync set, lease left, fenced) is in the
// broker's /status under "failover"; mqadmin switchover -b <brokerName> hands the master role
// over on command.
//
// # Choosing among several slaves
//
//	KV      rmqha/leader/<cluster>/<brokerName>/candidates/<node>   Candidate JSON (epoch,
//	                                                       maxOffset), held by the node's session
//
// Every slave keeps a candidacy with its last epoch and log end, rewritten when they change
// and released with its session. A slave that finds the lock free and is eligible leaves it to
// a live eligible candidate further ahead (later epoch, then longer log, then lower node id),
// and, while any other eligible candidate is alive, waits PollInterval after first seeing the
// lock free so that every candidacy shows the log end it had when the master stopped. With
// InSyncReplicas below the group size an acknowledged message may be on some in-sync slaves
// only; the slave furthest ahead holds every message any surviving slave holds.
//
// # Limits
//
// With failoverMasterRole=ASYNC_MASTER a send is answered before any slave has it: messages
// the old master answered but had not replicated are cut from its tail when it rejoins
// (logged, and counted in its /status as haSlave.Truncations and TruncatedBytes). Only
// SYNC_MASTER makes every SEND_OK survive a failover.
//
// The in-sync set is republished at most every PollInterval; a slave that fell out of sync
// within that window is still eligible, but loses to any candidate further ahead. A candidate
// that is alive yet cannot promote (its promotion keeps failing) makes the others wait for it.
package failover

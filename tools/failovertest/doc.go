// Package failovertest holds process tests of automatic failover: broker nodes started with
// enableFailover=true (all as SLAVE; the election on a real Consul promotes one), a name
// server, and a TCP proxy between each node and Consul. It covers kill -9 rounds under
// SYNC_MASTER load with a history check, kill -9 around a promotion and during the rejoin
// that truncates a divergent tail (ending with byte-identical logs), a partition of the master
// from Consul, a Consul restart, an out-of-sync slave that must not take over, a graceful
// switchover under load, and unmodified rocketmq-client-go producers and push consumers
// across failovers (no message lost, none consumed twice, delayed messages delivered once).
//
// FAILOVER_ROUNDS sets the number of kill rounds (default 5); RMQHA_SKIP_FAILOVER=1 skips the
// package.
package failovertest

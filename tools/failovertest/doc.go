// Package failovertest holds process tests of automatic failover: two broker nodes started
// with enableFailover=true (both as SLAVE; the election on a real Consul promotes one), a name
// server, a TCP proxy between each node and Consul, kill -9 rounds under SYNC_MASTER load with
// a history check, and a partition of the master from Consul.
//
// FAILOVER_ROUNDS sets the number of kill rounds (default 5).
package failovertest

// Package transtest holds process tests of transactional messages: a name server, a
// SYNC_MASTER and a slave started from the project's binaries (tools/e2e), driven by the
// unmodified rocketmq-client-go transaction producer (NewTransactionProducer). They cover
// COMMIT, ROLLBACK, UNKNOWN resolved by the check-back to commit and to rollback, that nothing
// is visible to a consumer before its commit, a graceful restart and a kill -9 of the master
// with halves pending (resolved by check-backs afterwards), and end with the invariants: every
// committed message readable exactly once, byte-exact, on the master and on the slave; no
// rolled-back message readable; the processes alive.
package transtest

// Package txn holds the pure parts of RocketMQ's transactional messages (4.9/5.x): the topic,
// group and property names, the op record body codec, the message rewrites (a send into its
// half, a half into its committed message, check copies, discarded halves, the body of a
// CHECK_TRANSACTION_STATE) and the Checker, the state of the check-back service. The broker
// (libs/broker transaction.go) drives them: it reads the half and op queues, appends what the
// Checker decides and sends the check-backs.
//
// # Queues
//
//	RMQ_SYS_TRANS_HALF_TOPIC/0      halves in arrival order, check copies appended behind them
//	RMQ_SYS_TRANS_OP_HALF_TOPIC/0   one op record (TAGS=d, body "<half queue offset>") per end
//	TRANS_CHECK_MAX_TIME_TOPIC/0    halves given up after transactionCheckMax check-backs
//
// A half carries REAL_TOPIC, REAL_QID and PGROUP; its sysFlag transaction type is cleared so
// that it is indexed in the half queue (the committed message gets the COMMIT type back). The
// check progress (next half offset, op offset below which every op is done) is kept as the
// consumer offsets of CID_RMQ_SYS_TRANS on queue 0 of the two topics.
//
// # Check rounds
//
// Each round reads the op records not read yet, then walks the half queue from the saved
// progress: a half an op record names (or whose UNIQ_KEY was resolved) is passed; one stored
// after the round began, or younger than transactionTimeOut (or its longer
// CHECK_IMMUNITY_TIME_IN_SECONDS), ends the round (halves behind it are younger); one checked
// transactionCheckMax times already is moved to TRANS_CHECK_MAX_TIME_TOPIC; any other gets a
// copy with TRANSACTION_CHECK_TIMES+1 and a check-back naming the copy.
//
// # What is delivered, and how often
//
// A commit stores the message once. A second END_TRANSACTION for the same half (a retried or
// repeated answer), an answer for another half of the same transaction (a check copy, or a
// half the producer's retried send stored twice, recognised by UNIQ_KEY) or for a half the
// scan passed resolved is answered SUCCESS and changes nothing. The answer to a check copy
// the scan has since passed unresolved (checked again or discarded) still counts for
// KeyWindow. Keys are remembered for KeyWindow (at least 3 transactionCheckIntervals) and at
// most MaxKeys; op records carry the UNIQ_KEY of their half as an extra property, so after a
// restart the keys of op records not yet passed are known again.
//
// Limits, stated: a kill -9 between the committed message and its op record (two appends)
// leaves the half unresolved; the next check-back's commit answer then delivers a second copy
// unless the key is still known (it is not after that restart). A key forgotten (beyond
// MaxKeys, or after KeyWindow) lets a commit answer for another half of the same transaction
// deliver again. A half with CHECK_IMMUNITY_TIME_IN_SECONDS holds back the checks of halves
// stored after it until its immunity passes (RocketMQ re-queues it instead).
package txn

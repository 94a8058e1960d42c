package txn

// Topics, the progress group, the op tag and the property keys of RocketMQ's transactional
// messages (TransactionalMessageUtil, MessageConst, MixAll), byte for byte.
const (
	// HalfTopic holds prepared (half) messages, all in queue 0.
	HalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// OpTopic holds one op record per resolved half, all in queue 0.
	OpTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// CheckMaxTimeTopic takes the halves still unresolved after transactionCheckMax checks.
	CheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// ProgressGroup is the consumer group under which the half and op queue progress is kept
	// in the consumer offset table (MixAll.CID_SYS_RMQ_TRANS): it persists and reaches the
	// slaves like any consumer offset.
	ProgressGroup = "CID_RMQ_SYS_TRANS"
	// OpTag is the TAGS of every op record (TransactionalMessageUtil.REMOVETAG).
	OpTag = "d"

	PropRealTopic       = "REAL_TOPIC"
	PropRealQueueID     = "REAL_QID"
	PropTranMsg         = "TRAN_MSG"
	PropProducerGroup   = "PGROUP"
	PropCheckTimes      = "TRANSACTION_CHECK_TIMES"
	PropImmunitySeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropUniqKey         = "UNIQ_KEY"
	PropTags            = "TAGS"
	PropWait            = "WAIT"
)

// Transaction types of sysFlag (MessageSysFlag) and of EndTransactionRequestHeader's
// commitOrRollback.
const (
	TypeNot      int32 = 0x0
	TypePrepared int32 = 0x4
	TypeCommit   int32 = 0x8
	TypeRollback int32 = 0xC
	TypeMask     int32 = 0xC
)

// ResetType returns sysFlag with its transaction type replaced by t
// (MessageSysFlag.resetTransactionValue).
func ResetType(sysFlag, t int32) int32 { return sysFlag&^TypeMask | t&TypeMask }

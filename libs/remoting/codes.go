package remoting

import "strconv"

// Request codes (the "code" of a request frame). Numbers follow Apache RocketMQ's RequestCode;
// names are the Java constant names in Go spelling. Every constant is typed int32: Java's code
// is an int and its 5.x codes (POP, 200050 and up) need more than 16 bits. The ROCKETMQ binary
// header carries 16 bits only (see AppendBinaryFrame).
const (
	SendMessage                      int32 = 10
	PullMessage                      int32 = 11
	QueryMessage                     int32 = 12
	QueryBrokerOffset                int32 = 13
	QueryConsumerOffset              int32 = 14
	UpdateConsumerOffset             int32 = 15
	UpdateAndCreateTopic             int32 = 17
	GetAllTopicConfig                int32 = 21
	GetTopicConfigList               int32 = 22
	GetTopicNameList                 int32 = 23
	UpdateBrokerConfig               int32 = 25
	GetBrokerConfig                  int32 = 26
	TriggerDeleteFiles               int32 = 27
	GetBrokerRuntimeInfo             int32 = 28
	SearchOffsetByTimestamp          int32 = 29
	GetMaxOffset                     int32 = 30
	GetMinOffset                     int32 = 31
	GetEarliestMsgStoretime          int32 = 32
	ViewMessageByID                  int32 = 33
	HeartBeat                        int32 = 34
	UnregisterClient                 int32 = 35
	ConsumerSendMsgBack              int32 = 36
	EndTransaction                   int32 = 37
	GetConsumerListByGroup           int32 = 38
	CheckTransactionState            int32 = 39
	NotifyConsumerIdsChanged         int32 = 40
	LockBatchMQ                      int32 = 41
	UnlockBatchMQ                    int32 = 42
	GetAllConsumerOffset             int32 = 43
	GetAllDelayOffset                int32 = 45
	CheckClientConfig                int32 = 46
	PutKVConfig                      int32 = 100
	GetKVConfig                      int32 = 101
	DeleteKVConfig                   int32 = 102
	RegisterBroker                   int32 = 103
	UnregisterBroker                 int32 = 104
	GetRouteInfoByTopic              int32 = 105
	GetBrokerClusterInfo             int32 = 106
	UpdateAndCreateSubscriptionGroup int32 = 200
	GetAllSubscriptionGroupConfig    int32 = 201
	GetTopicStatsInfo                int32 = 202
	GetConsumerConnectionList        int32 = 203
	GetProducerConnectionList        int32 = 204
	WipeWritePermOfBroker            int32 = 205
	GetAllTopicListFromNameServer    int32 = 206
	DeleteSubscriptionGroup          int32 = 207
	GetConsumeStats                  int32 = 208
	DeleteTopicInBroker              int32 = 215
	DeleteTopicInNameSrv             int32 = 216
	GetKVListByNamespace             int32 = 219
	ResetConsumerClientOffset        int32 = 220
	GetConsumerStatusFromClient      int32 = 221
	InvokeBrokerToResetOffset        int32 = 222
	InvokeBrokerToGetConsumerStatus  int32 = 223
	GetTopicsByCluster               int32 = 224
	QueryTopicConsumeByWho           int32 = 300
	GetSystemTopicListFromNS         int32 = 304
	GetSystemTopicListFromBroker     int32 = 305
	ViewBrokerStatsData              int32 = 315
	QueryConsumeTimeSpan             int32 = 303
	CloneGroupOffset                 int32 = 314
	GetConsumerRunningInfo           int32 = 307
	QueryCorrectionOffset            int32 = 308
	ConsumeMessageDirectly           int32 = 309
	SendMessageV2                    int32 = 310
	GetUnitTopicList                 int32 = 311
	GetHasUnitSubTopicList           int32 = 312
	GetHasUnitSubUnUnitTopicList     int32 = 313
	GetBrokerConsumeStats            int32 = 317
	UpdateNamesrvConfig              int32 = 318
	GetNamesrvConfig                 int32 = 319
	SendBatchMessage                 int32 = 320
	QueryConsumeQueue                int32 = 321
	QueryDataVersion                 int32 = 322
	SendReplyMessage                 int32 = 324
	SendReplyMessageV2               int32 = 325
	PushReplyMessageToClient         int32 = 326
	AddWritePermOfBroker             int32 = 327
	BrokerHeartbeat                  int32 = 904
)

// Response codes (the "code" of a response frame): RocketMQ's RemotingSysResponseCode (0..4)
// and ResponseCode (10..29, 604).
const (
	Success                   int32 = 0
	SystemError               int32 = 1
	SystemBusy                int32 = 2
	RequestCodeNotSupported   int32 = 3
	TransactionFailed         int32 = 4
	FlushDiskTimeout          int32 = 10
	SlaveNotAvailable         int32 = 11
	FlushSlaveTimeout         int32 = 12
	MessageIllegal            int32 = 13
	ServiceNotAvailable       int32 = 14
	VersionNotSupported       int32 = 15
	NoPermission              int32 = 16
	TopicNotExist             int32 = 17
	TopicExistAlready         int32 = 18
	PullNotFound              int32 = 19
	PullRetryImmediately      int32 = 20
	PullOffsetMoved           int32 = 21
	QueryNotFound             int32 = 22
	SubscriptionParseFailed   int32 = 23
	SubscriptionNotExist      int32 = 24
	SubscriptionNotLatest     int32 = 25
	SubscriptionGroupNotExist int32 = 26
	FilterDataNotExist        int32 = 27
	FilterDataNotLatest       int32 = 28
	InvalidParameter          int32 = 29
	// IllegalOperation answers an END_TRANSACTION sent after its half's check-immunity time.
	IllegalOperation  int32 = 604
	ConsumerNotOnline int32 = 206
	// ConsumeMsgTimeout answers a request the broker forwarded to a client (running info,
	// consume directly) that the client did not answer in time.
	ConsumeMsgTimeout int32 = 207
)

var requestNames = map[int32]string{
	SendMessage:                      "SEND_MESSAGE",
	PullMessage:                      "PULL_MESSAGE",
	QueryMessage:                     "QUERY_MESSAGE",
	QueryBrokerOffset:                "QUERY_BROKER_OFFSET",
	QueryConsumerOffset:              "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset:             "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic:             "UPDATE_AND_CREATE_TOPIC",
	GetAllTopicConfig:                "GET_ALL_TOPIC_CONFIG",
	GetTopicConfigList:               "GET_TOPIC_CONFIG_LIST",
	GetTopicNameList:                 "GET_TOPIC_NAME_LIST",
	UpdateBrokerConfig:               "UPDATE_BROKER_CONFIG",
	GetBrokerConfig:                  "GET_BROKER_CONFIG",
	TriggerDeleteFiles:               "TRIGGER_DELETE_FILES",
	GetBrokerRuntimeInfo:             "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp:          "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset:                     "GET_MAX_OFFSET",
	GetMinOffset:                     "GET_MIN_OFFSET",
	GetEarliestMsgStoretime:          "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID:                  "VIEW_MESSAGE_BY_ID",
	HeartBeat:                        "HEART_BEAT",
	UnregisterClient:                 "UNREGISTER_CLIENT",
	ConsumerSendMsgBack:              "CONSUMER_SEND_MSG_BACK",
	EndTransaction:                   "END_TRANSACTION",
	GetConsumerListByGroup:           "GET_CONSUMER_LIST_BY_GROUP",
	CheckTransactionState:            "CHECK_TRANSACTION_STATE",
	NotifyConsumerIdsChanged:         "NOTIFY_CONSUMER_IDS_CHANGED",
	LockBatchMQ:                      "LOCK_BATCH_MQ",
	UnlockBatchMQ:                    "UNLOCK_BATCH_MQ",
	GetAllConsumerOffset:             "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset:                "GET_ALL_DELAY_OFFSET",
	CheckClientConfig:                "CHECK_CLIENT_CONFIG",
	PutKVConfig:                      "PUT_KV_CONFIG",
	GetKVConfig:                      "GET_KV_CONFIG",
	DeleteKVConfig:                   "DELETE_KV_CONFIG",
	RegisterBroker:                   "REGISTER_BROKER",
	UnregisterBroker:                 "UNREGISTER_BROKER",
	GetRouteInfoByTopic:              "GET_ROUTEINFO_BY_TOPIC",
	GetBrokerClusterInfo:             "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	GetTopicStatsInfo:                "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList:        "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList:        "GET_PRODUCER_CONNECTION_LIST",
	WipeWritePermOfBroker:            "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameServer:    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:          "DELETE_SUBSCRIPTIONGROUP",
	GetConsumeStats:                  "GET_CONSUME_STATS",
	DeleteTopicInBroker:              "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNameSrv:             "DELETE_TOPIC_IN_NAMESRV",
	GetKVListByNamespace:             "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:        "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:      "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:        "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	GetTopicsByCluster:               "GET_TOPICS_BY_CLUSTER",
	QueryTopicConsumeByWho:           "QUERY_TOPIC_CONSUME_BY_WHO",
	GetSystemTopicListFromNS:         "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	GetSystemTopicListFromBroker:     "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	ViewBrokerStatsData:              "VIEW_BROKER_STATS_DATA",
	QueryConsumeTimeSpan:             "QUERY_CONSUME_TIME_SPAN",
	CloneGroupOffset:                 "CLONE_GROUP_OFFSET",
	GetConsumerRunningInfo:           "GET_CONSUMER_RUNNING_INFO",
	QueryCorrectionOffset:            "QUERY_CORRECTION_OFFSET",
	ConsumeMessageDirectly:           "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2:                    "SEND_MESSAGE_V2",
	GetUnitTopicList:                 "GET_UNIT_TOPIC_LIST",
	GetHasUnitSubTopicList:           "GET_HAS_UNIT_SUB_TOPIC_LIST",
	GetHasUnitSubUnUnitTopicList:     "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
	GetBrokerConsumeStats:            "GET_BROKER_CONSUME_STATS",
	UpdateNamesrvConfig:              "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig:                 "GET_NAMESRV_CONFIG",
	SendBatchMessage:                 "SEND_BATCH_MESSAGE",
	QueryConsumeQueue:                "QUERY_CONSUME_QUEUE",
	QueryDataVersion:                 "QUERY_DATA_VERSION",
	SendReplyMessage:                 "SEND_REPLY_MESSAGE",
	SendReplyMessageV2:               "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient:         "PUSH_REPLY_MESSAGE_TO_CLIENT",
	AddWritePermOfBroker:             "ADD_WRITE_PERM_OF_BROKER",
	BrokerHeartbeat:                  "BROKER_HEARTBEAT",
}

var responseNames = map[int32]string{
	Success:                   "SUCCESS",
	SystemError:               "SYSTEM_ERROR",
	SystemBusy:                "SYSTEM_BUSY",
	RequestCodeNotSupported:   "REQUEST_CODE_NOT_SUPPORTED",
	TransactionFailed:         "TRANSACTION_FAILED",
	FlushDiskTimeout:          "FLUSH_DISK_TIMEOUT",
	SlaveNotAvailable:         "SLAVE_NOT_AVAILABLE",
	FlushSlaveTimeout:         "FLUSH_SLAVE_TIMEOUT",
	MessageIllegal:            "MESSAGE_ILLEGAL",
	ServiceNotAvailable:       "SERVICE_NOT_AVAILABLE",
	VersionNotSupported:       "VERSION_NOT_SUPPORTED",
	NoPermission:              "NO_PERMISSION",
	TopicNotExist:             "TOPIC_NOT_EXIST",
	TopicExistAlready:         "TOPIC_EXIST_ALREADY",
	PullNotFound:              "PULL_NOT_FOUND",
	PullRetryImmediately:      "PULL_RETRY_IMMEDIATELY",
	PullOffsetMoved:           "PULL_OFFSET_MOVED",
	QueryNotFound:             "QUERY_NOT_FOUND",
	SubscriptionParseFailed:   "SUBSCRIPTION_PARSE_FAILED",
	SubscriptionNotExist:      "SUBSCRIPTION_NOT_EXIST",
	SubscriptionNotLatest:     "SUBSCRIPTION_NOT_LATEST",
	SubscriptionGroupNotExist: "SUBSCRIPTION_GROUP_NOT_EXIST",
	FilterDataNotExist:        "FILTER_DATA_NOT_EXIST",
	FilterDataNotLatest:       "FILTER_DATA_NOT_LATEST",
	InvalidParameter:          "INVALID_PARAMETER",
	IllegalOperation:          "ILLEGAL_OPERATION",
	ConsumerNotOnline:         "CONSUMER_NOT_ONLINE",
	ConsumeMsgTimeout:         "CONSUME_MSG_TIMEOUT",
}

// RequestName returns the RocketMQ name of a request code ("SEND_MESSAGE"), or "REQUEST_<n>"
// for codes outside the table.
func RequestName(code int32) string {
	if n, ok := requestNames[code]; ok {
		return n
	}
	return "REQUEST_" + strconv.Itoa(int(code))
}

// ResponseName returns the RocketMQ name of a response code ("SYSTEM_BUSY"), or "RESPONSE_<n>"
// for codes outside the table.
func ResponseName(code int32) string {
	if n, ok := responseNames[code]; ok {
		return n
	}
	return "RESPONSE_" + strconv.Itoa(int(code))
}

// Flag bits of the header's "flag" field.
const (
	// FlagResponse marks a response frame (bit 0).
	FlagResponse int32 = 1 << 0
	// FlagOneway marks a request that expects no response (bit 1). The Go client never sets it;
	// Java sets it on oneway calls and on broker pushes.
	FlagOneway int32 = 1 << 1
)

// Serialize types (byte 0 of the header word).
const (
	SerializeJSON     byte = 0
	SerializeRocketMQ byte = 1
)

// Protocol versions carried in the header's "version" field (MQVersion ordinals).
const (
	// VersionV4_5_2 is what rocketmq-client-go v2 sends; NewRequest uses it.
	VersionV4_5_2 int16 = 317
	// VersionV4_9_8 is what a 4.9.8 broker puts on responses; NewResponse uses it. The Go client
	// remembers it from heartbeat responses and refuses TAG subscriptions below V4_1_0.
	VersionV4_9_8 int16 = 409
)

// LanguageGo is the language name this package puts on frames it builds.
const LanguageGo = "GO"

// languages maps the numeric LanguageCode of the ROCKETMQ binary header to its enum name.
var languages = [...]string{
	0: "JAVA", 1: "CPP", 2: "DOTNET", 3: "PYTHON", 4: "DELPHI", 5: "ERLANG", 6: "RUBY",
	7: "OTHER", 8: "HTTP", 9: "GO", 10: "PHP", 11: "OMS", 12: "RUST", 13: "NODE_JS",
}

const languageOther = 7

// LanguageName returns the enum name of a binary language code, or "UNKNOWN".
func LanguageName(code byte) string {
	if int(code) < len(languages) {
		return languages[code]
	}
	return "UNKNOWN"
}

// LanguageCode returns the binary language code of an enum name (OTHER when unknown).
func LanguageCode(name string) byte {
	if name == "" {
		return 9
	}
	for i, n := range languages {
		if n == name {
			return byte(i)
		}
	}
	return languageOther
}

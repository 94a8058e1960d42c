package broker

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/libs/tlsconf"
)

// Broker roles (brokerRole).
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// Flush disk types (flushDiskType).
const (
	FlushAsync = "ASYNC_FLUSH"
	FlushSync  = "SYNC_FLUSH"
)

// Config is the broker configuration. Fields carry RocketMQ's key names in their
// prop tags, so a Java broker.conf loads unchanged (unknown keys are refused by
// libs/props, so a typo never falls back to a default).
type Config struct {
	// BrokerClusterName is the cluster this broker group belongs to. Default "DefaultCluster".
	BrokerClusterName string `prop:"brokerClusterName"`
	// BrokerName names the broker group (master and its slaves share it). Default "broker-a".
	BrokerName string `prop:"brokerName"`
	// BrokerID is 0 for a master, ≥ 1 for a slave. Default 0.
	BrokerID int64 `prop:"brokerId"`
	// BrokerRole is ASYNC_MASTER, SYNC_MASTER or SLAVE. Default ASYNC_MASTER.
	BrokerRole string `prop:"brokerRole"`
	// ListenPort is the remoting port clients use. Default 10911.
	ListenPort int `prop:"listenPort"`
	// HAListenPort is the master's replication port; 0 means ListenPort+1. Default 0.
	HAListenPort int `prop:"haListenPort"`
	// HAMasterAddress is the master's HA address ("host:port") a slave dials; empty means the
	// haServerAddr returned by the name servers on registration. Default "".
	HAMasterAddress string `prop:"haMasterAddress"`
	// NamesrvAddr lists the name servers, separated by ';'. Empty disables registration. Default "".
	NamesrvAddr string `prop:"namesrvAddr"`
	// StorePathRootDir holds commitlog/, consumequeue/, config/ and the epoch file. Default "./store".
	StorePathRootDir string `prop:"storePathRootDir"`
	// FlushDiskType is ASYNC_FLUSH or SYNC_FLUSH. Default ASYNC_FLUSH.
	FlushDiskType string `prop:"flushDiskType"`
	// BrokerIP1 is the address advertised to clients (brokerAddr and the store host of message
	// ids). Default: the first non-loopback IPv4 address, or 127.0.0.1.
	BrokerIP1 string `prop:"brokerIP1"`
	// BrokerIP2 is the address advertised for HA (haServerAddr). Default BrokerIP1.
	BrokerIP2 string `prop:"brokerIP2"`
	// BindAddress is the local address both ports listen on. Default "0.0.0.0".
	BindAddress string `prop:"bindAddress"`
	// SlaveReadEnable lets a master suggest slaves to consumers that fall far behind, and a slave
	// keep consumers that it serves. Default false.
	SlaveReadEnable bool `prop:"slaveReadEnable"`
	// BrokerPermission is this broker's own PermName bits (RocketMQ's brokerPermission): 4 read,
	// 2 write, 6 both. Registrations carry every topic's perm & brokerPermission, so without 2
	// the routes lose write (producers move to the other brokers) and sends are refused
	// NO_PERMISSION; without 4 pulls are refused NO_PERMISSION. Per process: a promoted slave
	// keeps its own. Changes at runtime (UPDATE_BROKER_CONFIG). Default 6.
	BrokerPermission int32 `prop:"brokerPermission"`
	// AutoCreateTopicEnable creates TBW102 and lets sends create unknown topics. Default true.
	AutoCreateTopicEnable bool `prop:"autoCreateTopicEnable"`
	// AutoCreateSubscriptionGroup creates unknown consumer groups on first use. Default true.
	AutoCreateSubscriptionGroup bool `prop:"autoCreateSubscriptionGroup"`
	// DefaultTopicQueueNums is TBW102's queue count, the upper bound of auto-created topics. Default 8.
	DefaultTopicQueueNums int `prop:"defaultTopicQueueNums"`
	// MaxMessageSize is the largest message body in bytes. Default 4 MiB.
	MaxMessageSize int `prop:"maxMessageSize"`
	// MappedFileSizeCommitLog is the CommitLog segment size in bytes. Default 1 GiB.
	MappedFileSizeCommitLog int64 `prop:"mappedFileSizeCommitLog"`
	// FlushIntervalCommitLog is how often ASYNC_FLUSH syncs dirty pages. Default 500ms.
	FlushIntervalCommitLog time.Duration `prop:"flushIntervalCommitLog,ms"`
	// SyncFlushTimeout is how long a SYNC_FLUSH send waits for its fsync before answering
	// FLUSH_DISK_TIMEOUT. Default 5s.
	SyncFlushTimeout time.Duration `prop:"syncFlushTimeout,ms"`
	// SlaveTimeout is the SYNC_MASTER replication wait, fixed when the send arrives; past it the
	// answer is FLUSH_SLAVE_TIMEOUT. Default 2s, below the Go client's 3s send timeout.
	SlaveTimeout time.Duration `prop:"slaveTimeout,ms"`
	// HAMaxGapNotInSync: a slave further behind than this many bytes is not in sync. Default 256 MiB.
	HAMaxGapNotInSync int64 `prop:"haMaxGapNotInSync"`
	// InSyncReplicas is the number of copies (master included) a SYNC_MASTER send needs.
	// Default 2 (one slave).
	InSyncReplicas int `prop:"inSyncReplicas"`
	// MinInSyncReplicas enables strict mode: sends are refused before they are stored while fewer
	// copies (master included) are in sync. 0 or 1 = off. Default 0.
	MinInSyncReplicas int `prop:"minInSyncReplicas"`
	// HASendHeartbeatInterval is the longest silence between two slave acks. Default 5s.
	HASendHeartbeatInterval time.Duration `prop:"haSendHeartbeatInterval,ms"`
	// HAHousekeepingInterval drops a silent HA peer. Default 20s.
	HAHousekeepingInterval time.Duration `prop:"haHousekeepingInterval,ms"`
	// HATransferBatchSize is the most CommitLog bytes in one HA data frame. Default 1 MiB.
	HATransferBatchSize int `prop:"haTransferBatchSize"`
	// HA link authentication (both ends prove the group's shared secret on every connection; see
	// libs/hawire). Every broker of a group, failover nodes included, uses the same secret.
	//
	// HASecret is the shared HA secret, at least 16 bytes. Set it or haSecretFile: without
	// either a broker refuses to start unless haAllowUnauthenticated=true. Masked in the
	// start-up line. Default "".
	HASecret string `prop:"haSecret"`
	// HASecretFile is a file whose content, surrounding white space trimmed, is the HA secret
	// (at least 16 bytes); an unreadable or short file refuses start, and so does setting both
	// haSecret and haSecretFile. Default "".
	HASecretFile string `prop:"haSecretFile"`
	// HAAllowUnauthenticated runs the HA link without a secret: anyone who reaches the HA port
	// can pose as a slave (and turn SLAVE_NOT_AVAILABLE into SEND_OK), anyone at the master's
	// address as the master. Only for networks where nothing else can connect; a warning at
	// every start. Default false.
	HAAllowUnauthenticated bool `prop:"haAllowUnauthenticated"`
	// HAAllowWipe lets a master that proved itself make this slave wipe its whole non-empty log
	// and copy everything again, when the two logs share nothing above the slave's oldest
	// segment or the slave's log ends before the master's oldest segment. Off, the slave
	// refuses (and reports it) or stops. A warning at start and at every wipe. Default false.
	HAAllowWipe bool `prop:"haAllowWipe"`
	// HATLSEnable runs the HA link over TLS: the master's HA port serves the remoting port's
	// server certificate and client-certificate policy (tls.server.*, a self-signed one in
	// tls.test.mode.enable), and a slave dials with the client settings (tls.client.*: verify
	// the master with tls.client.authServer, present tls.client.certPath). The secret's proofs
	// run inside TLS; TLS keeps an on-path attacker from altering replicated records. Every
	// node of a group must agree. Default false.
	HATLSEnable bool `prop:"haTlsEnable"`
	// RegisterNameServerPeriod is the registration period, clamped to [10s, 60s]. Default 30s.
	RegisterNameServerPeriod time.Duration `prop:"registerNameServerPeriod,ms"`
	// BrokerSuspendMaxTime caps how long a long-polling pull is held. Default 15s.
	BrokerSuspendMaxTime time.Duration `prop:"brokerSuspendMaxTimeMillis,ms"`
	// AccessMessageInMemoryMaxRatio: a consumer whose backlog exceeds this percentage of physical
	// memory is suggested a slave (with slaveReadEnable). Default 40.
	AccessMessageInMemoryMaxRatio int `prop:"accessMessageInMemoryMaxRatio"`
	// FileReservedTime is how long CommitLog segments are kept, in hours. Default 72.
	FileReservedTime int `prop:"fileReservedTime"`
	// DeleteWhen lists the hours of day (two digits, ';'-separated) expired segments are deleted at.
	// Default "04".
	DeleteWhen string `prop:"deleteWhen"`
	// DiskMaxUsedSpaceRatio is the disk usage percentage above which the oldest segments go at once.
	// Default 75.
	DiskMaxUsedSpaceRatio int `prop:"diskMaxUsedSpaceRatio"`
	// MessageDelayLevel is the delay-level table ("1s 5s ... 2h"): DELAY=n waits the n-th delay,
	// and consumer retries use level 3+reconsumeTimes. Default RocketMQ's 18 levels.
	MessageDelayLevel string `prop:"messageDelayLevel"`
	// MessageIndexEnable keeps the message index (store/index/) of every stored message's KEYS
	// and UNIQ_KEY, which QUERY_MESSAGE answers from (mqadmin queryMsgByKey,
	// queryMsgByUniqueKey). Default true.
	MessageIndexEnable bool `prop:"messageIndexEnable"`
	// MaxHashSlotNum is the number of hash slots per index file. Default 500000, a tenth of
	// RocketMQ's 5000000 (see README: the slot table of every file is 2 MB, not 20 MB).
	MaxHashSlotNum int `prop:"maxHashSlotNum"`
	// MaxIndexNum is the number of entries per index file. Default 2000000, a tenth of
	// RocketMQ's 20000000: a full file is 42 MB, not 420 MB.
	MaxIndexNum int `prop:"maxIndexNum"`
	// TimerWheelEnable serves RocketMQ 5 timer messages (TIMER_DELIVER_MS, TIMER_DELAY_SEC,
	// TIMER_DELAY_MS); off, such a send is refused with SYSTEM_ERROR. Default true.
	TimerWheelEnable bool `prop:"timerWheelEnable"`
	// TimerMaxDelaySec is the furthest ahead a timer may be, in seconds; further is refused
	// with MESSAGE_ILLEGAL. Default 259200 (3 days).
	TimerMaxDelaySec int `prop:"timerMaxDelaySec"`
	// TimerPrecisionMs is the timer slot in ms: a timer fires at the end of its slot, never
	// before the time asked. Default 1000.
	TimerPrecisionMs int `prop:"timerPrecisionMs"`
	// TimerFlushIntervalMs is how often the timer index is fsynced and its checkpoint written,
	// in ms; a kill -9 re-delivers the timers delivered since. Default 1000.
	TimerFlushIntervalMs int `prop:"timerFlushIntervalMs"`
	// HTTPPort serves /health, /status and /metrics; 0 disables it. Default 0.
	HTTPPort int `prop:"httpPort"`
	// MetricsEnable turns on the per-request instrumentation (send and pull counts and
	// latencies, flush and replication waits, fsync times, long-poll wake-ups). State read at
	// scrape time (offsets, lag, in-sync count, versions) is served either way. Default true.
	MetricsEnable bool `prop:"metricsEnable"`
	// NatsURL is the NATS server(s) of metadata announcements (comma separated); empty takes
	// the NATS_URL environment variable, and none turns announcements off. A master rings
	// metasync's doorbell when a table changes; a slave listens for new table versions.
	NatsURL string `prop:"natsUrl"`
	// MetasyncAddrs are the HTTP addresses (host:port or URLs) of metasync instances a slave
	// fetches announced table snapshots from. Empty: the slave pulls tables from its master on
	// metasyncFallbackInterval instead.
	MetasyncAddrs []string `prop:"metasyncAddrs"`
	// MetasyncFallbackInterval is how often a slave pulls the tables from its master itself when
	// NATS or metasync is unavailable. Default 30s.
	MetasyncFallbackInterval time.Duration `prop:"metasyncFallbackInterval,ms"`
	// LogLevel is a logrus level name (used by the services). Default "info".
	LogLevel string `prop:"logLevel"`
	// LogFormat is text or json (used by the services). Default "text".
	LogFormat string `prop:"logFormat"`
	// EnableFailover turns on automatic failover through Consul (CONSUL_HTTP_ADDR): every node
	// of the group starts as SLAVE (brokerId = its node id) and the election promotes one.
	// Default false.
	EnableFailover bool `prop:"enableFailover"`
	// FailoverMasterRole is the role a promoted node takes: SYNC_MASTER or ASYNC_MASTER.
	// Default SYNC_MASTER.
	FailoverMasterRole string `prop:"failoverMasterRole"`
	// FailoverLeaseTTL is the TTL of the node's Consul check that keeps its session (and the
	// master's lock) alive: shorter fails over sooner but fences on shorter Consul hiccups.
	// Default 2s.
	FailoverLeaseTTL time.Duration `prop:"failoverLeaseTtl,ms"`
	// FailoverSafetyMargin: a master that could not renew its lease fences writes this long
	// before the lease can have ended. Default 600ms.
	FailoverSafetyMargin time.Duration `prop:"failoverSafetyMargin,ms"`
	// UncleanFailover lets a slave outside the published in-sync set take over (acknowledged
	// messages may be lost; logged). Default false.
	UncleanFailover bool `prop:"uncleanFailover"`
	// RegistrationSecret is the cluster registration secret (at least 16 bytes, the name
	// servers' registrationSecret): REGISTER_BROKER and UNREGISTER_BROKER are signed with it
	// under the access key "rmqha-broker". Empty (and no registrationSecretFile): they go
	// unsigned, which only name servers with registrationAllowUnauthenticated accept.
	// Default "".
	RegistrationSecret string `prop:"registrationSecret"`
	// RegistrationSecretFile is a file holding the registration secret (surrounding white
	// space trimmed); unreadable refuses start. Exclusive with registrationSecret. Default "".
	RegistrationSecretFile string `prop:"registrationSecretFile"`
	// AdminAllowUnauthenticated lets unsigned requests change this broker's metadata,
	// configuration and offsets while ACL is off (UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG,
	// DELETE_TOPIC_IN_BROKER, the subscription-group writes, INVOKE_BROKER_TO_RESET_OFFSET,
	// CLONE_GROUP_OFFSET; see adminguard.go). Without it those requests
	// must be signed with the registration secret under access key "rmqha-broker" (mqadmin
	// -registrationSecretFile), as the name servers' admin writes are. Logged as a warning at
	// every start while set. Default false.
	AdminAllowUnauthenticated bool `prop:"adminAllowUnauthenticated"`

	// Remoting transport: RocketMQ's tls.* keys (libs/tlsconf; the remoting port's mode and
	// certificates, and tls.enable for this broker's client to the name servers) and the
	// remoting port's bounds (libs/remoting ServerKeys).
	tlsconf.Config
	remoting.ServerKeys
	// HTTPTLSEnable serves the status HTTP port (httpPort) over HTTPS with the remoting
	// port's server certificate (tls.server.certPath, or test mode's). Default false.
	HTTPTLSEnable bool `prop:"httpTlsEnable"`
	// HTTPPprofEnable serves net/http/pprof under /debug/pprof/ on the status HTTP port
	// (httpPort, over HTTPS with httpTlsEnable); a warning is logged at each start while it is
	// on. Default false.
	HTTPPprofEnable bool `prop:"httpPprofEnable"`

	// --- Access control (libs/acl), RocketMQ 4.x plain ACL. ---

	// AclEnable checks every remoting request against aclPlainFile: signed by a known account
	// and permitted (PUB to send, SUB to consume, admin accounts for the admin codes), or
	// answered NO_PERMISSION. Default false, as in RocketMQ.
	AclEnable bool `prop:"aclEnable"`
	// AclPlainFile is the plain_acl.yml (RocketMQ's system property rocketmq.acl.plain.file):
	// relative paths are under ROCKETMQ_HOME when that is set, else under the working
	// directory. Reloaded when it changes. Default "conf/plain_acl.yml".
	AclPlainFile string `prop:"aclPlainFile"`
	// AccessKey and SecretKey sign this broker's own requests: registrations with the name
	// servers and, on a slave, its metadata pulls from the master. With ACL on there, they must
	// be an admin account's. Both or neither. Default "".
	AccessKey string `prop:"accessKey"`
	SecretKey string `prop:"secretKey"`

	// --- SQL92 property filtering (libs/filter; sqlfilter.go). ---

	// EnablePropertyFilter serves consumers that subscribe with SQL92 selectors
	// (expressionType SQL92): each message is delivered only when the selector is TRUE for
	// its properties. Off, their pulls and CHECK_CLIENT_CONFIG are answered SYSTEM_ERROR "The
	// broker does not support consumer to filter message by SQL92"; heartbeats are accepted
	// either way. Default false, as in RocketMQ.
	EnablePropertyFilter bool `prop:"enablePropertyFilter"`
	// FilterSupportRetry also filters a group's retry topic (%RETRY%group): each retried
	// message is evaluated against the group's SQL92 selector for the topic it came from
	// (RETRY_TOPIC). Off, retried messages are delivered unfiltered. Needs
	// enablePropertyFilter. Default false, as in RocketMQ.
	FilterSupportRetry bool `prop:"filterSupportRetry"`

	// --- Request-reply (reply.go). ---

	// StoreReplyMessageEnable also stores every reply (SEND_REPLY_MESSAGE) in its topic, pushed
	// to its requester or not. On, a slave refuses replies (SERVICE_NOT_AVAILABLE) as it
	// refuses sends; off, nothing is stored and any broker the requester heartbeats pushes.
	// Default true, as in RocketMQ.
	StoreReplyMessageEnable bool `prop:"storeReplyMessageEnable"`
	// --- Transactional messages (package txn; transaction.go). ---

	// RejectTransactionMessage refuses half (TRAN_MSG) sends with NO_PERMISSION, as RocketMQ
	// does. Default false.
	RejectTransactionMessage bool `prop:"rejectTransactionMessage"`
	// TransactionTimeOut is how old a half must be before the master checks it back with its
	// producer (CHECK_IMMUNITY_TIME_IN_SECONDS raises it per message). Default 6000 ms.
	TransactionTimeOut time.Duration `prop:"transactionTimeOut,ms"`
	// TransactionCheckInterval is how often the master scans the half queue for halves to
	// check back. Default 60000 ms.
	TransactionCheckInterval time.Duration `prop:"transactionCheckInterval,ms"`
	// TransactionCheckMax is how many check-backs a half gets before it is moved to
	// TRANS_CHECK_MAX_TIME_TOPIC. Default 15.
	TransactionCheckMax int `prop:"transactionCheckMax"`

	// Bounds on what clients make the broker create and store (heartbeats, pulls, send-backs
	// and sends to %RETRY% topics auto-create subscription groups and retry topics).
	//
	// AutoCreateSubscriptionGroupLimit: no group is auto-created once the subscription group
	// table holds this many (admin updateSubGroup is not limited); 0 means no limit.
	// Default 10000.
	AutoCreateSubscriptionGroupLimit int `prop:"autoCreateSubscriptionGroupLimit"`
	// AutoCreateTopicLimit: a send to an unknown topic creates none once the topic table
	// holds this many topics, retry topics included (admin updateTopic, retry and dead-letter
	// topics are not limited); it is answered TOPIC_NOT_EXIST naming the key. It keeps a
	// stranger's sends from growing topics.json and every registration without bound (name
	// servers refuse registrations over maxTopicsPerRegistration, 32768). 0 means no limit.
	// Default 20000.
	AutoCreateTopicLimit int `prop:"autoCreateTopicLimit"`
	// LockMaxQueuesPerGroup is the most queues one consumer group may hold locked
	// (LOCK_BATCH_MQ of orderly consumers); a request whose new locks do not fit is answered
	// SYSTEM_BUSY and locks nothing. Expired locks are dropped first. 0 means no limit.
	// Default 4096.
	LockMaxQueuesPerGroup int `prop:"lockMaxQueuesPerGroup"`
	// LockMaxQueues is the most queue locks of all groups together, with the same refusal.
	// 0 means no limit. Default 65536.
	LockMaxQueues int `prop:"lockMaxQueues"`
	// AutoCreatePerHeartbeat is the most groups plus retry topics one heartbeat may create;
	// the rest of its new groups are refused (SUBSCRIPTION_GROUP_NOT_EXIST) and created by a
	// later heartbeat. 0 means no limit. Default 128 (64 groups with their retry topics).
	AutoCreatePerHeartbeat int `prop:"autoCreatePerHeartbeat"`
	// AutoCreatePerConnection is the most groups plus retry topics the requests of one
	// connection may create over its life. 0 means no limit. Default 1000.
	AutoCreatePerConnection int `prop:"autoCreatePerConnection"`
	// HeartbeatMaxGroups is the most producer plus consumer entries one heartbeat may carry;
	// a larger one is refused whole (SYSTEM_ERROR). Default 1024.
	HeartbeatMaxGroups int `prop:"heartbeatMaxGroups"`
	// StatsMaxKeys is the most keys each family of broker stats holds (topics of
	// TOPIC_PUT_*, topic@group pairs of GROUP_GET_* and of SNDBCK_PUT_NUMS; about 1 KiB of
	// samples per key and name): a key past it is not counted (VIEW_BROKER_STATS_DATA answers
	// it does not exist; the broker totals still count it). 0 means no limit. Default 10000.
	StatsMaxKeys int `prop:"statsMaxKeys"`
	// MaxStatsIdleTimeInMinutes drops a stats key whose counts have not moved for this many
	// minutes, as RocketMQ 5: negative never (the default, -1), 0 to 10 mean 30.
	MaxStatsIdleTimeInMinutes int `prop:"maxStatsIdleTimeInMinutes"`
	// HeartbeatMaxSubscriptions is the most subscriptions (all consumer entries together) one
	// heartbeat may carry; a larger one is refused whole. Default 4096.
	HeartbeatMaxSubscriptions int `prop:"heartbeatMaxSubscriptions"`
	// MetadataFlushInterval is the longest a heartbeat- or pull-created group or retry topic
	// waits before its table is rewritten (topics.json, subscriptionGroup.json). Default 500ms.
	MetadataFlushInterval time.Duration `prop:"metadataFlushInterval,ms"`
	// MetadataFlushBatch rewrites a table at once when this many of its changes are not yet
	// written. Default 1000.
	MetadataFlushBatch int `prop:"metadataFlushBatch"`

	// ClientExpiry drops a client connection silent for this long. Default 120s. Not a property.
	ClientExpiry time.Duration
	// ClientCallTimeout bounds the wait for a client's answer to a request the broker forwards
	// (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY). Default 10s (RocketMQ's
	// Broker2Client). Not a property.
	ClientCallTimeout time.Duration
	// OffsetPersistInterval is how often consumer offsets are written. Default 5s. Not a property.
	OffsetPersistInterval time.Duration
	// Now is the clock. Default time.Now. Not a property.
	Now func() time.Time
	// StoreFS is the CommitLog store's file system; nil means the operating system's. Tests use
	// it to simulate slow or failing disks. Not a property.
	StoreFS vfs.FS
	// ConfigFile is the properties file the broker was started with (-c); UPDATE_BROKER_CONFIG
	// writes the keys it changes into it. Empty: updates apply until the broker stops. Not a
	// property.
	ConfigFile string
	// ConfigFS is ConfigFile's file system; nil means the operating system's. Not a property.
	ConfigFS vfs.FS
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		BrokerClusterName:             "DefaultCluster",
		BrokerName:                    "broker-a",
		BrokerID:                      0,
		BrokerRole:                    RoleAsyncMaster,
		ListenPort:                    10911,
		StorePathRootDir:              "./store",
		FlushDiskType:                 FlushAsync,
		BindAddress:                   "0.0.0.0",
		AutoCreateTopicEnable:         true,
		AutoCreateSubscriptionGroup:   true,
		DefaultTopicQueueNums:         8,
		MaxMessageSize:                4 << 20,
		MappedFileSizeCommitLog:       1 << 30,
		FlushIntervalCommitLog:        500 * time.Millisecond,
		SyncFlushTimeout:              5 * time.Second,
		SlaveTimeout:                  2 * time.Second,
		HAMaxGapNotInSync:             256 << 20,
		InSyncReplicas:                2,
		HASendHeartbeatInterval:       5 * time.Second,
		HAHousekeepingInterval:        20 * time.Second,
		HATransferBatchSize:           1 << 20,
		RegisterNameServerPeriod:      30 * time.Second,
		BrokerSuspendMaxTime:          15 * time.Second,
		AccessMessageInMemoryMaxRatio: 40,
		FileReservedTime:              72,
		DeleteWhen:                    "04",
		DiskMaxUsedSpaceRatio:         75,
		MessageDelayLevel:             schedule.DefaultMessageDelayLevel,
		TransactionTimeOut:            6 * time.Second,
		TransactionCheckInterval:      60 * time.Second,
		TransactionCheckMax:           15,
		TimerWheelEnable:              true,
		TimerMaxDelaySec:              3 * 24 * 3600,
		TimerPrecisionMs:              1000,
		TimerFlushIntervalMs:          1000,
		MetasyncFallbackInterval:      30 * time.Second,
		MetricsEnable:                 true,
		MessageIndexEnable:            true,
		MaxHashSlotNum:                500000,
		MaxIndexNum:                   2000000,
		LogLevel:                      "info",
		LogFormat:                     "text",
		FailoverMasterRole:            RoleSyncMaster,
		FailoverLeaseTTL:              2 * time.Second,
		FailoverSafetyMargin:          600 * time.Millisecond,
		AclPlainFile:                  "conf/plain_acl.yml",
		StoreReplyMessageEnable:       true,
		BrokerPermission:              route.PermRead | route.PermWrite,
		ClientExpiry:                  120 * time.Second,
		ClientCallTimeout:             callClientTimeout,
		OffsetPersistInterval:         5 * time.Second,
		Config:                        tlsconf.DefaultConfig(),
		ServerKeys:                    remoting.DefaultServerKeys(),

		// Bounds on client-created metadata.
		AutoCreateSubscriptionGroupLimit: 10000,
		AutoCreateTopicLimit:             20000,
		LockMaxQueuesPerGroup:            4096,
		LockMaxQueues:                    65536,
		AutoCreatePerHeartbeat:           128,
		AutoCreatePerConnection:          1000,
		HeartbeatMaxGroups:               1024,
		HeartbeatMaxSubscriptions:        4096,
		StatsMaxKeys:                     10000,
		MaxStatsIdleTimeInMinutes:        -1,
		MetadataFlushInterval:            500 * time.Millisecond,
		MetadataFlushBatch:               1000,
	}
}

// IsMaster reports whether the role is one of the master roles.
func (c Config) IsMaster() bool { return isMasterRole(c.BrokerRole) }

// isMasterRole reports whether role is SYNC_MASTER or ASYNC_MASTER.
func isMasterRole(role string) bool { return role == RoleAsyncMaster || role == RoleSyncMaster }

// Validate names the first offending key; role and broker id must agree.
func (c Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, key, fmt.Sprintf(format, a...))
	}
	switch c.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster:
		if c.BrokerID != 0 {
			return bad("brokerId", "brokerRole=%s needs brokerId=0, got brokerId=%d", c.BrokerRole, c.BrokerID)
		}
	case RoleSlave:
		if c.BrokerID < 1 {
			return bad("brokerId", "brokerRole=SLAVE needs brokerId >= 1, got brokerId=%d", c.BrokerID)
		}
	default:
		return bad("brokerRole", "%q is not ASYNC_MASTER, SYNC_MASTER or SLAVE", c.BrokerRole)
	}
	if err := c.validateFailover(bad); err != nil {
		return err
	}
	if c.BrokerClusterName == "" {
		return bad("brokerClusterName", "empty")
	}
	if c.BrokerName == "" || strings.ContainsAny(c.BrokerName, " ,;\"") {
		return bad("brokerName", "%q is empty or holds a space, comma, semicolon or quote", c.BrokerName)
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		return bad("listenPort", "%d out of range", c.ListenPort)
	}
	if c.HAListenPort < 0 || c.HAListenPort > 65535 {
		return bad("haListenPort", "%d out of range", c.HAListenPort)
	}
	if c.HAListenPort != 0 && c.HAListenPort == c.ListenPort {
		return bad("haListenPort", "equals listenPort %d", c.ListenPort)
	}
	if c.HAMasterAddress != "" {
		if c.IsMaster() {
			return bad("haMasterAddress", "set on brokerRole=%s; only a SLAVE dials a master", c.BrokerRole)
		}
		if _, _, err := net.SplitHostPort(c.HAMasterAddress); err != nil {
			return bad("haMasterAddress", "%q is not host:port", c.HAMasterAddress)
		}
	}
	for _, a := range c.NamesrvAddrs() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return bad("namesrvAddr", "%q is not host:port", a)
		}
	}
	if c.BrokerPermission < 0 || c.BrokerPermission > route.PermRead|route.PermWrite|route.PermInherit {
		return bad("brokerPermission", "%d is not a PermName (4 read, 2 write, 6 both)", c.BrokerPermission)
	}
	if c.StorePathRootDir == "" {
		return bad("storePathRootDir", "empty")
	}
	if c.FlushDiskType != FlushAsync && c.FlushDiskType != FlushSync {
		return bad("flushDiskType", "%q is not ASYNC_FLUSH or SYNC_FLUSH", c.FlushDiskType)
	}
	for key, ip := range map[string]string{"brokerIP1": c.BrokerIP1, "brokerIP2": c.BrokerIP2, "bindAddress": c.BindAddress} {
		if ip == "" {
			continue
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			return bad(key, "%q is not an IP address", ip)
		}
	}
	if c.DefaultTopicQueueNums < 1 || c.DefaultTopicQueueNums > 1024 {
		return bad("defaultTopicQueueNums", "%d not in [1, 1024]", c.DefaultTopicQueueNums)
	}
	if c.MaxMessageSize < 1 {
		return bad("maxMessageSize", "%d < 1", c.MaxMessageSize)
	}
	if c.MappedFileSizeCommitLog < 4096 {
		return bad("mappedFileSizeCommitLog", "%d < 4096", c.MappedFileSizeCommitLog)
	}
	// A maxMessageSize near or above mappedFileSizeCommitLog is allowed, as in RocketMQ: a
	// message whose record does not fit an empty CommitLog file is refused (MESSAGE_ILLEGAL)
	// when it is sent, not the configuration.
	if c.MessageIndexEnable && (c.MaxHashSlotNum < 1 || c.MaxHashSlotNum > 1<<28) {
		return bad("maxHashSlotNum", "%d outside [1, 268435456]", c.MaxHashSlotNum)
	}
	if c.MessageIndexEnable && (c.MaxIndexNum < 1 || c.MaxIndexNum > 1<<28) {
		return bad("maxIndexNum", "%d outside [1, 268435456]", c.MaxIndexNum)
	}
	if c.FlushIntervalCommitLog <= 0 {
		return bad("flushIntervalCommitLog", "must be > 0")
	}
	if c.SyncFlushTimeout <= 0 {
		return bad("syncFlushTimeout", "must be > 0")
	}
	if c.SlaveTimeout <= 0 {
		return bad("slaveTimeout", "must be > 0")
	}
	if c.HAMaxGapNotInSync <= 0 {
		return bad("haMaxGapNotInSync", "must be > 0")
	}
	if c.InSyncReplicas < 1 {
		return bad("inSyncReplicas", "%d < 1", c.InSyncReplicas)
	}
	if c.BrokerRole == RoleSyncMaster && c.InSyncReplicas < 2 {
		return bad("inSyncReplicas", "brokerRole=SYNC_MASTER with inSyncReplicas=%d would wait for no slave; use 2 or more, or ASYNC_MASTER", c.InSyncReplicas)
	}
	if c.MinInSyncReplicas < 0 || c.MinInSyncReplicas > c.InSyncReplicas {
		return bad("minInSyncReplicas", "%d not in [0, inSyncReplicas=%d]", c.MinInSyncReplicas, c.InSyncReplicas)
	}
	if c.MinInSyncReplicas > 1 && c.BrokerRole != RoleSyncMaster {
		return bad("minInSyncReplicas", "strict mode (%d) needs brokerRole=SYNC_MASTER, got %s", c.MinInSyncReplicas, c.BrokerRole)
	}
	if c.HASendHeartbeatInterval <= 0 || c.HAHousekeepingInterval <= c.HASendHeartbeatInterval {
		return bad("haHousekeepingInterval", "must exceed haSendHeartbeatInterval (both > 0)")
	}
	if c.HATransferBatchSize < 4096 {
		return bad("haTransferBatchSize", "%d < 4096", c.HATransferBatchSize)
	}
	if c.RegisterNameServerPeriod <= 0 {
		return bad("registerNameServerPeriod", "must be > 0")
	}
	if c.BrokerSuspendMaxTime <= 0 {
		return bad("brokerSuspendMaxTimeMillis", "must be > 0")
	}
	if c.AccessMessageInMemoryMaxRatio < 1 || c.AccessMessageInMemoryMaxRatio > 100 {
		return bad("accessMessageInMemoryMaxRatio", "%d not in [1, 100]", c.AccessMessageInMemoryMaxRatio)
	}
	if c.FileReservedTime < 1 {
		return bad("fileReservedTime", "%d < 1 hour", c.FileReservedTime)
	}
	if _, err := c.deleteHours(); err != nil {
		return bad("deleteWhen", "%v", err)
	}
	if c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95 {
		return bad("diskMaxUsedSpaceRatio", "%d not in [10, 95]", c.DiskMaxUsedSpaceRatio)
	}
	if c.TransactionTimeOut <= 0 {
		return bad("transactionTimeOut", "%v must be positive", c.TransactionTimeOut)
	}
	if c.TransactionCheckInterval <= 0 {
		return bad("transactionCheckInterval", "%v must be positive", c.TransactionCheckInterval)
	}
	if c.TransactionCheckMax < 1 {
		return bad("transactionCheckMax", "%d must be at least 1", c.TransactionCheckMax)
	}
	if _, err := schedule.ParseLevels(c.MessageDelayLevel); err != nil {
		return bad("messageDelayLevel", "%v", err)
	}
	if c.TimerMaxDelaySec < 1 {
		return bad("timerMaxDelaySec", "%d < 1", c.TimerMaxDelaySec)
	}
	if c.TimerPrecisionMs < 100 || c.TimerPrecisionMs > 60000 || 60000%c.TimerPrecisionMs != 0 {
		return bad("timerPrecisionMs", "%d not in [100, 60000] or not dividing 60000", c.TimerPrecisionMs)
	}
	if c.TimerFlushIntervalMs < 1 {
		return bad("timerFlushIntervalMs", "%d < 1", c.TimerFlushIntervalMs)
	}
	if c.HTTPPort < 0 || c.HTTPPort > 65535 {
		return bad("httpPort", "%d out of range", c.HTTPPort)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return bad("logFormat", "%q is not text or json", c.LogFormat)
	}
	if err := c.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.ServerKeys.Validate(remoting.DefaultServerConfig().MaxFrameSize); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if _, err := c.registrationSecret(); err != nil {
		return err
	}
	if c.AclEnable && c.AclPlainFile == "" {
		return bad("aclPlainFile", "empty with aclEnable=true")
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return bad("secretKey", "accessKey and secretKey are set together (accessKey %q)", c.AccessKey)
	}
	if err := c.validateBounds(bad); err != nil {
		return err
	}
	return c.validateHASecret(bad)
}

// MinHASecretLen is the shortest HA secret accepted, in bytes.
const MinHASecretLen = acl.MinSecretLen

// validateHASecret requires an HA secret (haSecret or haSecretFile) unless
// haAllowUnauthenticated is set; the file itself is read by HASecretValue.
func (c Config) validateHASecret(bad func(key, format string, a ...any) error) error {
	switch {
	case c.HASecret != "" && c.HASecretFile != "":
		return bad("haSecretFile", "set together with haSecret; set only one of them")
	case c.HASecret != "" && len(c.HASecret) < MinHASecretLen:
		return bad("haSecret", "%d bytes, at least %d are needed so that it cannot be guessed (for example the output of: openssl rand -hex 32)", len(c.HASecret), MinHASecretLen)
	case c.HASecret == "" && c.HASecretFile == "" && !c.HAAllowUnauthenticated:
		return bad("haSecret", "brokerRole=%s needs the broker group's shared HA secret: set haSecretFile (a file holding it) or haSecret (at least %d bytes), the same on every broker of the group, or haAllowUnauthenticated=true to run the HA link without authentication", c.BrokerRole, MinHASecretLen)
	}
	return nil
}

// validateBounds checks the keys bounding client-created metadata.
func (c Config) validateBounds(bad func(key, format string, a ...any) error) error {
	for key, v := range map[string]int{
		"autoCreateSubscriptionGroupLimit": c.AutoCreateSubscriptionGroupLimit,
		"autoCreateTopicLimit":             c.AutoCreateTopicLimit,
		"lockMaxQueuesPerGroup":            c.LockMaxQueuesPerGroup,
		"lockMaxQueues":                    c.LockMaxQueues,
		"autoCreatePerHeartbeat":           c.AutoCreatePerHeartbeat,
		"autoCreatePerConnection":          c.AutoCreatePerConnection,
		"statsMaxKeys":                     c.StatsMaxKeys,
	} {
		if v < 0 {
			return bad(key, "%d < 0 (0 means no limit)", v)
		}
	}
	if c.HeartbeatMaxGroups < 1 {
		return bad("heartbeatMaxGroups", "%d < 1", c.HeartbeatMaxGroups)
	}
	if c.HeartbeatMaxSubscriptions < 1 {
		return bad("heartbeatMaxSubscriptions", "%d < 1", c.HeartbeatMaxSubscriptions)
	}
	if c.MetadataFlushInterval <= 0 {
		return bad("metadataFlushInterval", "must be > 0")
	}
	if c.MetadataFlushBatch < 1 {
		return bad("metadataFlushBatch", "%d < 1", c.MetadataFlushBatch)
	}
	return nil
}

// registrationSecret resolves registrationSecret / registrationSecretFile ("" when neither
// is set).
func (c Config) registrationSecret() (string, error) {
	s, err := acl.LoadSecret(c.RegistrationSecret, c.RegistrationSecretFile, "registrationSecret", "registrationSecretFile")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return s, nil
}

// HASecretValue is the HA secret in effect: haSecret, or the trimmed content of haSecretFile
// (an error when it cannot be read or is shorter than MinHASecretLen); "" only with
// haAllowUnauthenticated and neither key set. Secrets load like the registration secret.
func (c Config) HASecretValue() (string, error) {
	s, err := acl.LoadSecret(c.HASecret, c.HASecretFile, "haSecret", "haSecretFile")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return s, nil
}

// NamesrvAddrs splits NamesrvAddr on ';'.
func (c Config) NamesrvAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.NamesrvAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// EffectiveHAListenPort is HAListenPort, or ListenPort+1 when it is 0.
func (c Config) EffectiveHAListenPort() int {
	if c.HAListenPort != 0 {
		return c.HAListenPort
	}
	if c.ListenPort == 0 {
		return 0
	}
	return c.ListenPort + 1
}

func (c Config) deleteHours() ([]int, error) {
	var hours []int
	for _, s := range strings.Split(c.DeleteWhen, ";") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		h, err := strconv.Atoi(s)
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("%q is not an hour of day", s)
		}
		hours = append(hours, h)
	}
	if len(hours) == 0 {
		return nil, fmt.Errorf("no hour given")
	}
	return hours, nil
}

// registerPeriod clamps RegisterNameServerPeriod to [10s, 60s] as RocketMQ does.
func (c Config) registerPeriod() time.Duration {
	p := c.RegisterNameServerPeriod
	if p < 10*time.Second {
		p = 10 * time.Second
	}
	if p > 60*time.Second {
		p = 60 * time.Second
	}
	return p
}

// defaultIP returns the first non-loopback IPv4 address of this host, or 127.0.0.1.
func defaultIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip4 := ipn.IP.To4(); ip4 != nil && !ip4.IsLoopback() && !ip4.IsLinkLocalUnicast() {
					return ip4.String()
				}
			}
		}
	}
	return "127.0.0.1"
}

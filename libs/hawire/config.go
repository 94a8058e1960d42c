package hawire

import (
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/sirupsen/logrus"
)

// MasterConfig configures the master side.
type MasterConfig struct {
	// ListenAddr is the HA port bind address (haListenPort). Default ":10912".
	ListenAddr string
	// ClusterName and BrokerName must match the slave's handshake.
	ClusterName, BrokerName string
	// Secret is the shared secret of the broker group: every slave must
	// prove it knows it before it is accepted, and every verdict the master
	// sends (ACCEPT, ERROR) carries the master's proof. At least MinSecretLen
	// bytes. Required unless AllowUnauthenticated is set. Default "".
	Secret string
	// AllowUnauthenticated runs without a Secret: anyone who reaches the HA
	// port can pose as a slave (and turn SLAVE_NOT_AVAILABLE into SEND_OK).
	// An explicit opt-out for trusted networks. Default false.
	AllowUnauthenticated bool
	// TLS, when set, wraps every accepted connection in a TLS server
	// (certificate, client authentication and versions as configured there).
	// The handshake proofs still run inside it. Default nil (plain TCP).
	TLS *tls.Config
	// TransferBatchSize is the most record bytes in one Data frame
	// (haTransferBatchSize). Default 1 MiB: RocketMQ's 32 KiB costs one
	// frame and one ack per 32 KiB during catch-up; 1 MiB keeps catch-up
	// bound by the socket, and live traffic is sent as soon as it is appended
	// whatever the size.
	TransferBatchSize int
	// HousekeepingInterval drops a slave that sent nothing for this long
	// (haHousekeepingInterval). Default 20s.
	HousekeepingInterval time.Duration
	// HeartbeatInterval is how long the master stays silent before sending a
	// Heartbeat. Default 5s.
	HeartbeatInterval time.Duration
	// MaxGapNotInSync: a slave more than this many bytes behind the master's
	// MaxOffset is not in sync (haMaxGapNotInSync). Default 256 MiB.
	MaxGapNotInSync int64
	// InSyncReplicas is how many copies, the master included, a SYNC_MASTER
	// send needs (inSyncReplicas). Default 2 (one slave). 1 waits for nobody.
	InSyncReplicas int
	// MinInSyncReplicas enables strict mode: CanAccept refuses writes while
	// fewer copies (master included) are in sync. 0 or 1 = off. Default 0.
	MinInSyncReplicas int
	// SlaveTimeout is the default SYNC_MASTER wait (slaveTimeout), fixed when
	// the send arrives. Default 2s, below rocketmq-client-go's 3s send
	// timeout so clients see FLUSH_SLAVE_TIMEOUT rather than their own timeout.
	SlaveTimeout time.Duration
	// EpochDir holds the epoch file. Empty = not persisted (tests only).
	EpochDir string
	// InlineSend lets an append send what the log gained on the appender's
	// goroutine when its connection's send loop is idle and the link is a
	// plain socket, writing only what the socket takes at once; the loop
	// writes any rest. It saves a SYNC_MASTER send the wake-up of the loop's
	// goroutine. An ASYNC_MASTER's answers do not wait for the slave, so
	// there the appender answers first and leaves sending to the loop. The
	// frames and their order are the same either way; the tests run both.
	// Default false.
	InlineSend bool
	// Logger receives structured logs. Default: discard.
	Logger logrus.FieldLogger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultMasterConfig returns production defaults.
func DefaultMasterConfig() MasterConfig {
	return MasterConfig{
		ListenAddr:           ":10912",
		ClusterName:          "DefaultCluster",
		BrokerName:           "broker-a",
		TransferBatchSize:    1 << 20,
		HousekeepingInterval: 20 * time.Second,
		HeartbeatInterval:    5 * time.Second,
		MaxGapNotInSync:      256 << 20,
		InSyncReplicas:       2,
		SlaveTimeout:         2 * time.Second,
	}
}

// Validate names the first offending field.
func (c MasterConfig) Validate() error {
	if err := validateSecret("MasterConfig", c.Secret, c.AllowUnauthenticated); err != nil {
		return err
	}
	switch {
	case c.ListenAddr == "":
		return fmt.Errorf("hawire: MasterConfig.ListenAddr is empty")
	case c.BrokerName == "":
		return fmt.Errorf("hawire: MasterConfig.BrokerName is empty")
	case c.TransferBatchSize < 4<<10 || c.TransferBatchSize > MaxDataFrame/2:
		return fmt.Errorf("hawire: MasterConfig.TransferBatchSize %d outside [4 KiB, 32 MiB]", c.TransferBatchSize)
	case c.HousekeepingInterval <= 0:
		return fmt.Errorf("hawire: MasterConfig.HousekeepingInterval must be > 0")
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.HousekeepingInterval:
		return fmt.Errorf("hawire: MasterConfig.HeartbeatInterval must be > 0 and < HousekeepingInterval")
	case c.MaxGapNotInSync <= 0:
		return fmt.Errorf("hawire: MasterConfig.MaxGapNotInSync must be > 0")
	case c.InSyncReplicas < 1:
		return fmt.Errorf("hawire: MasterConfig.InSyncReplicas must be ≥ 1")
	case c.MinInSyncReplicas < 0:
		return fmt.Errorf("hawire: MasterConfig.MinInSyncReplicas must be ≥ 0")
	case c.SlaveTimeout <= 0:
		return fmt.Errorf("hawire: MasterConfig.SlaveTimeout must be > 0")
	}
	return nil
}

// Slave recovery choices.
const (
	OnDivergedTruncate = "truncate"
	OnDivergedFail     = "fail"
	OnTooOldFail       = "fail"
	OnTooOldWipe       = "wipe"
)

// SlaveConfig configures the slave side.
type SlaveConfig struct {
	// ClusterName, BrokerName and BrokerID (≥ 1) identify the slave.
	ClusterName, BrokerName string
	BrokerID                int64
	// Secret is the broker group's shared secret: the slave proves it knows
	// it, and obeys only verdicts that carry the master's proof of it. At
	// least MinSecretLen bytes. Required unless AllowUnauthenticated is set.
	// Default "".
	Secret string
	// AllowUnauthenticated runs without a Secret: the slave then takes any
	// peer at the master's address for its master (epoch and wipe rules
	// still apply). An explicit opt-out for trusted networks. Default false.
	AllowUnauthenticated bool
	// AllowWipe lets a master that proved itself make a non-empty slave wipe
	// its whole log (DIVERGED at or below its MinOffset, or OFFSET_TOO_OLD
	// with OnTooOld=wipe). Off, such a verdict is refused, counted and
	// retried with backoff: an empty or rebuilt master never silently
	// empties a slave. Default false.
	AllowWipe bool
	// TLS, when set, wraps every dialled connection in a TLS client (server
	// name, roots, client certificate as configured there). Default nil.
	TLS *tls.Config
	// HeartbeatInterval is the longest time between two acks
	// (haSendHeartbeatInterval). Default 5s.
	HeartbeatInterval time.Duration
	// HousekeepingInterval closes a connection the master has been silent on
	// for this long. Default 20s.
	HousekeepingInterval time.Duration
	// DialTimeout bounds one connection attempt. Default 3s.
	DialTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the doubling reconnect backoff,
	// applied before every reconnect (after a refusal, a truncation or a lost
	// connection alike); each wait is drawn in [b/2, b) for the current
	// bound b. Defaults 100ms and 5s.
	ReconnectMin, ReconnectMax time.Duration
	// ReconnectReset: a connection that streamed this long resets the
	// backoff to ReconnectMin. Default 10s.
	ReconnectReset time.Duration
	// OnDiverged: "truncate" (default) cuts the log at the master's common
	// point and reconnects; "fail" stops replication and reports it.
	OnDiverged string
	// OnTooOld: "fail" (default) stops replication and reports it; "wipe"
	// resets the log at the master's MinOffset and copies everything again
	// (needs AllowWipe).
	OnTooOld string
	// EpochDir holds the epoch file. Empty = not persisted (tests only).
	EpochDir string
	// Logger receives structured logs. Default: discard.
	Logger logrus.FieldLogger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Rand returns the backoff jitter, uniform in [0, 1). Default math/rand/v2.Float64.
	Rand func() float64
}

// DefaultSlaveConfig returns production defaults.
func DefaultSlaveConfig() SlaveConfig {
	return SlaveConfig{
		ClusterName:          "DefaultCluster",
		BrokerName:           "broker-a",
		BrokerID:             1,
		HeartbeatInterval:    5 * time.Second,
		HousekeepingInterval: 20 * time.Second,
		DialTimeout:          3 * time.Second,
		ReconnectMin:         100 * time.Millisecond,
		ReconnectMax:         5 * time.Second,
		ReconnectReset:       10 * time.Second,
		OnDiverged:           OnDivergedTruncate,
		OnTooOld:             OnTooOldFail,
	}
}

// Validate names the first offending field.
func (c SlaveConfig) Validate() error {
	if err := validateSecret("SlaveConfig", c.Secret, c.AllowUnauthenticated); err != nil {
		return err
	}
	switch {
	case c.BrokerName == "":
		return fmt.Errorf("hawire: SlaveConfig.BrokerName is empty")
	case c.BrokerID < 1:
		return fmt.Errorf("hawire: SlaveConfig.BrokerID must be ≥ 1")
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= c.HousekeepingInterval:
		return fmt.Errorf("hawire: SlaveConfig.HeartbeatInterval must be > 0 and < HousekeepingInterval")
	case c.DialTimeout <= 0:
		return fmt.Errorf("hawire: SlaveConfig.DialTimeout must be > 0")
	case c.ReconnectMin <= 0 || c.ReconnectMax < c.ReconnectMin:
		return fmt.Errorf("hawire: SlaveConfig.ReconnectMin/ReconnectMax must satisfy 0 < min ≤ max")
	case c.ReconnectReset <= 0:
		return fmt.Errorf("hawire: SlaveConfig.ReconnectReset must be > 0")
	case c.OnDiverged != OnDivergedTruncate && c.OnDiverged != OnDivergedFail:
		return fmt.Errorf("hawire: SlaveConfig.OnDiverged %q: want truncate or fail", c.OnDiverged)
	case c.OnTooOld != OnTooOldFail && c.OnTooOld != OnTooOldWipe:
		return fmt.Errorf("hawire: SlaveConfig.OnTooOld %q: want fail or wipe", c.OnTooOld)
	case c.OnTooOld == OnTooOldWipe && !c.AllowWipe:
		return fmt.Errorf("hawire: SlaveConfig.OnTooOld=wipe needs AllowWipe")
	}
	return nil
}

// MinSecretLen is the shortest secret accepted, in bytes.
const MinSecretLen = 16

// validateSecret requires a secret of at least MinSecretLen bytes unless the
// owner opted out of authentication.
func validateSecret(owner, secret string, allowUnauthenticated bool) error {
	switch {
	case secret == "" && !allowUnauthenticated:
		return fmt.Errorf("%w: %s.Secret is empty: set a shared secret of at least %d bytes, or AllowUnauthenticated to run the HA link without one", ErrNoSecret, owner, MinSecretLen)
	case secret != "" && len(secret) < MinSecretLen:
		return fmt.Errorf("hawire: %s.Secret is %d bytes, below the minimum of %d", owner, len(secret), MinSecretLen)
	}
	return nil
}

func defaultRand() float64 { return rand.Float64() }

func discardLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

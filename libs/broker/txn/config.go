package txn

import (
	"fmt"
	"time"
)

// Config configures a Checker (RocketMQ's BrokerConfig keys in brackets).
type Config struct {
	// TransactionTimeout is how old (since its born timestamp) a half must be before it is
	// checked back; a half with CHECK_IMMUNITY_TIME_IN_SECONDS uses that instead when it is
	// longer [transactionTimeOut]. Default 6s.
	TransactionTimeout time.Duration
	// CheckMax is how many check-backs a half gets; the next pass moves it to
	// TRANS_CHECK_MAX_TIME_TOPIC [transactionCheckMax]. Default 15.
	CheckMax int
	// MaxOpsAhead bounds the op records held in memory for halves the scan has not reached
	// yet; op records beyond it are read once the scan moves on. Default 100000.
	MaxOpsAhead int
	// KeyWindow is how long the UNIQ_KEY of a resolved transaction is remembered, so that
	// another half with the same key (a copy made by a check, a producer's retried send) is
	// not delivered a second time. Default 3m.
	KeyWindow time.Duration
	// MaxKeys bounds the remembered keys (oldest forgotten first). Default 100000.
	MaxKeys int
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	return Config{
		TransactionTimeout: 6 * time.Second,
		CheckMax:           15,
		MaxOpsAhead:        100000,
		KeyWindow:          3 * time.Minute,
		MaxKeys:            100000,
	}
}

// Validate names the first offending field.
func (c Config) Validate() error {
	switch {
	case c.TransactionTimeout <= 0:
		return fmt.Errorf("%w: TransactionTimeout must be positive", ErrInvalidConfig)
	case c.CheckMax < 1:
		return fmt.Errorf("%w: CheckMax must be at least 1", ErrInvalidConfig)
	case c.MaxOpsAhead < 1:
		return fmt.Errorf("%w: MaxOpsAhead must be at least 1", ErrInvalidConfig)
	case c.KeyWindow <= 0:
		return fmt.Errorf("%w: KeyWindow must be positive", ErrInvalidConfig)
	case c.MaxKeys < 1:
		return fmt.Errorf("%w: MaxKeys must be at least 1", ErrInvalidConfig)
	}
	return nil
}

package failover

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
)

// Config configures one node's Elector.
type Config struct {
	// Cluster and BrokerName name the group.
	Cluster, BrokerName string
	// Node is this node's id: its slave brokerId (>= 1, unique in the group).
	Node int64
	// Addr is the broker's client address (brokerIP1:listenPort), published with the lock.
	Addr string
	// LeaseTTL is the TTL of the node's check; the session (and the lock) ends this long after
	// the last pass the coordinator received. Default 2s.
	LeaseTTL time.Duration
	// SafetyMargin: a master fences writes at lastPassSent + LeaseTTL - SafetyMargin when it
	// could not pass since. Default 600ms.
	SafetyMargin time.Duration
	// PassInterval is how often the check is passed. Default 250ms.
	PassInterval time.Duration
	// PollInterval is how often a slave looks at the lock, and a master at its in-sync set and
	// switchover requests. Default 200ms.
	PollInterval time.Duration
	// OpTimeout bounds each coordinator call. Default 500ms.
	OpTimeout time.Duration
	// Unclean lets a slave outside the published in-sync set take the lock (messages the old
	// master acknowledged may be lost). Default false.
	Unclean bool
	// SwitchoverTimeout bounds how long a master waits, writes fenced, for the chosen slave to
	// hold everything during a graceful switchover. Default 5s.
	SwitchoverTimeout time.Duration
	// Logger receives structured logs. Default: discard.
	Logger logrus.FieldLogger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults (failover within about LeaseTTL + PollInterval of a
// master's death on loopback).
func DefaultConfig() Config {
	return Config{
		LeaseTTL:          2 * time.Second,
		SafetyMargin:      600 * time.Millisecond,
		PassInterval:      250 * time.Millisecond,
		PollInterval:      200 * time.Millisecond,
		OpTimeout:         500 * time.Millisecond,
		SwitchoverTimeout: 5 * time.Second,
	}
}

// Validate names the first offending field.
func (c Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Cluster == "" || c.BrokerName == "":
		return bad("Cluster/BrokerName", "both must be set")
	case c.Node < 1:
		return bad("Node", "%d: a node is identified by its slave brokerId (>= 1)", c.Node)
	case c.LeaseTTL <= 0:
		return bad("LeaseTTL", "must be > 0")
	case c.SafetyMargin <= 0 || c.SafetyMargin >= c.LeaseTTL:
		return bad("SafetyMargin", "%v must be in (0, LeaseTTL=%v)", c.SafetyMargin, c.LeaseTTL)
	case c.PassInterval <= 0 || c.PassInterval >= c.LeaseTTL-c.SafetyMargin:
		return bad("PassInterval", "%v must be below LeaseTTL-SafetyMargin=%v", c.PassInterval, c.LeaseTTL-c.SafetyMargin)
	case c.PollInterval <= 0:
		return bad("PollInterval", "must be > 0")
	case c.OpTimeout <= 0:
		return bad("OpTimeout", "must be > 0")
	case c.SwitchoverTimeout <= 0:
		return bad("SwitchoverTimeout", "must be > 0")
	}
	return nil
}

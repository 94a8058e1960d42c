package failover

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate; the message names the field.
	ErrInvalidConfig = errors.New("failover: invalid config")
	// ErrNotHolder is returned when an operation needs the lock and the node does not hold it.
	ErrNotHolder = errors.New("failover: lock not held")
	// ErrCASConflict is returned when a compare-and-set lost to another writer.
	ErrCASConflict = errors.New("failover: compare-and-set conflict")
	// ErrSwitchoverTimeout is returned when a graceful switchover did not complete in time.
	ErrSwitchoverTimeout = errors.New("failover: switchover did not complete")
	// ErrNoCandidate is returned by a switchover when no slave is in sync to take over.
	ErrNoCandidate = errors.New("failover: no in-sync slave to hand over to")
)

package e2e

import "errors"

var (
	// ErrInvalidConfig is returned by GroupConfig.Validate for a field out of range.
	ErrInvalidConfig = errors.New("e2e: invalid config")
	// ErrNotReady is returned by readiness checks that have not passed yet.
	ErrNotReady = errors.New("e2e: not ready")
	// ErrHistory is returned by History.Check when a stored message is missing, altered or
	// shares its offset with another.
	ErrHistory = errors.New("e2e: history violation")
)

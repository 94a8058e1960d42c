package kvconfig

import "errors"

var (
	// ErrInvalid is returned for an empty namespace or key, a bad limit, or a file that is not
	// a KV configuration.
	ErrInvalid = errors.New("kvconfig: invalid")
	// ErrLimit is returned when an item would exceed one of the Limits; nothing is stored.
	ErrLimit = errors.New("kvconfig: limit exceeded")
)

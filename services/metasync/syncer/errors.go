package syncer

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate; the message names the key.
	ErrInvalidConfig = errors.New("metasync: invalid config")
	// ErrStoreLocked is returned by Start when another process uses the same store.
	ErrStoreLocked = errors.New("metasync: store in use by another process")
	// ErrCorruptSnapshot is logged for a stored snapshot that cannot be decoded
	// (it is skipped; the next pull replaces it).
	ErrCorruptSnapshot = errors.New("metasync: corrupt stored snapshot")
)

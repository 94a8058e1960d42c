package txn

import "errors"

var (
	// ErrInvalidConfig wraps Config.Validate failures; the message names the field.
	ErrInvalidConfig = errors.New("txn: invalid config")
	// ErrBadOpBody is returned by DecodeOpBody for an op record body that is not a
	// comma-separated list of non-negative decimal queue offsets (or holds too many).
	ErrBadOpBody = errors.New("txn: bad op record body")
	// ErrNotHalf is returned by Restore and ToHalf for a record or message that cannot
	// take part: a record outside RMQ_SYS_TRANS_HALF_TOPIC, or one without a usable
	// REAL_TOPIC / REAL_QID.
	ErrNotHalf = errors.New("txn: not a half message")
)

package clients

import "errors"

var (
	// ErrInvalidHeartbeat is returned by DecodeHeartbeat and Register for a body
	// that is not a usable heartbeat (bad JSON, empty clientID or group name,
	// a codeSet entry that is not a 32-bit integer).
	ErrInvalidHeartbeat = errors.New("clients: invalid heartbeat")
	// ErrConnNotComparable is returned by Register when the connection handle
	// cannot be compared with ==, so it could never be unregistered.
	ErrConnNotComparable = errors.New("clients: connection handle is not comparable")
	// ErrSubscriptionParse is returned by BuildSubscription when a tag
	// expression holds no tag.
	ErrSubscriptionParse = errors.New("clients: subscription expression has no tags")
)

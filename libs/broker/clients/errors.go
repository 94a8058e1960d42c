package clients

import "errors"

var (
	// ErrInvalidHeartbeat is returned by DecodeHeartbeat and Register for a body
	// that is not a usable heartbeat (bad JSON, empty clientID or group name,
	// a codeSet entry that is not a 32-bit integer, a name RocketMQ's
	// validators refuse, an oversized client id or expression).
	ErrInvalidHeartbeat = errors.New("clients: invalid heartbeat")
	// ErrHeartbeatTooLarge is returned by CheckLimits for a heartbeat with more
	// groups or subscriptions than the broker's limits allow.
	ErrHeartbeatTooLarge = errors.New("clients: heartbeat too large")
	// ErrConnNotComparable is returned by Register when the connection handle
	// cannot be compared with ==, so it could never be unregistered.
	ErrConnNotComparable = errors.New("clients: connection handle is not comparable")
	// ErrSubscriptionParse is returned by BuildSubscription when a tag
	// expression holds no tag.
	ErrSubscriptionParse = errors.New("clients: subscription expression has no tags")
	// ErrUnsupportedExpressionType is returned by FilterCache.Compile and BuildSelector, and
	// kept as a subscription's Selector error, for an expression type that is neither TAG
	// (or empty) nor SQL92.
	ErrUnsupportedExpressionType = errors.New("clients: unsupported expression type")
)

package nameserver

import "errors"

// Sentinel errors.
var (
	// ErrNoRegistrationSecret is returned by Config.Validate when nothing authenticates
	// registrations (no registration secret, no Authenticator) and unauthenticated ones
	// were not explicitly allowed.
	ErrNoRegistrationSecret = errors.New("registrations would be unauthenticated")
	// ErrUnauthenticated is returned by an Authenticator for a request whose credential does
	// not verify, and for an unsigned registration a name server does not admit.
	ErrUnauthenticated = errors.New("registration not authenticated")
	// ErrClockSkew is returned for a signed registration whose registrationTime is outside
	// registrationMaxClockSkew of the name server's clock.
	ErrClockSkew = errors.New("registration time outside the allowed clock skew")
	// ErrReplayed is returned for a signed registration whose registrationTime is not after
	// the last one accepted from the same broker (a recorded request played again).
	ErrReplayed = errors.New("registration replayed")
	// ErrTooManyBrokers is returned when the replay window tracks as many brokers as it may.
	ErrTooManyBrokers = errors.New("too many brokers registering")
	// ErrBadBody is returned by the body decoders (DecodeKVTable) for bytes that are not
	// the body they expect.
	ErrBadBody = errors.New("malformed body")
)

package acl

import "errors"

// Sentinel errors.
var (
	// ErrRegistrationUnbound is returned by CheckRegistration for a registration whose
	// registrationTime is missing or malformed, or whose registrationDigest does not match
	// its fields.
	ErrRegistrationUnbound = errors.New("acl: registration fields not bound to their keys")
	// ErrSecret is returned by LoadSecret for a secret that cannot be used (both forms set,
	// unreadable file, too short).
	ErrSecret = errors.New("acl: unusable secret")
)

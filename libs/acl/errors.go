package acl

import "errors"

// Sentinel errors; callers classify with errors.Is. Messages wrapping them name the file, the
// line and the key at fault.
var (
	// ErrInvalidFile: plain_acl.yml is not YAML, not in RocketMQ's layout, has an unknown key,
	// or is larger than MaxFileSize.
	ErrInvalidFile = errors.New("acl: invalid plain_acl.yml")
	// ErrInvalidAccount: an account RocketMQ would refuse (access key or secret key missing or
	// of 6 characters or fewer), a permission that does not parse, or an access key given twice.
	ErrInvalidAccount = errors.New("acl: invalid account")
	// ErrInvalidAddress: a whiteRemoteAddress or globalWhiteRemoteAddresses pattern that is not
	// one of the forms RocketMQ accepts.
	ErrInvalidAddress = errors.New("acl: invalid address pattern")
	// ErrEmptyFile: the file holds no YAML document. An ACL-enabled server with no accounts and
	// no white addresses would refuse everything; on reload it is most often a file caught
	// mid-write, so it never replaces a loaded table.
	ErrEmptyFile = errors.New("acl: plain_acl.yml is empty")
	// ErrInvalidConfig: a Config field out of range (the message names it).
	ErrInvalidConfig = errors.New("acl: invalid config")
	// ErrRegistrationUnbound is returned by CheckRegistration for a registration whose
	// registrationTime is missing or malformed, or whose registrationDigest does not match
	// its fields.
	ErrRegistrationUnbound = errors.New("acl: registration fields not bound to their keys")
	// ErrSecret is returned by LoadSecret for a secret that cannot be used (both forms set,
	// unreadable file, too short).
	ErrSecret = errors.New("acl: unusable secret")
)

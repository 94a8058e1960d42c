package broker

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate and New; the message names the key.
	ErrInvalidConfig = errors.New("broker: invalid config")
	// ErrStarted is returned by Start on a broker that was already started.
	ErrStarted = errors.New("broker: already started")
	// ErrClosed is returned by Start after Shutdown.
	ErrClosed = errors.New("broker: shut down")
	// ErrBadRequest is wrapped by request decoders when an ext field is missing or invalid.
	ErrBadRequest = errors.New("broker: bad request")
	// ErrBadBatch is returned when a SEND_BATCH_MESSAGE body is not a valid batch.
	ErrBadBatch = errors.New("broker: malformed batch body")
	// ErrRoleSwitch is returned by Promote and Demote when the switch cannot be made.
	ErrRoleSwitch = errors.New("broker: role switch failed")
)

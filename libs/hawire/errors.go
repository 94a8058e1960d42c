package hawire

import (
	"errors"
	"fmt"
)

var (
	// ErrShortFrame is returned by decoders when a frame body ends before all
	// of its fields were read.
	ErrShortFrame = errors.New("hawire: frame too short")
	// ErrFrameTooLarge is returned when a frame's length exceeds the limit
	// allowed at that point of the conversation.
	ErrFrameTooLarge = errors.New("hawire: frame too large")
	// ErrBadMagic is returned when a Hello or Handshake does not start with Magic.
	ErrBadMagic = errors.New("hawire: bad magic")
	// ErrBadFrame is returned for a structurally invalid frame (bad type,
	// negative offsets, oversized counts).
	ErrBadFrame = errors.New("hawire: malformed frame")
	// ErrBadCRC is returned when a Data frame's CRC does not match its records.
	ErrBadCRC = errors.New("hawire: data frame CRC mismatch")
	// ErrPartialRecord is returned when a Data frame does not hold whole
	// CommitLog records, or a BLANK record is not last / not at a segment end.
	ErrPartialRecord = errors.New("hawire: data frame does not hold whole records")
	// ErrUnexpectedFrame is returned when a frame arrives in a state where it is not allowed.
	ErrUnexpectedFrame = errors.New("hawire: unexpected frame")
	// ErrUnsupportedVersion is returned when no protocol version is shared.
	ErrUnsupportedVersion = errors.New("hawire: unsupported protocol version")
	// ErrNotAuthorised is returned when the handshake proof is missing or wrong.
	ErrNotAuthorised = errors.New("hawire: not authorised")
	// ErrWrongGroup is returned when cluster/broker name or broker id do not fit.
	ErrWrongGroup = errors.New("hawire: wrong broker group")
	// ErrConfigMismatch is returned when master and slave segment sizes differ.
	ErrConfigMismatch = errors.New("hawire: configuration mismatch")
	// ErrOffsetTooOld is returned when the slave's log ends before the master's MinOffset.
	ErrOffsetTooOld = errors.New("hawire: slave offset too old")
	// ErrDiverged is returned when the slave's log differs from the master's
	// after a common point.
	ErrDiverged = errors.New("hawire: slave log diverged from master")
	// ErrNotMaster is returned by a peer that is not a master.
	ErrNotMaster = errors.New("hawire: peer is not a master")
	// ErrBadAck is returned when an acknowledgement goes backwards, exceeds the
	// master's max offset or what was sent on the connection, or flushed > written.
	ErrBadAck = errors.New("hawire: invalid acknowledgement")
	// ErrOffsetMismatch is returned when a Data frame does not start where the slave's log ends.
	ErrOffsetMismatch = errors.New("hawire: data offset does not match slave log")
	// ErrEpochFile is returned when the epoch file is corrupt (CRC or syntax).
	ErrEpochFile = errors.New("hawire: corrupt epoch file")
	// ErrEpochOrder is returned when an epoch entry does not increase epoch and start offset.
	ErrEpochOrder = errors.New("hawire: epoch entries out of order")
	// ErrNotEnoughInSync is returned by Master.CanAccept in strict mode when
	// fewer than MinInSyncReplicas copies (master included) are in sync.
	ErrNotEnoughInSync = errors.New("hawire: not enough in-sync replicas")
	// ErrClosed is returned by operations on a closed Master or Slave.
	ErrClosed = errors.New("hawire: closed")
	// ErrFailed is reported by a Slave that stopped replicating after an
	// unrecoverable answer from a master that proved itself (offset too old
	// with OnTooOld=fail, divergence with OnDiverged=fail, segment sizes or
	// versions that differ).
	ErrFailed = errors.New("hawire: replication stopped")
	// errNotSent is the master's frameBatch error when its state refused to record a send:
	// the connection ends without a log line of its own (nothing is wrong with the log).
	errNotSent = errors.New("hawire: batch not recorded as sent")
	// ErrMasterUnproven is a slave's refusal of a verdict (ACCEPT or ERROR)
	// whose master proof is missing or wrong: the peer does not know the
	// secret, or the verdict was recorded on another connection.
	ErrMasterUnproven = errors.New("hawire: master did not prove it knows the secret")
	// ErrStaleMaster is a slave's refusal of a master whose epoch is below
	// the slave's own last epoch.
	ErrStaleMaster = errors.New("hawire: master epoch below the slave's last epoch")
	// ErrWipeRefused is a slave's refusal of a verdict that would wipe its
	// non-empty log (DIVERGED at or below its MinOffset, OFFSET_TOO_OLD)
	// while SlaveConfig.AllowWipe is off.
	ErrWipeRefused = errors.New("hawire: wiping the slave log needs AllowWipe")
	// ErrBadVerdict is a slave's refusal of a verdict that contradicts its
	// own log (a common point at or beyond its end, a master min at or below
	// its end, an accept starting elsewhere).
	ErrBadVerdict = errors.New("hawire: master verdict contradicts the slave log")
	// ErrNoSecret is returned by Validate when no secret is configured and
	// AllowUnauthenticated is off.
	ErrNoSecret = errors.New("hawire: no secret")
)

// RemoteError is an Error frame received from the peer.
type RemoteError struct {
	Code    ErrorCode
	Offset  int64
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("hawire: peer error %s (offset %d): %s", e.Code, e.Offset, e.Message)
}

// Unwrap maps the code to this package's sentinel so callers can use errors.Is.
func (e *RemoteError) Unwrap() error { return codeErr(e.Code) }

func codeErr(c ErrorCode) error {
	switch c {
	case CodeUnsupportedVersion:
		return ErrUnsupportedVersion
	case CodeNotAuthorised:
		return ErrNotAuthorised
	case CodeOffsetTooOld:
		return ErrOffsetTooOld
	case CodeDiverged:
		return ErrDiverged
	case CodeNotMaster:
		return ErrNotMaster
	case CodeWrongGroup:
		return ErrWrongGroup
	case CodeConfigMismatch:
		return ErrConfigMismatch
	}
	return ErrBadFrame
}

// codeFor maps a sentinel back to a wire code (CodeProtocol when unknown).
func codeFor(err error) ErrorCode {
	switch {
	case errors.Is(err, ErrUnsupportedVersion):
		return CodeUnsupportedVersion
	case errors.Is(err, ErrNotAuthorised):
		return CodeNotAuthorised
	case errors.Is(err, ErrOffsetTooOld):
		return CodeOffsetTooOld
	case errors.Is(err, ErrDiverged):
		return CodeDiverged
	case errors.Is(err, ErrNotMaster):
		return CodeNotMaster
	case errors.Is(err, ErrWrongGroup):
		return CodeWrongGroup
	case errors.Is(err, ErrConfigMismatch):
		return CodeConfigMismatch
	}
	return CodeProtocol
}

package hawire

// Wire constants: one table for every number that travels on the HA port.

// Magic opens the Hello and Handshake frames ("RMHA"). A peer that does not
// start with it is not speaking this protocol and is disconnected.
const Magic uint32 = 0x524D4841

// Protocol versions. A master advertises [MinVersion, MaxVersion] in its
// Hello; a slave answers with the highest version both support. Version 1
// proved only the slave to the master; it is refused (UNSUPPORTED_VERSION)
// because a version-1 master cannot prove itself (see the package doc).
const (
	Version1   uint16 = 1
	Version2   uint16 = 2 // mutual proof: slave nonce in HANDSHAKE, master proof in ACCEPT and ERROR
	MinVersion        = Version2
	MaxVersion        = Version2
)

// FrameType is the byte following the length of every frame.
type FrameType uint8

// Frame types.
const (
	FrameHello     FrameType = 1 // master → slave, first frame on a connection
	FrameHandshake FrameType = 2 // slave → master, answer to Hello
	FrameAccept    FrameType = 3 // master → slave, handshake accepted, streaming starts
	FrameData      FrameType = 4 // master → slave, whole CommitLog records
	FrameHeartbeat FrameType = 5 // master → slave, sent when idle
	FrameAck       FrameType = 6 // slave → master, written and flushed offsets
	FrameError     FrameType = 7 // either way, followed by close
)

func (t FrameType) String() string {
	switch t {
	case FrameHello:
		return "HELLO"
	case FrameHandshake:
		return "HANDSHAKE"
	case FrameAccept:
		return "ACCEPT"
	case FrameData:
		return "DATA"
	case FrameHeartbeat:
		return "HEARTBEAT"
	case FrameAck:
		return "ACK"
	case FrameError:
		return "ERROR"
	}
	return "UNKNOWN"
}

// ErrorCode is carried by an Error frame.
type ErrorCode uint16

// Error codes. The Offset field of the Error frame is meaningful where noted.
const (
	CodeUnsupportedVersion ErrorCode = 1 // slave's version outside the master's range
	CodeNotAuthorised      ErrorCode = 2 // missing or wrong proof
	CodeOffsetTooOld       ErrorCode = 3 // Offset = master's MinOffset; the slave's log ends before it
	CodeDiverged           ErrorCode = 4 // Offset = common point; the slave must truncate to it
	CodeNotMaster          ErrorCode = 5 // the peer is not (or no longer) a master
	CodeWrongGroup         ErrorCode = 6 // cluster or broker name differs, or bad broker id
	CodeConfigMismatch     ErrorCode = 7 // Offset = master's segment size; segment sizes differ
	CodeProtocol           ErrorCode = 8 // unexpected frame, bad ack, malformed data
)

func (c ErrorCode) String() string {
	switch c {
	case CodeUnsupportedVersion:
		return "UNSUPPORTED_VERSION"
	case CodeNotAuthorised:
		return "NOT_AUTHORISED"
	case CodeOffsetTooOld:
		return "OFFSET_TOO_OLD"
	case CodeDiverged:
		return "DIVERGED"
	case CodeNotMaster:
		return "NOT_MASTER"
	case CodeWrongGroup:
		return "WRONG_GROUP"
	case CodeConfigMismatch:
		return "CONFIG_MISMATCH"
	case CodeProtocol:
		return "PROTOCOL"
	}
	return "UNKNOWN"
}

// CommitLog record magics (RocketMQ layout): int32 TOTALSIZE then int32 MAGIC.
const (
	MagicV1    uint32 = 0xDAA320A7
	MagicV2    uint32 = 0xDAA320AB
	MagicBlank uint32 = 0xCBD43194
)

// Size limits enforced before any allocation.
const (
	// FrameHeaderLen is the envelope: uint32 length + uint8 type.
	FrameHeaderLen = 5
	// MaxHandshakeFrame bounds frames read before the handshake completes,
	// so garbage on the port cannot make the master allocate much.
	MaxHandshakeFrame = 4 << 10
	// MaxControlFrame bounds Accept (epoch list), Ack, Heartbeat and Error frames.
	MaxControlFrame = 1 << 20
	// MaxDataFrame bounds a Data frame. A record plus the BLANK padding that
	// can follow it is below RocketMQ's 4 MiB message cap; 64 MiB leaves room.
	MaxDataFrame = 64 << 20
	// MaxEpochEntries bounds the epoch list in an Accept frame and the epoch file.
	MaxEpochEntries = 1 << 15
	// ProofLen is the length of an HMAC-SHA256 proof.
	ProofLen = 32
	// NonceLen is the length of the master's Hello nonce and of the slave's
	// Handshake nonce.
	NonceLen = 32
	// DataHeaderLen is the fixed part of a Data frame body.
	DataHeaderLen = 8 + 8 + 8 + 8 + 4
)

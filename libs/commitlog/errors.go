package commitlog

import (
	"errors"
	"fmt"
)

var (
	// ErrMessageTooLarge is returned by Append when a body is longer than
	// Config.MaxMessageSize, or when a record cannot fit in an empty segment.
	ErrMessageTooLarge = errors.New("commitlog: message too large")
	// ErrTopicEmpty is returned by Append for an empty topic.
	ErrTopicEmpty = errors.New("commitlog: topic is empty")
	// ErrTopicTooLong is returned by Append for a topic over 127 bytes.
	ErrTopicTooLong = errors.New("commitlog: topic longer than 127 bytes")
	// ErrTopicInvalid is returned by Append for a topic with a character
	// outside RocketMQ's set (letters, digits, '%', '|', '-', '_').
	ErrTopicInvalid = errors.New("commitlog: topic has invalid characters")
	// ErrPropertiesTooLarge is returned by Append when the properties string is
	// over 32767 bytes.
	ErrPropertiesTooLarge = errors.New("commitlog: properties longer than 32767 bytes")
	// ErrPropertiesInvalid is returned by Append when a non-empty properties
	// string does not end with 0x02 or holds a NUL byte.
	ErrPropertiesInvalid = errors.New("commitlog: properties string malformed")
	// ErrQueueIDInvalid is returned by Append for a negative queue id (the
	// broker picks a queue before appending).
	ErrQueueIDInvalid = errors.New("commitlog: negative queue id")
	// ErrBatchMixed is returned by AppendBatch when members differ in topic or queue.
	ErrBatchMixed = errors.New("commitlog: batch mixes topics or queues")
	// ErrReadOnly is returned by writes after a write or fsync failure; Err
	// says which failure.
	ErrReadOnly = errors.New("commitlog: store is read-only")
	// ErrFlushTimeout is delivered by WaitFlush when the deadline passes
	// before the bytes are fsynced (FLUSH_DISK_TIMEOUT).
	ErrFlushTimeout = errors.New("commitlog: flush timeout")
	// ErrDispatchTimeout is returned by WaitDispatched when the deadline passes.
	ErrDispatchTimeout = errors.New("commitlog: dispatch wait timed out")
	// ErrNotFound is returned for a queue or message that does not exist.
	ErrNotFound = errors.New("commitlog: not found")
	// ErrOffsetMismatch is returned by AppendRaw when the offset is not the
	// local max offset.
	ErrOffsetMismatch = errors.New("commitlog: offset mismatch")
	// ErrOffsetTooOld is returned by reads below MinOffset (deleted by retention).
	ErrOffsetTooOld = errors.New("commitlog: offset below min offset")
	// ErrOffsetBeyondEnd is returned by reads at or past MaxOffset.
	ErrOffsetBeyondEnd = errors.New("commitlog: offset at or beyond max offset")
	// ErrBadOffset is returned by Truncate and Reset for an offset that is not
	// a record boundary or not segment aligned.
	ErrBadOffset = errors.New("commitlog: offset is not a valid boundary")
	// ErrIncomplete is returned by DecodeRecord when the buffer holds only the
	// start of a record.
	ErrIncomplete = errors.New("commitlog: incomplete record")
	// ErrCorrupt is returned for bytes that are not a valid record; the
	// *CorruptError detail says where and why.
	ErrCorrupt = errors.New("commitlog: corrupt record")
	// ErrClosed is returned by every operation after Close.
	ErrClosed = errors.New("commitlog: store closed")
	// ErrBadMsgID is returned by ParseOffsetMsgID for malformed ids.
	ErrBadMsgID = errors.New("commitlog: malformed offset message id")
	// ErrManifest is returned when the consume-queue coverage manifest cannot be
	// decoded (bad magic, version, checksum or entry); Open then rebuilds every
	// consume queue from the CommitLog and says so in RecoveryReport.CQCheck.
	ErrManifest = errors.New("commitlog: invalid consume-queue coverage manifest")
	// ErrIndexCorrupt is returned when an index file fails verification (short,
	// no trailer, bad checksum, a slot or link out of range); Open then rebuilds it
	// and every newer one from the CommitLog and says so in RecoveryReport.IndexCheck.
	ErrIndexCorrupt = errors.New("commitlog: invalid index file")
	// ErrIndexDisabled is returned by QueryIndex when MessageIndexEnable is off.
	ErrIndexDisabled = errors.New("commitlog: message index disabled")
	// ErrInvalidConfig wraps Config.Validate failures.
	ErrInvalidConfig = errors.New("commitlog: invalid config")
)

// CorruptError details ErrCorrupt: which file, which CommitLog offset and why.
type CorruptError struct {
	File   string // segment file, empty when decoding a buffer
	Offset int64  // physical CommitLog offset, or position in the buffer
	Reason string
}

func (e *CorruptError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("commitlog: corrupt record in %s at offset %d: %s", e.File, e.Offset, e.Reason)
	}
	return fmt.Sprintf("commitlog: corrupt record at offset %d: %s", e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(off int64, format string, args ...any) *CorruptError {
	return &CorruptError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

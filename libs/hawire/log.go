package hawire

// Log is the CommitLog as replication sees it. *commitlog.Store satisfies it;
// memlog.Log is an in-memory twin, and hawiretest.RunLogConformance checks
// both against the same expectations.
type Log interface {
	// MinOffset is the first offset still held (a segment start).
	MinOffset() int64
	// MaxOffset is the next physical offset to write.
	MaxOffset() int64
	// FlushedOffset is how far the log is on disk.
	FlushedOffset() int64
	// SegmentSize is the size of one CommitLog file.
	SegmentSize() int64
	// ReadRaw returns whole records (including BLANK end-of-segment padding)
	// from offset, never crossing a segment end; it may return fewer bytes
	// than maxBytes, and nothing when offset == MaxOffset.
	ReadRaw(offset int64, maxBytes int) ([]byte, error)
	// AppendRaw appends data at offset, which must equal MaxOffset (an empty
	// log accepts a segment-aligned offset). It must not retain data.
	AppendRaw(offset int64, data []byte) error
	// Truncate cuts the tail at offset, crash-safely.
	Truncate(offset int64) error
	// Reset wipes everything and restarts empty at a segment-aligned offset.
	Reset(startOffset int64) error
	// OnAppend registers fn to be called after every append with the new
	// MaxOffset. fn is cheap and never calls back into the log, so the store
	// may call it with its own lock held. There is no unregister: a closed
	// Master's callback becomes a no-op.
	OnAppend(fn func(maxOffset int64))
}

// RawReaderInto is an optional Log capability the master's sender uses when
// the log has it: ReadRaw into a buffer the caller reuses for every batch, and
// without re-checking the records' body CRCs (the log verified them when it
// took them; the Data frame's CRC covers the hop to the slave). Framing is
// still checked, by the log and by CheckRecords. *commitlog.Store has it.
type RawReaderInto interface {
	// ReadRawInto is ReadRaw reading into dst (grown when too small); the
	// result aliases dst.
	ReadRawInto(dst []byte, offset int64, maxBytes int) ([]byte, error)
}

// VerifiedAppender is an optional Log capability the slave uses when the log
// has it: AppendRawVerified appends records whose Data frame CRC the slave has
// just checked, so the log checks their framing but does not checksum them a
// second time; DispatchRaw then gives the log the same bytes again, after the
// acknowledgement went out, so that it builds its indexes from memory instead
// of reading the records back. Neither retains data. *commitlog.Store has it.
type VerifiedAppender interface {
	AppendRawVerified(offset int64, data []byte) error
	DispatchRaw(offset int64, data []byte)
}

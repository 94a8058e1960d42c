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

package commitlog

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/sirupsen/logrus"
)

// FlushDiskType is RocketMQ's flushDiskType.
type FlushDiskType int

// Flush modes.
const (
	// AsyncFlush syncs dirty CommitLog bytes every FlushInterval; an append is
	// acknowledged once it is in the page cache.
	AsyncFlush FlushDiskType = iota
	// SyncFlush lets an append wait (WaitFlush) until its bytes are fsynced,
	// with group commit.
	SyncFlush
)

func (t FlushDiskType) String() string {
	if t == SyncFlush {
		return "SYNC_FLUSH"
	}
	return "ASYNC_FLUSH"
}

// ParseFlushDiskType parses "ASYNC_FLUSH" or "SYNC_FLUSH" (case-insensitive).
func ParseFlushDiskType(s string) (FlushDiskType, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "ASYNC_FLUSH":
		return AsyncFlush, nil
	case "SYNC_FLUSH":
		return SyncFlush, nil
	}
	return 0, fmt.Errorf("%w: flushDiskType %q (want ASYNC_FLUSH or SYNC_FLUSH)", ErrInvalidConfig, s)
}

// Config configures a Store.
type Config struct {
	// Dir is storePathRootDir: commitlog/, consumequeue/, checkpoint and abort live under it.
	Dir string
	// SegmentSize is mappedFileSizeCommitLog, the size of one CommitLog file in bytes. Default 1 GiB.
	SegmentSize int64
	// CQUnitsPerFile is the number of 20-byte units per ConsumeQueue file. Default 300000.
	CQUnitsPerFile int
	// FlushDiskType is ASYNC_FLUSH or SYNC_FLUSH. Default ASYNC_FLUSH.
	FlushDiskType FlushDiskType
	// FlushInterval is flushIntervalCommitLog, how often dirty bytes are fsynced in the background. Default 500ms.
	FlushInterval time.Duration
	// SyncFlushTimeout is how long a SYNC_FLUSH append waits for its fsync. Default 5s.
	SyncFlushTimeout time.Duration
	// MaxMessageSize is the largest accepted body in bytes. Default 4 MiB.
	MaxMessageSize int
	// FileReservedTime is how long a CommitLog segment is kept after its last write. Default 72h.
	FileReservedTime time.Duration
	// DeleteWhen lists the hours of the day (0-23, clock of Now) at which expired segments are deleted. Default {4}.
	DeleteWhen []int
	// DiskMaxUsedSpaceRatio is the disk usage in percent above which the oldest segments are deleted at once. Default 75.
	DiskMaxUsedSpaceRatio int
	// CleanInterval is how often retention is checked. Default 10s.
	CleanInterval time.Duration
	// CheckpointInterval is how often the checkpoint file is rewritten. Default 1s.
	CheckpointInterval time.Duration
	// CQManifestInterval is how often the consume-queue coverage manifest is rewritten with
	// the checkpoint (it is also written after recovery, retention, Truncate, Reset,
	// DeleteTopic and Close). After a crash every record written since the last manifest is
	// dispatched again at start, so this bounds that work. Default 10s.
	CQManifestInterval time.Duration
	// RecoveryFullScan makes crash recovery validate every segment instead of
	// starting at the segment holding the last checkpoint. Default false.
	RecoveryFullScan bool
	// RecoveryCheckSegments is how many of the newest segments are validated
	// record by record even after a clean shutdown (bit rot, damaged tails).
	// Default 1.
	RecoveryCheckSegments int
	// WriteBuffer, when positive, is the size in bytes of a user-space append
	// buffer: Append copies records into it and they reach the file when it
	// fills, every CommitInterval, or before a flush. Faster for small
	// messages, but an acknowledged ASYNC_FLUSH append can be lost by a
	// process crash before its commit (RocketMQ's transientStorePool trade).
	// Default 0: every append is written to the file before Append returns.
	WriteBuffer int
	// CommitInterval is how often a non-empty WriteBuffer is written to the file. Default 1ms.
	CommitInterval time.Duration
	// TailCacheBytes is the size of the in-memory copy of the newest CommitLog bytes written
	// (tailcache.go), from which the dispatcher, HA sends and fresh reads are served without
	// reading the file back; it is allocated in 1 MiB chunks as the log grows. 0 turns it off.
	// Default 16 MiB.
	TailCacheBytes int
	// TailCacheDeferred keeps the tail cache empty, and its copies off the append path, until
	// EnableTailCache. For a replica: a slave indexes what it receives from the frame it came
	// in and its consumers read from the master, so nothing reads its fresh bytes back; a
	// promotion turns the cache on. Default false.
	TailCacheDeferred bool
	// MessageIndexEnable keeps the message index (index/): KEYS and UNIQ_KEY of every
	// stored message, for QueryIndex. Default true.
	MessageIndexEnable bool
	// MaxHashSlotNum is the number of hash slots per index file (4 bytes each). Default
	// 500000, a tenth of RocketMQ's 5000000: a file's slot table is 2 MB instead of 20 MB.
	MaxHashSlotNum int
	// MaxIndexNum is the number of 20-byte entries per index file. Default 2000000, a
	// tenth of RocketMQ's 20000000: a full file is 42 MB instead of 420 MB (read whole
	// when it is finished and verified at every start), with the same 4 entries per slot.
	MaxIndexNum int
	// StoreHost is written into STOREHOST and offset message ids (brokerIP1:listenPort).
	StoreHost netip.AddrPort
	// TagsCode computes a message's consume-queue tags code; nil means Java
	// String.hashCode of TAGS (0 if none). The broker overrides it for SCHEDULE_TOPIC_XXXX.
	// It runs once per dispatched record (on slaves, per replicated record), so
	// props is the stored bytes, looked up in place (see Props).
	TagsCode func(topic string, props Props, storeTimestamp int64) int64
	// FS is the file system. Default vfs.Default.
	FS vfs.FS
	// Logger receives structured logs. Default: discards.
	Logger logrus.FieldLogger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns production defaults (Dir must still be set).
func DefaultConfig() Config {
	return Config{
		SegmentSize:           1 << 30,
		CQUnitsPerFile:        300000,
		FlushDiskType:         AsyncFlush,
		FlushInterval:         500 * time.Millisecond,
		SyncFlushTimeout:      5 * time.Second,
		MaxMessageSize:        4 << 20,
		FileReservedTime:      72 * time.Hour,
		DeleteWhen:            []int{4},
		DiskMaxUsedSpaceRatio: 75,
		CleanInterval:         10 * time.Second,
		CheckpointInterval:    time.Second,
		CQManifestInterval:    10 * time.Second,
		RecoveryCheckSegments: 1,
		MessageIndexEnable:    true,
		MaxHashSlotNum:        500000,
		MaxIndexNum:           2000000,
		CommitInterval:        time.Millisecond,
		TailCacheBytes:        16 << 20,
		StoreHost:             netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911),
		FS:                    vfs.Default,
		Logger:                discardLogger(),
		Now:                   time.Now,
	}
}

func discardLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// Validate names the first offending field.
func (c Config) Validate() error {
	bad := func(field, why string, v any) error {
		return fmt.Errorf("%w: %s %v: %s", ErrInvalidConfig, field, v, why)
	}
	switch {
	case c.Dir == "":
		return bad("Dir", "must be set", `""`)
	case c.SegmentSize < 4096:
		return bad("SegmentSize", "must be at least 4096", c.SegmentSize)
	case c.SegmentSize > 1<<40:
		return bad("SegmentSize", "must be at most 1 TiB", c.SegmentSize)
	case c.CQUnitsPerFile < 1:
		return bad("CQUnitsPerFile", "must be positive", c.CQUnitsPerFile)
	case c.FlushDiskType != AsyncFlush && c.FlushDiskType != SyncFlush:
		return bad("FlushDiskType", "unknown", c.FlushDiskType)
	case c.FlushInterval <= 0:
		return bad("FlushInterval", "must be positive", c.FlushInterval)
	case c.SyncFlushTimeout <= 0:
		return bad("SyncFlushTimeout", "must be positive", c.SyncFlushTimeout)
	case c.MaxMessageSize <= 0:
		return bad("MaxMessageSize", "must be positive", c.MaxMessageSize)
	case c.FileReservedTime <= 0:
		return bad("FileReservedTime", "must be positive", c.FileReservedTime)
	case c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95:
		return bad("DiskMaxUsedSpaceRatio", "must be within 10..95", c.DiskMaxUsedSpaceRatio)
	case c.CleanInterval <= 0:
		return bad("CleanInterval", "must be positive", c.CleanInterval)
	case c.CheckpointInterval <= 0:
		return bad("CheckpointInterval", "must be positive", c.CheckpointInterval)
	case c.CQManifestInterval <= 0:
		return bad("CQManifestInterval", "must be positive", c.CQManifestInterval)
	case c.RecoveryCheckSegments < 0:
		return bad("RecoveryCheckSegments", "must not be negative", c.RecoveryCheckSegments)
	case c.WriteBuffer < 0:
		return bad("WriteBuffer", "must not be negative", c.WriteBuffer)
	case c.TailCacheBytes < 0 || c.TailCacheBytes > 1<<30:
		return bad("TailCacheBytes", "must be within 0..1 GiB", c.TailCacheBytes)
	case c.WriteBuffer > 0 && c.CommitInterval <= 0:
		return bad("CommitInterval", "must be positive with a WriteBuffer", c.CommitInterval)
	case c.MessageIndexEnable && (c.MaxHashSlotNum < 1 || c.MaxHashSlotNum > maxIndexSlots):
		return bad("MaxHashSlotNum", "must be within 1..268435456", c.MaxHashSlotNum)
	case c.MessageIndexEnable && (c.MaxIndexNum < 1 || c.MaxIndexNum > maxIndexEntries):
		return bad("MaxIndexNum", "must be within 1..268435456", c.MaxIndexNum)
	case c.FS == nil:
		return bad("FS", "must be set", nil)
	case c.Logger == nil:
		return bad("Logger", "must be set", nil)
	case c.Now == nil:
		return bad("Now", "must be set", nil)
	}
	for _, h := range c.DeleteWhen {
		if h < 0 || h > 23 {
			return bad("DeleteWhen", "hours must be within 0..23", c.DeleteWhen)
		}
	}
	return nil
}

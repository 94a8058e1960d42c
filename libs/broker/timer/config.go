package timer

import (
	"fmt"
	"io"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/sirupsen/logrus"
)

// Config configures a Service.
type Config struct {
	// Dir holds the index files and the checkpoint (the broker uses
	// storePathRootDir/timer). Required.
	Dir string
	// FS is the file system every index and checkpoint access goes through. Default vfs.Default.
	FS vfs.FS
	// Enabled is RocketMQ's timerWheelEnable: off, sends with a timer property are refused
	// (SYSTEM_ERROR) and nothing is delivered. Default true.
	Enabled bool
	// PrecisionMs is timerPrecisionMs: the slot width in ms; a timer fires at the end of its
	// slot. Default 1000.
	PrecisionMs int64
	// MaxDelay is timerMaxDelaySec: a timer further ahead is refused (MESSAGE_ILLEGAL).
	// Default 72h.
	MaxDelay time.Duration
	// BucketSpan is the time one index file covers, a multiple of PrecisionMs; only the
	// bucket being delivered is held in memory. Default 60s.
	BucketSpan time.Duration
	// FlushInterval is timerFlushIntervalMs: how often the index is fsynced and the
	// checkpoint written. A kill -9 re-delivers what was delivered since the last write.
	// Default 1s.
	FlushInterval time.Duration
	// IndexSyncInterval is how often every index file written since the last time is
	// fsynced; a restart indexes the records since then again (looking each up in its bucket
	// first). Default 10s.
	IndexSyncInterval time.Duration
	// RetryBackoff is the first wait before retrying a failed delivery; it doubles up to
	// MaxRetryBackoff. Default 100ms.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the wait between retries of a failed delivery. Default 10s.
	MaxRetryBackoff time.Duration
	// Logger receives structured logs. Default: discards.
	Logger logrus.FieldLogger
	// Now is the clock that decides what is due. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns production defaults (Dir must still be set).
func DefaultConfig() Config {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return Config{
		FS:                vfs.Default,
		Enabled:           true,
		PrecisionMs:       1000,
		MaxDelay:          72 * time.Hour,
		BucketSpan:        time.Minute,
		FlushInterval:     time.Second,
		IndexSyncInterval: 10 * time.Second,
		RetryBackoff:      100 * time.Millisecond,
		MaxRetryBackoff:   10 * time.Second,
		Logger:            l,
		Now:               time.Now,
	}
}

// Rules are the send-side settings of c.
func (c Config) Rules() Rules {
	return Rules{Enabled: c.Enabled, PrecisionMs: c.PrecisionMs, MaxDelayMs: c.MaxDelay.Milliseconds()}
}

// Validate names the first offending field.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrInvalidConfig}, a...)...) }
	switch {
	case c.Dir == "":
		return bad("Dir is empty")
	case c.FS == nil:
		return bad("FS is nil")
	case c.PrecisionMs < 100 || c.PrecisionMs > 60_000:
		return bad("PrecisionMs %d outside 100..60000", c.PrecisionMs)
	case c.MaxDelay < time.Second:
		return bad("MaxDelay %v below 1s", c.MaxDelay)
	case c.BucketSpan.Milliseconds() < c.PrecisionMs || c.BucketSpan.Milliseconds()%c.PrecisionMs != 0:
		return bad("BucketSpan %v is not a positive multiple of PrecisionMs", c.BucketSpan)
	case c.FlushInterval <= 0:
		return bad("FlushInterval must be positive")
	case c.IndexSyncInterval < c.FlushInterval:
		return bad("IndexSyncInterval must be at least FlushInterval")
	case c.RetryBackoff <= 0:
		return bad("RetryBackoff must be positive")
	case c.MaxRetryBackoff < c.RetryBackoff:
		return bad("MaxRetryBackoff must be at least RetryBackoff")
	case c.Logger == nil:
		return bad("Logger is nil")
	case c.Now == nil:
		return bad("Now is nil")
	}
	return nil
}

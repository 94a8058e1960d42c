package schedule

import (
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
)

// Config configures a Service.
type Config struct {
	// Levels is the delay-level table (messageDelayLevel). Default DefaultLevels().
	Levels Levels
	// PersistInterval is how often delivery progress is written to
	// delayOffset.json (only when it changed). A kill -9 re-delivers what each
	// level delivered since the last write. Default 1s.
	PersistInterval time.Duration
	// RetryBackoff is the wait before the first retry of a failed Put; it
	// doubles on each further failure up to MaxRetryBackoff. Default 100ms.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the wait between retries of a failed Put. Default 10s.
	MaxRetryBackoff time.Duration
	// IdleRecheck is how long a level with nothing queued waits for Notify
	// before it looks at its queue again anyway: a safety net against a
	// missed notification, not the delivery mechanism. Default 5s.
	IdleRecheck time.Duration
	// Delivered, when set, is the delivery progress seen in the log (TagsCodeObserving):
	// Start resumes each level after the later of it and the offsets table.
	Delivered *Delivered
	// Logger receives structured logs. Default: discards.
	Logger logrus.FieldLogger
	// Now is the clock that decides whether a message is due. Default
	// time.Now. Waits use real timers for the difference; after moving a
	// test clock, call Notify to make a waiting level look again.
	Now func() time.Time
}

// DefaultConfig returns production defaults.
func DefaultConfig() Config {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return Config{
		Levels:          DefaultLevels(),
		PersistInterval: time.Second,
		RetryBackoff:    100 * time.Millisecond,
		MaxRetryBackoff: 10 * time.Second,
		IdleRecheck:     5 * time.Second,
		Logger:          l,
		Now:             time.Now,
	}
}

// Validate names the first offending field.
func (c Config) Validate() error {
	switch {
	case len(c.Levels) == 0:
		return fmt.Errorf("%w: Levels is empty", ErrInvalidConfig)
	case len(c.Levels) > MaxLevels:
		return fmt.Errorf("%w: Levels has %d levels, at most %d", ErrInvalidConfig, len(c.Levels), MaxLevels)
	case c.PersistInterval <= 0:
		return fmt.Errorf("%w: PersistInterval must be positive", ErrInvalidConfig)
	case c.RetryBackoff <= 0:
		return fmt.Errorf("%w: RetryBackoff must be positive", ErrInvalidConfig)
	case c.MaxRetryBackoff < c.RetryBackoff:
		return fmt.Errorf("%w: MaxRetryBackoff must be at least RetryBackoff", ErrInvalidConfig)
	case c.IdleRecheck <= 0:
		return fmt.Errorf("%w: IdleRecheck must be positive", ErrInvalidConfig)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrInvalidConfig)
	case c.Now == nil:
		return fmt.Errorf("%w: Now is nil", ErrInvalidConfig)
	}
	for i, d := range c.Levels {
		if d <= 0 {
			return fmt.Errorf("%w: Levels[%d] (level %d) must be positive", ErrInvalidConfig, i, i+1)
		}
	}
	return nil
}

package nameserver

import (
	"sync"
	"time"
)

// logLimiter lets at most burst refusal lines through per interval and counts the rest, so
// that a flood of bad registrations cannot flood the log. It takes the clock as an argument.
type logLimiter struct {
	interval time.Duration
	burst    int

	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

// allow reports whether a line may be written now, and how many were suppressed since the
// last one written.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.interval {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.suppressed++
		return false, 0
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return true, s
}

package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultMessageDelayLevel is RocketMQ's default messageDelayLevel.
const DefaultMessageDelayLevel = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// MaxLevels bounds the number of levels a table may hold (one schedule queue
// per level; RocketMQ's table has 18).
const MaxLevels = 1000

// Levels is a delay-level table: Levels[i] is the delay of level i+1.
type Levels []time.Duration

// DefaultLevels returns RocketMQ's default table (18 levels, 1s .. 2h).
func DefaultLevels() Levels {
	l, err := ParseLevels(DefaultMessageDelayLevel)
	if err != nil {
		panic(err) // constant input
	}
	return l
}

var levelUnits = map[byte]time.Duration{
	's': time.Second,
	'm': time.Minute,
	'h': time.Hour,
	'd': 24 * time.Hour,
}

// ParseLevels parses RocketMQ's messageDelayLevel syntax: space-separated
// tokens <integer><unit> with unit s, m, h or d ("1s 5s 10s 30s 1m ... 2h").
// This package also accepts ms (milliseconds, "100ms"), which RocketMQ does
// not; it exists for short test tables. Every delay must be positive. Errors wrap ErrInvalidLevels and name the
// offending token and its level.
func ParseLevels(s string) (Levels, error) {
	tokens := strings.Fields(s)
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: empty table", ErrInvalidLevels)
	}
	if len(tokens) > MaxLevels {
		return nil, fmt.Errorf("%w: %d levels, at most %d", ErrInvalidLevels, len(tokens), MaxLevels)
	}
	out := make(Levels, 0, len(tokens))
	for i, tok := range tokens {
		num := tok[:len(tok)-1]
		unit, ok := levelUnits[tok[len(tok)-1]]
		if strings.HasSuffix(tok, "ms") {
			num, unit, ok = tok[:len(tok)-2], time.Millisecond, true
		}
		if !ok {
			return nil, fmt.Errorf("%w: level %d %q: unit must be s, m, h or d", ErrInvalidLevels, i+1, tok)
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: level %d %q: not an integer followed by a unit", ErrInvalidLevels, i+1, tok)
		}
		if n <= 0 {
			return nil, fmt.Errorf("%w: level %d %q: delay must be positive", ErrInvalidLevels, i+1, tok)
		}
		if n > math.MaxInt64/int64(unit) {
			return nil, fmt.Errorf("%w: level %d %q: delay too large", ErrInvalidLevels, i+1, tok)
		}
		out = append(out, time.Duration(n)*unit)
	}
	return out, nil
}

// Max is the highest level (the number of levels).
func (l Levels) Max() int { return len(l) }

// Delay returns the delay of a level (1-based); ok is false outside 1..Max.
func (l Levels) Delay(level int) (d time.Duration, ok bool) {
	if level < 1 || level > len(l) {
		return 0, false
	}
	return l[level-1], true
}

// Clamp maps a requested level onto the table as RocketMQ does: above Max
// becomes Max. Levels below 1 are returned unchanged (no delay).
func (l Levels) Clamp(level int) int {
	if level > len(l) {
		return len(l)
	}
	return level
}

// String formats the table in messageDelayLevel syntax, each delay in the
// largest unit that divides it (ms below whole seconds).
func (l Levels) String() string {
	var b strings.Builder
	for i, d := range l {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case d%(24*time.Hour) == 0:
			fmt.Fprintf(&b, "%dd", d/(24*time.Hour))
		case d%time.Hour == 0:
			fmt.Fprintf(&b, "%dh", d/time.Hour)
		case d%time.Minute == 0:
			fmt.Fprintf(&b, "%dm", d/time.Minute)
		case d%time.Second == 0:
			fmt.Fprintf(&b, "%ds", d/time.Second)
		default:
			fmt.Fprintf(&b, "%dms", d/time.Millisecond)
		}
	}
	return b.String()
}

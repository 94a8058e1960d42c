package nameserver

import (
	"fmt"
	"sync"
	"time"
)

// freshness keeps recorded registrations from being played again: a signed registration's
// registrationTime (ms) must lie within skew of now, and be after the last one accepted
// from the same broker (cluster, broker name, broker address; REGISTER_BROKER and
// UNREGISTER_BROKER share the sequence). A broker's entry is forgotten once its last time
// is older than the window, where the window alone refuses it. It takes the clock as an
// argument.
type freshness struct {
	skew time.Duration
	max  int // brokers tracked at most

	mu   sync.Mutex
	last map[string]int64
}

// maxTrackedBrokers bounds the replay window's memory (signed registrations only).
const maxTrackedBrokers = 16384

func newFreshness(skew time.Duration) *freshness {
	return &freshness{skew: skew, max: maxTrackedBrokers, last: map[string]int64{}}
}

func brokerKey(cluster, brokerName, addr string) string {
	return cluster + "\x00" + brokerName + "\x00" + addr
}

// admit records ts for key, or says why it is refused.
func (f *freshness) admit(key string, ts int64, now time.Time) error {
	nowMs := now.UnixMilli()
	skew := f.skew.Milliseconds()
	if d := ts - nowMs; d > skew || d < -skew {
		return fmt.Errorf("%w: registrationTime %d is %v from the name server's clock (registrationMaxClockSkew %v)",
			ErrClockSkew, ts, time.Duration(d)*time.Millisecond, f.skew)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.last[key]; ok && ts <= last {
		return fmt.Errorf("%w: registrationTime %d is not after %d, the last accepted from this broker", ErrReplayed, ts, last)
	}
	if _, ok := f.last[key]; !ok && len(f.last) >= f.max {
		for k, last := range f.last {
			if last < nowMs-skew {
				delete(f.last, k)
			}
		}
		if len(f.last) >= f.max {
			return fmt.Errorf("%w: %d brokers registered within registrationMaxClockSkew", ErrTooManyBrokers, len(f.last))
		}
	}
	f.last[key] = ts
	return nil
}

package remoting

import (
	"runtime/debug"
	"time"

	"github.com/sirupsen/logrus"
)

// Returning memory after a burst
//
// Buffers of frames held by attackers (or by a burst of large sends) become garbage when their
// connections close, but an idle process runs no collection for up to two minutes and the
// runtime then hands freed pages back to the operating system only gradually. So a server
// whose bytes in flight peaked high and then fell back returns the memory itself: every
// memoryCheckEvery it compares the peak since the last look with what is held now, and when
// the peak was at least returnAbove and less than a quarter of it is still held, it drops the
// spare read buffers and runs debug.FreeOSMemory once (a full collection, a few milliseconds
// for a broker's heap).

const (
	memoryCheckEvery = 5 * time.Second
	returnAbove      = 64 << 20
)

// memoryReturner runs until done closes.
func (s *Server) memoryReturner(done <-chan struct{}) {
	t := time.NewTicker(memoryCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		used := s.budget.used.Load()
		peak := s.budget.peak.Swap(used)
		if peak >= returnAbove && used < peak/4 {
			start := time.Now()
			s.spares.drop()
			debug.FreeOSMemory()
			s.log.WithFields(logrus.Fields{"peak": peak, "inFlight": used, "took": time.Since(start)}).
				Info("remoting: bytes in flight fell from their peak, memory returned to the operating system")
		}
	}
}

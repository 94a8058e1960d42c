package brokerstats

import (
	"context"
	"time"
)

// TickEvery is how often Run calls Tick: the finest sampling period (the rates').
const TickEvery = time.Second

// Run calls Tick(now()) at once and every TickEvery until ctx is done.
func (m *Manager) Run(ctx context.Context, now func() time.Time) {
	m.Tick(now())
	t := time.NewTicker(TickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Tick(now())
		}
	}
}

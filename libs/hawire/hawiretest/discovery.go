package hawiretest

import (
	"context"
	"sync"
)

// SwitchDiscovery is a hawire.Discovery whose address tests change, as a
// Consul-backed one would after a master moves.
type SwitchDiscovery struct {
	mu   sync.Mutex
	addr string
	subs []chan string
}

// NewSwitchDiscovery starts with addr ("" = no master yet).
func NewSwitchDiscovery(addr string) *SwitchDiscovery { return &SwitchDiscovery{addr: addr} }

// Set publishes a new address; watchers see only the latest one.
func (d *SwitchDiscovery) Set(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addr = addr
	for _, ch := range d.subs {
		select {
		case <-ch:
		default:
		}
		ch <- addr
	}
}

// Watch implements hawire.Discovery.
func (d *SwitchDiscovery) Watch(ctx context.Context) <-chan string {
	ch := make(chan string, 1)
	d.mu.Lock()
	if d.addr != "" {
		ch <- d.addr
	}
	d.subs = append(d.subs, ch)
	d.mu.Unlock()
	go func() {
		<-ctx.Done()
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, c := range d.subs {
			if c == ch {
				d.subs = append(d.subs[:i], d.subs[i+1:]...)
				break
			}
		}
	}()
	return ch
}

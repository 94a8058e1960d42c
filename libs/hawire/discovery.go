package hawire

import (
	"context"
	"sync"
)

// Discovery tells a slave where its master's HA port is.
type Discovery interface {
	// Watch sends the current address, then every change, until ctx ends.
	// The channel may be closed when no further change will come.
	Watch(ctx context.Context) <-chan string
}

type staticDiscovery string

// StaticDiscovery always answers addr (haMasterAddress).
func StaticDiscovery(addr string) Discovery { return staticDiscovery(addr) }

func (s staticDiscovery) Watch(ctx context.Context) <-chan string {
	ch := make(chan string, 1)
	ch <- string(s)
	close(ch)
	return ch
}

// SwitchDiscovery is a Discovery whose address its owner changes (from name
// server answers, or in tests after a master moves). Watchers see only the
// latest address.
type SwitchDiscovery struct {
	mu   sync.Mutex
	addr string
	subs []chan string
}

// NewSwitchDiscovery starts with addr ("" = no master yet).
func NewSwitchDiscovery(addr string) *SwitchDiscovery { return &SwitchDiscovery{addr: addr} }

// Current is the address last set.
func (d *SwitchDiscovery) Current() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addr
}

// Set publishes a new address; watchers see only the latest one. Setting the
// current address again notifies nobody.
func (d *SwitchDiscovery) Set(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if addr == d.addr {
		return
	}
	d.addr = addr
	for _, ch := range d.subs {
		select {
		case <-ch:
		default:
		}
		ch <- addr
	}
}

// Watch implements Discovery.
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

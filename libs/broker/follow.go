package broker

import (
	"context"

	"github.com/rmqha/rmqha/libs/hawire"
)

// FollowMaster feeds a slave's master discovery from d (the Consul watch of
// the master's HA address) until ctx ends, in addition to the addresses the
// name servers return on registration. A static haMasterAddress is never
// replaced. It does nothing on a master.
func (b *Broker) FollowMaster(ctx context.Context, d hawire.Discovery) {
	if b.disc == nil || d == nil {
		return
	}
	go func() {
		for addr := range d.Watch(ctx) {
			if addr != "" {
				b.disc.learn(addr)
			}
		}
	}()
}

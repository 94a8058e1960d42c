package broker

import (
	"context"

	"github.com/rmqha/rmqha/libs/hawire"
)

// FollowMaster feeds a slave's master discovery from d (the Consul watch of
// the master's HA address) until ctx ends, in addition to the addresses the
// name servers return on registration. A static haMasterAddress is never
// replaced. While the broker is master the addresses are ignored; after a demotion they feed
// the new slave's discovery.
func (b *Broker) FollowMaster(ctx context.Context, d hawire.Discovery) {
	if d == nil {
		return
	}
	go func() {
		for addr := range d.Watch(ctx) {
			if disc := b.view().disc; disc != nil && addr != "" {
				disc.learn(addr)
			}
		}
	}()
}

package hawire

import "context"

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

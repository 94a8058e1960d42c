package syncer

import (
	"context"
	"sort"
	"strings"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// Discoverer reports the current masters: fn is called with the whole list
// whenever it changes, until ctx ends.
type Discoverer interface {
	Run(ctx context.Context, fn func([]Target))
}

// StaticDiscoverer reports a fixed list (masterAddrs).
type StaticDiscoverer struct{ Targets []Target }

// Run implements Discoverer.
func (d StaticDiscoverer) Run(ctx context.Context, fn func([]Target)) {
	fn(d.Targets)
	<-ctx.Done()
}

// ConsulDiscoverer follows the broker registry the name servers write into
// Consul (libs/discovery): every healthy master, one per group.
type ConsulDiscoverer struct {
	Client *consul.Client
	// Wait bounds one blocking query. Default 30s.
	Wait time.Duration
	Log  logrus.FieldLogger
}

// Run implements Discoverer.
func (d ConsulDiscoverer) Run(ctx context.Context, fn func([]Target)) {
	wait := d.Wait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	discovery.Watch(ctx, d.Client, wait, func(brokers []discovery.Broker, err error) {
		if err != nil {
			d.Log.WithError(err).Warn("consul broker watch failed; keeping the last masters")
			return
		}
		var out []Target
		for _, b := range brokers {
			if b.IsMaster() && b.Addr != "" {
				out = append(out, Target{Cluster: b.Cluster, BrokerName: b.BrokerName, Addr: b.Addr, Epoch: b.Epoch})
			}
		}
		fn(out)
	})
}

// NamesrvDiscoverer asks the name servers for the cluster info every Interval.
type NamesrvDiscoverer struct {
	Client   *remoting.Client
	Addrs    []string
	Interval time.Duration
	Timeout  time.Duration
	Log      logrus.FieldLogger
}

// Run implements Discoverer.
func (d NamesrvDiscoverer) Run(ctx context.Context, fn func([]Target)) {
	t := time.NewTicker(d.Interval)
	defer t.Stop()
	for {
		if out, ok := d.poll(ctx); ok {
			fn(out)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d NamesrvDiscoverer) poll(ctx context.Context) ([]Target, bool) {
	for _, addr := range d.Addrs {
		cctx, cancel := context.WithTimeout(ctx, d.Timeout)
		resp, err := d.Client.Invoke(cctx, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		cancel()
		if err != nil || resp.Code != remoting.Success {
			d.Log.WithError(err).WithField("namesrv", addr).Warn("GET_BROKER_CLUSTER_INFO failed")
			continue
		}
		info, err := route.DecodeClusterInfo(resp.Body)
		if err != nil {
			d.Log.WithError(err).WithField("namesrv", addr).Warn("undecodable cluster info")
			continue
		}
		var out []Target
		for _, bd := range info.BrokerAddrTable {
			if m := bd.MasterAddr(); m != "" {
				out = append(out, Target{Cluster: bd.Cluster, BrokerName: bd.BrokerName, Addr: m})
			}
		}
		sort.Slice(out, func(i, j int) bool {
			return out[i].Cluster+"/"+out[i].BrokerName < out[j].Cluster+"/"+out[j].BrokerName
		})
		return out, true
	}
	return nil, false
}

// splitNamesrv splits RocketMQ's "a:9876;b:9876" list.
func splitNamesrv(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

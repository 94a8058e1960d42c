package discovery

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/sirupsen/logrus"
)

// ServiceName is the Consul service every broker is registered under.
const ServiceName = "rocketmq-broker"

// KVTopicsPrefix is the KV folder holding each group's topic table.
const KVTopicsPrefix = "rmqha/topics/"

// Meta keys of a broker's service instance.
const (
	MetaCluster    = "cluster"
	MetaBrokerName = "brokerName"
	MetaBrokerID   = "brokerId"
	MetaEpoch      = "epoch"
	MetaAddr       = "addr"
	MetaHAAddr     = "haAddr"
	MetaHTTPAddr   = "httpAddr"
	MetaHTTPTLS    = "httpTls"
)

// Broker is one broker as the registry holds it.
type Broker struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Epoch      int64  `json:"epoch"`
	Addr       string `json:"addr"`
	HAAddr     string `json:"haAddr"`
	HTTPAddr   string `json:"httpAddr,omitempty"` // status HTTP address, when the broker serves one
	HTTPTLS    bool   `json:"httpTls,omitempty"`  // the status port serves HTTPS
	Node       string `json:"node,omitempty"`     // Consul node holding the instance
}

// IsMaster reports brokerId 0.
func (b Broker) IsMaster() bool { return b.BrokerID == 0 }

// ServiceID is the instance ID of a broker.
func ServiceID(cluster, brokerName string, brokerID int64) string {
	return fmt.Sprintf("rmqha/%s/%s/%d", cluster, brokerName, brokerID)
}

// TopicsKey is the KV key of a group's topic table.
func TopicsKey(cluster, brokerName string) string {
	return KVTopicsPrefix + cluster + "/" + brokerName
}

// NewClient returns a Consul client configured from the environment
// (CONSUL_HTTP_ADDR and friends); addr overrides the address when not empty.
func NewClient(addr string) (*consul.Client, error) {
	cfg := consul.DefaultConfig()
	if addr != "" {
		cfg.Address = addr
	}
	return consul.NewClient(cfg)
}

// Registration builds the agent service registration of b. ttl is the TTL
// check's period; tcpInterval the TCP check's (0 disables it).
func Registration(b Broker, ttl, tcpInterval, deregisterAfter time.Duration) *consul.AgentServiceRegistration {
	role := "slave"
	if b.IsMaster() {
		role = "master"
	}
	id := ServiceID(b.Cluster, b.BrokerName, b.BrokerID)
	host, portS, _ := net.SplitHostPort(b.Addr)
	port, _ := strconv.Atoi(portS)
	reg := &consul.AgentServiceRegistration{
		ID:      id,
		Name:    ServiceName,
		Address: host,
		Port:    port,
		Tags: []string{"cluster=" + b.Cluster, "broker=" + b.BrokerName, "id=" + strconv.FormatInt(b.BrokerID, 10),
			"role=" + role, "epoch=" + strconv.FormatInt(b.Epoch, 10)},
		Meta: map[string]string{
			MetaCluster: b.Cluster, MetaBrokerName: b.BrokerName, MetaBrokerID: strconv.FormatInt(b.BrokerID, 10),
			MetaEpoch: strconv.FormatInt(b.Epoch, 10), MetaAddr: b.Addr, MetaHAAddr: b.HAAddr, MetaHTTPAddr: b.HTTPAddr,
			MetaHTTPTLS: strconv.FormatBool(b.HTTPTLS),
		},
		Checks: consul.AgentServiceChecks{{
			CheckID:                        id + "/ttl",
			Name:                           "broker keeps registering",
			TTL:                            ttl.String(),
			Status:                         consul.HealthPassing,
			DeregisterCriticalServiceAfter: deregisterAfter.String(),
		}},
	}
	if tcpInterval > 0 {
		// A whole interval, at least a second: a loaded broker answering a
		// little late must not flap out of the routes; a hung one still
		// fails within two intervals.
		timeout := tcpInterval
		if timeout < time.Second {
			timeout = time.Second
		}
		check := &consul.AgentServiceCheck{
			CheckID:                        id + "/tcp",
			Name:                           "broker answers on its client port",
			TCP:                            b.Addr,
			Interval:                       tcpInterval.String(),
			Timeout:                        timeout.String(),
			Status:                         consul.HealthPassing,
			DeregisterCriticalServiceAfter: deregisterAfter.String(),
		}
		if b.HTTPAddr != "" {
			// /status answers whenever the process runs (unlike /health, which
			// also fails for a read-only store that can still serve reads), and
			// a hung or paused process fails it within the timeout, where a TCP
			// dial would still succeed through the kernel's accept queue.
			check.CheckID, check.Name, check.TCP = id+"/http", "broker answers on its status port", ""
			check.HTTP = "http://" + b.HTTPAddr + "/status"
			if b.HTTPTLS {
				// The status port's certificate may be the test-mode self-signed one; the
				// check asks whether the process answers, not who it is.
				check.HTTP, check.TLSSkipVerify = "https://"+b.HTTPAddr+"/status", true
			}
		}
		reg.Checks = append(reg.Checks, check)
	}
	return reg
}

// FromService decodes a broker from a service entry; false when it is not one.
func FromService(s *consul.AgentService, node string) (Broker, bool) {
	if s == nil || s.Service != ServiceName {
		return Broker{}, false
	}
	m := s.Meta
	id, err1 := strconv.ParseInt(m[MetaBrokerID], 10, 64)
	epoch, err2 := strconv.ParseInt(m[MetaEpoch], 10, 64)
	if err1 != nil || err2 != nil || m[MetaCluster] == "" || m[MetaBrokerName] == "" || m[MetaAddr] == "" {
		return Broker{}, false
	}
	return Broker{Cluster: m[MetaCluster], BrokerName: m[MetaBrokerName], BrokerID: id, Epoch: epoch,
		Addr: m[MetaAddr], HAAddr: m[MetaHAAddr], HTTPAddr: m[MetaHTTPAddr], HTTPTLS: m[MetaHTTPTLS] == "true", Node: node}, true
}

// Healthy lists the brokers whose checks all pass, deduplicated per
// (cluster, name, id) and with at most one master per group (highest epoch,
// then lowest address), sorted by cluster, name, id. It blocks like a
// Consul blocking query when q.WaitIndex is set.
func Healthy(ctx context.Context, c *consul.Client, q *consul.QueryOptions) ([]Broker, *consul.QueryMeta, error) {
	if q == nil {
		q = &consul.QueryOptions{}
	}
	entries, meta, err := c.Health().Service(ServiceName, "", true, q.WithContext(ctx))
	if err != nil {
		return nil, meta, err
	}
	var out []Broker
	for _, e := range entries {
		node := ""
		if e.Node != nil {
			node = e.Node.Node
		}
		if b, ok := FromService(e.Service, node); ok {
			out = append(out, b)
		}
	}
	return Resolve(out), meta, nil
}

// Resolve deduplicates brokers and keeps one master per group.
func Resolve(in []Broker) []Broker {
	type key struct {
		cluster, name string
		id            int64
	}
	best := map[key]Broker{}
	better := func(a, b Broker) bool { // a beats b
		if a.Epoch != b.Epoch {
			return a.Epoch > b.Epoch
		}
		return a.Addr < b.Addr
	}
	for _, b := range in {
		k := key{b.Cluster, b.BrokerName, b.BrokerID}
		if cur, ok := best[k]; !ok || better(b, cur) {
			best[k] = b
		}
	}
	out := make([]Broker, 0, len(best))
	for _, b := range best {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.BrokerID < b.BrokerID
	})
	return out
}

// Watch runs blocking queries for the healthy brokers until ctx ends and
// calls fn with each new result (and with errors, after which it backs off
// and retries). wait bounds one blocking query.
func Watch(ctx context.Context, c *consul.Client, wait time.Duration, fn func([]Broker, error)) {
	var index uint64
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		bs, meta, err := Healthy(ctx, c, &consul.QueryOptions{WaitIndex: index, WaitTime: wait})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fn(nil, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if backoff < 5*time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 100 * time.Millisecond
		if meta.LastIndex < index { // index went backwards: Consul was reset; start over
			index = 0
		} else {
			index = meta.LastIndex
		}
		fn(bs, nil)
	}
}

// MasterWatcher finds the HA address of a group's master in Consul. It
// satisfies the slave's discovery interface (Watch(ctx) <-chan string).
type MasterWatcher struct {
	Client              *consul.Client
	Cluster, BrokerName string
	Log                 logrus.FieldLogger
	// Wait bounds one blocking query. Default 30s.
	Wait time.Duration
}

// Watch sends the master's HA address when one is known and every time it
// changes ("" is never sent: while there is no master the last address is
// kept and the slave keeps retrying it).
func (w *MasterWatcher) Watch(ctx context.Context) <-chan string {
	ch := make(chan string, 1)
	wait := w.Wait
	if wait == 0 {
		wait = 30 * time.Second
	}
	go func() {
		defer close(ch)
		last := ""
		Watch(ctx, w.Client, wait, func(bs []Broker, err error) {
			if err != nil {
				if w.Log != nil {
					w.Log.WithError(err).Warn("consul: cannot look up the master's HA address; retrying")
				}
				return
			}
			for _, b := range bs {
				if b.Cluster == w.Cluster && b.BrokerName == w.BrokerName && b.IsMaster() && b.HAAddr != "" && b.HAAddr != last {
					last = b.HAAddr
					select {
					case ch <- last:
					case <-ctx.Done():
					}
				}
			}
		})
	}()
	return ch
}

// SplitTopicsKey parses rmqha/topics/<cluster>/<brokerName>.
func SplitTopicsKey(key string) (cluster, brokerName string, ok bool) {
	rest, found := strings.CutPrefix(key, KVTopicsPrefix)
	if !found {
		return "", "", false
	}
	cluster, brokerName, ok = strings.Cut(rest, "/")
	return cluster, brokerName, ok && cluster != "" && brokerName != ""
}

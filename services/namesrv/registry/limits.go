package registry

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rmqha/rmqha/libs/route"
)

// Limits bound what registrations may store. Every Registry checks them on the shared path
// (prepare, then the per-cluster counts under the registry's lock) before anything is
// stored; the name server checks MaxBodySize before it decodes a body. A refusal wraps
// ErrLimit and names the limit.
type Limits struct {
	// MaxClusterNameLength bounds clusterName, in bytes. Default 127.
	MaxClusterNameLength int
	// MaxBrokerNameLength bounds brokerName, in bytes. Default 127.
	MaxBrokerNameLength int
	// MaxTopicsPerRegistration bounds the topics one registration carries. Default 32768.
	MaxTopicsPerRegistration int
	// MaxBodySize bounds a REGISTER_BROKER body, in bytes. Default 8 MiB.
	MaxBodySize int
	// MaxBrokersPerCluster bounds the live brokers (every id of every group) of one cluster.
	// Default 1024.
	MaxBrokersPerCluster int
	// MaxBrokerGroupsPerCluster bounds the broker names of one cluster. Default 256.
	MaxBrokerGroupsPerCluster int
	// MaxClusters bounds the clusters one registry holds. Default 64.
	MaxClusters int
}

// DefaultLimits returns the defaults documented on Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxClusterNameLength:      127,
		MaxBrokerNameLength:       127,
		MaxTopicsPerRegistration:  32768,
		MaxBodySize:               8 << 20,
		MaxBrokersPerCluster:      1024,
		MaxBrokerGroupsPerCluster: 256,
		MaxClusters:               64,
	}
}

// Validate names the first limit that is not positive.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"MaxClusterNameLength", l.MaxClusterNameLength}, {"MaxBrokerNameLength", l.MaxBrokerNameLength},
		{"MaxTopicsPerRegistration", l.MaxTopicsPerRegistration}, {"MaxBodySize", l.MaxBodySize},
		{"MaxBrokersPerCluster", l.MaxBrokersPerCluster}, {"MaxBrokerGroupsPerCluster", l.MaxBrokerGroupsPerCluster},
		{"MaxClusters", l.MaxClusters},
	} {
		if f.v <= 0 {
			return fmt.Errorf("registry: limit %s = %d must be positive", f.name, f.v)
		}
	}
	return nil
}

// orDefault replaces a zero Limits with the defaults.
func (l Limits) orDefault() Limits {
	if l == (Limits{}) {
		return DefaultLimits()
	}
	return l
}

// CheckBodySize refuses a REGISTER_BROKER body of n bytes above MaxBodySize.
func (l Limits) CheckBodySize(n int) error {
	if n > l.MaxBodySize {
		return fmt.Errorf("%w: registration body of %d bytes exceeds maxRegistrationBodySize %d", ErrLimit, n, l.MaxBodySize)
	}
	return nil
}

// maxAddrLength bounds host:port (a DNS name is at most 253 bytes).
const maxAddrLength = 253 + 1 + 5

// quoteMax is how much of a refused value a message repeats.
const quoteMax = 64

func quote(s string) string {
	if len(s) > quoteMax {
		return strconv.Quote(s[:quoteMax]) + "..."
	}
	return strconv.Quote(s)
}

// checkName applies the rules for cluster and broker names: 1..max bytes of
// [A-Za-z0-9._-] (safe in Consul service IDs and KV keys, which use '/' as separator).
func checkName(key, limitKey, s string, max int) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, key)
	}
	if len(s) > max {
		return fmt.Errorf("%w: %s of %d bytes exceeds %s %d", ErrLimit, key, len(s), limitKey, max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %s %s has character %q; allowed: letters, digits, '.', '_', '-'", ErrInvalid, key, quote(s), c)
		}
	}
	return nil
}

// CheckAddr checks host:port syntax: a port in 1..65535 and a host that is an IP address or
// a DNS name (labels of letters, digits, '-' and '_', at most 63 bytes each, not starting
// or ending with '-').
func CheckAddr(key, addr string) error {
	if len(addr) > maxAddrLength {
		return fmt.Errorf("%w: %s of %d bytes is longer than a host:port can be (%d)", ErrInvalid, key, len(addr), maxAddrLength)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s %s is not host:port", ErrInvalid, key, quote(addr))
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%w: %s %s: port not in 1..65535", ErrInvalid, key, quote(addr))
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !validHostname(host) {
		return fmt.Errorf("%w: %s %s: host is neither an IP address nor a DNS name", ErrInvalid, key, quote(addr))
	}
	return nil
}

func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// checkTopics applies RocketMQ's topic rules (TopicValidator: 1..127 characters of
// [%|a-zA-Z0-9_-]) to every topic of a registration and bounds their number.
func checkTopics(w route.TopicConfigSerializeWrapper, l Limits) error {
	if n := len(w.TopicConfigTable); n > l.MaxTopicsPerRegistration {
		return fmt.Errorf("%w: %d topics exceed maxTopicsPerRegistration %d", ErrLimit, n, l.MaxTopicsPerRegistration)
	}
	for name, tc := range w.TopicConfigTable {
		if len(name) > 127 {
			return fmt.Errorf("%w: topic %s of %d bytes exceeds RocketMQ's topic length 127", ErrInvalid, quote(name), len(name))
		}
		if !validTopic(name) {
			return fmt.Errorf("%w: topic %s: allowed are 1..127 characters of [%%|a-zA-Z0-9_-]", ErrInvalid, quote(name))
		}
		if tc.TopicName != name {
			return fmt.Errorf("%w: topic table key %s holds topic %s", ErrInvalid, quote(name), quote(tc.TopicName))
		}
		if tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 {
			return fmt.Errorf("%w: topic %s has negative queue counts", ErrInvalid, quote(name))
		}
	}
	return nil
}

// validTopic applies RocketMQ's topic characters, ^[%|a-zA-Z0-9_-]+$ (the broker applies
// the same rule, libs/meta.ValidateTopicName, when it creates a topic).
func validTopic(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '%' || c == '|' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// prepare is the first half of every Registry.Register: the checks that need no state
// (Validate), and the epoch rule (an epoch counts only when the registration was
// authenticated).
func prepare(r Registration, l Limits) (Registration, error) {
	if err := Validate(r, l); err != nil {
		return r, err
	}
	if !r.Authenticated {
		r.Epoch = 0
	}
	return r, nil
}

// Validate checks what a registration may carry without looking at the registry: names,
// addresses and topics against l. Every Register runs it first; the name server also runs
// it before it records anything about a request.
func Validate(r Registration, l Limits) error {
	if err := CheckNames(r.Cluster, r.BrokerName, l); err != nil {
		return err
	}
	if r.BrokerID < 0 {
		return fmt.Errorf("%w: brokerId %d is negative", ErrInvalid, r.BrokerID)
	}
	if r.Addr == "" {
		return fmt.Errorf("%w: brokerAddr is empty", ErrInvalid)
	}
	if err := CheckAddr("brokerAddr", r.Addr); err != nil {
		return err
	}
	if r.HAAddr != "" {
		if err := CheckAddr("haServerAddr", r.HAAddr); err != nil {
			return err
		}
	}
	if r.HTTPAddr != "" {
		if err := CheckAddr("httpAddr", r.HTTPAddr); err != nil {
			return err
		}
	}
	return checkTopics(r.Topics, l)
}

// CheckNames checks a cluster and a broker name against l.
func CheckNames(cluster, brokerName string, l Limits) error {
	if err := checkName("clusterName", "maxClusterNameLength", cluster, l.MaxClusterNameLength); err != nil {
		return err
	}
	return checkName("brokerName", "maxBrokerNameLength", brokerName, l.MaxBrokerNameLength)
}

// checkCountsLocked applies the per-cluster limits to r against m's state (caller holds
// m.mu).
func (m *Memory) checkCountsLocked(r Registration, l Limits) error {
	g := m.groups[r.BrokerName]
	if g != nil && g.members[r.BrokerID] != nil {
		return nil // an update adds nothing
	}
	clusters := map[string]struct{}{}
	groups, brokers := 0, 0
	for _, og := range m.groups {
		clusters[og.cluster] = struct{}{}
		if og.cluster == r.Cluster {
			groups++
			brokers += len(og.members)
		}
	}
	if _, ok := clusters[r.Cluster]; !ok && len(clusters) >= l.MaxClusters {
		return fmt.Errorf("%w: %d clusters registered, maxClusters %d", ErrLimit, len(clusters), l.MaxClusters)
	}
	if g == nil && groups >= l.MaxBrokerGroupsPerCluster {
		return fmt.Errorf("%w: cluster %s has %d broker groups, maxBrokerGroupsPerCluster %d", ErrLimit, quote(r.Cluster), groups, l.MaxBrokerGroupsPerCluster)
	}
	if brokers >= l.MaxBrokersPerCluster {
		return fmt.Errorf("%w: cluster %s has %d brokers, maxBrokersPerCluster %d", ErrLimit, quote(r.Cluster), brokers, l.MaxBrokersPerCluster)
	}
	return nil
}

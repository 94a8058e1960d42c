// Package registry holds the name server's view of the broker groups: which
// brokers are alive, at which addresses, and which topics each master
// serves. The name server answers routes from it.
//
// Rules (shared by every implementation; the conformance tests in
// registrytest check them):
//
//   - Brokers are keyed by (cluster, broker name, broker id). A broker name
//     belongs to one cluster: a registration of the same broker name from a
//     second cluster is refused with ErrClusterConflict instead of silently
//     overwriting the first (route data carries only the broker name, so two
//     clusters sharing one would corrupt each other's routes).
//   - Two brokers claiming to be master (id 0) of one group at different
//     addresses: the higher epoch wins; at equal epochs the one already
//     registered and alive stays. The other gets ErrMasterConflict, and the
//     conflict is reported in Status. Never both.
//   - A topic's queue data comes from the master's registration only, and
//     stays while any broker of the group is alive (consumers keep reading
//     from the slave when the master is gone; producers see no writable
//     master because brokerAddrs lacks id 0).
//   - A broker disappears at once when its registration connection closes,
//     on UNREGISTER_BROKER, or when it has not registered for the expiry
//     period.
package registry

import (
	"errors"
	"time"

	"github.com/rmqha/rmqha/libs/broker/route"
)

// Sentinel errors.
var (
	// ErrClusterConflict is returned when a broker name already registered in
	// one cluster registers from another.
	ErrClusterConflict = errors.New("registry: broker name already registered in another cluster")
	// ErrMasterConflict is returned to a master whose group already has a live
	// master at another address with an equal or higher epoch.
	ErrMasterConflict = errors.New("registry: another master of this broker group is registered")
	// ErrInvalid is returned for registrations missing a required field.
	ErrInvalid = errors.New("registry: invalid registration")
	// ErrStale is returned by backends that can no longer confirm their state
	// (e.g. the Consul agent is unreachable); reads still answer from the last
	// known state.
	ErrStale = errors.New("registry: state may be stale")
)

// Registration is one REGISTER_BROKER.
type Registration struct {
	Cluster    string
	BrokerName string
	BrokerID   int64
	Addr       string // brokerIP1:listenPort, for clients
	HAAddr     string // brokerIP2:haListenPort, for slaves
	HTTPAddr   string // status HTTP address (health checks); "" when none
	Epoch      int64  // master epoch (0 when the broker does not send one)
	Topics     route.TopicConfigSerializeWrapper
	ConnID     uint64 // the remoting connection it came on; 0 if none
}

// RegisterResult tells a broker about its group.
type RegisterResult struct {
	MasterAddr   string // the live master's client address ("" when none or for the master itself)
	MasterHAAddr string // the live master's HA address
}

// BrokerInfo is one live broker, for status pages.
type BrokerInfo struct {
	Cluster      string    `json:"cluster"`
	BrokerName   string    `json:"brokerName"`
	BrokerID     int64     `json:"brokerId"`
	Addr         string    `json:"addr"`
	HAAddr       string    `json:"haAddr"`
	Epoch        int64     `json:"epoch"`
	LastUpdate   time.Time `json:"lastUpdate"`
	TopicCount   int       `json:"topicCount"`
	ConnectionID uint64    `json:"connectionId,omitempty"`
}

// Status is the registry's view for /status.
type Status struct {
	Brokers   []BrokerInfo `json:"brokers"`
	Conflicts []string     `json:"conflicts,omitempty"` // most recent first, bounded
	Stale     bool         `json:"stale"`
	StaleWhy  string       `json:"staleReason,omitempty"`
}

// Registry is the name server's broker registry.
type Registry interface {
	Register(r Registration, now time.Time) (RegisterResult, error)
	Unregister(cluster, brokerName string, brokerID int64, addr string) error
	// DropConn removes every broker registered over the connection and
	// returns their addresses.
	DropConn(connID uint64) []string
	// Expire removes brokers not registered since now-ttl and returns their addresses.
	Expire(now time.Time, ttl time.Duration) []string
	Route(topic string) (route.TopicRouteData, bool)
	ClusterInfo() route.ClusterInfo
	Topics() []string
	Status() Status
	Close() error
}

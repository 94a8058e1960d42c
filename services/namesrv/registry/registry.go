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
//     conflict is reported in Status. Never both. Only an authenticated
//     registration's epoch counts: an unauthenticated one (name server with
//     registrationAllowUnauthenticated) is stored with epoch 0, so a declared
//     epoch never displaces a master. With Consul and automatic failover the
//     group's failover lock decides instead (see Consul).
//   - Connections own what they registered: an entry registered over another
//     live connection is changed only by an authenticated registration (a
//     broker that reconnected) and removed by UNREGISTER_BROKER only over its
//     own connection; a registration never removes another connection's entry
//     at its address under another id; a master registration with an empty
//     topic table empties a group's topics only over the connection that
//     registered its master. Refusals wrap ErrNotOwner.
//   - Limits (names, addresses, topics, counts per cluster) are checked before
//     anything is stored; refusals wrap ErrLimit or ErrInvalid and name the
//     limit.
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

	"github.com/rmqha/rmqha/libs/route"
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
	// ErrNotOwner is returned when a registration or unregistration would change
	// or remove what another connection registered.
	ErrNotOwner = errors.New("registry: registered over another connection")
	// ErrLimit is returned for a registration beyond one of the Limits.
	ErrLimit = errors.New("registry: limit exceeded")
	// ErrNotLeader is returned to a master registration of a group whose failover
	// lock (Consul) is held by a broker at another address.
	ErrNotLeader = errors.New("registry: not the holder of the group's failover lock")
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
	HTTPTLS    bool   // the status port serves HTTPS (httpTlsEnable)
	Epoch      int64  // master epoch (0 when the broker does not send one; counts only when Authenticated)
	Topics     route.TopicConfigSerializeWrapper
	ConnID     uint64 // the remoting connection it came on; 0 if none
	// Authenticated: the request was signed by a broker credential (registration secret or
	// an ACL admin account). Only then is Epoch believed.
	Authenticated bool
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
	Epoch        int64     `json:"epoch"` // the epoch the registry counts (0 for unauthenticated registrations)
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
	// Unregister removes a broker registered over connection connID (addr "" matches
	// any address); ErrNotOwner when another connection registered it, nil when it is
	// not registered.
	Unregister(cluster, brokerName string, brokerID int64, addr string, connID uint64) error
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

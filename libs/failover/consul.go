package failover

import (
	"context"
	"time"

	consul "github.com/hashicorp/consul/api"
)

// consulLockDelay is the session's lock-delay: Consul's default (15s) would keep a dead
// master's lock unusable long after its session ended; the lease and the fence do the work.
const consulLockDelay = time.Millisecond

// Consul is the Coordinator on a Consul agent: TTL agent checks, sessions bound to them
// (and to serfHealth) with behaviour release, KV locks and check-and-set.
type Consul struct {
	c *consul.Client
}

// NewConsul wraps a Consul client.
func NewConsul(c *consul.Client) *Consul { return &Consul{c: c} }

func (k *Consul) RegisterLease(ctx context.Context, checkID string, ttl time.Duration) error {
	return k.c.Agent().CheckRegisterOpts(&consul.AgentCheckRegistration{
		ID: checkID, Name: "rmqha failover lease " + checkID,
		AgentServiceCheck: consul.AgentServiceCheck{TTL: ttl.String(), Status: consul.HealthPassing},
	}, (&consul.QueryOptions{}).WithContext(ctx))
}

func (k *Consul) PassLease(ctx context.Context, checkID string) error {
	return k.c.Agent().UpdateTTLOpts(checkID, "", consul.HealthPassing, (&consul.QueryOptions{}).WithContext(ctx))
}

func (k *Consul) DeregisterLease(ctx context.Context, checkID string) error {
	return k.c.Agent().CheckDeregisterOpts(checkID, (&consul.QueryOptions{}).WithContext(ctx))
}

func (k *Consul) CreateSession(ctx context.Context, checkID string) (string, error) {
	id, _, err := k.c.Session().Create(&consul.SessionEntry{
		Name: checkID, Checks: []string{"serfHealth", checkID}, LockDelay: consulLockDelay,
		Behavior: consul.SessionBehaviorRelease,
	}, (&consul.WriteOptions{}).WithContext(ctx))
	return id, err
}

func (k *Consul) DestroySession(ctx context.Context, id string) error {
	_, err := k.c.Session().Destroy(id, (&consul.WriteOptions{}).WithContext(ctx))
	return err
}

func (k *Consul) Get(ctx context.Context, key string) (KV, bool, error) {
	p, _, err := k.c.KV().Get(key, (&consul.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil || p == nil {
		return KV{}, false, err
	}
	return KV{Value: p.Value, ModifyIndex: p.ModifyIndex, Session: p.Session}, true, nil
}

func (k *Consul) Acquire(ctx context.Context, key, session string, value []byte) (bool, error) {
	ok, _, err := k.c.KV().Acquire(&consul.KVPair{Key: key, Value: value, Session: session}, (&consul.WriteOptions{}).WithContext(ctx))
	return ok, err
}

func (k *Consul) Release(ctx context.Context, key, session string) (bool, error) {
	ok, _, err := k.c.KV().Release(&consul.KVPair{Key: key, Session: session}, (&consul.WriteOptions{}).WithContext(ctx))
	return ok, err
}

func (k *Consul) CAS(ctx context.Context, key string, value []byte, index uint64) (bool, error) {
	ok, _, err := k.c.KV().CAS(&consul.KVPair{Key: key, Value: value, ModifyIndex: index}, (&consul.WriteOptions{}).WithContext(ctx))
	return ok, err
}

func (k *Consul) List(ctx context.Context, prefix string) ([]KV, error) {
	ps, _, err := k.c.KV().List(prefix, (&consul.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]KV, 0, len(ps))
	for _, p := range ps {
		out = append(out, KV{Key: p.Key, Value: p.Value, ModifyIndex: p.ModifyIndex, Session: p.Session})
	}
	return out, nil
}

func (k *Consul) Delete(ctx context.Context, key string) error {
	_, err := k.c.KV().Delete(key, (&consul.WriteOptions{}).WithContext(ctx))
	return err
}

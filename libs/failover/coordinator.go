package failover

import (
	"context"
	"time"
)

// KV is one key of the coordinator's store.
type KV struct {
	// Key is set by List.
	Key         string
	Value       []byte
	ModifyIndex uint64
	// Session holds the key as a lock ("" when nobody does).
	Session string
}

// Coordinator is the lease, lock and compare-and-set store the election runs on (Consul in
// production, see NewConsul; MemCoordinator in unit tests).
type Coordinator interface {
	// RegisterLease creates (or replaces, passing) the node's TTL check.
	RegisterLease(ctx context.Context, checkID string, ttl time.Duration) error
	// PassLease marks the check passing for another TTL.
	PassLease(ctx context.Context, checkID string) error
	// DeregisterLease removes the check (its sessions are invalidated).
	DeregisterLease(ctx context.Context, checkID string) error
	// CreateSession creates a session that lives while the check passes.
	CreateSession(ctx context.Context, checkID string) (string, error)
	// DestroySession ends a session, releasing its locks.
	DestroySession(ctx context.Context, id string) error
	// Get reads a key; ok is false when it does not exist.
	Get(ctx context.Context, key string) (kv KV, ok bool, err error)
	// Acquire takes the lock on key for session (or updates its value when session holds it).
	Acquire(ctx context.Context, key, session string, value []byte) (bool, error)
	// Release gives up the lock on key held by session.
	Release(ctx context.Context, key, session string) (bool, error)
	// CAS writes value when the key's modify index is still index (0: only if absent).
	CAS(ctx context.Context, key string, value []byte, index uint64) (bool, error)
	// Delete removes a key.
	Delete(ctx context.Context, key string) error
	// List reads every key under prefix, in key order.
	List(ctx context.Context, prefix string) ([]KV, error)
}

// Package kvconfig is the name server's KV configuration (RocketMQ's KVConfigManager): string
// values under (namespace, key), set and read with PUT_KV_CONFIG, GET_KV_CONFIG,
// DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE (mqadmin updateKvConfig, deleteKvConfig; Java
// clients read ORDER_TOPIC_CONFIG from it).
//
// Two stores behind Store, held to the same conformance tests:
//
//   - File: one JSON file, RocketMQ's kvConfig.json layout, rewritten whole (temp file, fsync,
//     rename, directory fsync) on every change, through commitlog/vfs:
//
//     {"configTable":{"<namespace>":{"<key>":"<value>", ...}, ...}}
//
//     RocketMQ's own file loads as is.
//
//   - Consul: one KV entry per item, rmqha/kvconfig/<namespace>/<key> (both path-escaped) holding
//     the value; every name server on the same Consul sees the same items.
//
// Bounds (Limits): entries, namespace and key lengths and value size are checked before
// anything is stored; a peer cannot make a store hold more.
package kvconfig

import (
	"fmt"
)

// Store holds the KV configuration. Implementations are safe for concurrent use.
type Store interface {
	// Put sets namespace/key to value (replacing it).
	Put(namespace, key, value string) error
	// Get returns the value and whether it exists.
	Get(namespace, key string) (string, bool, error)
	// Delete removes namespace/key; deleting a missing item is not an error (RocketMQ's rule).
	Delete(namespace, key string) error
	// List returns every item of namespace and whether the namespace has any.
	List(namespace string) (map[string]string, bool, error)
}

// Limits bound what a store holds.
type Limits struct {
	// MaxEntries bounds the items of all namespaces together. Default 10000.
	MaxEntries int
	// MaxNameLength bounds a namespace and a key, in bytes. Default 255.
	MaxNameLength int
	// MaxValueSize bounds a value, in bytes. Default 64 KiB.
	MaxValueSize int
}

// DefaultLimits returns the defaults described on Limits.
func DefaultLimits() Limits {
	return Limits{MaxEntries: 10000, MaxNameLength: 255, MaxValueSize: 64 << 10}
}

// Validate names the first limit that is not positive.
func (l Limits) Validate() error {
	switch {
	case l.MaxEntries <= 0:
		return fmt.Errorf("%w: MaxEntries %d", ErrInvalid, l.MaxEntries)
	case l.MaxNameLength <= 0:
		return fmt.Errorf("%w: MaxNameLength %d", ErrInvalid, l.MaxNameLength)
	case l.MaxValueSize <= 0:
		return fmt.Errorf("%w: MaxValueSize %d", ErrInvalid, l.MaxValueSize)
	}
	return nil
}

// checkItem bounds one item before it is stored.
func (l Limits) checkItem(namespace, key, value string) error {
	if err := l.checkName(namespace, key); err != nil {
		return err
	}
	if len(value) > l.MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes, kvConfigMaxValueSize %d", ErrLimit, len(value), l.MaxValueSize)
	}
	return nil
}

func (l Limits) checkName(namespace, key string) error {
	if namespace == "" || key == "" {
		return fmt.Errorf("%w: namespace or key is null", ErrInvalid)
	}
	if len(namespace) > l.MaxNameLength || len(key) > l.MaxNameLength {
		return fmt.Errorf("%w: namespace or key longer than %d bytes", ErrLimit, l.MaxNameLength)
	}
	return nil
}

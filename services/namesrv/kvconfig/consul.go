package kvconfig

import (
	"fmt"
	"net/url"
	"strings"
	"sync"

	consul "github.com/hashicorp/consul/api"
)

// ConsulPrefix is where the Consul store keeps the items: ConsulPrefix + <namespace>/<key>,
// both path-escaped.
const ConsulPrefix = "rmqha/kvconfig/"

// Consul is the Consul-backed Store: every name server on the same Consul shares the items.
type Consul struct {
	kv  *consul.KV
	lim Limits
	// mu makes this process's checks of the entry bound and its writes one at a time (name
	// servers sharing a Consul may together exceed MaxEntries by their number, not more).
	mu sync.Mutex
}

// NewConsul returns the store on client.
func NewConsul(client *consul.Client, lim Limits) (*Consul, error) {
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, fmt.Errorf("%w: no Consul client", ErrInvalid)
	}
	return &Consul{kv: client.KV(), lim: lim}, nil
}

func itemKey(namespace, key string) string {
	return ConsulPrefix + url.PathEscape(namespace) + "/" + url.PathEscape(key)
}

// Put implements Store.
func (c *Consul) Put(namespace, key, value string) error {
	if err := c.lim.checkItem(namespace, key, value); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := itemKey(namespace, key)
	cur, _, err := c.kv.Get(k, nil)
	if err != nil {
		return fmt.Errorf("kvconfig: consul: %w", err)
	}
	if cur == nil {
		keys, _, err := c.kv.Keys(ConsulPrefix, "", nil)
		if err != nil {
			return fmt.Errorf("kvconfig: consul: %w", err)
		}
		if len(keys) >= c.lim.MaxEntries {
			return fmt.Errorf("%w: %d items, kvConfigMaxEntries %d", ErrLimit, len(keys), c.lim.MaxEntries)
		}
	}
	if _, err := c.kv.Put(&consul.KVPair{Key: k, Value: []byte(value)}, nil); err != nil {
		return fmt.Errorf("kvconfig: consul: %w", err)
	}
	return nil
}

// Get implements Store.
func (c *Consul) Get(namespace, key string) (string, bool, error) {
	if namespace == "" || key == "" {
		return "", false, nil
	}
	p, _, err := c.kv.Get(itemKey(namespace, key), nil)
	if err != nil {
		return "", false, fmt.Errorf("kvconfig: consul: %w", err)
	}
	if p == nil {
		return "", false, nil
	}
	return string(p.Value), true, nil
}

// Delete implements Store.
func (c *Consul) Delete(namespace, key string) error {
	if namespace == "" || key == "" {
		return nil
	}
	if _, err := c.kv.Delete(itemKey(namespace, key), nil); err != nil {
		return fmt.Errorf("kvconfig: consul: %w", err)
	}
	return nil
}

// List implements Store.
func (c *Consul) List(namespace string) (map[string]string, bool, error) {
	if namespace == "" {
		return nil, false, nil
	}
	prefix := ConsulPrefix + url.PathEscape(namespace) + "/"
	pairs, _, err := c.kv.List(prefix, nil)
	if err != nil {
		return nil, false, fmt.Errorf("kvconfig: consul: %w", err)
	}
	if len(pairs) == 0 {
		return nil, false, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, err := url.PathUnescape(strings.TrimPrefix(p.Key, prefix))
		if err != nil || strings.Contains(strings.TrimPrefix(p.Key, prefix), "/") {
			continue // not written by this store
		}
		out[k] = string(p.Value)
	}
	return out, len(out) > 0, nil
}

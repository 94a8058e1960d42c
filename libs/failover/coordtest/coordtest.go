// Package coordtest is the conformance suite of failover.Coordinator implementations: the
// in-memory twin runs it in unit tests, the Consul driver against a real agent
// (tools/failovertest), so that both keep the same semantics.
package coordtest

import (
	"context"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/failover"
	"github.com/stretchr/testify/require"
)

// Run checks c. advance lets ttl pass (a fake clock moves; a real one waits); prefix keeps the
// keys of one run apart.
func Run(t *testing.T, c failover.Coordinator, ttl time.Duration, advance func(time.Duration), prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lock := prefix + "/lock"
	chk1, chk2 := prefix+"-chk1", prefix+"-chk2"
	require.NoError(t, c.RegisterLease(ctx, chk1, ttl))
	require.NoError(t, c.RegisterLease(ctx, chk2, ttl))
	require.NoError(t, c.PassLease(ctx, chk1))
	require.NoError(t, c.PassLease(ctx, chk2))
	s1, err := c.CreateSession(ctx, chk1)
	require.NoError(t, err)
	s2, err := c.CreateSession(ctx, chk2)
	require.NoError(t, err)

	// One holder at a time; the holder may update its value.
	ok, err := c.Acquire(ctx, lock, s1, []byte("one"))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.Acquire(ctx, lock, s2, []byte("two"))
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = c.Acquire(ctx, lock, s1, []byte("one'"))
	require.NoError(t, err)
	require.True(t, ok)
	kv, found, err := c.Get(ctx, lock)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, s1, kv.Session)
	require.Equal(t, "one'", string(kv.Value))

	// Release frees it for the other session.
	ok, err = c.Release(ctx, lock, s1)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.Acquire(ctx, lock, s2, []byte("two"))
	require.NoError(t, err)
	require.True(t, ok)

	// A lease that is not passed ends its session and frees the lock.
	deadline := time.Now().Add(20 * time.Second)
	for {
		require.NoError(t, c.PassLease(ctx, chk1))
		advance(ttl / 2)
		kv, _, err = c.Get(ctx, lock)
		require.NoError(t, err)
		if kv.Session == "" {
			break
		}
		require.True(t, time.Now().Before(deadline), "lock still held after the lease ended")
	}
	_, err = c.Acquire(ctx, lock, s2, []byte("stale"))
	require.Error(t, err, "an ended session cannot lock")
	ok, err = c.Acquire(ctx, lock, s1, []byte("one"))
	require.NoError(t, err)
	require.True(t, ok, "the live session takes over")

	// Destroying a session frees its locks.
	require.NoError(t, c.DestroySession(ctx, s1))
	kv, _, err = c.Get(ctx, lock)
	require.NoError(t, err)
	require.Empty(t, kv.Session)

	// Compare-and-set: 0 creates only; an index wins once.
	key := prefix + "/state"
	ok, err = c.CAS(ctx, key, []byte("a"), 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.CAS(ctx, key, []byte("b"), 0)
	require.NoError(t, err)
	require.False(t, ok)
	kv, _, err = c.Get(ctx, key)
	require.NoError(t, err)
	idx := kv.ModifyIndex
	ok, err = c.CAS(ctx, key, []byte("c"), idx)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.CAS(ctx, key, []byte("d"), idx)
	require.NoError(t, err)
	require.False(t, ok, "two writers cannot both win one index")
	kv, _, err = c.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, "c", string(kv.Value))
	require.NoError(t, c.Delete(ctx, key))
	_, found, err = c.Get(ctx, key)
	require.NoError(t, err)
	require.False(t, found)

	// List: every key under the prefix in key order, with its holder; nothing else.
	require.NoError(t, c.PassLease(ctx, chk1))
	s2b, err := c.CreateSession(ctx, chk1)
	require.NoError(t, err)
	ok, err = c.Acquire(ctx, prefix+"/cand/2", s2b, []byte("two"))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.CAS(ctx, prefix+"/cand/1", []byte("one"), 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = c.CAS(ctx, prefix+"/candidate", []byte("outside"), 0)
	require.NoError(t, err)
	require.True(t, ok)
	list, err := c.List(ctx, prefix+"/cand/")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, prefix+"/cand/1", list[0].Key)
	require.Equal(t, "one", string(list[0].Value))
	require.Empty(t, list[0].Session)
	require.Equal(t, prefix+"/cand/2", list[1].Key)
	require.Equal(t, s2b, list[1].Session)
	none, err := c.List(ctx, prefix+"/nothing/")
	require.NoError(t, err)
	require.Empty(t, none)
	require.NoError(t, c.DestroySession(ctx, s2b))
	for _, k := range []string{"/cand/1", "/cand/2", "/candidate"} {
		require.NoError(t, c.Delete(ctx, prefix+k))
	}
	require.NoError(t, c.DeregisterLease(ctx, chk1))
	require.NoError(t, c.DeregisterLease(ctx, chk2))
}

package syncer

import (
	"context"
	"fmt"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/metasync"
)

// LockPrefix is the Consul KV folder of the group locks.
const LockPrefix = "rmqha/metasync/lock/"

// LockKey is the Consul key whose lock makes one instance the syncer of a
// broker group: rmqha/metasync/lock/<cluster>/<brokerName>.
func LockKey(cluster, brokerName string) string {
	return LockPrefix + metasync.EscapeToken(cluster) + "/" + metasync.EscapeToken(brokerName)
}

// Locker hands out the exclusive right to sync one broker group. Lock blocks
// until the lock is held or ctx ends; lost is closed when the lock is lost
// (session expired, Consul unreachable); release gives it up.
type Locker interface {
	Lock(ctx context.Context, cluster, brokerName string) (lost <-chan struct{}, release func(), err error)
}

// ConsulLocker implements Locker with Consul sessions and api.Lock.
type ConsulLocker struct {
	Client *consul.Client
	// SessionTTL is the session TTL (>= 10s).
	SessionTTL time.Duration
	// Value is stored in the lock key (this instance's name and URL).
	Value []byte
}

// lockDelay is how long Consul keeps a lock after its session was
// invalidated. Short: a takeover only re-reads the master.
const lockDelay = time.Second

// lockPoll bounds one blocking query on the lock key, and is the retry pause
// after an acquire refused during the lock delay.
const lockPoll = 2 * time.Second

// Lock implements Locker: create a session (TTL SessionTTL, lock delay 1s,
// renewed in the background), then acquire the key with it, waiting on
// blocking queries while another session holds it. lost closes when the key
// no longer names our session or the session cannot be renewed.
func (l *ConsulLocker) Lock(ctx context.Context, cluster, brokerName string) (<-chan struct{}, func(), error) {
	key := LockKey(cluster, brokerName)
	sid, _, err := l.Client.Session().Create(&consul.SessionEntry{
		Name:      "metasync " + cluster + "/" + brokerName,
		TTL:       l.SessionTTL.String(),
		LockDelay: lockDelay,
		Behavior:  consul.SessionBehaviorRelease,
	}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("creating lock session: %w", err)
	}
	renewDone := make(chan struct{})
	renewErr := make(chan struct{})
	go func() {
		_ = l.Client.Session().RenewPeriodic(l.SessionTTL.String(), sid, nil, renewDone)
		close(renewErr) // ends when renewDone closes (session destroyed) or renewal failed
	}()
	kv := l.Client.KV()
	var index uint64
	for {
		if ctx.Err() != nil {
			close(renewDone)
			return nil, nil, ctx.Err()
		}
		ok, _, err := kv.Acquire(&consul.KVPair{Key: key, Value: l.Value, Session: sid}, (&consul.WriteOptions{}).WithContext(ctx))
		if err == nil && ok {
			break
		}
		select {
		case <-renewErr:
			return nil, nil, fmt.Errorf("lock session %s ended", sid)
		default:
		}
		// Held by someone else (or within the lock delay): wait for a change.
		pair, meta, gerr := kv.Get(key, (&consul.QueryOptions{WaitIndex: index, WaitTime: lockPoll}).WithContext(ctx))
		switch {
		case gerr != nil:
			sleepCtx(ctx, lockPoll/4)
		case pair == nil || pair.Session == "":
			if meta.LastIndex == index {
				sleepCtx(ctx, lockPoll/8) // free but refused: lock delay
			}
			index = meta.LastIndex
		default:
			index = meta.LastIndex
		}
	}
	lost := make(chan struct{})
	mctx, mcancel := context.WithCancel(ctx)
	go func() {
		defer close(lost)
		var idx uint64
		for mctx.Err() == nil {
			pair, meta, err := kv.Get(key, (&consul.QueryOptions{WaitIndex: idx, WaitTime: lockPoll}).WithContext(mctx))
			select {
			case <-renewErr:
				return
			default:
			}
			if err != nil {
				// Consul unreachable: the session may expire without us
				// knowing; stop syncing rather than risk two writers.
				if mctx.Err() == nil {
					return
				}
				continue
			}
			if pair == nil || pair.Session != sid {
				return
			}
			idx = meta.LastIndex
		}
	}()
	release := func() {
		mcancel()
		_, _, _ = kv.Release(&consul.KVPair{Key: key, Session: sid}, nil)
		close(renewDone) // ends the renewal and destroys the session
	}
	return lost, release, nil
}

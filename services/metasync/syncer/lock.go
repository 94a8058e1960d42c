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

// Lock implements Locker.
func (l *ConsulLocker) Lock(ctx context.Context, cluster, brokerName string) (<-chan struct{}, func(), error) {
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
	go func() { _ = l.Client.Session().RenewPeriodic(l.SessionTTL.String(), sid, nil, renewDone) }()
	lock, err := l.Client.LockOpts(&consul.LockOptions{
		Key:          LockKey(cluster, brokerName),
		Value:        l.Value,
		Session:      sid,
		LockWaitTime: 5 * time.Second,
	})
	if err != nil {
		close(renewDone)
		return nil, nil, err
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-renewDone:
		}
		close(stop)
	}()
	lost, err := lock.Lock(stop)
	if err != nil || lost == nil {
		close(renewDone)
		if err == nil {
			err = ctx.Err()
		}
		return nil, nil, err
	}
	release := func() {
		_ = lock.Unlock()
		close(renewDone) // ends the renewal and destroys the session
	}
	return lost, release, nil
}

package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// lockMaxLive is how long a queue lock lives without renewal (RocketMQ's
// rocketmq.broker.rebalance.lockMaxLiveTime default, 60 s). Orderly consumers renew every 20 s.
const lockMaxLive = 60 * time.Second

// lockQueue is a message queue as orderly consumers name it in LOCK_BATCH_MQ bodies.
type lockQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

type lockBatchBody struct {
	ConsumerGroup string      `json:"consumerGroup"`
	ClientID      string      `json:"clientId"`
	MQSet         []lockQueue `json:"mqSet"`
}

type lockEntry struct {
	clientID string
	renewed  time.Time
}

// Bounding the lock table
//
// LOCK_BATCH_MQ names any group, topic, broker name and queue id, and RocketMQ keeps every lock
// until it is unlocked: a stranger's requests would grow the table without end. Here a group
// holds at most lockMaxQueuesPerGroup locks and the table at most lockMaxQueues. A request
// whose new locks (queues the group does not hold yet) do not fit is refused whole, SYSTEM_BUSY
// with a remark naming the key, and changes nothing; before refusing, locks not renewed for
// lockMaxLive are dropped (a sweep of the whole table, at most once per lockSweepEvery, so a
// flood of refused requests does not turn into a flood of sweeps). Renewals never need room.
// Names are checked as RocketMQ's clients make them (topic and group rules; a client id of at
// most lockMaxClientIDLen bytes) so that an entry costs a bounded number of bytes.

// lockSweepEvery is the shortest time between two sweeps of expired locks.
const lockSweepEvery = time.Second

// lockMaxClientIDLen bounds a client id (RocketMQ's are ip@instance, a few dozen bytes).
const lockMaxClientIDLen = 255

// Lock refusal reasons (metric label values).
const (
	lockRefusedGroupLimit = "group_limit"
	lockRefusedTableLimit = "table_limit"
)

var lockRefusedReasons = []string{lockRefusedGroupLimit, lockRefusedTableLimit}

// queueLocks is the rebalance lock table of orderly consumers: one client at a time may
// consume a queue of a group in order.
type queueLocks struct {
	maxPerGroup, maxTotal int // 0: no limit

	mu        sync.Mutex
	table     map[string]map[lockQueue]*lockEntry // group -> queue -> holder
	n         int                                 // entries of all groups
	lastSweep time.Time
	refused   map[string]*atomic.Uint64 // by reason
}

func newQueueLocks(maxPerGroup, maxTotal int) *queueLocks {
	l := &queueLocks{maxPerGroup: maxPerGroup, maxTotal: maxTotal, table: map[string]map[lockQueue]*lockEntry{}, refused: map[string]*atomic.Uint64{}}
	for _, r := range lockRefusedReasons {
		l.refused[r] = new(atomic.Uint64)
	}
	return l
}

// errLockRefused is returned by tryLock when the new locks do not fit a bound.
type errLockRefused struct {
	reason string
	detail string
}

func (e *errLockRefused) Error() string { return e.detail }

// size returns the number of locks held (expired ones included until swept).
func (l *queueLocks) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// sweepLocked drops every lock not renewed for lockMaxLive.
func (l *queueLocks) sweepLocked(now time.Time) {
	l.lastSweep = now
	for group, g := range l.table {
		for mq, e := range g {
			if now.Sub(e.renewed) > lockMaxLive {
				delete(g, mq)
				l.n--
			}
		}
		if len(g) == 0 {
			delete(l.table, group)
		}
	}
}

// fits checks the bounds for adding fresh locks to group (whose map may be nil).
func (l *queueLocks) fits(group string, g map[lockQueue]*lockEntry, fresh int) error {
	if l.maxPerGroup > 0 && len(g)+fresh > l.maxPerGroup {
		return &errLockRefused{lockRefusedGroupLimit, fmt.Sprintf(
			"[OVERLOAD] consumer group %s holds %d queue locks, %d more would exceed lockMaxQueuesPerGroup=%d", group, len(g), fresh, l.maxPerGroup)}
	}
	if l.maxTotal > 0 && l.n+fresh > l.maxTotal {
		return &errLockRefused{lockRefusedTableLimit, fmt.Sprintf(
			"[OVERLOAD] the broker holds %d queue locks, %d more would exceed lockMaxQueues=%d", l.n, fresh, l.maxTotal)}
	}
	return nil
}

// countFresh counts the distinct queues of mqs that g does not hold, stopping past the
// larger bound (a request's queues are bounded by the frame only).
func (l *queueLocks) countFresh(g map[lockQueue]*lockEntry, mqs []lockQueue) int {
	stop := max(l.maxPerGroup, l.maxTotal)
	seen := map[lockQueue]struct{}{}
	for _, mq := range mqs {
		if g[mq] != nil {
			continue
		}
		seen[mq] = struct{}{}
		if stop > 0 && len(seen) > stop {
			break
		}
	}
	return len(seen)
}

// tryLock locks (or renews) every free, expired or already-owned queue for clientID and
// returns those now held by it. When the queues the group does not hold yet do not fit the
// bounds it locks nothing and returns an *errLockRefused.
func (l *queueLocks) tryLock(group, clientID string, mqs []lockQueue, now time.Time) ([]lockQueue, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.table[group]
	fresh := l.countFresh(g, mqs)
	if err := l.fits(group, g, fresh); err != nil {
		if now.Sub(l.lastSweep) < lockSweepEvery {
			l.refused[err.(*errLockRefused).reason].Add(1)
			return nil, err
		}
		l.sweepLocked(now)
		g = l.table[group]
		fresh = l.countFresh(g, mqs)
		if err := l.fits(group, g, fresh); err != nil {
			l.refused[err.(*errLockRefused).reason].Add(1)
			return nil, err
		}
	}
	if g == nil {
		g = map[lockQueue]*lockEntry{}
		l.table[group] = g
	}
	out := []lockQueue{}
	for _, mq := range mqs {
		e := g[mq]
		if e == nil || e.clientID == clientID || now.Sub(e.renewed) > lockMaxLive {
			if e == nil {
				l.n++
			}
			g[mq] = &lockEntry{clientID: clientID, renewed: now}
			out = append(out, mq)
		}
	}
	if len(g) == 0 {
		delete(l.table, group)
	}
	return out, nil
}

// unlock releases the queues clientID holds.
func (l *queueLocks) unlock(group, clientID string, mqs []lockQueue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.table[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == clientID {
			delete(g, mq)
			l.n--
		}
	}
	if len(g) == 0 {
		delete(l.table, group)
	}
}

func decodeLockBody(w remoting.ResponseWriter, req *remoting.Command, b *Broker) (lockBatchBody, bool) {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil || body.ConsumerGroup == "" || body.ClientID == "" {
		msg := "body is not a lock batch request with consumerGroup and clientId"
		if err != nil {
			msg += ": " + err.Error()
		}
		b.reply(w, req, remoting.SystemError, msg)
		return body, false
	}
	bad := ""
	switch {
	case meta.ValidateTopicName(body.ConsumerGroup) != nil:
		bad = fmt.Sprintf("consumerGroup %.64q is not a valid group name", body.ConsumerGroup)
	case len(body.ClientID) > lockMaxClientIDLen:
		bad = fmt.Sprintf("clientId of %d bytes, at most %d", len(body.ClientID), lockMaxClientIDLen)
	}
	if bad != "" {
		b.reply(w, req, remoting.SystemError, bad)
		return body, false
	}
	for _, mq := range body.MQSet {
		if meta.ValidateTopicName(mq.Topic) != nil || meta.ValidateTopicName(mq.BrokerName) != nil {
			b.reply(w, req, remoting.SystemError, fmt.Sprintf("mqSet: topic %.64q or brokerName %.64q is not a valid name", mq.Topic, mq.BrokerName))
			return body, false
		}
		// MessageQueue.queueId is a Java int.
		if mq.QueueID < 0 || mq.QueueID > math.MaxInt32 {
			b.reply(w, req, remoting.SystemError, fmt.Sprintf("mqSet: queueId %d of topic %s outside [0, %d]", mq.QueueID, mq.Topic, math.MaxInt32))
			return body, false
		}
	}
	return body, true
}

func (b *Broker) handleLockBatch(w remoting.ResponseWriter, req *remoting.Command) {
	body, ok := decodeLockBody(w, req, b)
	if !ok {
		return
	}
	locked, err := b.locks.tryLock(body.ConsumerGroup, body.ClientID, body.MQSet, b.now())
	if err != nil {
		b.autoc.logRefusal(b.log, b.now(), logrus.Fields{"group": body.ConsumerGroup, "clientId": body.ClientID, "queues": len(body.MQSet), "peer": bornHostOfString(w)},
			"queue locks refused: "+err.Error())
		b.reply(w, req, remoting.SystemBusy, err.Error())
		return
	}
	out, _ := json.Marshal(struct {
		LockOKMQSet []lockQueue `json:"lockOKMQSet"`
	}{locked})
	b.replyOK(w, req, out)
}

func (b *Broker) handleUnlockBatch(w remoting.ResponseWriter, req *remoting.Command) {
	body, ok := decodeLockBody(w, req, b)
	if !ok {
		return
	}
	b.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	b.replyOK(w, req, nil)
}

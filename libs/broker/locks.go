package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
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

// queueLocks is the rebalance lock table of orderly consumers: one client at a time may
// consume a queue of a group in order.
type queueLocks struct {
	mu    sync.Mutex
	table map[string]map[lockQueue]*lockEntry // group -> queue -> holder
}

func newQueueLocks() *queueLocks {
	return &queueLocks{table: map[string]map[lockQueue]*lockEntry{}}
}

// tryLock locks (or renews) every free, expired or already-owned queue for clientID and
// returns those now held by it.
func (l *queueLocks) tryLock(group, clientID string, mqs []lockQueue, now time.Time) []lockQueue {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.table[group]
	if g == nil {
		g = map[lockQueue]*lockEntry{}
		l.table[group] = g
	}
	out := []lockQueue{}
	for _, mq := range mqs {
		e := g[mq]
		if e == nil || e.clientID == clientID || now.Sub(e.renewed) > lockMaxLive {
			g[mq] = &lockEntry{clientID: clientID, renewed: now}
			out = append(out, mq)
		}
	}
	return out
}

// unlock releases the queues clientID holds.
func (l *queueLocks) unlock(group, clientID string, mqs []lockQueue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.table[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == clientID {
			delete(g, mq)
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
	for _, mq := range body.MQSet {
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
	locked := b.locks.tryLock(body.ConsumerGroup, body.ClientID, body.MQSet, b.now())
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

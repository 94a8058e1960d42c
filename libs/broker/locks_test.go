package broker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func lockBody(group, client, topic string, from, n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"consumerGroup":"` + group + `","clientId":"` + client + `","mqSet":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"topic":"` + topic + `","brokerName":"broker-a","queueId":` + strconv.Itoa(from+i) + `}`)
	}
	sb.WriteString("]}")
	return []byte(sb.String())
}

func mqs(topic string, from, n int) []lockQueue {
	out := make([]lockQueue, n)
	for i := range out {
		out[i] = lockQueue{topic, "broker-a", from + i}
	}
	return out
}

// The lock table's bounds: new locks beyond lockMaxQueuesPerGroup or lockMaxQueues refuse the
// whole request and change nothing; renewals of held queues and duplicates need no room; an
// expired lock is swept when room is needed (at most once per lockSweepEvery); unlocks free
// room.
func TestQueueLocksBounded(t *testing.T) {
	l := newQueueLocks(4, 6)
	now := time.Unix(1000, 0)
	got, err := l.tryLock("g1", "c", mqs("T", 0, 4), now)
	require.NoError(t, err)
	require.Len(t, got, 4)
	// A fifth queue for the group does not fit; nothing is locked.
	_, err = l.tryLock("g1", "c", append(mqs("T", 0, 4), lockQueue{"T", "broker-a", 4}), now)
	var refused *errLockRefused
	require.ErrorAs(t, err, &refused)
	require.Equal(t, lockRefusedGroupLimit, refused.reason)
	require.Contains(t, err.Error(), "lockMaxQueuesPerGroup=4")
	require.Equal(t, 4, l.size())
	// Renewals, with duplicates, fit.
	got, err = l.tryLock("g1", "c", append(mqs("T", 0, 4), mqs("T", 0, 4)...), now)
	require.NoError(t, err)
	require.Len(t, got, 8)
	require.Equal(t, 4, l.size())
	// The table bound: 4 + 2 fit, a third group's first lock does not.
	_, err = l.tryLock("g2", "c", append(mqs("T", 0, 2), mqs("T", 0, 2)...), now)
	require.NoError(t, err)
	require.Equal(t, 6, l.size())
	_, err = l.tryLock("g3", "c", mqs("T", 0, 1), now)
	require.ErrorAs(t, err, &refused)
	require.Equal(t, lockRefusedTableLimit, refused.reason)
	require.Contains(t, err.Error(), "lockMaxQueues=6")
	require.EqualValues(t, 1, l.refused[lockRefusedGroupLimit].Load())
	require.EqualValues(t, 1, l.refused[lockRefusedTableLimit].Load())
	// An unlock frees room.
	l.unlock("g2", "c", mqs("T", 0, 1))
	require.Equal(t, 5, l.size())
	_, err = l.tryLock("g3", "c", mqs("T", 0, 1), now)
	require.NoError(t, err)
	// Expired locks are swept when room is needed, at most once per lockSweepEvery.
	s := newQueueLocks(0, 2)
	t0 := time.Unix(5000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	_, err = s.tryLock("gA", "c", mqs("T", 0, 1), at(0))
	require.NoError(t, err)
	_, err = s.tryLock("gB", "c", mqs("T", 0, 1), at(500*time.Millisecond))
	require.NoError(t, err)
	_, err = s.tryLock("gC", "c", mqs("T", 0, 1), at(lockMaxLive+300*time.Millisecond))
	require.NoError(t, err, "gA's expired lock is swept for room")
	require.Equal(t, 2, s.size())
	_, err = s.tryLock("gD", "c", mqs("T", 0, 1), at(lockMaxLive+1100*time.Millisecond))
	require.Error(t, err, "gB expired too, but the last sweep was under lockSweepEvery ago")
	_, err = s.tryLock("gD", "c", mqs("T", 0, 1), at(lockMaxLive+1400*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, 2, s.size())
	// No limits: anything goes.
	u := newQueueLocks(0, 0)
	_, err = u.tryLock("g", "c", mqs("T", 0, 10000), now)
	require.NoError(t, err)
	require.Equal(t, 10000, u.size())
}

// Over the wire: a stranger naming thousands of groups and queues fills the table only up to
// its bounds, is answered SYSTEM_BUSY with the key in the remark and locks nothing more, bad
// names are SYSTEM_ERROR, and a legitimate orderly consumer's renewals keep working; the
// metrics show the table and the refusals.
func TestQueueLocksFlood(t *testing.T) {
	cfg := metricsConfig(t)
	cfg.LockMaxQueuesPerGroup = 64
	cfg.LockMaxQueues = 1000
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, lockBody("legit", "client-1", "T", 0, 8))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	resp = invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, lockBody("evil", "x", "T", 0, 65))
	require.Equal(t, remoting.SystemBusy, resp.Code)
	require.Contains(t, resp.Remark, "lockMaxQueuesPerGroup=64")
	require.Empty(t, resp.Body)
	busy := 0
	for i := 0; i < 40; i++ {
		resp := invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, lockBody(fmt.Sprintf("evil-%d", i), "x", "T", 0, 64))
		switch resp.Code {
		case remoting.Success:
		case remoting.SystemBusy:
			require.Contains(t, resp.Remark, "lockMaxQueues=1000")
			busy++
		default:
			t.Fatalf("code %d: %s", resp.Code, resp.Remark)
		}
	}
	require.Equal(t, 40-(1000-8)/64, busy)
	require.LessOrEqual(t, b.locks.size(), 1000)
	for _, body := range [][]byte{
		lockBody(strings.Repeat("g", 200), "x", "T", 0, 1),
		lockBody("ok", strings.Repeat("c", 300), "T", 0, 1),
		lockBody("ok", "x", strings.Repeat("t", 128), 0, 1),
		lockBody("ok", "x", "bad topic", 0, 1),
	} {
		resp := invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, body)
		require.Equal(t, remoting.SystemError, resp.Code, resp.Remark)
	}
	resp = invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, lockBody("legit", "client-1", "T", 0, 8))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `"queueId":7`, "renewals are served at the bound")
	metrics := httpGet(t, "http://"+b.HTTPAddr()+"/metrics", 200)
	require.Regexp(t, `(?m)^rmqha_broker_queue_locks `+strconv.Itoa(b.locks.size())+`$`, metrics)
	require.Contains(t, metrics, `rmqha_broker_queue_lock_refused_total{reason="group_limit"} 1`)
	require.Contains(t, metrics, `rmqha_broker_queue_lock_refused_total{reason="table_limit"} `+strconv.Itoa(busy))
}

// A send to an unknown topic creates none once the topic table holds autoCreateTopicLimit
// topics: TOPIC_NOT_EXIST naming the key, nothing stored or created; existing topics, retry
// topics and admin updateTopic keep working; the metric counts the refusals.
func TestAutoCreateTopicLimitOnSend(t *testing.T) {
	cfg := metricsConfig(t)
	b := startBroker(t, cfg)
	base := b.tables.Topics.Len()
	require.NoError(t, b.Shutdown(t.Context()))
	cfg.AutoCreateTopicLimit = base + 2
	b = startBroker(t, cfg)
	c := newTestClient(t)
	for _, topic := range []string{"New1", "New2"} {
		resp := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt(topic, -1, ""), []byte("x"))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	before := b.store.Stats().MaxOffset
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("New3", -1, ""), []byte("x"))
	require.Equal(t, remoting.TopicNotExist, resp.Code)
	require.Contains(t, resp.Remark, "topic[New3] not exist")
	require.Contains(t, resp.Remark, "autoCreateTopicLimit")
	_, ok := b.tables.Topics.Get("New3")
	require.False(t, ok)
	require.Equal(t, before, b.store.Stats().MaxOffset, "nothing stored")
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("New1", -1, ""), []byte("x"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("%RETRY%rg", 0, ""), []byte("x"))
	require.Equal(t, remoting.Success, resp.Code, "retry topics are not limited: %s", resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{
		"topic": "ByAdmin", "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	metrics := httpGet(t, "http://"+b.HTTPAddr()+"/metrics", 200)
	require.Contains(t, metrics, `rmqha_broker_autocreate_refused_total{reason="topic_limit"} 1`)
	require.Contains(t, metrics, `rmqha_broker_autocreate_total{kind="topic"} 2`)
}

// FuzzQueueLocks drives the lock table with lock, unlock and clock steps decoded from the
// input: the table never holds more than its bounds, its count matches its entries, and a
// refused request adds nothing.
func FuzzQueueLocks(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x10, 0x20, 0xff, 0x31, 0x07, 0x80, 0x41, 0x0c})
	f.Fuzz(func(t *testing.T, ops []byte) {
		l := newQueueLocks(5, 12)
		now := time.Unix(0, 0)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			group := "g" + strconv.Itoa(int(op>>4)%4)
			client := "c" + strconv.Itoa(int(op>>2)%3)
			qs := mqs("T", int(arg%8), int(arg>>4)%9)
			switch op % 4 {
			case 0, 1:
				before := l.size()
				got, err := l.tryLock(group, client, qs, now)
				if err != nil {
					require.LessOrEqual(t, l.size(), before, "a refusal adds nothing (a sweep may drop expired locks)")
					require.Nil(t, got)
				}
			case 2:
				l.unlock(group, client, qs)
			case 3:
				now = now.Add(time.Duration(arg) * time.Second)
			}
			n := 0
			for _, g := range l.table {
				require.NotEmpty(t, g, "empty groups are removed")
				require.LessOrEqual(t, len(g), 5)
				n += len(g)
			}
			require.Equal(t, n, l.size())
			require.LessOrEqual(t, n, 12)
		}
	})
}

package attacktest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// Bounds of the strangers' tables in this file's cases.
const (
	lockPerGroup = 64
	lockTotal    = 2000
	topicLimit   = 300
)

// lockRequest is a LOCK_BATCH_MQ body naming n queues of topic.
func lockRequest(group, client, topic string, n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"consumerGroup":"` + group + `","clientId":"` + client + `","mqSet":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"topic":"` + topic + `","brokerName":"broker-a","queueId":` + strconv.Itoa(i) + `}`)
	}
	sb.WriteString("]}")
	return []byte(sb.String())
}

// TestStrangerTables: the two tables a stranger's requests could grow without end, against
// one master with lockMaxQueuesPerGroup=64, lockMaxQueues=2000 and autoCreateTopicLimit=300.
func TestStrangerTables(t *testing.T) {
	f := Start(t, Config{ExtraMaster: []string{
		"lockMaxQueuesPerGroup=" + strconv.Itoa(lockPerGroup),
		"lockMaxQueues=" + strconv.Itoa(lockTotal),
		"autoCreateTopicLimit=" + strconv.Itoa(topicLimit),
	}})
	// The topics the invariants send to exist before the table fills.
	f.SendOK(t, topic, []byte("before the table floods"))
	f.SendOK(t, "AttackInvariant", []byte("before the table floods"))
	t.Run("QueueLocks", func(t *testing.T) { lockFlood(t, f) })
	t.Run("TopicAutoCreate", func(t *testing.T) { topicFlood(t, f) })
}

// An orderly consumer holds 8 queue locks; then 20 connections send 20 LOCK_BATCH_MQ each,
// every one naming a new group and 64 queues (25,600 locks asked for). The table stops at
// lockMaxQueues, each group at lockMaxQueuesPerGroup (a 65th queue is refused), the rest are
// answered SYSTEM_BUSY naming the key and lock nothing, and the consumer's renewals keep
// being served. Budget: RSS within the fixture's 128 MiB.
func lockFlood(t *testing.T, f *Fixture) {
	resp, err := f.Invoke(f.MasterAddr, remoting.LockBatchMQ, nil, lockRequest("orderly-legit", "10.0.0.1@legit", topic, 8))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	before := rss(t, f.Master)

	const conns, perConn = 20, 20
	codes := map[int32]int{}
	var remark string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cli := remoting.NewClient(remoting.DefaultClientConfig())
			defer cli.Close()
			for r := 0; r < perConn; r++ {
				group := "lock-flood-" + strconv.Itoa(c) + "-" + strconv.Itoa(r)
				resp, err := Invoke(cli, f.MasterAddr, remoting.LockBatchMQ, nil, lockRequest(group, "evil", "Flood"+strconv.Itoa(r), lockPerGroup))
				mu.Lock()
				if err != nil {
					codes[-1]++
				} else {
					codes[resp.Code]++
					if resp.Code == remoting.SystemBusy {
						remark = resp.Remark
					}
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	resp, err = f.Invoke(f.MasterAddr, remoting.LockBatchMQ, nil, lockRequest("lock-flood-wide", "evil", "Wide", lockPerGroup+1))
	require.NoError(t, err)
	require.Equal(t, remoting.SystemBusy, resp.Code)
	require.Contains(t, resp.Remark, "lockMaxQueuesPerGroup")

	locks, err := Metric(f.MasterHTTP, "rmqha_broker_queue_locks")
	require.NoError(t, err)
	byTable, err := Metric(f.MasterHTTP, `rmqha_broker_queue_lock_refused_total{reason="table_limit"}`)
	require.NoError(t, err)
	byGroup, err := Metric(f.MasterHTTP, `rmqha_broker_queue_lock_refused_total{reason="group_limit"}`)
	require.NoError(t, err)
	after := rss(t, f.Master)
	t.Logf("lock flood: %d requests asking for %d locks answered %v; table holds %v locks (lockMaxQueues %d), refusals table_limit %v group_limit %v; remark %q; master RSS %s -> %s",
		conns*perConn, conns*perConn*lockPerGroup, codes, locks, lockTotal, byTable, byGroup, remark, mibs(before), mibs(after))
	require.Zero(t, codes[-1], "every request answered")
	require.LessOrEqual(t, locks, float64(lockTotal))
	require.Equal(t, (lockTotal-8)/lockPerGroup, codes[remoting.Success])
	require.Equal(t, conns*perConn-(lockTotal-8)/lockPerGroup, codes[remoting.SystemBusy])
	require.EqualValues(t, codes[remoting.SystemBusy], byTable)
	require.EqualValues(t, 1, byGroup)
	require.Contains(t, remark, "lockMaxQueues=2000")

	resp, err = f.Invoke(f.MasterAddr, remoting.LockBatchMQ, nil, lockRequest("orderly-legit", "10.0.0.1@legit", topic, 8))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	var got struct {
		Set []json.RawMessage `json:"lockOKMQSet"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &got))
	require.Len(t, got.Set, 8, "the orderly consumer's renewals are served at the bound")
	f.CheckInvariants(t)
}

// 10 connections send 100 messages each to 1,000 topics never created. Sends create topics
// from TBW102 until the table holds autoCreateTopicLimit topics; the rest are answered
// TOPIC_NOT_EXIST naming the key, store nothing, and topics.json and the registration stop
// growing; sends to existing topics keep working.
func topicFlood(t *testing.T, f *Fixture) {
	st, err := Status(f.MasterHTTP)
	require.NoError(t, err)
	topicsBefore := int(st["topics"].(float64))
	before := rss(t, f.Master)
	m0, err := f.MasterStatus()
	require.NoError(t, err)

	const conns, perConn = 10, 100
	codes := map[int32]int{}
	var remark string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cli := remoting.NewClient(remoting.DefaultClientConfig())
			defer cli.Close()
			for r := 0; r < perConn; r++ {
				name := "TopicFlood-" + strconv.Itoa(c) + "-" + strconv.Itoa(r)
				resp, err := Invoke(cli, f.MasterAddr, remoting.SendMessage, sendExt(name, "-1", props("UNIQ_KEY", name)), []byte("grow the table"))
				mu.Lock()
				if err != nil {
					codes[-1]++
				} else {
					codes[resp.Code]++
					if resp.Code == remoting.TopicNotExist {
						remark = resp.Remark
					}
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	st, err = Status(f.MasterHTTP)
	require.NoError(t, err)
	topicsAfter := int(st["topics"].(float64))
	refused, err := Metric(f.MasterHTTP, `rmqha_broker_autocreate_refused_total{reason="topic_limit"}`)
	require.NoError(t, err)
	created, err := Metric(f.MasterHTTP, `rmqha_broker_autocreate_total{kind="topic"}`)
	require.NoError(t, err)
	m1, err := f.MasterStatus()
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(f.MasterStore(), "config", "topics.json"))
	require.NoError(t, err)
	after := rss(t, f.Master)
	t.Logf("topic flood: %d sends to new topics answered %v (SEND_OK is %d); topics %d -> %d (autoCreateTopicLimit %d); created by sends %v, refused %v; remark %q; topics.json %d bytes; CommitLog +%d bytes; master RSS %s -> %s",
		conns*perConn, codes, remoting.Success, topicsBefore, topicsAfter, topicLimit, created, refused, remark, fi.Size(), m1.MaxOffset-m0.MaxOffset, mibs(before), mibs(after))
	require.Zero(t, codes[-1], "every send answered")
	require.Equal(t, topicLimit, topicsAfter, "the table stops at the limit")
	require.Equal(t, topicLimit-topicsBefore, codes[remoting.Success])
	require.Equal(t, conns*perConn-(topicLimit-topicsBefore), codes[remoting.TopicNotExist])
	require.EqualValues(t, codes[remoting.TopicNotExist], refused)
	require.Contains(t, remark, "autoCreateTopicLimit")
	require.Less(t, fi.Size(), int64(topicLimit*1024), "bounded topics.json")
	// The master is still routed with every topic it holds.
	harness.Eventually(t, 40*time.Second, func() error {
		_, err := f.Route("TopicFlood-0-0")
		return err
	})
	f.CheckInvariants(t)
}

package attacktest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// cqFiles lists the consume-queue files of topic/queue under a store.
func cqFiles(t *testing.T, store, topic string, queue int) []string {
	t.Helper()
	dir := filepath.Join(store, "consumequeue", topic, fmt.Sprint(queue))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	require.NotEmpty(t, out, dir)
	return out
}

// Consume-queue files deleted and truncated while the brokers are stopped (on the master: one
// queue's folder removed, another queue's file cut to 10 entries; on the slave: a third queue's
// folder removed). Before the start-up check this went unnoticed: the messages behind the loss
// were unreachable and new sends reused their queue offsets. Now every acknowledged message is
// delivered to a new consumer group, byte-exact, both brokers report the rebuilt queues, and the
// slave's queues serve every message again.
func TestConsumeQueueFilesDamaged(t *testing.T) {
	const topic, queues, n = "AttackCQ", 4, 400
	f := Start(t, Config{})
	f.CreateTopic(t, topic, queues)
	sent := map[string][]byte{}
	for i := 0; i < n; i++ {
		body := []byte(fmt.Sprintf("cq-%04d-%s", i, strings.Repeat(string(rune('a'+i%26)), i%300)))
		f.SendOK(t, topic, body)
		sent[string(body)] = body
	}
	f.WaitSlaveCaughtUp(t)
	perQueue := map[int]int64{}
	harness.Eventually(t, 30*time.Second, func() error { // every stored message indexed
		var total int64
		for q := 0; q < queues; q++ {
			m, err := f.MaxOffset(f.MasterAddr, topic, q)
			if err != nil {
				return err
			}
			perQueue[q] = m
			total += m
		}
		if total != n {
			return fmt.Errorf("%d of %d messages in the queues", total, n)
		}
		return nil
	})
	for q := 0; q < queues; q++ {
		require.Positive(t, perQueue[q], "queue %d holds messages", q)
	}

	require.NoError(t, f.Slave.Stop(30*time.Second))
	require.NoError(t, f.Master.Stop(30*time.Second))
	require.NoError(t, os.RemoveAll(filepath.Join(f.MasterStore(), "consumequeue", topic, "1")))
	files := cqFiles(t, f.MasterStore(), topic, 2)
	require.NoError(t, os.Truncate(files[len(files)-1], 10*20))
	require.NoError(t, os.RemoveAll(filepath.Join(f.SlaveStore(), "consumequeue", topic, "3")))
	require.NoError(t, f.Master.Restart())
	f.WaitMasterReady(t)
	require.NoError(t, f.Slave.Restart())
	f.WaitSlaveInSync(t)
	for q := 0; q < queues; q++ {
		for _, addr := range []string{f.MasterAddr, f.SlaveAddr} {
			m, err := f.MaxOffset(addr, topic, q)
			require.NoError(t, err)
			require.Equal(t, perQueue[q], m, "queue %d on %s", q, addr)
		}
	}

	for _, b := range []struct {
		name, http string
		want       map[int]string
	}{
		{"master", f.MasterHTTP, map[int]string{1: "missing", 2: "truncated"}},
		{"slave", f.SlaveHTTP, map[int]string{3: "missing"}},
	} {
		st, err := Status(b.http)
		require.NoError(t, err)
		check, _ := st["storeCheck"].(map[string]any)
		require.NotNil(t, check, "%s /status storeCheck", b.name)
		require.Equal(t, "checked against the manifest", check["check"])
		got := map[int]string{}
		var restored float64
		for _, r := range check["repaired"].([]any) {
			m := r.(map[string]any)
			if m["Topic"] == topic {
				got[int(m["QueueID"].(float64))] = m["Problem"].(string)
				require.EqualValues(t, 0, m["Missing"])
			}
			restored += m["Restored"].(float64)
		}
		require.Equal(t, b.want, got, "%s repaired queues", b.name)
		t.Logf("%s rebuilt %v, %v entries restored", b.name, got, restored)
		g, err := Metric(b.http, "rmqha_broker_store_cq_repaired_queues")
		require.NoError(t, err)
		require.EqualValues(t, len(b.want), g)
	}
	require.True(t, f.Master.LogContains("consume queue incomplete at start: rebuilt from the CommitLog"))

	// A normal consumer of a new group gets every acknowledged message, byte-exact.
	var mu sync.Mutex
	got := map[string][]byte{}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{f.NamesrvAddr}),
		consumer.WithGroupName("attack-cq-reader"),
		consumer.WithInstance(Instance("attack-cq-reader")),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)] = append([]byte(nil), m.Body...)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer c.Shutdown()
	harness.Eventually(t, 2*time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) < len(sent) {
			return fmt.Errorf("%d of %d messages consumed", len(got), len(sent))
		}
		return nil
	})
	mu.Lock()
	for k, b := range sent {
		require.True(t, bytes.Equal(b, got[k]), "message %.20q not delivered byte-exact", k)
	}
	mu.Unlock()
	f.CheckInvariants(t)
}

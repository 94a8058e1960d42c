package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokerConsumeStats against a real master: every group's queues with their lag.
func TestBrokerConsumeStatsAgainstMaster(t *testing.T) {
	g := startLoneMaster(t)
	const topic = "BrokerStatsTopic"
	mustRun(t, "updateTopic", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "-t", topic, "-r", "2", "-w", "2", "-registrationSecretFile", g.RegistrationSecretFile)
	send(t, g, topic, 2, 10, 16)
	mustRun(t, "updateSubGroup", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "-g", "stats-g", "-registrationSecretFile", g.RegistrationSecretFile)
	commit(t, g, "stats-g", topic, 0, 2)
	commit(t, g, "stats-g", topic, 1, 5)

	var js struct {
		BrokerAddr string             `json:"brokerAddr"`
		Queues     []BrokerConsumeRow `json:"queues"`
		DiffTotal  int64              `json:"diffTotal"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "brokerConsumeStats", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "--json")), &js))
	assert.Equal(t, g.MasterAddr, js.BrokerAddr)
	assert.Equal(t, int64(3), js.DiffTotal)
	require.Len(t, js.Queues, 2, "%+v", js.Queues)
	assert.Equal(t, BrokerConsumeRow{Topic: topic, Group: "stats-g", Broker: e2e.BrokerName, QueueID: 0, BrokerOffset: 5, ConsumerOffset: 2,
		Diff: 3, LastTimestamp: js.Queues[0].LastTimestamp}, js.Queues[0])
	assert.Positive(t, js.Queues[0].LastTimestamp)

	out := mustRun(t, "brokerConsumeStats", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "-l", "1")
	assert.NotNil(t, tableRow(out, topic, "stats-g", e2e.BrokerName, "0", "5", "2", "3"), out)
	assert.Nil(t, tableRow(out, topic, "stats-g", e2e.BrokerName, "1"), "below -l: "+out)
	assert.Contains(t, out, "Diff Total: 3")
	// Only ordered topics: none here.
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "brokerConsumeStats", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "-o", "true", "--json")), &js))
	assert.Empty(t, js.Queues)

	// statsAll: the topic's group (it holds offsets) and what it has not consumed; the 10
	// messages are in the topic's 24-hour count once the broker has sampled them (10 s).
	var all []StatsAllRow
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "statsAll", "-n", g.NamesrvAddr, "-t", topic, "--json")), &all))
	require.Len(t, all, 1)
	assert.Equal(t, StatsAllRow{Topic: topic, Group: "stats-g", Accumulation: 3}, StatsAllRow{Topic: all[0].Topic, Group: all[0].Group, Accumulation: all[0].Accumulation})
	out = eventuallyRun(t, func(code int, out string) error {
		if r := tableRow(out, topic); code != ExitOK || len(r) != 7 || r[5] != "10" {
			return fmt.Errorf("exit %d, row %q", code, r)
		}
		return nil
	}, "statsAll", "-n", g.NamesrvAddr, "-a")
	assert.Equal(t, []string{"#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"},
		strings.Fields(strings.SplitN(out, "\n", 2)[0]), "Java's columns: "+out)
	r := tableRow(out, topic)
	assert.Equal(t, []string{topic, "stats-g", "3"}, r[:3], out)
	assert.Equal(t, []string{"10", "0"}, r[5:], "in and out over 24 hours: "+out)
	assert.Nil(t, tableRow(out, "TBW102"), "-a leaves out topics without traffic: "+out)
	out = mustRun(t, "statsAll", "-n", g.NamesrvAddr, "-t", "TBW102")
	assert.Equal(t, []string{"TBW102", "0", "0.00", "0", "NO_CONSUMER"}, tableRow(out, "TBW102"), out)
	assert.True(t, g.Master.Running())
}

// statsAll and consumerStatus while a producer sends and a consumer pulls: nonzero in and out
// rates (VIEW_BROKER_STATS_DATA of the master) and consumeTps, and brokerStatus's putTps.
func TestStatsAllRatesWithTraffic(t *testing.T) {
	g := startLoneMaster(t)
	const topic, group = "StatsRateTopic", "stats-rate-g"
	g.CreateTopic(t, topic, 2)

	var got atomic.Int64
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{g.NamesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("stats-%d", time.Now().UnixNano())), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.Add(int64(len(msgs)))
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()
	p := startProducer(t, g.NamesrvAddr, "pg-stats", 2)

	// Send about 20 messages a second until the test ends.
	stop := make(chan struct{})
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("rate"))); err == nil && res.Status == primitive.SendOK {
					sent.Add(1)
				}
				cancel()
			}
		}
	}()
	defer func() { close(stop); <-done }()

	var row StatsAllRow
	eventuallyRun(t, func(code int, out string) error {
		var rows []StatsAllRow
		if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil {
			return fmt.Errorf("exit %d", code)
		}
		for _, r := range rows {
			if r.Group == group {
				row = r
			}
		}
		if row.InTPS <= 0 || row.OutTPS <= 0 || row.InMsg24Hour <= 0 || row.OutMsg24Hour <= 0 {
			return fmt.Errorf("row %+v (sent %d, consumed %d)", row, sent.Load(), got.Load())
		}
		return nil
	}, "statsAll", "-n", g.NamesrvAddr, "-t", topic, "--json")
	assert.Equal(t, topic, row.Topic)
	assert.False(t, row.NoConsumer)

	// consumeTps of GET_CONSUME_STATS: the group's get rate over the last minute.
	eventuallyRun(t, func(code int, out string) error {
		var st struct {
			ConsumeTps float64 `json:"consumeTps"`
		}
		if code != ExitOK || json.Unmarshal([]byte(out), &st) != nil || st.ConsumeTps <= 0 {
			return fmt.Errorf("exit %d, consumeTps %v", code, st.ConsumeTps)
		}
		return nil
	}, "consumerStatus", "-n", g.NamesrvAddr, "-g", group, "--json")
	out := mustRun(t, "consumerStatus", "-n", g.NamesrvAddr, "-g", group)
	assert.Contains(t, out, "Consume TPS: ")

	// brokerStatus: the put rate over the last 10 s, and the totals of today.
	eventuallyRun(t, func(code int, out string) error {
		var kv map[string]string
		if code != ExitOK || json.Unmarshal([]byte(out), &kv) != nil {
			return fmt.Errorf("exit %d", code)
		}
		f := strings.Fields(kv["putTps"])
		if len(f) == 0 || f[0] == "0.0" || kv["msgPutTotalTodayNow"] == "0" || kv["msgGetTotalTodayNow"] == "0" {
			return fmt.Errorf("putTps %q, msgPutTotalTodayNow %q, msgGetTotalTodayNow %q", kv["putTps"], kv["msgPutTotalTodayNow"], kv["msgGetTotalTodayNow"])
		}
		return nil
	}, "brokerStatus", "-b", g.MasterAddr, "--json")
}

package main

import (
	"encoding/json"
	"testing"

	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokerConsumeStats against a real master: every group's queues with their lag.
func TestBrokerConsumeStatsAgainstMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a name server and a master")
	}
	cfg := e2e.DefaultGroupConfig()
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.NoSlave = true
	g := e2e.StartGroup(t, cfg)
	const topic = "BrokerStatsTopic"
	mustRun(t, "updateTopic", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "-t", topic, "-r", "2", "-w", "2")
	send(t, g, topic, 2, 10, 16)
	mustRun(t, "updateSubGroup", "-n", g.NamesrvAddr, "-b", g.MasterAddr, "-g", "stats-g")
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

	// statsAll: the topic's group (it holds offsets) and what it has not consumed.
	var all []StatsAllRow
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "statsAll", "-n", g.NamesrvAddr, "-t", topic, "--json")), &all))
	assert.Equal(t, []StatsAllRow{{Topic: topic, Group: "stats-g", Accumulation: 3}}, all)
	out = mustRun(t, "statsAll", "-n", g.NamesrvAddr, "-a")
	assert.Equal(t, []string{topic, "stats-g", "3"}, tableRow(out, topic), out)
	assert.Nil(t, tableRow(out, "TBW102"), "-a leaves out topics nobody consumes: "+out)
	assert.True(t, g.Master.Running())
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sendHalfCode sends a transactional half message to the master and returns the answer's code.
func sendHalfCode(t *testing.T, g *e2e.Group, topic string) int32 {
	t.Helper()
	ext := map[string]string{
		"producerGroup": "cfg-test", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "4", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": "TRAN_MSG\x01true\x02PGROUP\x01cfg-test\x02UNIQ_KEY\x01cfg" + strconv.FormatInt(time.Now().UnixNano(), 10) + "\x02",
		"reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(remoting.SendMessage, ext, []byte("half")))
	require.NoError(t, err)
	return resp.Code
}

// The broker configuration through mqadmin against real processes: read with secrets masked,
// a runtime key changed live on a cluster's master, written to its -c file (comments kept) and
// still in force after a restart; a key that cannot change at runtime is refused and changes
// nothing.
func TestBrokerConfigAgainstGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a name server, a master and a slave")
	}
	cfg := e2e.DefaultGroupConfig()
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.ExtraMaster = []string{"# kept across updates", "accessKey=cfgadmin", "secretKey=cfg-secret-key-123"}
	cfg.RegistrationSecret = harness.NewSecret()
	cfg.Dir = t.TempDir()
	g := e2e.StartGroup(t, cfg)
	ns, cluster := g.NamesrvAddr, e2e.ClusterName
	confPath := filepath.Join(cfg.Dir, "master", "master.conf")

	// Every master and slave of the cluster, secrets masked.
	out := mustRun(t, "getBrokerConfig", "-n", ns, "-c", cluster)
	assert.Contains(t, out, "============Master: "+g.MasterAddr+"============")
	assert.Contains(t, out, "Slave 1: "+g.SlaveAddr)
	assert.Equal(t, []string{"registrationSecret", "=", "****"}, tableRow(out, "registrationSecret"), out)
	assert.Equal(t, []string{"secretKey", "=", "****"}, tableRow(out, "secretKey"), out)
	assert.Equal(t, []string{"rejectTransactionMessage", "=", "false"}, tableRow(out, "rejectTransactionMessage"), out)
	for _, secret := range []string{cfg.RegistrationSecret, "cfg-secret-key-123"} {
		assert.NotContains(t, out, secret)
	}
	var before []BrokerConfig
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "getBrokerConfig", "-n", ns, "-b", g.MasterAddr, "--json")), &before))
	require.Len(t, before, 1)
	assert.Equal(t, "cfgadmin", before[0].Config["accessKey"])
	assert.Contains(t, before[0].Version, `"counter":0`)

	require.Equal(t, remoting.Success, sendHalfCode(t, g, "CfgTopic"))

	// A key that cannot change at runtime: refused, named, nothing changed.
	code, outRefused, errOut := runOut("updateBrokerConfig", "-n", ns, "-b", g.MasterAddr, "-k", "brokerName", "-v", "other", "-registrationSecretFile", g.RegistrationSecretFile)
	assert.Equal(t, ExitServer, code, outRefused+errOut)
	assert.Contains(t, outRefused+errOut, "NO_PERMISSION")
	assert.Contains(t, outRefused+errOut, "brokerName")

	// A runtime key on the cluster's masters (-c without -a: not the slave).
	out = mustRun(t, "updateBrokerConfig", "-n", ns, "-c", cluster, "-k", "rejectTransactionMessage", "-v", "true", "-registrationSecretFile", g.RegistrationSecretFile)
	assert.Contains(t, out, "update broker config success, "+g.MasterAddr)
	assert.NotContains(t, out, g.SlaveAddr)
	assert.Equal(t, remoting.NoPermission, sendHalfCode(t, g, "CfgTopic"), "applied live")
	var after []BrokerConfig
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, "getBrokerConfig", "-n", ns, "-c", cluster, "--json")), &after))
	require.Len(t, after, 2)
	assert.Equal(t, "true", after[0].Config["rejectTransactionMessage"])
	assert.Contains(t, after[0].Version, `"counter":1`)
	assert.Equal(t, "false", after[1].Config["rejectTransactionMessage"], "the slave was not asked")
	assert.Equal(t, e2e.BrokerName, after[0].Config["brokerName"])

	// Written to the master's -c file, the rest of it kept.
	data, err := os.ReadFile(confPath)
	require.NoError(t, err)
	assert.Contains(t, string(data), "\n# kept across updates\n")
	assert.Contains(t, string(data), "\nrejectTransactionMessage=true\n")
	assert.Contains(t, string(data), "brokerName="+e2e.BrokerName+"\n")
	assert.Equal(t, 1, strings.Count(string(data), "rejectTransactionMessage="))

	// And in force after a restart.
	require.NoError(t, g.Master.Stop(20*time.Second))
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	out = mustRun(t, "getBrokerConfig", "-n", ns, "-b", g.MasterAddr)
	assert.Equal(t, []string{"rejectTransactionMessage", "=", "true"}, tableRow(out, "rejectTransactionMessage"), out)
	assert.Equal(t, remoting.NoPermission, sendHalfCode(t, g, "CfgTopic"))

	// Back off, live again.
	mustRun(t, "updateBrokerConfig", "-n", ns, "-b", g.MasterAddr, "-k", "rejectTransactionMessage", "-v", "false", "-registrationSecretFile", g.RegistrationSecretFile)
	assert.Equal(t, remoting.Success, sendHalfCode(t, g, "CfgTopic"))
	assert.True(t, g.Master.Running())
	assert.True(t, g.Slave.Running())
}

// sendCode sends one plain message straight to addr and returns the answer.
func sendCode(t *testing.T, g *e2e.Group, addr, topic string) *remoting.Command {
	t.Helper()
	ext := map[string]string{
		"producerGroup": "perm-test", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": "UNIQ_KEY\x01perm" + strconv.FormatInt(time.Now().UnixNano(), 10) + "\x02",
		"reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := g.Admin.Invoke(ctx, addr, remoting.NewRequest(remoting.SendMessage, ext, []byte("perm")))
	require.NoError(t, err)
	return resp
}

// updateBrokerConfig -k brokerPermission -v 4 drains a master: its route loses write at once
// (on the in-memory registry and on Consul's, which rebuilds queue data only for a new
// DataVersion), a rocketmq-client-go producer that learns the route has nowhere to write,
// direct sends answer NO_PERMISSION, the slave keeps its own permission; -v 6 gives writes back.
func TestBrokerPermissionAgainstGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a name server, a master and a slave")
	}
	t.Run("memory", func(t *testing.T) { brokerPermissionDrains(t, false) })
	t.Run("consul", func(t *testing.T) { brokerPermissionDrains(t, true) })
}

func brokerPermissionDrains(t *testing.T, onConsul bool) {
	cfg := e2e.DefaultGroupConfig()
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.RegistrationSecret = harness.NewSecret()
	cfg.Dir = t.TempDir()
	if onConsul {
		cons := harness.StartConsulT(t)
		t.Setenv("CONSUL_HTTP_ADDR", cons.HTTPAddr())
		cfg.ExtraNamesrv = []string{"registryBackend=consul"}
	}
	g := e2e.StartGroup(t, cfg)
	ns := g.NamesrvAddr
	const topic = "PermDrainTopic"
	g.CreateTopic(t, topic, 2)
	routePerm := func(want int) {
		t.Helper()
		harness.Eventually(t, 30*time.Second, func() error {
			rt, err := g.Route(topic)
			if err != nil {
				return err
			}
			if len(rt.QueueDatas) != 1 || rt.QueueDatas[0].Perm != want {
				return fmt.Errorf("route %+v, want perm %d", rt.QueueDatas, want)
			}
			return nil
		})
	}
	newProducer := func(name string) rocketmq.Producer {
		p := startProducer(t, ns, "pg-perm-"+name, 1)
		return p
	}
	sendVia := func(p rocketmq.Producer) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("perm")))
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", res.Status)
		}
		return err
	}
	routePerm(6)
	require.NoError(t, sendVia(newProducer("before")))

	out := mustRun(t, "updateBrokerConfig", "-n", ns, "-b", g.MasterAddr, "-k", "brokerPermission", "-v", "4", "-registrationSecretFile", g.RegistrationSecretFile)
	assert.Contains(t, out, "update broker config success, "+g.MasterAddr)
	routePerm(4)
	err := sendVia(newProducer("during"))
	require.Error(t, err, "a producer that learns the route now has nowhere to write")
	t.Logf("what the producer sees: %v", err)
	resp := sendCode(t, g, g.MasterAddr, topic)
	assert.Equal(t, remoting.NoPermission, resp.Code)
	assert.Contains(t, resp.Remark, "] sending message is forbidden")
	assert.Equal(t, []string{"brokerPermission", "=", "4"}, tableRow(mustRun(t, "getBrokerConfig", "-n", ns, "-b", g.MasterAddr), "brokerPermission"))
	assert.Equal(t, []string{"brokerPermission", "=", "6"}, tableRow(mustRun(t, "getBrokerConfig", "-n", ns, "-b", g.SlaveAddr), "brokerPermission"),
		"the slave keeps its own")
	data, err := os.ReadFile(filepath.Join(cfg.Dir, "master", "master.conf"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "\nbrokerPermission=4\n")

	mustRun(t, "updateBrokerConfig", "-n", ns, "-b", g.MasterAddr, "-k", "brokerPermission", "-v", "6", "-registrationSecretFile", g.RegistrationSecretFile)
	routePerm(6)
	require.NoError(t, sendVia(newProducer("after")))
	assert.Equal(t, remoting.Success, sendCode(t, g, g.MasterAddr, topic).Code)
	assert.True(t, g.Master.Running())
	assert.True(t, g.Slave.Running())
}

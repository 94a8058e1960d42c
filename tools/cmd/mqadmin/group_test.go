package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// send stores n messages of size bytes on the master, spread over the topic's queues.
func send(t *testing.T, g *e2e.Group, topic string, queues, n, size int) {
	t.Helper()
	body := []byte(strings.Repeat("x", size))
	for i := 0; i < n; i++ {
		ext := map[string]string{
			"producerGroup": "mqadmin-test", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": strconv.Itoa(i % queues), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
			"flag": "0", "properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(remoting.SendMessage, ext, body))
		cancel()
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code, "send: %s", resp.Remark)
	}
	// The queues the commands read next are built after the answers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e2e.WaitDispatched(ctx, g.Admin, g.MasterAddr))
}

// commit stores a consumer offset on the master.
func commit(t *testing.T, g *e2e.Group, group, topic string, qid int, off int64) {
	t.Helper()
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(qid), "commitOffset": strconv.FormatInt(off, 10)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(remoting.UpdateConsumerOffset, ext, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// mustRun runs a command that must succeed and returns its stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runOut(args...)
	require.Equal(t, ExitOK, code, "mqadmin %q\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
	t.Logf("mqadmin %s\n%s", strings.Join(args, " "), out)
	return out
}

// eventuallyRun reruns a command until check accepts its stdout.
func eventuallyRun(t *testing.T, check func(code int, out string) error, args ...string) string {
	t.Helper()
	var last string
	harness.Eventually(t, 30*time.Second, func() error {
		code, out, errOut := runOut(args...)
		last = out
		if err := check(code, out); err != nil {
			return fmt.Errorf("%w\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		}
		return nil
	})
	t.Logf("mqadmin %s\n%s", strings.Join(args, " "), last)
	return last
}

// tableRow finds the first line of out whose fields start with prefix.
func tableRow(out string, prefix ...string) []string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(prefix) && strings.Join(f[:len(prefix)], " ") == strings.Join(prefix, " ") {
			return f
		}
	}
	return nil
}

func TestCommandsAgainstGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a name server, a master and a slave")
	}
	cfg := e2e.DefaultGroupConfig()
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.ProxyHA = true
	// A slave more than 256 KiB behind is out of sync, so a throttled link shows a catching-up slave.
	cfg.ExtraMaster = []string{"haMaxGapNotInSync=262144"}
	cfg.RegistrationSecret = harness.NewSecret()
	secretFile := filepath.Join(t.TempDir(), "registration.secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(cfg.RegistrationSecret), 0o600))
	g := e2e.StartGroup(t, cfg)
	ns := g.NamesrvAddr
	cluster := e2e.ClusterName
	httpFlag := g.MasterHTTP + "," + g.SlaveHTTP

	t.Run("clusterList", func(t *testing.T) {
		out := mustRun(t, "clusterList", "-n", ns)
		m := tableRow(out, cluster, e2e.BrokerName, "0")
		require.NotNil(t, m, out)
		assert.Equal(t, []string{g.MasterAddr, "ASYNC_MASTER", "V4_9_8"}, m[3:6], out)
		s := tableRow(out, cluster, e2e.BrokerName, "1")
		require.NotNil(t, s, out)
		assert.Equal(t, []string{g.SlaveAddr, "SLAVE", "V4_9_8"}, s[3:6], out)

		var js struct{ Brokers []BrokerRow }
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "clusterList", "-n", ns, "--json")), &js))
		require.Len(t, js.Brokers, 2)
		assert.Equal(t, "ASYNC_MASTER", js.Brokers[0].Role)
		assert.Equal(t, g.SlaveAddr, js.Brokers[1].Addr)
		assert.Empty(t, js.Brokers[1].Error)

		code, _, _ := runOut("clusterList", "-n", ns, "-c", "NoSuchCluster")
		assert.Equal(t, ExitOK, code, "an empty cluster is an empty table")
	})

	t.Run("brokerStatus", func(t *testing.T) {
		out := mustRun(t, "brokerStatus", "-b", g.MasterAddr)
		assert.Equal(t, []string{"brokerRole", "ASYNC_MASTER"}, tableRow(out, "brokerRole"), out)
		// Transactional messages: the counters and the check progress.
		assert.Equal(t, []string{"transactionPendingHalves", "0"}, tableRow(out, "transactionPendingHalves"), out)
		assert.Equal(t, []string{"transactionCommits", "0"}, tableRow(out, "transactionCommits"), out)
		var kv map[string]string
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "brokerStatus", "-b", g.SlaveAddr, "--json")), &kv))
		assert.Equal(t, "SLAVE", kv["brokerRole"])
		assert.Equal(t, "true", kv["haConnected"])
	})

	const topic = "AdminTopic"
	t.Run("topics", func(t *testing.T) {
		out := mustRun(t, "updateTopic", "-n", ns, "-c", cluster, "-t", topic, "-r", "4", "-w", "4", "-registrationSecretFile", g.RegistrationSecretFile)
		assert.Contains(t, out, "update topic "+topic+" on "+g.MasterAddr+": success")

		// The master re-registers in the background; the route follows.
		out = eventuallyRun(t, func(code int, out string) error {
			if code != ExitOK || tableRow(out, e2e.BrokerName, "4", "4") == nil {
				return fmt.Errorf("route not there yet (exit %d)", code)
			}
			return nil
		}, "topicRoute", "-n", ns, "-t", topic)
		row := tableRow(out, e2e.BrokerName, "4", "4")
		assert.Equal(t, "RW(6)", row[3])
		assert.Contains(t, out, "0="+g.MasterAddr)

		var rd struct {
			QueueDatas []struct {
				BrokerName    string
				ReadQueueNums int
			}
		}
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "topicRoute", "-n", ns, "-t", topic, "--json")), &rd))
		require.Len(t, rd.QueueDatas, 1)
		assert.Equal(t, 4, rd.QueueDatas[0].ReadQueueNums)

		assert.Contains(t, strings.Fields(mustRun(t, "topicList", "-n", ns)), topic)
		var tl struct{ Topics []string }
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "topicList", "-n", ns, "--json")), &tl))
		assert.Contains(t, tl.Topics, topic)

		code, _, errOut := runOut("topicRoute", "-n", ns, "-t", "NoSuchTopic")
		assert.Equal(t, ExitServer, code, errOut)
		assert.Contains(t, errOut, "TOPIC_NOT_EXIST")

		code, _, errOut = runOut("updateTopic", "-b", g.MasterAddr, "-t", cluster, "-registrationSecretFile", secretFile)
		assert.Equal(t, ExitServer, code, "the cluster name is reserved: %s", errOut)

		// With ACL off, a broker takes admin writes only signed with the registration secret.
		code, _, errOut = runOut("updateTopic", "-b", g.MasterAddr, "-t", "UnsignedTopic")
		assert.Equal(t, ExitServer, code, errOut)
		assert.Contains(t, errOut, "sign it with the registration secret")
		code, _, errOut = runOut("topicRoute", "-n", ns, "-t", "UnsignedTopic")
		assert.Equal(t, ExitServer, code, "a refused updateTopic created nothing: %s", errOut)
	})

	t.Run("groups", func(t *testing.T) {
		out := mustRun(t, "updateSubGroup", "-n", ns, "-g", "AdminGroup", "-m", "5", "-registrationSecretFile", g.RegistrationSecretFile)
		assert.Contains(t, out, "update group AdminGroup on "+g.MasterAddr+": success")
		out = mustRun(t, "consumerGroupList", "-n", ns)
		row := tableRow(out, "AdminGroup", g.MasterAddr)
		require.NotNil(t, row, out)
		assert.Equal(t, []string{"true", "true", "1", "5", "0", "1"}, row[2:], out)

		var js struct{ Groups []GroupRow }
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "consumerGroupList", "-b", g.MasterAddr, "--json")), &js))
		found := false
		for _, gr := range js.Groups {
			if gr.GroupName == "AdminGroup" {
				found = true
				assert.EqualValues(t, 5, gr.RetryMaxTimes)
			}
		}
		assert.True(t, found, "%+v", js.Groups)

		mustRun(t, "deleteSubGroup", "-n", ns, "-c", cluster, "-g", "AdminGroup", "-registrationSecretFile", g.RegistrationSecretFile)
		out = mustRun(t, "consumerGroupList", "-n", ns)
		assert.Nil(t, tableRow(out, "AdminGroup"), out)
	})

	t.Run("consumerProgress", func(t *testing.T) {
		send(t, g, topic, 4, 20, 100) // 5 per queue
		// The consume queues are dispatched in the background; wait for all 20 messages.
		harness.Eventually(t, 30*time.Second, func() error {
			for q := 0; q < 4; q++ {
				if off, err := g.MaxOffset(g.MasterAddr, topic, q); err != nil || off != 5 {
					return fmt.Errorf("queue %d at %d (%v)", q, off, err)
				}
			}
			return nil
		})
		commit(t, g, "ProgressGroup", topic, 0, 5)
		commit(t, g, "ProgressGroup", topic, 1, 2)
		out := mustRun(t, "consumerProgress", "-n", ns, "-g", "ProgressGroup")
		assert.Equal(t, []string{topic, e2e.BrokerName, "0", "5", "5", "0"}, tableRow(out, topic, e2e.BrokerName, "0"), out)
		assert.Equal(t, []string{topic, e2e.BrokerName, "1", "5", "2", "3"}, tableRow(out, topic, e2e.BrokerName, "1"), out)
		// Queues 2 and 3 have no committed offset: the broker says they start at 0.
		assert.Equal(t, []string{topic, e2e.BrokerName, "2", "5", "0", "5"}, tableRow(out, topic, e2e.BrokerName, "2"), out)
		assert.Contains(t, out, "Total lag: 13")

		var cp ConsumerProgress
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "consumerProgress", "-n", ns, "-g", "ProgressGroup", "--json")), &cp))
		assert.Len(t, cp.Queues, 4)
		assert.EqualValues(t, 13, cp.TotalLag)

		code, _, errOut := runOut("consumerProgress", "-n", ns, "-g", "NobodyGroup")
		assert.Equal(t, ExitServer, code, errOut)
		assert.Contains(t, errOut, "no committed offsets")
	})

	t.Run("haStatus in sync", func(t *testing.T) {
		g.WaitSlaveCaughtUp(t)
		out := eventuallyRun(t, func(code int, out string) error {
			if r := tableRow(out, cluster, e2e.BrokerName, "1"); code != ExitOK || r == nil || r[9] != "yes" {
				return fmt.Errorf("slave not shown in sync (exit %d)", code)
			}
			return nil
		}, "haStatus", "-n", ns, "--http", httpFlag)
		m := tableRow(out, cluster, e2e.BrokerName, "0")
		require.NotNil(t, m, out)
		assert.Equal(t, []string{"ASYNC_MASTER", g.MasterAddr}, m[3:5])
		assert.Contains(t, out, "copies 2")
		s := tableRow(out, cluster, e2e.BrokerName, "1")
		assert.Equal(t, []string{"SLAVE", g.SlaveAddr, m[5], "0", "B"}, s[3:8], out)
		assert.NotContains(t, out, "WARNING")

		// Without the status pages the runtime info alone still settles the in-sync state.
		out = mustRun(t, "haStatus", "-n", ns, "--check")
		assert.Equal(t, "yes", tableRow(out, cluster, e2e.BrokerName, "1")[9], out)

		var rep HAReport
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "haStatus", "-n", ns, "--http", httpFlag, "--json")), &rep))
		require.Len(t, rep.Groups, 1)
		hg := rep.Groups[0]
		assert.Equal(t, 2, hg.InSyncCount)
		assert.Equal(t, 1, hg.SlaveCount)
		assert.GreaterOrEqual(t, hg.Epoch, int64(1))
		require.Len(t, hg.Nodes, 2)
		assert.Equal(t, "runtime+http", hg.Nodes[1].Source)
		require.NotNil(t, hg.Nodes[1].InSync)
		assert.True(t, *hg.Nodes[1].InSync)
		assert.Equal(t, hg.Nodes[0].MaxOffset, hg.Nodes[1].MaxOffset)
	})

	t.Run("haStatus catching up", func(t *testing.T) {
		g.HAProxy.SetBandwidth(256 << 10)
		send(t, g, topic, 4, 24, 200<<10) // ~4.7 MiB, about 18 s at 256 KiB/s
		// The throttled proxy forwards in bursts, so a one-second sample may see no progress
		// ("stalled"); retry until one shows a rate and the time left.
		bar := regexp.MustCompile(`broker-a/1 catching up \[[#.]{30}\] +\d+\.\d% +[\d.]+ [KMG]iB behind +[\d.]+ (B|KiB|MiB)/s +(\d+[smh]|\d+m\d+s|\d+h\d+m) left`)
		out := eventuallyRun(t, func(code int, out string) error {
			if code != ExitOK || !bar.MatchString(out) {
				return fmt.Errorf("no catching-up slave with a rate (exit %d)", code)
			}
			return nil
		}, "haStatus", "-n", ns, "--http", httpFlag)
		s := tableRow(out, cluster, e2e.BrokerName, "1")
		require.NotNil(t, s, out)
		assert.Equal(t, "NO", s[9], out) // fields 6-7 are the lag with its unit
		assert.Contains(t, out, "WARNING broker-a: slave 1 ("+g.SlaveAddr+") is not in sync")

		// --watch refreshes: two samples, the second with a rate.
		var lines []HAReport
		code, wout, werr := runOut("haStatus", "-n", ns, "--http", httpFlag, "--watch", "--count", "2", "--interval", "500ms", "--json")
		require.Equal(t, ExitOK, code, werr)
		for _, l := range strings.Split(strings.TrimSpace(wout), "\n") {
			var r HAReport
			require.NoError(t, json.Unmarshal([]byte(l), &r), l)
			lines = append(lines, r)
		}
		require.Len(t, lines, 2)
		sl := lines[1].Groups[0].Nodes[1]
		require.NotNil(t, sl.RateBytesPerSec, "%+v", sl)
		if sl.CatchingUp {
			require.NotNil(t, sl.Progress)
			assert.Less(t, *sl.Progress, 1.0)
		}
		code, wout, _ = runOut("haStatus", "-n", ns, "--watch", "--count", "2", "--interval", "200ms")
		require.Equal(t, ExitOK, code)
		assert.Equal(t, 2, strings.Count(wout, "Every 200ms: mqadmin haStatus"), wout)

		g.HAProxy.SetBandwidth(0)
		g.WaitSlaveCaughtUp(t)
	})

	t.Run("slave paused", func(t *testing.T) {
		require.NoError(t, g.Slave.Pause())
		defer func() { _ = g.Slave.Resume() }()
		code, out, errOut := runOut("clusterList", "-n", ns, "--timeout", "500ms")
		assert.Equal(t, ExitUnreachable, code, errOut)
		row := tableRow(out, cluster, e2e.BrokerName, "1")
		require.NotNil(t, row, out)
		assert.Equal(t, "UNREACHABLE", row[4], out)
		assert.Equal(t, "ASYNC_MASTER", tableRow(out, cluster, e2e.BrokerName, "0")[4], out)

		code, _, _ = runOut("brokerStatus", "-b", g.SlaveAddr, "--timeout", "500ms")
		assert.Equal(t, ExitUnreachable, code)

		// haStatus reports the unreachable slave and still succeeds; --check turns it into exit 1.
		out = mustRun(t, "haStatus", "-n", ns, "--timeout", "500ms")
		row = tableRow(out, cluster, e2e.BrokerName, "1")
		require.NotNil(t, row, out)
		assert.Equal(t, "UNREACHABLE", row[8], out)
		assert.Contains(t, out, "WARNING broker-a: broker 1 ("+g.SlaveAddr+") unreachable")
		code, _, _ = runOut("haStatus", "-n", ns, "--timeout", "500ms", "--check")
		assert.Equal(t, ExitServer, code)
	})

	t.Run("haStatus slave stopped", func(t *testing.T) {
		g.Slave.Kill()
		out := eventuallyRun(t, func(code int, out string) error {
			if !strings.Contains(out, "no slave connected") {
				return fmt.Errorf("master still reports a slave (exit %d)", code)
			}
			return nil
		}, "haStatus", "-n", ns, "--http", httpFlag)
		assert.Contains(t, out, "copies 1", out)
		assert.Contains(t, out, "WARNING status page "+g.SlaveHTTP, out)
		code, _, _ := runOut("haStatus", "-n", ns, "--check")
		assert.Equal(t, ExitServer, code, "--check fails while the group has no slave")

		var rep HAReport
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "haStatus", "-n", ns, "--json")), &rep))
		require.Len(t, rep.Groups, 1)
		assert.Equal(t, 1, rep.Groups[0].InSyncCount)
		assert.Equal(t, 0, rep.Groups[0].SlaveCount)
	})

	t.Run("namesrvAdmin", func(t *testing.T) {
		// Unsigned, the name server refuses the writes (exit 1) and changes nothing.
		code, _, errOut := runOut("wipeWritePerm", "-n", ns, "-b", e2e.BrokerName)
		assert.Equal(t, ExitServer, code)
		assert.Contains(t, errOut, "registration secret")
		out := mustRun(t, "topicRoute", "-n", ns, "-t", topic, "--json")
		assert.Contains(t, out, `"perm": 6`)

		out = mustRun(t, "wipeWritePerm", "-n", ns, "-b", e2e.BrokerName, "-registrationSecretFile", secretFile)
		row := tableRow(out, ns, "OK")
		require.NotNil(t, row, out)
		n, err := strconv.Atoi(row[2])
		require.NoError(t, err)
		assert.Greater(t, n, 1, "every topic of the broker, %s among them", topic)
		out = mustRun(t, "topicRoute", "-n", ns, "-t", topic, "--json")
		assert.Contains(t, out, `"perm": 4`, "write permission gone")
		var res []NamesrvResult
		require.NoError(t, json.Unmarshal([]byte(mustRun(t, "addWritePerm", "-n", ns, "-b", e2e.BrokerName, "-registrationSecretFile", secretFile, "--json")), &res))
		require.Len(t, res, 1)
		assert.True(t, res[0].OK)
		assert.Equal(t, n, *res[0].Count)
		assert.Contains(t, mustRun(t, "topicRoute", "-n", ns, "-t", topic, "--json"), `"perm": 6`)

		mustRun(t, "updateKvConfig", "-n", ns, "-s", "ORDER_TOPIC_CONFIG", "-k", topic, "-v", e2e.BrokerName+":4", "-registrationSecretFile", secretFile)
		resp, err := g.Admin.Invoke(context.Background(), ns, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": topic}, nil))
		require.NoError(t, err)
		assert.Equal(t, remoting.Success, resp.Code, resp.Remark)
		assert.Equal(t, e2e.BrokerName+":4", resp.Ext("value"))
		mustRun(t, "deleteKvConfig", "-n", ns, "-s", "ORDER_TOPIC_CONFIG", "-k", topic, "-registrationSecretFile", secretFile)
		resp, err = g.Admin.Invoke(context.Background(), ns, remoting.NewRequest(remoting.GetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": topic}, nil))
		require.NoError(t, err)
		assert.Equal(t, remoting.QueryNotFound, resp.Code)

		out = mustRun(t, "getNamesrvConfig", "-n", ns, "-registrationSecretFile", secretFile)
		assert.Equal(t, []string{"registrationSecret", "=", "****"}, tableRow(out, "registrationSecret"), out)
		assert.NotContains(t, out, cfg.RegistrationSecret)
		out = mustRun(t, "updateNamesrvConfig", "-n", ns, "-k", "logLevel", "-v", "info", "-registrationSecretFile", secretFile)
		assert.Contains(t, out, "applied now: logLevel", out)
		code, _, errOut = runOut("updateNamesrvConfig", "-n", ns, "-k", "kvConfigPath", "-v", "/tmp/elsewhere", "-registrationSecretFile", secretFile)
		assert.Equal(t, ExitServer, code)
		assert.Contains(t, errOut, "Can not update config in black list.")

		out = mustRun(t, "topicClusterList", "-n", ns, "-t", topic)
		assert.Equal(t, []string{cluster, e2e.BrokerName}, tableRow(out, cluster), out)
	})

	t.Run("deleteTopic", func(t *testing.T) {
		code, _, errOut := runOut("deleteTopic", "-n", ns, "-c", cluster, "-t", topic)
		assert.Equal(t, ExitServer, code, "the name server refuses an unsigned DELETE_TOPIC_IN_NAMESRV")
		assert.Contains(t, errOut, "registration secret")
		out := mustRun(t, "deleteTopic", "-n", ns, "-c", cluster, "-t", topic, "-registrationSecretFile", secretFile)
		assert.Contains(t, out, "delete topic "+topic+" on "+g.MasterAddr+": success")
		eventuallyRun(t, func(code int, out string) error {
			if code != ExitServer {
				return fmt.Errorf("route still served (exit %d)", code)
			}
			return nil
		}, "topicRoute", "-n", ns, "-t", topic)
	})
}

// startLoneMaster starts a name server and an ASYNC_MASTER without a slave for t (skipped with
// -short).
func startLoneMaster(t *testing.T) *e2e.Group {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a name server and a master")
	}
	cfg := e2e.DefaultGroupConfig()
	cfg.MasterRole = "ASYNC_MASTER"
	cfg.NoSlave = true
	return e2e.StartGroup(t, cfg)
}

// startProducer starts a rocketmq-client-go producer of group pg (a fresh instance name) on
// the name server ns, with retry retries per send; it is shut down when the test ends.
func startProducer(t *testing.T, ns, pg string, retry int) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{ns}), producer.WithGroupName(pg),
		producer.WithInstanceName(fmt.Sprintf("%s-%d", pg, time.Now().UnixNano())), producer.WithRetry(retry))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

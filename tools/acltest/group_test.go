package acltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestACLGroup plays every ACL case against real binaries; see the package doc.
func TestACLGroup(t *testing.T) {
	a := startACLGroup(t, true, e2e.DefaultGroupConfig())
	a.CreateTopic(t, topic, 4)
	a.CreateTopic(t, deniedTopic, 4)
	ns := a.NamesrvAddr

	// Right credentials: a producer and a push consumer work end to end.
	var hist e2e.History
	app := newProducer(t, ns, appAK, appSK)
	var bodies []string
	for i := 0; i < 40; i++ {
		body := fmt.Sprintf("acl-ok-%d", i)
		m := primitive.NewMessage(topic, []byte(body))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := app.SendSync(ctx, m)
		cancel()
		hist.Add(m, res, err)
		require.NoError(t, err, body)
		require.Equal(t, primitive.SendOK, res.Status, body)
		bodies = append(bodies, body)
	}
	col, _ := startConsumer(t, ns, "cg-acl", appAK, appSK)
	harness.Eventually(t, 60*time.Second, func() error {
		got := col.snapshot()
		for _, b := range bodies {
			if got[b] == 0 {
				return fmt.Errorf("%s not consumed yet (%d of %d)", b, len(got), len(bodies))
			}
		}
		return nil
	})
	stored := a.topicEntries(t, a.MasterAddr, topic)
	require.Equal(t, int64(len(bodies)), stored)

	// Identity failures: refused by the name server (the client finds no route) and, sent
	// straight to the broker, NO_PERMISSION; nothing stored.
	for _, c := range []struct{ name, ak, sk, reason, remark string }{
		{"wrong secret", appAK, "not-the-secret", "bad_signature", "Check signature failed for accessKey=" + appAK},
		{"unknown access key", "stranger1", appSK, "unknown_access_key", "No acl config for stranger1"},
		{"no credentials", "", "", "no_access_key", "No accessKey is configured"},
	} {
		p := newProducer(t, ns, c.ak, c.sk)
		_, err := sendOne(p, topic, "refused-"+c.name)
		require.Error(t, err, c.name)
		t.Logf("%s: rocketmq-client-go reports: %v", c.name, err)

		cc := remoting.DefaultClientConfig()
		if c.ak != "" {
			cc.Signer = acl.Signer(c.ak, c.sk)
		}
		raw := remoting.NewClient(cc)
		ext := map[string]string{"producerGroup": "pg", "topic": topic, "queueId": "0", "sysFlag": "0", "bornTimestamp": "0",
			"flag": "0", "properties": "", "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
			"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false"}
		resp, err := raw.Invoke(context.Background(), a.MasterAddr, remoting.NewRequest(remoting.SendMessage, ext, []byte("raw-"+c.name)))
		require.NoError(t, err)
		require.Equal(t, remoting.NoPermission, resp.Code, c.name)
		require.Equal(t, c.remark, resp.Remark, c.name)
		for _, hp := range []string{a.MasterHTTP} {
			require.GreaterOrEqual(t, a.metrics(t, hp)[`rmqha_broker_acl_requests_total{reason="`+c.reason+`",result="denied"}`], 1.0, c.name)
		}
		_ = raw.Close()
	}
	require.Equal(t, stored, a.topicEntries(t, a.MasterAddr, topic), "nothing refused was stored")

	// Permission failures, from the broker: CODE 16 in the client's error, nothing stored.
	for _, c := range []struct{ name, ak, sk, topic, want string }{
		{"topic DENY", appAK, appSK, deniedTopic, "topic:" + deniedTopic},
		{"SUB-only account sending", subAK, subSK, topic, "topic:" + topic},
	} {
		p := newProducer(t, ns, c.ak, c.sk)
		_, err := sendOne(p, c.topic, "refused-"+c.name)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), "CODE: 16", c.name)
		require.Contains(t, err.Error(), c.want, c.name)
		t.Logf("%s: rocketmq-client-go reports: %v", c.name, err)
	}
	require.Equal(t, stored, a.topicEntries(t, a.MasterAddr, topic))
	require.Zero(t, a.topicEntries(t, a.MasterAddr, deniedTopic))

	// A PUB-only account consuming: heartbeats and pulls refused; nothing delivered, no group
	// and no offset created for it.
	deniedKey := `rmqha_broker_acl_requests_total{reason="no_permission",result="denied"}`
	before := a.metrics(t, a.MasterHTTP)[deniedKey]
	pubCol, pubCons := startConsumer(t, ns, "cg-pubonly", pubAK, pubSK)
	// Its heartbeat and its consumer-list lookup (rebalance) are refused at once.
	harness.Eventually(t, 30*time.Second, func() error {
		if n := a.metrics(t, a.MasterHTTP)[deniedKey]; n < before+2 {
			return fmt.Errorf("%v refusals counted since the consumer started, want 2", n-before)
		}
		return nil
	})
	require.Empty(t, pubCol.snapshot(), "a PUB-only account consumed")
	_ = pubCons.Shutdown()
	resp, err := a.Admin.Invoke(context.Background(), a.MasterAddr, remoting.NewRequest(remoting.GetAllSubscriptionGroupConfig, nil, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.NotContains(t, string(resp.Body), "cg-pubonly", "a refused heartbeat created its group")
	require.Contains(t, string(resp.Body), "cg-acl")
	harness.Eventually(t, 30*time.Second, func() error { // the right consumer commits every 5 s
		resp, err = a.Admin.Invoke(context.Background(), a.MasterAddr, remoting.NewRequest(remoting.GetAllConsumerOffset, nil, nil))
		if err != nil || !strings.Contains(string(resp.Body), topic+"@cg-acl") {
			return fmt.Errorf("no committed offset of cg-acl yet: %v", err)
		}
		return nil
	})
	require.NotContains(t, string(resp.Body), "cg-pubonly", "an offset was committed for a refused group")

	// The group's own parts with the admin account: both brokers registered (StartGroup waited
	// for their routes), the slave pulls the master's metadata, metasync pulls, mqadmin works.
	harness.Eventually(t, 30*time.Second, func() error {
		resp, err := a.Admin.Invoke(context.Background(), a.SlaveAddr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success || !strings.Contains(string(resp.Body), deniedTopic) {
			return fmt.Errorf("slave's topics lack %s: %d %s", deniedTopic, resp.Code, resp.Remark)
		}
		return nil
	})
	a.checkMetasync(t)
	a.checkMqadmin(t)

	// plain_acl.yml changes take effect without a restart: the application loses PUB on the
	// topic, then gets it back; a version that does not load leaves the last good one serving.
	// record sends through app into the history (what the reload loops store is checked too).
	record := func(body string) (*primitive.SendResult, error) {
		m := primitive.NewMessage(topic, []byte(body))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := app.SendSync(ctx, m)
		hist.Add(m, res, err)
		return res, err
	}
	writeAtomic(t, a.aclPath, aclFile(a.adminSK, "SUB"))
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := record("after-revoke")
		if err == nil {
			return fmt.Errorf("send still allowed after PUB was revoked")
		}
		if !strings.Contains(err.Error(), "CODE: 16") {
			return fmt.Errorf("unexpected error: %v", err)
		}
		return nil
	})
	writeAtomic(t, a.aclPath, aclFile(a.adminSK, "PUB|SUB"))
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := record("after-restore")
		return err
	})
	writeAtomic(t, a.aclPath, aclFile(a.adminSK, "PUB|SUB")+"  - accessKey: short\n")
	harness.Eventually(t, 30*time.Second, func() error {
		if v, ok := a.metrics(t, a.MasterHTTP)["rmqha_broker_acl_last_reload_ok"]; !ok || v != 0 {
			return fmt.Errorf("the invalid version was not noticed yet")
		}
		return nil
	})
	_, err = record("with-invalid-file")
	require.NoError(t, err, "the last good table keeps serving")
	require.True(t, a.Master.LogContains("does not load"), "the refused version is logged")
	writeAtomic(t, a.aclPath, aclFile(a.adminSK, "PUB|SUB"))
	harness.Eventually(t, 30*time.Second, func() error {
		if a.metrics(t, a.MasterHTTP)["rmqha_broker_acl_last_reload_ok"] != 1 {
			return fmt.Errorf("the good version was not applied yet")
		}
		return nil
	})
	require.GreaterOrEqual(t, a.metrics(t, a.MasterHTTP)[`rmqha_broker_acl_reloads_total{result="ok"}`], 2.0)
	require.GreaterOrEqual(t, a.namesrvMetrics(t)[`rmqha_namesrv_acl_requests_total{reason="bad_signature",result="denied"}`], 1.0)

	// Invariants: every process alive, a normal send SEND_OK, every acknowledged message
	// byte-exact on master and slave, nothing stored twice.
	for _, p := range []*harness.Process{a.Namesrv, a.Master, a.Slave} {
		require.True(t, p.Running(), "%s exited: %s", p.Name(), p.LogTail(2048))
	}
	res, err := record("final")
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	a.WaitSlaveCaughtUp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, hist.Check(ctx, a.Admin, a.MasterAddr, a.SlaveAddr))
}

// namesrvMetrics reads the name server's /metrics.
func (a *aclGroup) namesrvMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	return a.metrics(t, a.nsHTTP)
}

// checkMetasync runs metasync with the admin account against the master: it pulls the four
// tables; a second instance without credentials is refused and holds no snapshot.
func (a *aclGroup) checkMetasync(t *testing.T) {
	t.Helper()
	bin := toolBin(t, "metasync")
	ports := harness.MustFreePorts(t, 2)
	start := func(name string, port int, creds ...string) *harness.Process {
		dir := filepath.Join(a.dir, name)
		conf := fmt.Sprintf("masterAddrs=%s/%s@%s\nhttpPort=%d\nbindAddress=127.0.0.1\nstorePathRootDir=%s\nsyncIntervalMillis=500\nadvertisedUrl=http://127.0.0.1:%d\n",
			e2e.ClusterName, e2e.BrokerName, a.MasterAddr, port, dir, port)
		for _, kv := range creds {
			conf += kv + "\n"
		}
		require.NoError(t, mkdirWrite(filepath.Join(dir, "metasync.conf"), conf))
		return harness.StartProcessT(t, harness.ProcessConfig{Name: name, Bin: bin, Args: []string{"-c", filepath.Join(dir, "metasync.conf")}, Dir: dir})
	}
	signed := start("metasync", ports[0], "accessKey="+adminAK, "secretKey="+a.adminSK)
	unsigned := start("metasync-unsigned", ports[1])
	url := func(port int) string {
		return fmt.Sprintf("http://127.0.0.1:%d/snapshot/%s/%s/topics", port, e2e.ClusterName, e2e.BrokerName)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		if !signed.Running() {
			return fmt.Errorf("metasync exited: %s", signed.LogTail(2048))
		}
		code, body, err := httpGet(url(ports[0]))
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, topic) {
			return fmt.Errorf("metasync snapshot: %d %.200s", code, body)
		}
		return nil
	})
	harness.Eventually(t, 30*time.Second, func() error {
		if !unsigned.LogContains("No accessKey is configured") {
			return fmt.Errorf("the unsigned metasync was not refused yet: %s", unsigned.LogTail(1024))
		}
		return nil
	})
	code, _, err := httpGet(url(ports[1]))
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "metasync without credentials holds a snapshot")
	require.True(t, signed.Running())
	signed.Kill()
	unsigned.Kill()
}

// checkMqadmin: with the admin account mqadmin lists and creates; without credentials it is
// refused; an application account cannot create topics.
func (a *aclGroup) checkMqadmin(t *testing.T) {
	t.Helper()
	bin := toolBin(t, "mqadmin")
	env := []string{"ROCKETMQ_HOME=" + filepath.Join(a.dir, "no-home")}
	code, out := runTool(t, bin, env, "topicList", "-n", a.NamesrvAddr, "-ak", adminAK, "-sk", a.adminSK)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, topic)
	code, out = runTool(t, bin, env, "topicList", "-n", a.NamesrvAddr)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "No accessKey is configured")
	code, out = runTool(t, bin, env, "updateTopic", "-n", a.NamesrvAddr, "-b", a.MasterAddr, "-t", "MqadminTopic", "-ak", appAK, "-sk", appSK)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Need admin permission")
	// tools.yml under ROCKETMQ_HOME, as RocketMQ's mqadmin reads it.
	home := filepath.Join(a.dir, "home")
	require.NoError(t, mkdirWrite(filepath.Join(home, "conf", "tools.yml"), fmt.Sprintf("accessKey: %s\nsecretKey: %s\n", adminAK, a.adminSK)))
	code, out = runTool(t, bin, []string{"ROCKETMQ_HOME=" + home}, "updateTopic", "-n", a.NamesrvAddr, "-b", a.MasterAddr, "-t", "MqadminTopic")
	require.Equal(t, 0, code, out)
	a.WaitRoute(t, "MqadminTopic")
	code, out = runTool(t, bin, []string{"ROCKETMQ_HOME=" + home}, "haStatus", "-n", a.NamesrvAddr, "--json")
	require.Equal(t, 0, code, out)
	require.True(t, json.Valid([]byte(out)), out)
}

package conftest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// rocketmqNamesrvConf is every key of a RocketMQ 4.9.8 namesrv.conf with its default.
var rocketmqNamesrvConf, _ = filepath.Abs(filepath.Join("..", "..", "services", "namesrv", "nameserver", "testdata", "rocketmq-4.9.8-namesrv.conf"))

func namesrvBin(t *testing.T) string {
	dir, err := e2e.BinDir()
	require.NoError(t, err)
	return filepath.Join(dir, "namesrv")
}

// TestRocketMQ49NamesrvConfStarts: a RocketMQ 4.9.8 namesrv.conf (NamesrvConfig and
// NettyServerConfig, every key) starts the name server, which warns once naming the keys it
// ignores and answers route lookups.
func TestRocketMQ49NamesrvConfStarts(t *testing.T) {
	entries, err := props.ParseFile(rocketmqNamesrvConf)
	require.NoError(t, err)
	require.Len(t, entries, 21, "the file lists RocketMQ 4.9.8's name server keys")

	dir := t.TempDir()
	port := harness.MustFreePorts(t, 1)[0]
	args := []string{"-c", rocketmqNamesrvConf, "-listenPort=" + strconv.Itoa(port), "-bindAddress=127.0.0.1",
		"-kvConfigPath=" + filepath.Join(dir, "kvConfig.json"), "-registryBackend=memory", "-registrationSecret=" + harness.NewSecret()}
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: "namesrv", Bin: namesrvBin(t), Args: args, Dir: dir})
	harness.Eventually(t, readyTimeout, func() error {
		if !p.Running() || p.LogContains("namesrv started") {
			return nil
		}
		return fmt.Errorf("not running yet")
	})
	require.True(t, p.Running(), "namesrv exited: %v\n%s", p.ExitErr(), p.LogTail(4096))
	log := p.LogTail(1 << 20)
	ms := regexp.MustCompile(`RocketMQ namesrv.conf keys with no meaning here[^\n]*count=(\d+) keys="([^"]+)"`).FindAllStringSubmatch(log, -1)
	require.Len(t, ms, 1, "one warning names the ignored keys:\n%s", log)
	ignored := strings.Split(ms[0][2], ",")
	n, _ := strconv.Atoi(ms[0][1])
	require.Equal(t, len(ignored), n)
	require.Equal(t, 18, n, "all but listenPort, kvConfigPath and serverChannelMaxIdleTimeSeconds: %v", ignored)
	for _, k := range []string{"serverWorkerThreads", "configStorePath", "orderMessageEnable", "useEpollNativeSelector", "rocketmqHome"} {
		require.Contains(t, ignored, k)
	}
	for _, k := range []string{"listenPort", "kvConfigPath", "serverChannelMaxIdleTimeSeconds"} {
		require.NotContains(t, ignored, k, "%s is bound here", k)
	}
	t.Logf("RocketMQ 4.9.8 name server keys: %d, bound here: %d, ignored with a warning: %d", len(entries), len(entries)-n, n)

	c := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, harness.Addr(port), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "NoSuchTopic"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.TopicNotExist, resp.Code, resp.Remark)
	require.True(t, p.Running(), "namesrv alive")
}

// TestNamesrvTyposAndUnparsableNumbersStillRefused: a key RocketMQ's name server does not
// know, and an int key RocketMQ cannot parse, stop start-up naming the key and line (exit 2).
func TestNamesrvTyposAndUnparsableNumbersStillRefused(t *testing.T) {
	for name, line := range map[string]string{
		"typo":         "serverWorkerThread=8",
		"not a number": "serverWorkerThreads=eight",
	} {
		dir := t.TempDir()
		conf := filepath.Join(dir, "namesrv.conf")
		require.NoError(t, os.WriteFile(conf, []byte("productEnvName=center\n"+line+"\n"), 0o644))
		port := harness.MustFreePorts(t, 1)[0]
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		out, err := exec.CommandContext(ctx, namesrvBin(t), "-c", conf, "-listenPort="+strconv.Itoa(port), "-bindAddress=127.0.0.1",
			"-kvConfigPath="+filepath.Join(dir, "kv.json"), "-registryBackend=memory").CombinedOutput()
		cancel()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s: %s", name, out)
		require.Equal(t, 2, ee.ExitCode(), "%s: %s", name, out)
		key, _, _ := strings.Cut(line, "=")
		require.Contains(t, string(out), key, name)
		require.Contains(t, string(out), "namesrv.conf:2", name)
		t.Logf("%s: %s", name, strings.TrimSpace(string(out)))
	}
}

// TestUpdateNamesrvConfigPersists: UPDATE_NAMESRV_CONFIG signed with the registration secret
// writes listenPort into the RocketMQ namesrv.conf the name server started from; after a
// restart it listens there. Unsigned, it is refused and changes nothing.
func TestUpdateNamesrvConfigPersists(t *testing.T) {
	src, err := os.ReadFile(rocketmqNamesrvConf)
	require.NoError(t, err)
	dir := t.TempDir()
	ports := harness.MustFreePorts(t, 2)
	conf := filepath.Join(dir, "namesrv.conf")
	require.NoError(t, os.WriteFile(conf, []byte(strings.Replace(string(src), "listenPort=9876", "listenPort="+strconv.Itoa(ports[0]), 1)), 0o644))
	secret := harness.NewSecret()
	args := []string{"-c", conf, "-bindAddress=127.0.0.1", "-kvConfigPath=" + filepath.Join(dir, "kvConfig.json"),
		"-registryBackend=memory", "-registrationSecret=" + secret}
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: "namesrv", Bin: namesrvBin(t), Args: args, Dir: dir})
	harness.Eventually(t, readyTimeout, func() error { return harness.DialOK(harness.Addr(ports[0])) })

	c := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = c.Close() })
	invoke := func(addr string, req *remoting.Command) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, addr, req)
		require.NoError(t, err)
		return resp
	}
	body := []byte("listenPort=" + strconv.Itoa(ports[1]) + "\n")
	resp := invoke(harness.Addr(ports[0]), remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, body))
	require.Equal(t, remoting.NoPermission, resp.Code, resp.Remark)
	signedReq := remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, body)
	acl.SignCommand(signedReq, acl.BrokerAccessKey, secret)
	resp = invoke(harness.Addr(ports[0]), signedReq)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "applied at the next start: listenPort")
	t.Logf("UPDATE_NAMESRV_CONFIG: %s", resp.Remark)

	require.NoError(t, p.Stop(30*time.Second))
	require.NoError(t, p.Restart())
	harness.Eventually(t, readyTimeout, func() error { return harness.DialOK(harness.Addr(ports[1])) })
	resp = invoke(harness.Addr(ports[1]), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "NoSuchTopic"}, nil))
	require.Equal(t, remoting.TopicNotExist, resp.Code, resp.Remark)
	got, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Contains(t, string(got), "# NettyServerConfig\n", "comments kept")
	require.Equal(t, strings.Count(string(src), "\n"), strings.Count(string(got), "\n"), "rewritten in place")
	require.True(t, p.Running())
}

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

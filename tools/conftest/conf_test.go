package conftest

import (
	"bytes"
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

const readyTimeout = 60 * time.Second

// rocketmqConf is the file, absolute (the process runs in its own folder).
var rocketmqConf, _ = filepath.Abs(filepath.Join("..", "..", "libs", "broker", "testdata", "rocketmq-4.9.8-broker.conf"))

func masterBin(t *testing.T) string {
	dir, err := e2e.BinDir()
	require.NoError(t, err)
	return filepath.Join(dir, "master")
}

// overrides are the flags every run adds: free ports, its own store and secret.
func overrides(t *testing.T, dir string) (args []string, addr string) {
	ports := harness.MustFreePorts(t, 2)
	secret := filepath.Join(dir, "ha.secret")
	require.NoError(t, os.WriteFile(secret, []byte(harness.NewSecret()), 0o600))
	return []string{
		"-listenPort=" + strconv.Itoa(ports[0]), "-haListenPort=" + strconv.Itoa(ports[1]),
		"-bindAddress=127.0.0.1", "-brokerIP1=127.0.0.1", "-brokerIP2=127.0.0.1",
		"-storePathRootDir=" + filepath.Join(dir, "store"), "-haSecretFile=" + secret,
	}, harness.Addr(ports[0])
}

// TestRocketMQ49BrokerConfStarts: every RocketMQ 4.9.8 broker.conf key with its default, and
// mappedFileSizeCommitLog=4194304 with the default maxMessageSize: the master starts, warns
// once naming the keys it ignores, and stores and serves messages.
func TestRocketMQ49BrokerConfStarts(t *testing.T) {
	entries, err := props.ParseFile(rocketmqConf)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(entries), 180, "the file lists RocketMQ 4.9.8's keys")

	dir := t.TempDir()
	args, addr := overrides(t, dir)
	args = append([]string{"-c", rocketmqConf, "-mappedFileSizeCommitLog=4194304"}, args...)
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: "master", Bin: masterBin(t), Args: args, Dir: dir})
	harness.Eventually(t, readyTimeout, func() error {
		if !p.Running() || p.LogContains("broker running") {
			return nil // an exit is reported below, at once
		}
		return fmt.Errorf("not running yet")
	})
	require.True(t, p.Running(), "master exited: %v\n%s", p.ExitErr(), p.LogTail(4096))
	log := p.LogTail(1 << 20)
	m := regexp.MustCompile(`RocketMQ broker.conf keys with no meaning here[^\n]*count=(\d+) keys="([^"]+)"`).FindStringSubmatch(log)
	require.NotNil(t, m, "one warning names the ignored keys:\n%s", log)
	ignored := strings.Split(m[2], ",")
	n, _ := strconv.Atoi(m[1])
	require.Equal(t, len(ignored), n)
	for _, k := range []string{"sendMessageThreadPoolNums", "transientStorePoolEnable", "serverWorkerThreads", "enableDLegerCommitLog"} {
		require.Contains(t, ignored, k)
	}
	for _, k := range []string{"listenPort", "brokerRole", "flushDiskType", "mappedFileSizeCommitLog", "maxMessageSize", "storeReplyMessageEnable"} {
		require.NotContains(t, ignored, k, "%s is bound here", k)
	}
	bound := len(entries) - n
	t.Logf("RocketMQ 4.9.8 keys: %d, bound here: %d, ignored with a warning: %d", len(entries), bound, n)

	// It serves: a small message and a 3 MiB one are stored; a 4 MiB one (maxMessageSize)
	// cannot fit a 4 MiB CommitLog file and is refused, as RocketMQ refuses it.
	c := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { _ = c.Close() })
	sendBody := func(body []byte) *remoting.Command {
		ext := map[string]string{"producerGroup": "pg", "topic": "ConfTopic", "queueId": "0", "sysFlag": "0",
			"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "properties": "",
			"reconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4"}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.SendMessage, ext, body))
		require.NoError(t, err)
		return resp
	}
	resp := sendBody([]byte("hello"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = sendBody(bytes.Repeat([]byte("x"), 3<<20))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = sendBody(bytes.Repeat([]byte("y"), 4<<20))
	require.Equal(t, remoting.MessageIllegal, resp.Code, resp.Remark)
	require.True(t, p.Running(), "master alive")
}

// TestTyposAndUnparsableNumbersStillRefused: a key RocketMQ does not know, and an int key
// RocketMQ cannot parse, stop start-up naming the key (exit 2).
func TestTyposAndUnparsableNumbersStillRefused(t *testing.T) {
	for name, line := range map[string]string{
		"typo":         "sendMessageThreadPoolNum=4",
		"not a number": "sendMessageThreadPoolNums=four",
	} {
		dir := t.TempDir()
		conf := filepath.Join(dir, "broker.conf")
		require.NoError(t, os.WriteFile(conf, []byte("brokerClusterName=DefaultCluster\n"+line+"\n"), 0o644))
		args, _ := overrides(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		out, err := exec.CommandContext(ctx, masterBin(t), append([]string{"-c", conf}, args...)...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s: %s", name, out)
		require.Equal(t, 2, ee.ExitCode(), "%s: %s", name, out)
		key, _, _ := strings.Cut(line, "=")
		require.Contains(t, string(out), key, name)
		require.Contains(t, string(out), "broker.conf:2", name)
		t.Logf("%s: %s", name, strings.TrimSpace(string(out)))
	}
}

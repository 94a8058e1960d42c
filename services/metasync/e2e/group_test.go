package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func writeConf(t *testing.T, dir, name, body string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func waitUp(t *testing.T, p *harness.Process, addr string) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, func() error {
		if !p.Running() {
			t.Fatalf("%s exited: %v", p.Name(), p.ExitErr())
		}
		return harness.DialOK(addr)
	})
}

// TestWithRealGroup runs the project's name server (Consul registry), a master
// binary and the metasync binary, which finds the master in Consul. Topics
// auto-created by a real rocketmq-client-go producer and offsets committed by
// a real push consumer reach a slave's follower.
func TestWithRealGroup(t *testing.T) {
	t.Parallel() // mostly waiting (Consul session expiry, client commit period)
	rlog.SetLogLevel("error")
	consul := harness.StartConsulT(t)
	nats := harness.StartNATST(t)
	env := []string{"CONSUL_HTTP_ADDR=" + consul.HTTPAddr()}
	root := t.TempDir()

	nsPorts := harness.MustFreePorts(t, 2)
	nsDir := filepath.Join(root, "namesrv")
	secret := harness.NewSecret()
	nsConf := writeConf(t, nsDir, "namesrv.conf", fmt.Sprintf("listenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\nregistryBackend=consul\nconsulTcpCheckInterval=1000\nregistrationSecret=%s\n", nsPorts[0], nsPorts[1], secret))
	ns := harness.StartProcessT(t, harness.ProcessConfig{Name: "namesrv", Bin: serviceBinary(t, "namesrv"), Dir: nsDir, Args: []string{"-c", nsConf}, Env: env})
	nsAddr := harness.Addr(nsPorts[0])
	waitUp(t, ns, nsAddr)

	bPorts := harness.MustFreePorts(t, 3)
	bDir := filepath.Join(root, "master")
	var b strings.Builder
	fmt.Fprintf(&b, "brokerClusterName=%s\nbrokerName=%s\nbrokerId=0\nbrokerRole=ASYNC_MASTER\n", cluster, broker)
	fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\n", bPorts[0], bPorts[1], bPorts[2])
	fmt.Fprintf(&b, "namesrvAddr=%s\nstorePathRootDir=%s\nmappedFileSizeCommitLog=16777216\nregistrationSecret=%s\n", nsAddr, filepath.Join(bDir, "store"), secret)
	fmt.Fprintf(&b, "haSecret=%s\n", haSecret)
	bConf := writeConf(t, bDir, "broker.conf", b.String())
	master := harness.StartProcessT(t, harness.ProcessConfig{Name: "master", Bin: serviceBinary(t, "master"), Dir: bDir, Args: []string{"-c", bConf}, Env: env})
	masterAddr := harness.Addr(bPorts[0])
	waitUp(t, master, masterAddr)

	msPort := harness.MustFreePorts(t, 1)[0]
	msURL := fmt.Sprintf("http://127.0.0.1:%d", msPort)
	startBinary(t, serviceBinary(t, "metasync"), "metasync", msPort, map[string]string{
		"syncIntervalMillis": "500", "natsUrl": nats.URL(), "advertisedUrl": msURL,
	}, env)
	sl := startSlave(t, dialBus(t, nats.URL()), []string{msURL}, func() string { return masterAddr }, time.Hour)
	waitFor(t, 30*time.Second, "master's system topics on the slave", func() bool { return sl.HasTopic(broker) })

	rc := remoting.NewClient(remoting.DefaultClientConfig())
	defer rc.Close()
	harness.Eventually(t, 20*time.Second, func() error { // the producer needs TBW102's route to auto-create
		resp, err := rc.Invoke(context.Background(), nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("route of TBW102: %s", remoting.ResponseName(resp.Code))
		}
		return nil
	})

	const topic, group, n = "MetaSyncTopic", "metasync-cg", 40
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{nsAddr}), producer.WithGroupName("metasync-pg"), producer.WithRetry(2),
		producer.WithInstanceName("metasync-e2e-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()
	start := time.Now()
	res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("m-0")))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	waitFor(t, 20*time.Second, "auto-created topic on the slave", func() bool { return sl.HasTopic(topic) })
	t.Logf("auto-created topic on the slave %v after the first send (syncIntervalMillis=500)", time.Since(start).Round(time.Millisecond))
	for i := 1; i < n; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("m-"+strconv.Itoa(i))))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}

	var consumed atomic.Int64
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithInstance("metasync-e2e-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			consumed.Add(int64(len(msgs)))
			return consumer.ConsumeSuccess, nil
		}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()
	waitFor(t, 30*time.Second, "all consumed", func() bool { return consumed.Load() >= n })

	// The client commits offsets every 5 s; the sum over queues is the number consumed.
	waitFor(t, 30*time.Second, "committed offsets on the slave", func() bool {
		var sum int64
		for _, q := range sl.Tables.Offsets.GroupOffsets(group)[topic] {
			sum += q
		}
		return sum == n
	})
	waitFor(t, 10*time.Second, "group on the slave", func() bool { _, ok := sl.Tables.Groups.Get(group); return ok })
	waitFor(t, 10*time.Second, "offsets applied through NATS", func() bool {
		st := sl.F.Status()
		return st.Mode == metasync.SourceNATS && st.Table(metasync.TableConsumerOffsets).Source == metasync.SourceNATS
	})
}

package main

import (
	"context"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

// inProcessSyncSend is the anchor of the table's SYNC one-producer row, as the performance
// issue names it: the same 1 KiB send with the client, a SYNC_MASTER and its slave inside this
// one process (the broker library; loopback TCP from the client to the master and from the
// slave to the master, as BenchmarkSend sync-1 in libs/broker). Sends go one at a time for d;
// it returns the p50 in µs and this process's CPU µs per send. Set against the group's p50,
// the ratio is what running the three as processes costs: the wake-ups of three processes
// instead of the goroutine hand-offs of one.
func inProcessSyncSend(t *testing.T, d time.Duration) (p50US, cpuUS float64) {
	t.Helper()
	haSecret, regSecret := hawiretest.NewSecret(), hawiretest.NewSecret()
	log := logrus.New()
	log.SetOutput(io.Discard)
	conf := func(role string) broker.Config {
		cfg := broker.DefaultConfig()
		cfg.BrokerRole = role
		cfg.HASecret, cfg.RegistrationSecret = haSecret, regSecret
		cfg.ListenPort, cfg.BindAddress, cfg.BrokerIP1 = 0, "127.0.0.1", "127.0.0.1"
		cfg.StorePathRootDir = t.TempDir()
		cfg.MappedFileSizeCommitLog = 64 << 20
		return cfg
	}
	// Both stop before this returns: idle brokers left in the process would tick under the
	// rows measured after it.
	var started []*broker.Broker
	defer func() {
		for _, b := range slices.Backward(started) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = b.Shutdown(ctx)
			cancel()
		}
	}()
	start := func(cfg broker.Config) *broker.Broker {
		b, err := broker.New(cfg, log)
		require.NoError(t, err)
		require.NoError(t, b.Start())
		started = append(started, b)
		return b
	}
	m := start(conf(broker.RoleSyncMaster))
	scfg := conf(broker.RoleSlave)
	scfg.BrokerID, scfg.HAMasterAddress = 1, m.HAAddr()
	start(scfg)
	require.Eventually(t, func() bool {
		st := m.Status().HAMaster
		return st != nil && st.InSyncCount == 2
	}, 10*time.Second, 5*time.Millisecond, "the in-process slave never got in sync")

	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = 10 * time.Second
	cc.Signer = acl.Signer(acl.BrokerAccessKey, regSecret)
	c := remoting.NewClient(cc)
	defer c.Close()
	ext := map[string]string{
		"producerGroup": "bench-pg", "topic": "InProcessSync", "queueId": "0", "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
		"properties": "TAGS\x01a\x02WAIT\x01true\x02",
	}
	req := remoting.NewRequest(remoting.SendMessage, ext, make([]byte, 1024))
	send := func() time.Duration {
		t0 := time.Now()
		resp, err := c.Invoke(context.Background(), m.Addr(), req)
		el := time.Since(t0)
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		return el
	}
	for i := 0; i < 200; i++ { // the topic, the connections, the slave's first frames
		send()
	}
	var lat []time.Duration
	c0 := selfCPU(t)
	for end := time.Now().Add(d); time.Now().Before(end); {
		lat = append(lat, send())
	}
	cpu := selfCPU(t) - c0
	slices.Sort(lat)
	return float64(Percentile(lat, 50).Nanoseconds()) / 1e3, float64(cpu.Nanoseconds()) / 1e3 / float64(len(lat))
}

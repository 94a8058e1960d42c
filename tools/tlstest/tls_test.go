package tlstest

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

var seq atomic.Int64

func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
}

// produce sends n distinct messages with a TLS producer and returns the bodies answered SEND_OK.
func produce(t *testing.T, g *e2e.Group, topic string, n int) map[string]bool {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName("tls-pg"),
		producer.WithInstanceName(instance("tls-p")),
		producer.WithRetry(2),
		producer.WithTls(true),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()
	acked := map[string]bool{}
	start := time.Now()
	defer func() {
		t.Logf("%d sends over TLS to %s answered SEND_OK in %v", len(acked), g.MasterAddr, time.Since(start))
	}()
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("%s-%04d-%s", topic, i, time.Now().Format(time.RFC3339Nano))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		cancel()
		require.NoError(t, err, "send %d over TLS", i)
		require.Equal(t, primitive.SendOK, res.Status, "send %d", i)
		acked[body] = true
	}
	return acked
}

// consumeAll runs a TLS push consumer until every acknowledged body arrived, byte-exact.
func consumeAll(t *testing.T, g *e2e.Group, topic string, acked map[string]bool) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{g.NamesrvAddr}),
		consumer.WithGroupName(instance("tls-cg")),
		consumer.WithInstance(instance("tls-c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithTls(true),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)]++
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()
	harness.Eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		missing := 0
		for b := range acked {
			if got[b] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged messages not consumed yet", missing, len(acked))
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for b := range got {
		require.True(t, acked[b], "consumed a message never acknowledged (or altered): %q", b)
	}
}

// metric reads one sample of the broker's /metrics at hostport.
func metric(t *testing.T, hostport, series string) float64 {
	t.Helper()
	m, err := harness.Metrics(hostport)
	require.NoError(t, err)
	v, ok := m[series]
	require.True(t, ok, "series %s not in /metrics", series)
	return v
}

func requireAlive(t *testing.T, g *e2e.Group) {
	t.Helper()
	for _, p := range []*harness.Process{g.Namesrv, g.Master, g.Slave} {
		require.True(t, p.Running(), "%s exited: %v", p.Name(), p.ExitErr())
	}
}

// Permissive (the default): rocketmq-client-go with WithTls(true) produces and consumes while
// plain clients use the same ports; the slave holds every acknowledged message.
func TestPermissiveGoClientTLSAndPlainOnOnePort(t *testing.T) {
	g := e2e.StartGroup(t, e2e.DefaultGroupConfig())
	const topic = "TLSPermissive"
	g.CreateTopic(t, topic, 4)
	acked := produce(t, g, topic, 200)
	consumeAll(t, g, topic, acked)

	// A plain client on the same ports, at the same time as the TLS ones.
	resp, err := g.Admin.Invoke(context.Background(), g.NamesrvAddr,
		remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)

	g.WaitSlaveCaughtUp(t)
	require.Positive(t, metric(t, g.MasterHTTP, `rmqha_broker_remoting_tls_handshakes_total{mode="permissive",result="ok"}`))
	require.Positive(t, metric(t, g.MasterHTTP, `rmqha_broker_remoting_connections_accepted_total{transport="tls"}`))
	require.Positive(t, metric(t, g.MasterHTTP, `rmqha_broker_remoting_connections_accepted_total{transport="plain"}`))
	require.Zero(t, metric(t, g.MasterHTTP, `rmqha_broker_remoting_tls_handshakes_total{mode="permissive",result="failed"}`))
	requireAlive(t, g)
}

// Enforcing everywhere: the name server and both brokers refuse plain clients; the brokers
// register over TLS (tls.enable), the slave follows its master's metadata over TLS, and the
// Go client with WithTls(true) produces and consumes every acknowledged message.
func TestEnforcingGroup(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.ExtraNamesrv = []string{"tls.server.mode=enforcing"}
	broker := []string{"tls.server.mode=enforcing", "tls.enable=true", "metasyncFallbackInterval=1000"}
	cfg.ExtraMaster, cfg.ExtraSlave = broker, broker
	cfg.AdminTLS = &tls.Config{InsecureSkipVerify: true} // the test-mode certificates are self-signed
	g := e2e.StartGroup(t, cfg)                          // waits for both brokers in the route: they registered over TLS

	const topic = "TLSEnforcing"
	g.CreateTopic(t, topic, 4)
	acked := produce(t, g, topic, 200)
	consumeAll(t, g, topic, acked)
	g.WaitSlaveCaughtUp(t)

	plain := remoting.NewClient(remoting.DefaultClientConfig())
	defer plain.Close()
	for _, addr := range []string{g.NamesrvAddr, g.MasterAddr, g.SlaveAddr} {
		_, err := plain.Invoke(context.Background(), addr,
			remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		require.Error(t, err, "plain client served at %s", addr)
	}
	require.Positive(t, metric(t, g.MasterHTTP, `rmqha_broker_remoting_connections_refused_total{reason="plain_in_enforcing"}`))
	require.Zero(t, metric(t, g.MasterHTTP, `rmqha_broker_remoting_connections_accepted_total{transport="plain"}`))
	require.Positive(t, metric(t, g.MasterHTTP, `rmqha_broker_namesrv_client_tls_handshakes_total{result="ok"}`))
	require.Positive(t, metric(t, g.SlaveHTTP, `rmqha_broker_namesrv_client_tls_handshakes_total{result="ok"}`))

	// The slave's metadata follower pulls the new topic from its master over TLS.
	harness.Eventually(t, 30*time.Second, func() error {
		resp, err := g.Admin.Invoke(context.Background(), g.SlaveAddr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
		if err != nil {
			return err
		}
		if !regexp.MustCompile(topic).Match(resp.Body) {
			return fmt.Errorf("slave does not know %s yet", topic)
		}
		return nil
	})
	requireAlive(t, g)
}

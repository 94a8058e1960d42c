package nameserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/stretchr/testify/require"
)

const testSecret = "test-registration-secret"

func start(t *testing.T, mods ...func(*Config)) (*Server, *remoting.Client) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RegistrationSecret = testSecret
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.ListenPort = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg.BindAddress = "127.0.0.1"
	cfg.ScanNotActiveBrokerInterval = 20 * time.Millisecond
	cfg.BrokerExpire = 300 * time.Millisecond
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "kvConfig.json")
	for _, m := range mods {
		m(&cfg)
	}
	s, err := New(cfg, registry.NewMemoryWithLimits(cfg.Limits()))
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Close() })
	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = 3 * time.Second
	c := remoting.NewClient(cc)
	t.Cleanup(func() { c.Close() })
	return s, c
}

// registerReq is a REGISTER_BROKER signed with testSecret, as a broker sends it.
func registerReq(cluster, name string, id int64, addr string, topics ...string) *remoting.Command {
	return sign(unsignedRegisterReq(cluster, name, id, addr, topics...))
}

var lastTS atomic.Int64

// sign adds a fresh registrationTime and digest and signs req with testSecret.
func sign(req *remoting.Command) *remoting.Command {
	return signAt(req, nextTS())
}

func nextTS() int64 {
	for {
		last, now := lastTS.Load(), time.Now().UnixMilli()
		ts := max(now, last+1)
		if lastTS.CompareAndSwap(last, ts) {
			return ts
		}
	}
}

func signAt(req *remoting.Command, ts int64) *remoting.Command {
	acl.PrepareRegistration(req, ts)
	acl.SignCommand(req, acl.BrokerAccessKey, testSecret)
	return req
}

// haOf is the test brokers' HA address: port+1.
func haOf(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p+1))
}

func unsignedRegisterReq(cluster, name string, id int64, addr string, topics ...string) *remoting.Command {
	w := route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]route.TopicConfig{}}
	for _, tp := range topics {
		w.TopicConfigTable[tp] = route.NewTopicConfig(tp)
	}
	body := route.AppendRegisterBrokerBody(nil, route.RegisterBrokerBody{TopicConfigSerializeWrapper: w})
	return remoting.NewRequest(remoting.RegisterBroker, map[string]string{
		"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "haServerAddr": haOf(addr),
		"brokerId": strconv.FormatInt(id, 10), "compressed": "false",
		"bodyCrc32": strconv.FormatInt(int64(route.BodyCRC32(body)), 10),
	}, body)
}

func TestRegisterRouteAndDropOnClose(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	addr := s.Addr().String()

	// The master registers over its own connection so that closing it drops it.
	mc := remoting.NewClient(remoting.DefaultClientConfig())
	resp, err := mc.Invoke(ctx, addr, registerReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest"))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	resp, err = c.Invoke(ctx, addr, registerReq("DefaultCluster", "broker-a", 1, "127.0.0.1:10921"))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "127.0.0.1:10911", resp.Ext("masterAddr"))
	require.Equal(t, "127.0.0.1:10912", resp.Ext("haServerAddr"))

	resp, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":16,"topicSysFlag":0,"writeQueueNums":16}]}`, string(resp.Body))

	resp, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "Nope"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.TopicNotExist, resp.Code)

	resp, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	require.NoError(t, err)
	ci, err := route.DecodeClusterInfo(resp.Body)
	require.NoError(t, err)
	require.Equal(t, []string{"broker-a"}, ci.ClusterAddrTable["DefaultCluster"])

	// Master's connection closes: it leaves the route at once, the slave stays.
	require.NoError(t, mc.Close())
	require.Eventually(t, func() bool {
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil))
		if err != nil || resp.Code != remoting.Success {
			return false
		}
		rd, err := route.DecodeTopicRouteData(resp.Body)
		return err == nil && rd.BrokerDatas[0].MasterAddr() == "" && rd.BrokerDatas[0].BrokerAddrs[1] == "127.0.0.1:10921"
	}, 5*time.Second, 10*time.Millisecond)

	// The slave stops registering: expiry removes it and the topic.
	require.Eventually(t, func() bool {
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil))
		return err == nil && resp.Code == remoting.TopicNotExist
	}, 5*time.Second, 20*time.Millisecond)
}

func TestBadRegistrations(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	addr := s.Addr().String()

	req := unsignedRegisterReq("C", "b", 0, "127.0.0.1:1", "T")
	req.ExtFields["bodyCrc32"] = "12345"
	resp, err := c.Invoke(ctx, addr, sign(req))
	require.NoError(t, err)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "crc32 not match", resp.Remark)

	req = unsignedRegisterReq("C", "b", 0, "127.0.0.1:1", "T")
	req.ExtFields["brokerId"] = "x"
	resp, err = c.Invoke(ctx, addr, sign(req))
	require.NoError(t, err)
	require.Equal(t, remoting.SystemError, resp.Code)

	req = unsignedRegisterReq("C", "b", 0, "127.0.0.1:1", "T")
	req.Body = []byte("{not json")
	req.ExtFields["bodyCrc32"] = "0"
	resp, err = c.Invoke(ctx, addr, sign(req))
	require.NoError(t, err)
	require.Equal(t, remoting.SystemError, resp.Code)

	// Same broker name from another cluster: refused, first one keeps its route.
	resp, err = c.Invoke(ctx, addr, registerReq("C1", "b", 0, "127.0.0.1:1", "T"))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)
	resp, err = c.Invoke(ctx, addr, registerReq("C2", "b", 0, "127.0.0.1:2", "T"))
	require.NoError(t, err)
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "another cluster")

	// Unknown code: REQUEST_CODE_NOT_SUPPORTED, server keeps serving.
	resp, err = c.Invoke(ctx, addr, remoting.NewRequest(9999, nil, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.RequestCodeNotSupported, resp.Code)

	// Garbage on the socket closes that connection only.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, _ = conn.Write([]byte{0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1024)
	for {
		if _, err := conn.Read(buf); err != nil {
			break
		}
	}
	conn.Close()
	resp, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)
}

func TestHTTPHealthStatusMetrics(t *testing.T) {
	cfg := DefaultConfig()
	ports := make([]int, 2)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	cfg.ListenPort, cfg.HTTPPort, cfg.BindAddress = ports[0], ports[1], "127.0.0.1"
	cfg.RegistrationSecret = testSecret
	s, err := New(cfg, registry.NewMemory())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	defer s.Close()
	c := remoting.NewClient(remoting.DefaultClientConfig())
	defer c.Close()
	ctx := context.Background()
	addr := s.Addr().String()
	_, err = c.Invoke(ctx, addr, registerReq("C", "b", 0, "127.0.0.1:1", "T"))
	require.NoError(t, err)
	resp, err := c.Invoke(ctx, addr, unsignedRegisterReq("C", "b", 0, "127.0.0.1:1", "T"))
	require.NoError(t, err)
	require.Equal(t, remoting.NoPermission, resp.Code)
	for _, topic := range []string{"T", "T", "missing"} {
		_, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		require.NoError(t, err)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", ports[1], path))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get("/health")
	require.Equal(t, 200, code)
	_, body := get("/status")
	require.Contains(t, body, `"brokerName": "b"`)
	_, body = get("/metrics")
	for _, want := range []string{
		`rmqha_namesrv_route_lookups_total{result="found"} 2`,
		`rmqha_namesrv_route_lookups_total{result="not_found"} 1`,
		`rmqha_namesrv_registrations_total{result="ok"} 1`,
		`rmqha_namesrv_registrations_total{result="refused"} 1`,
		`rmqha_namesrv_registration_refusals_total{reason="unsigned",request="register"} 1`,
		`rmqha_namesrv_brokers 1`,
		`rmqha_namesrv_registry_stale 0`,
		`rmqha_namesrv_route_lookup_seconds_count 3`,
	} {
		require.Regexp(t, "(?m)^"+regexp.QuoteMeta(want)+"$", body, "a whole sample line")
	}
}

// The name server's numeric header fields are parsed with their width in RocketMQ's headers
// (brokerId Long, bodyCrc32 Integer) and range: beyond it SYSTEM_ERROR, nothing registered or
// removed. bodyCrc32 = real CRC + 2^32 used to wrap onto the real CRC and pass.
func TestNumericRegistrationFieldsRangeChecked(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	addr := s.Addr().String()
	base := registerReq("DefaultCluster", "broker-n", 0, "127.0.0.1:10911", "NumTopic")
	crc, err := strconv.ParseInt(base.Ext("bodyCrc32"), 10, 64)
	require.NoError(t, err)
	for _, tc := range []struct{ key, value string }{
		{"brokerId", "-1"},
		{"brokerId", "9223372036854775808"},
		{"bodyCrc32", strconv.FormatInt(crc+1<<32, 10)},
		{"bodyCrc32", "abc"},
		{"epoch", "-1"},
		{"epoch", "9223372036854775808"},
	} {
		req := unsignedRegisterReq("DefaultCluster", "broker-n", 0, "127.0.0.1:10911", "NumTopic")
		req.ExtFields[tc.key] = tc.value
		resp, err := c.Invoke(ctx, addr, sign(req)) // a genuine broker's signature: only the range refuses it
		require.NoError(t, err)
		require.Equal(t, remoting.SystemError, resp.Code, "%s=%s: %q", tc.key, tc.value, resp.Remark)
		require.Contains(t, resp.Remark, tc.key)
		resp, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "NumTopic"}, nil))
		require.NoError(t, err)
		require.Equal(t, remoting.TopicNotExist, resp.Code, "%s=%s registered", tc.key, tc.value)
	}
	base = registerReq("DefaultCluster", "broker-n", 0, "127.0.0.1:10911", "NumTopic") // a time after the refused ones
	resp, err := c.Invoke(ctx, addr, base)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	for _, id := range []string{"-1", "9223372036854775808", "x"} {
		resp, err := c.Invoke(ctx, addr, remoting.NewRequest(remoting.UnregisterBroker, map[string]string{
			"clusterName": "DefaultCluster", "brokerName": "broker-n", "brokerAddr": "127.0.0.1:10911", "brokerId": id,
		}, nil))
		require.NoError(t, err)
		require.Equal(t, remoting.SystemError, resp.Code, "brokerId=%s", id)
	}
	resp, err = c.Invoke(ctx, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "NumTopic"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, "still routed")
}

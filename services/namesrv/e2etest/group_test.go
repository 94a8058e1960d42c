// Package e2etest runs the name server on Consul as processes, with real
// brokers and real RocketMQ clients: discovery, failure detection, agreement
// between name servers and Consul outages.
package e2etest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/rmqha/rmqha/tools/secretfile"
	"github.com/stretchr/testify/require"
)

// secret is this run's registration secret, given to every name server and broker.
var secret = harness.NewSecret()

type node struct {
	*harness.Process
	port, httpPort int
}

func (n *node) addr() string { return harness.Addr(n.port) }

func writeConf(t *testing.T, dir, name, body string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func startNamesrv(t *testing.T, consul *harness.Consul, name string) *node {
	t.Helper()
	ports := harness.MustFreePorts(t, 2)
	dir := filepath.Join(t.TempDir(), name)
	conf := writeConf(t, dir, "namesrv.conf", fmt.Sprintf("listenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\nregistryBackend=consul\nregistrationSecret=%s\n", ports[0], ports[1], secret))
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: name, Bin: harness.Binary(t, "namesrv"), Dir: dir,
		Args: []string{"-c", conf}, Env: []string{"CONSUL_HTTP_ADDR=" + consul.HTTPAddr()}})
	n := &node{Process: p, port: ports[0], httpPort: ports[1]}
	waitUp(t, n)
	return n
}

// waitUp waits until n accepts connections, failing at once if it exited.
func waitUp(t *testing.T, n *node) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, func() error {
		if !n.Running() {
			t.Fatalf("%s exited: %v", n.Name(), n.ExitErr())
		}
		return harness.DialOK(n.addr())
	})
}

// haSecret is the HA secret of this run's brokers: random, drawn once per test process.
var haSecret = secretfile.New()

type brokerOpts struct {
	name, role, haMaster, namesrv string
	id                            int
	port                          int // 0 = free port
	dir                           string
}

func startBroker(t *testing.T, consul *harness.Consul, o brokerOpts) *node {
	t.Helper()
	ports := harness.MustFreePorts(t, 3)
	if o.port != 0 {
		ports[0] = o.port
	}
	if o.dir == "" {
		o.dir = filepath.Join(t.TempDir(), o.name)
	}
	bin := "master"
	if o.role == "SLAVE" {
		bin = "slave"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=%d\nbrokerRole=%s\n", o.id, o.role)
	fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\n", ports[0], ports[1], ports[2])
	fmt.Fprintf(&b, "namesrvAddr=%s\nstorePathRootDir=%s\nmappedFileSizeCommitLog=16777216\nslaveReadEnable=true\n", o.namesrv, filepath.Join(o.dir, "store"))
	fmt.Fprintf(&b, "registrationSecret=%s\n", secret)
	fmt.Fprintf(&b, "haSecret=%s\n", haSecret)
	if o.haMaster != "" {
		fmt.Fprintf(&b, "haMasterAddress=%s\n", o.haMaster)
	}
	conf := writeConf(t, o.dir, "broker.conf", b.String())
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: o.name, Bin: harness.Binary(t, bin), Dir: o.dir,
		Args: []string{"-c", conf}, Env: []string{"CONSUL_HTTP_ADDR=" + consul.HTTPAddr()}})
	n := &node{Process: p, port: ports[0], httpPort: ports[2]}
	waitUp(t, n)
	return n
}

type status struct {
	Role      string `json:"role"`
	MaxOffset int64  `json:"maxOffset"`
	HASlave   *struct {
		MasterAddr     string
		Connected      bool
		LocalMaxOffset int64
	} `json:"haSlave"`
}

func getStatus(n *node) (status, error) {
	var st status
	resp, err := http.Get("http://" + harness.Addr(n.httpPort) + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func routeOf(c *remoting.Client, ns *node, topic string) (route.TopicRouteData, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, ns.addr(), remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return route.TopicRouteData{}, "", err
	}
	if resp.Code != remoting.Success {
		return route.TopicRouteData{}, "", fmt.Errorf("route %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	rd, err := route.DecodeTopicRouteData(resp.Body)
	return rd, string(resp.Body), err
}

func sendOne(c *remoting.Client, broker, topic, body string) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := remoting.NewRequest(remoting.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}, []byte(body))
	return c.Invoke(ctx, broker, req)
}

func newClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { c.Close() })
	return c
}

// A slave with no haMasterAddress finds its master in Consul; two name
// servers answer identical routes; a restarted name server answers the same
// at once; a master killed with -9 leaves the routes (measured); a master
// that comes back on another port is found again by the slave.
func TestConsulDiscoveryAndAgreement(t *testing.T) {
	consul := harness.StartConsulT(t)
	ns1 := startNamesrv(t, consul, "namesrv1")
	ns2 := startNamesrv(t, consul, "namesrv2")
	nsList := ns1.addr() + ";" + ns2.addr()
	masterDir := filepath.Join(t.TempDir(), "master")
	master := startBroker(t, consul, brokerOpts{name: "master", role: "SYNC_MASTER", namesrv: nsList, dir: masterDir})
	slave := startBroker(t, consul, brokerOpts{name: "slave", role: "SLAVE", id: 1, namesrv: nsList})
	c := newClient(t)

	// SYNC_MASTER answers SEND_OK only with the slave holding the message:
	// the slave found the master's HA address in Consul.
	harness.Eventually(t, 30*time.Second, func() error {
		resp, err := sendOne(c, master.addr(), "TopicDisc", "m0")
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("send: %d %s", resp.Code, resp.Remark)
		}
		return nil
	})
	var want string
	harness.Eventually(t, 20*time.Second, func() error {
		r1, b1, err := routeOf(c, ns1, "TopicDisc")
		if err != nil {
			return err
		}
		_, b2, err := routeOf(c, ns2, "TopicDisc")
		if err != nil {
			return err
		}
		if b1 != b2 {
			return fmt.Errorf("routes differ:\n%s\n%s", b1, b2)
		}
		if len(r1.BrokerDatas) != 1 || len(r1.BrokerDatas[0].BrokerAddrs) != 2 {
			return fmt.Errorf("route lacks master or slave: %s", b1)
		}
		want = b1
		return nil
	})

	// Restart one name server: same answer at once.
	require.NoError(t, ns2.Stop(10*time.Second))
	require.NoError(t, ns2.Restart())
	waitUp(t, ns2)
	// It answers from Consul as soon as it listens; the comparison allows a few
	// seconds because a health check on this loaded machine may flap meanwhile.
	restarted := time.Now()
	harness.Eventually(t, 10*time.Second, func() error {
		_, got, err := routeOf(c, ns2, "TopicDisc")
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("restarted name server answers %s, want %s", got, want)
		}
		return nil
	})
	t.Logf("restarted name server answered the same route %s after it listened", time.Since(restarted).Round(time.Millisecond))

	masterRouted := func(want bool) func() error {
		return func() error {
			for _, ns := range []*node{ns1, ns2} {
				rd, body, err := routeOf(c, ns, "TopicDisc")
				if err != nil {
					return err
				}
				if (rd.BrokerDatas[0].MasterAddr() != "") != want {
					return fmt.Errorf("master routed=%v by %s, want %v: %s", !want, ns.addr(), want, body)
				}
			}
			return nil
		}
	}
	// A hung master (SIGSTOP: its sockets stay open, TCP handshakes still
	// complete) fails its HTTP health check and leaves the routes; resumed,
	// it comes back.
	require.NoError(t, master.Pause())
	paused := time.Now()
	harness.Eventually(t, 30*time.Second, masterRouted(false))
	t.Logf("paused master left the routes of both name servers after %s", time.Since(paused).Round(time.Millisecond))
	require.NoError(t, master.Resume())
	harness.Eventually(t, 30*time.Second, masterRouted(true))

	// Kill the master: it leaves the routes of both name servers.
	master.Kill()
	killed := time.Now()
	harness.Eventually(t, 30*time.Second, masterRouted(false))
	t.Logf("killed master left the routes of both name servers after %s", time.Since(killed).Round(time.Millisecond))

	// The master returns on another port with its data: the slave follows.
	master2 := startBroker(t, consul, brokerOpts{name: "master2", role: "SYNC_MASTER", namesrv: nsList, dir: masterDir})
	harness.Eventually(t, 30*time.Second, func() error {
		resp, err := sendOne(c, master2.addr(), "TopicDisc", "m1")
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("send after move: %d %s", resp.Code, resp.Remark)
		}
		st, err := getStatus(slave)
		if err != nil {
			return err
		}
		if st.HASlave == nil || !st.HASlave.Connected {
			return fmt.Errorf("slave not connected: %+v", st.HASlave)
		}
		return nil
	})
}

// Consul stops while clients send: brokers keep serving, name servers keep
// answering the last known routes; Consul returns: everything converges
// without restarts.
func TestConsulOutageWhileServing(t *testing.T) {
	consul := harness.StartConsulT(t)
	ns := startNamesrv(t, consul, "namesrv")
	master := startBroker(t, consul, brokerOpts{name: "master", role: "ASYNC_MASTER", namesrv: ns.addr()})
	c := newClient(t)
	harness.Eventually(t, 20*time.Second, func() error {
		if resp, err := sendOne(c, master.addr(), "TopicOut", "x"); err != nil || resp.Code != remoting.Success {
			return fmt.Errorf("send: %v %v", resp, err)
		}
		_, _, err := routeOf(c, ns, "TopicOut")
		return err
	})
	consul.Kill()
	for i := 0; i < 20; i++ {
		resp, err := sendOne(c, master.addr(), "TopicOut", "during-outage")
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code)
		_, _, err = routeOf(c, ns, "TopicOut")
		require.NoError(t, err, "route served from the last known state")
	}
	require.True(t, ns.Running() && master.Running())
	require.NoError(t, consul.RestartAndWait())
	harness.Eventually(t, 60*time.Second, func() error {
		resp, err := http.Get("http://" + harness.Addr(ns.httpPort) + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("namesrv health %d", resp.StatusCode)
		}
		_, _, err = routeOf(c, ns, "TopicOut")
		return err
	})
}

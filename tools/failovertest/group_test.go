package failovertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/rmqha/rmqha/tools/secretfile"
	"github.com/sirupsen/logrus"
)

const (
	brokerName   = "broker-a"
	clusterName  = "DefaultCluster"
	readyTimeout = 60 * time.Second
	topic        = "FailoverTopic"
	queues       = 4
)

// node is one broker process of the failover group.
type node struct {
	id       int64
	proc     *harness.Process
	addr     string
	http     string
	consulPx *harness.Proxy
}

type group struct {
	t      testing.TB
	dir    string
	consul *harness.Consul
	ns     *harness.Process
	nsAddr string
	nodes  []*node
	admin  *remoting.Client
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	return l
}

func startGroup(t *testing.T, n int) *group {
	t.Helper()
	g := &group{t: t, dir: t.TempDir()}
	g.consul = harness.StartConsulT(t)
	cc := remoting.DefaultClientConfig()
	cc.Logger = quiet()
	cc.RequestTimeout = 3 * time.Second
	// One registration secret per run: it signs registrations and this client's admin writes.
	secret := harness.NewSecret()
	cc.Signer = acl.Signer(acl.BrokerAccessKey, secret)
	g.admin = remoting.NewClient(cc)
	t.Cleanup(func() { _ = g.admin.Close() })
	// One random HA secret per run, the same for every node (any of them may become master).
	haSecret, _, err := secretfile.EnsureInstall(filepath.Join(g.dir, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	ports := harness.MustFreePorts(t, 1+3*n)
	g.nsAddr = harness.Addr(ports[0])
	g.ns = g.start("namesrv", fmt.Sprintf("listenPort=%d\nbindAddress=127.0.0.1\nregistryBackend=memory\nregistrationSecret=%s\n", ports[0], secret), nil)
	harness.Eventually(t, readyTimeout, func() error { return harness.DialOK(g.nsAddr) })
	for i := 0; i < n; i++ {
		nd := &node{id: int64(i + 1), addr: harness.Addr(ports[1+3*i]), http: harness.Addr(ports[3+3*i])}
		nd.consulPx = harness.NewProxyT(t, g.consul.HTTPAddr())
		name := "node" + strconv.FormatInt(nd.id, 10)
		var b strings.Builder
		fmt.Fprintf(&b, "brokerClusterName=%s\nbrokerName=%s\nbrokerId=%d\nbrokerRole=SLAVE\n", clusterName, brokerName, nd.id)
		fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\n", ports[1+3*i], ports[2+3*i], ports[3+3*i])
		fmt.Fprintf(&b, "brokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\nnamesrvAddr=%s\nregistrationSecret=%s\n", g.nsAddr, secret)
		fmt.Fprintf(&b, "storePathRootDir=%s\n", filepath.Join(g.dir, name, "store"))
		b.WriteString("mappedFileSizeCommitLog=4194304\nmaxMessageSize=65536\nslaveTimeout=2000\n")
		b.WriteString("haSendHeartbeatInterval=500\nhaHousekeepingInterval=3000\n")
		fmt.Fprintf(&b, "haSecretFile=%s\n", haSecret)
		// No NATS or metasync here: slaves pull the master's tables themselves, often.
		b.WriteString("metasyncFallbackInterval=500\n")
		b.WriteString("enableFailover=true\nfailoverMasterRole=SYNC_MASTER\nslaveReadEnable=true\nautoCreateTopicEnable=true\n")
		// Short transaction check timing (TestTransactionsAcrossFailover; no other test sends halves).
		b.WriteString("transactionTimeOut=1000\ntransactionCheckInterval=300\ntransactionCheckMax=200\n")
		nd.proc = g.start(name, b.String(), []string{"CONSUL_HTTP_ADDR=" + nd.consulPx.Addr()})
		g.nodes = append(g.nodes, nd)
	}
	return g
}

func (g *group) start(name, conf string, env []string) *harness.Process {
	dir := filepath.Join(g.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		g.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		g.t.Fatal(err)
	}
	return harness.StartProcessT(g.t, harness.ProcessConfig{Name: name, Bin: harness.Binary(g.t, name2bin(name)), Args: []string{"-c", path}, Dir: dir, Env: env})
}

func name2bin(name string) string {
	if strings.HasPrefix(name, "node") {
		return "slave"
	}
	return name
}

// status is the part of /status the tests read.
type status struct {
	Role         string `json:"role"`
	BrokerID     int64  `json:"brokerId"`
	MaxOffset    int64  `json:"maxOffset"`
	Dispatched   int64  `json:"dispatchedOffset"`
	WritesFenced bool   `json:"writesFenced"`
	HASlave      *struct {
		Truncations    uint64 `json:"Truncations"`
		TruncatedBytes int64  `json:"TruncatedBytes"`
	} `json:"haSlave"`
	Failover *struct {
		Holder int64   `json:"lockHolder"`
		Epoch  int64   `json:"epoch"`
		InSync []int64 `json:"inSync"`
	} `json:"failover"`
}

// serving reports whether the node serves writes as a master: not a slave, writes not fenced.
func (s status) serving() bool { return s.Role != "SLAVE" && !s.WritesFenced }

func (n *node) status() (status, error) {
	var st status
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + n.http + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// master waits until exactly one running node is master with every node in its in-sync set
// (want nodes) and returns it.
func (g *group) waitMaster(want int) *node {
	g.t.Helper()
	var m *node
	harness.Eventually(g.t, readyTimeout, func() error {
		m = nil
		for _, n := range g.nodes {
			if !n.proc.Running() {
				continue
			}
			st, err := n.status()
			if err != nil {
				return err
			}
			if st.serving() {
				if m != nil {
					return fmt.Errorf("two masters: node %d and %d", m.id, n.id)
				}
				if st.Failover == nil || len(st.Failover.InSync) < want {
					return fmt.Errorf("node %d master, in sync %+v", n.id, st.Failover)
				}
				m = n
			}
		}
		if m == nil {
			return fmt.Errorf("no master yet")
		}
		return nil
	})
	return m
}

// routeMaster asks the name server for the topic's brokerId 0 address.
func (g *group) routeMaster(ctx context.Context) (string, error) {
	a, err := g.routeMasterOf(ctx, topic)
	if err != nil {
		// As the client does: a topic the new master does not know yet goes by TBW102's route.
		return g.routeMasterOf(ctx, "TBW102")
	}
	return a, nil
}

func (g *group) routeMasterOf(ctx context.Context, topic string) (string, error) {
	resp, err := g.admin.Invoke(ctx, g.nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return "", err
	}
	if resp.Code != remoting.Success {
		return "", fmt.Errorf("route: %d %s", resp.Code, resp.Remark)
	}
	var r struct {
		BrokerDatas []struct {
			BrokerName  string            `json:"brokerName"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	body, err := route.Lenient(resp.Body)
	if err == nil {
		err = json.Unmarshal(body, &r)
	}
	if err != nil {
		return "", err
	}
	for _, bd := range r.BrokerDatas {
		if bd.BrokerName == brokerName && bd.BrokerAddrs["0"] != "" {
			return bd.BrokerAddrs["0"], nil
		}
	}
	return "", fmt.Errorf("no master in the route")
}

func (g *group) createTopic(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ext := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues),
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}
	resp, err := g.admin.Invoke(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("create topic: %d %s", resp.Code, resp.Remark)
	}
	// The broker registers the new topic with the name server in the background; clients
	// started before the route exists fail ("route info not found").
	return harness.WaitFor(10*time.Second, func() error {
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		_, err := g.routeMasterOf(rctx, topic)
		return err
	})
}

// okSend is one SEND_OK: where, when and at which queue offset.
type okSend struct {
	addr  string
	at    time.Time
	queue int
	off   int64
	ok    bool // SEND_OK (the others: stored on the master only, SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT)
}

// producer is a retrying producer speaking the remoting protocol directly: it asks the name
// server for the master after every failure (rocketmq-client-go refreshes routes every 30 s,
// which would measure the client, not the failover). Only SEND_OK answers count as stored;
// every other outcome is recorded as unknown.
type producer struct {
	g    *group
	hist *e2e.History
	mu   sync.Mutex
	oks  []okSend // SEND_OK answers
	any  []okSend // every stored answer
	seq  int
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func (g *group) startProducer() *producer {
	p := &producer{g: g, hist: &e2e.History{}, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// close stops the producer and waits for it; closing again does nothing.
func (p *producer) close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// waitSends waits until the producer got n more SEND_OK answers than it has now.
func (p *producer) waitSends(t testing.TB, n int) {
	t.Helper()
	before := len(p.sends())
	harness.Eventually(t, readyTimeout, func() error {
		if len(p.sends()) < before+n {
			return errNotYet
		}
		return nil
	})
}

// firstAfter waits for the first answer in list() after at from a node other than the one at
// addr and returns it (list is p.sends for SEND_OK, p.stored for any stored answer).
func firstAfter(t testing.TB, list func() []okSend, at time.Time, addr string) okSend {
	t.Helper()
	var first okSend
	harness.Eventually(t, readyTimeout, func() error {
		for _, s := range list() {
			if s.at.After(at) && s.addr != addr {
				first = s
				return nil
			}
		}
		return errNotYet
	})
	return first
}

func (p *producer) sends() []okSend {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]okSend(nil), p.oks...)
}

func (p *producer) stored() []okSend {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]okSend(nil), p.any...)
}

func (p *producer) run() {
	defer close(p.done)
	addr := ""
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if addr == "" {
			a, err := p.g.routeMaster(ctx)
			if err != nil {
				cancel()
				time.Sleep(20 * time.Millisecond)
				continue
			}
			addr = a
		}
		p.seq++
		q := p.seq % queues
		uniq := fmt.Sprintf("FO%08d", p.seq)
		body := []byte("failover message " + uniq)
		msg := primitive.NewMessage(topic, body)
		msg.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, uniq)
		props := msg.MarshallProperties()
		ext := map[string]string{
			"producerGroup": "failover-producer", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": strconv.Itoa(q), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
			"flag": "0", "properties": props, "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
		}
		resp, err := p.g.admin.Invoke(ctx, addr, remoting.NewRequest(remoting.SendMessage, ext, body))
		cancel()
		if err == nil && (resp.Code == remoting.SlaveNotAvailable || resp.Code == remoting.FlushSlaveTimeout) {
			// Stored on the master only: not acknowledged in SYNC_MASTER terms.
			p.hist.AddUnanswered(msg)
			off, _ := resp.ExtInt64("queueOffset")
			p.mu.Lock()
			p.any = append(p.any, okSend{addr: addr, at: time.Now(), queue: q, off: off})
			p.mu.Unlock()
			continue
		}
		if err != nil || resp.Code != remoting.Success {
			p.hist.AddUnanswered(msg)
			addr = ""
			time.Sleep(20 * time.Millisecond)
			continue
		}
		off, _ := resp.ExtInt64("queueOffset")
		res := &primitive.SendResult{Status: primitive.SendOK, OffsetMsgID: resp.Ext("msgId"), QueueOffset: off,
			MessageQueue: &primitive.MessageQueue{Topic: topic, BrokerName: brokerName, QueueId: q}}
		p.hist.Add(msg, res, nil)
		p.mu.Lock()
		p.oks = append(p.oks, okSend{addr: addr, at: time.Now(), queue: q, off: off, ok: true})
		p.any = append(p.any, okSend{addr: addr, at: time.Now(), queue: q, off: off, ok: true})
		p.mu.Unlock()
	}
}

// caughtUp reports whether st holds everything up to max and has indexed it
// in its consume queues (dispatch runs behind the CommitLog; the history
// check reads the queues).
func caughtUp(st status, max int64) bool { return st.MaxOffset >= max && st.Dispatched >= max }

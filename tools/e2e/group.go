package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/rmqha/rmqha/tools/secretfile"
	"github.com/sirupsen/logrus"
)

// BrokerName and ClusterName identify the one broker group a fixture runs.
const (
	BrokerName  = "broker-a"
	ClusterName = "DefaultCluster"
)

// GroupConfig describes a broker group started as processes: one name server, one master and
// (unless NoSlave) one slave, on free loopback ports with their own data folders.
type GroupConfig struct {
	// Dir holds every process's data, configuration and log. Default: a test temp dir.
	Dir string
	// MasterRole is SYNC_MASTER or ASYNC_MASTER. Default SYNC_MASTER.
	MasterRole string
	// NoSlave starts no slave (a SYNC_MASTER then answers SLAVE_NOT_AVAILABLE). Default false.
	NoSlave bool
	// ProxyHA puts a harness.Proxy between the slave and the master's HA port, so a test can
	// slow or cut the replication link (Group.HAProxy). Default false.
	ProxyHA bool
	// MappedFileSizeCommitLog is the CommitLog segment size in bytes; small so tests roll
	// segments. Default 4 MiB.
	MappedFileSizeCommitLog int64
	// MaxMessageSize is the largest body the brokers take, in bytes. Default 1 MiB.
	MaxMessageSize int
	// SlaveTimeout is the SYNC_MASTER replication wait. Default 2s (below the client's 3s).
	SlaveTimeout time.Duration
	// ExtraMaster and ExtraSlave are additional "key=value" broker properties.
	ExtraMaster, ExtraSlave []string
	// ExtraNamesrv are additional "key=value" name server properties.
	ExtraNamesrv []string
	// AdminTLS, when set, makes Group.Admin (and the readiness checks) dial with TLS, for
	// groups whose name server and brokers run tls.server.mode=enforcing.
	AdminTLS *tls.Config
	// AdminSigner, when set, signs every request of Group.Admin (an ACL-enabled group's admin
	// account, e.g. acl.Signer(ak, sk)). Default nil: signed with the registration secret under
	// acl.BrokerAccessKey, as mqadmin -registrationSecretFile signs (the brokers' and name
	// server's admin writes need it with ACL off).
	AdminSigner func(*remoting.Command)
	// ReadyTimeout bounds each readiness wait. Default 60s (2 cores shared with builds).
	ReadyTimeout time.Duration
	// Stdout, when set, also receives every process's output.
	Stdout io.Writer
	// RegistrationSecret is the name server's and the brokers' registrationSecret.
	// Default: a random one per group (harness.NewSecret).
	RegistrationSecret string
	// SlaveFollowsNameServer starts the slave without haMasterAddress: it learns its
	// master's HA address from the name server's REGISTER_BROKER answers. Default false.
	SlaveFollowsNameServer bool
	// NamesrvFor, when set, is given each broker's id (0 master, 1 slave) and the name
	// server's address before the broker starts, and returns the address that broker
	// registers with (a test's tap in between).
	NamesrvFor func(brokerID int, namesrvAddr string) string
	// HAFront, when set, is called with the master's HA address once the master runs and
	// returns the address the slave dials instead (an attack test's man in the middle).
	// Default nil: the slave dials the master (or the HAProxy).
	HAFront func(masterHA string) string
	// BinDir, when set, is the folder the namesrv, master and slave binaries are taken from
	// (a benchmark comparing two builds in one run). Default "": BinDir().
	BinDir string
}

// DefaultGroupConfig returns the defaults described on GroupConfig.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{
		MasterRole:              "SYNC_MASTER",
		MappedFileSizeCommitLog: 4 << 20,
		MaxMessageSize:          1 << 20,
		SlaveTimeout:            2 * time.Second,
		ReadyTimeout:            60 * time.Second,
	}
}

// Validate names the first invalid field.
func (c GroupConfig) Validate() error {
	switch {
	case c.MasterRole != "SYNC_MASTER" && c.MasterRole != "ASYNC_MASTER":
		return fmt.Errorf("%w: MasterRole %q", ErrInvalidConfig, c.MasterRole)
	case c.MappedFileSizeCommitLog < 64<<10:
		return fmt.Errorf("%w: MappedFileSizeCommitLog %d < 64 KiB", ErrInvalidConfig, c.MappedFileSizeCommitLog)
	case c.MaxMessageSize <= 0 || int64(c.MaxMessageSize) > c.MappedFileSizeCommitLog/2:
		return fmt.Errorf("%w: MaxMessageSize %d not in (0, MappedFileSizeCommitLog/2]", ErrInvalidConfig, c.MaxMessageSize)
	case c.SlaveTimeout <= 0:
		return fmt.Errorf("%w: SlaveTimeout %v <= 0", ErrInvalidConfig, c.SlaveTimeout)
	case c.ReadyTimeout <= 0:
		return fmt.Errorf("%w: ReadyTimeout %v <= 0", ErrInvalidConfig, c.ReadyTimeout)
	case c.ProxyHA && c.NoSlave:
		return fmt.Errorf("%w: ProxyHA without a slave", ErrInvalidConfig)
	case c.ProxyHA && c.SlaveFollowsNameServer:
		return fmt.Errorf("%w: ProxyHA needs the slave's haMasterAddress (SlaveFollowsNameServer)", ErrInvalidConfig)
	case c.HAFront != nil && (c.NoSlave || c.ProxyHA):
		return fmt.Errorf("%w: HAFront needs a slave and no ProxyHA", ErrInvalidConfig)
	}
	return nil
}

// Group is a running broker group.
type Group struct {
	cfg GroupConfig

	Namesrv, Master, Slave *harness.Process
	// HAProxy sits between the slave and the master's HA port when ProxyHA is set.
	HAProxy *harness.Proxy

	NamesrvAddr string // remoting address of the name server
	MasterAddr  string // remoting address of the master (brokerId 0)
	MasterHA    string // the master's HA listen address
	SlaveAddr   string // remoting address of the slave (brokerId 1); "" without a slave
	MasterHTTP  string // the master's /status endpoint host:port
	SlaveHTTP   string // the slave's /status endpoint host:port
	// HASecretFile holds the group's HA secret (random, written for this run); every broker
	// reads it with haSecretFile.
	HASecretFile string
	// RegistrationSecretFile holds the group's registration secret (mode 0600), for mqadmin
	// -registrationSecretFile.
	RegistrationSecretFile string

	// Admin is a raw remoting client for checks (routes, offsets, stored records).
	Admin *remoting.Client
}

// StartGroup starts the group for a test and waits until it is ready: the name server serves
// TBW102's route with the master (and slave) addresses and, with a slave, the master reports it
// streaming and in sync. Every process is killed when the test ends.
func StartGroup(t testing.TB, cfg GroupConfig) *Group {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.RegistrationSecret == "" {
		cfg.RegistrationSecret = harness.NewSecret()
	}
	ports := harness.MustFreePorts(t, 7)
	g := &Group{
		cfg:         cfg,
		NamesrvAddr: harness.Addr(ports[0]),
		MasterAddr:  harness.Addr(ports[1]),
		MasterHA:    harness.Addr(ports[2]),
		MasterHTTP:  harness.Addr(ports[3]),
	}
	if !cfg.NoSlave {
		g.SlaveAddr = harness.Addr(ports[4])
		g.SlaveHTTP = harness.Addr(ports[6])
	}
	var err error
	if g.HASecretFile, _, err = secretfile.EnsureInstall(filepath.Join(cfg.Dir, "secrets")); err != nil {
		t.Fatal(err)
	}
	ccfg := remoting.DefaultClientConfig()
	ccfg.Logger = quietLogger()
	ccfg.TLS = cfg.AdminTLS
	ccfg.Signer = cfg.AdminSigner
	if ccfg.Signer == nil {
		ccfg.Signer = acl.Signer(acl.BrokerAccessKey, cfg.RegistrationSecret)
	}
	g.RegistrationSecretFile = filepath.Join(cfg.Dir, "secrets", "registration.secret.test")
	if err := os.WriteFile(g.RegistrationSecretFile, []byte(cfg.RegistrationSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.Admin = remoting.NewClient(ccfg)
	t.Cleanup(func() { _ = g.Admin.Close() })

	start := func(name, conf string) *harness.Process {
		dir := filepath.Join(cfg.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := binaryPath(t, name)
		if cfg.BinDir != "" {
			bin = filepath.Join(cfg.BinDir, name)
		}
		pc := harness.ProcessConfig{Name: name, Bin: bin, Args: []string{"-c", path}, Dir: dir}
		if cfg.Stdout != nil {
			pc.Stdout = cfg.Stdout
		}
		return harness.StartProcessT(t, pc)
	}

	g.Namesrv = start("namesrv", fmt.Sprintf("listenPort=%d\nbindAddress=127.0.0.1\nregistryBackend=memory\nregistrationSecret=%s\nkvConfigPath=%s\n",
		ports[0], cfg.RegistrationSecret, filepath.Join(cfg.Dir, "namesrv", "kvConfig.json"))+
		strings.Join(append(cfg.ExtraNamesrv, ""), "\n"))
	g.waitProc(t, g.Namesrv, func() error { return harness.DialOK(g.NamesrvAddr) })

	namesrvFor := func(id int) string {
		if cfg.NamesrvFor != nil {
			return cfg.NamesrvFor(id, g.NamesrvAddr)
		}
		return g.NamesrvAddr
	}
	g.Master = start("master", g.brokerConf(0, cfg.MasterRole, ports[1], ports[2], ports[3], "", namesrvFor(0), cfg.ExtraMaster))
	g.waitProc(t, g.Master, func() error { return g.routeHas("TBW102", 0, g.MasterAddr) })

	if !cfg.NoSlave {
		haTarget := g.MasterHA
		if cfg.ProxyHA {
			g.HAProxy = harness.NewProxyT(t, g.MasterHA)
			haTarget = g.HAProxy.Addr()
		}
		if cfg.HAFront != nil {
			haTarget = cfg.HAFront(g.MasterHA)
		}
		if cfg.SlaveFollowsNameServer {
			haTarget = ""
		}
		g.Slave = start("slave", g.brokerConf(1, "SLAVE", ports[4], ports[5], ports[6], haTarget, namesrvFor(1), cfg.ExtraSlave))
		g.waitProc(t, g.Slave, func() error { return g.routeHas("TBW102", 1, g.SlaveAddr) })
		g.WaitSlaveInSync(t)
	}
	return g
}

func (g *Group) brokerConf(id int, role string, port, haPort, httpPort int, haMaster, namesrv string, extra []string) string {
	c := g.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "brokerClusterName=%s\nbrokerName=%s\nbrokerId=%d\nbrokerRole=%s\n", ClusterName, BrokerName, id, role)
	fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\n", port, haPort, httpPort)
	fmt.Fprintf(&b, "brokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\nnamesrvAddr=%s\nregistrationSecret=%s\n", namesrv, c.RegistrationSecret)
	fmt.Fprintf(&b, "storePathRootDir=%s\n", filepath.Join(c.Dir, map[int]string{0: "master", 1: "slave"}[id], "store"))
	fmt.Fprintf(&b, "mappedFileSizeCommitLog=%d\nmaxMessageSize=%d\nslaveTimeout=%d\n", c.MappedFileSizeCommitLog, c.MaxMessageSize, c.SlaveTimeout.Milliseconds())
	b.WriteString("slaveReadEnable=true\nflushDiskType=ASYNC_FLUSH\n")
	fmt.Fprintf(&b, "haSecretFile=%s\n", g.HASecretFile)
	if haMaster != "" {
		fmt.Fprintf(&b, "haMasterAddress=%s\n", haMaster)
	}
	for _, kv := range extra {
		b.WriteString(kv + "\n")
	}
	return b.String()
}

// waitProc polls cond until it holds, failing early when p exits.
func (g *Group) waitProc(t testing.TB, p *harness.Process, cond func() error) {
	t.Helper()
	harness.Eventually(t, g.cfg.ReadyTimeout, func() error {
		if !p.Running() {
			return fmt.Errorf("%w: %s exited: %v\n%s", ErrNotReady, p.Name(), p.ExitErr(), p.LogTail(4096))
		}
		return cond()
	})
}

// WaitMasterReady waits until a (re)started master serves and is in the route again.
func (g *Group) WaitMasterReady(t testing.TB) {
	t.Helper()
	g.waitProc(t, g.Master, func() error {
		if err := harness.DialOK(g.MasterAddr); err != nil {
			return err
		}
		return g.routeHas("TBW102", 0, g.MasterAddr)
	})
}

// WaitSlaveInSync waits until the master reports a streaming, in-sync slave whose
// acknowledged offset reached the master's max offset.
func (g *Group) WaitSlaveInSync(t testing.TB) {
	t.Helper()
	g.waitProc(t, g.Slave, func() error {
		st, err := g.MasterStatus()
		if err != nil {
			return err
		}
		if st.HAMaster == nil {
			return fmt.Errorf("%w: master reports no HA state", ErrNotReady)
		}
		for _, s := range st.HAMaster.Slaves {
			if s.Streaming && s.InSync && s.AckOffset >= st.MaxOffset {
				return nil
			}
		}
		return fmt.Errorf("%w: no in-sync slave at %d: %+v", ErrNotReady, st.MaxOffset, st.HAMaster.Slaves)
	})
}

// WaitSlaveCaughtUp waits until the slave holds everything the master has (by max offset).
func (g *Group) WaitSlaveCaughtUp(t testing.TB) {
	t.Helper()
	harness.Eventually(t, g.cfg.ReadyTimeout, func() error {
		m, err := g.MasterStatus()
		if err != nil {
			return err
		}
		s, err := g.SlaveStatus()
		if err != nil {
			return err
		}
		if s.MaxOffset < m.MaxOffset {
			return fmt.Errorf("%w: slave at %d, master at %d", ErrNotReady, s.MaxOffset, m.MaxOffset)
		}
		return nil
	})
}

// BrokerStatus is the part of a broker's /status document the tests read.
type BrokerStatus struct {
	Role             string `json:"role"`
	MaxOffset        int64  `json:"maxOffset"`
	MinOffset        int64  `json:"minOffset"`
	DispatchedOffset int64  `json:"dispatchedOffset"`
	PullRequests     uint64 `json:"pullRequests"`
	SendRequests     uint64 `json:"sendRequests"`
	HAMaster         *struct {
		InSyncCount int
		Slaves      []struct {
			Addr      string
			Streaming bool
			InSync    bool
			AckOffset int64
		}
	} `json:"haMaster"`
	HASlave *struct {
		Connected      bool
		State          string
		LocalMaxOffset int64
		LastError      string
	} `json:"haSlave"`
	StoreCheck *struct {
		Index *struct {
			Pending  int    `json:"pending"`
			Verified int    `json:"verified"`
			Rebuilt  int    `json:"rebuilt"`
			Failed   int    `json:"failed"`
			Last     string `json:"last"`
		} `json:"index"`
	} `json:"storeCheck"`
}

// MasterStatus reads the master's /status.
func (g *Group) MasterStatus() (BrokerStatus, error) { return fetchStatus(g.MasterHTTP) }

// SlaveStatus reads the slave's /status.
func (g *Group) SlaveStatus() (BrokerStatus, error) { return fetchStatus(g.SlaveHTTP) }

var httpClient = &http.Client{Timeout: 3 * time.Second}

func fetchStatus(hostport string) (BrokerStatus, error) {
	var st BrokerStatus
	resp, err := httpClient.Get("http://" + hostport + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%w: /status answered %s", ErrNotReady, resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// Route is the part of a TopicRouteData the tests read.
type Route struct {
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
	BrokerDatas []struct {
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// Addrs returns brokerId → address for the fixture's broker group.
func (r *Route) Addrs() map[int]string {
	out := map[int]string{}
	for _, bd := range r.BrokerDatas {
		if bd.BrokerName != BrokerName {
			continue
		}
		for k, v := range bd.BrokerAddrs {
			var id int
			if _, err := fmt.Sscan(k, &id); err == nil {
				out[id] = v
			}
		}
	}
	return out
}

// WriteQueues is the write queue count of the fixture's broker group in this route.
func (r *Route) WriteQueues() int {
	for _, q := range r.QueueDatas {
		if q.BrokerName == BrokerName {
			return q.WriteQueueNums
		}
	}
	return 0
}

// Route asks the name server for topic's route.
func (g *Group) Route(topic string) (*Route, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := g.Admin.Invoke(ctx, g.NamesrvAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("%w: route of %s: code %d %s", ErrNotReady, topic, resp.Code, resp.Remark)
	}
	var r Route
	body, err := route.Lenient(resp.Body)
	if err == nil {
		err = json.Unmarshal(body, &r)
	}
	if err != nil {
		return nil, fmt.Errorf("route of %s: %w: %s", topic, err, resp.Body)
	}
	return &r, nil
}

// WaitRoute waits until the name server routes topic to the master with write queues.
func (g *Group) WaitRoute(t testing.TB, topic string) *Route {
	t.Helper()
	var r *Route
	harness.Eventually(t, g.cfg.ReadyTimeout, func() error {
		var err error
		r, err = g.Route(topic)
		if err != nil {
			return err
		}
		if r.Addrs()[0] != g.MasterAddr || r.WriteQueues() == 0 {
			return fmt.Errorf("%w: route of %s: %+v", ErrNotReady, topic, r)
		}
		return nil
	})
	return r
}

func (g *Group) routeHas(topic string, id int, addr string) error {
	r, err := g.Route(topic)
	if err != nil {
		return err
	}
	if got := r.Addrs()[id]; got != addr {
		return fmt.Errorf("%w: route of %s has brokerId %d at %q, want %q", ErrNotReady, topic, id, got, addr)
	}
	return nil
}

// CreateTopic creates topic on the master with n read/write queues and waits for its route.
func (g *Group) CreateTopic(t testing.TB, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ext := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": fmt.Sprint(n), "writeQueueNums": fmt.Sprint(n),
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}
	resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil))
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("create topic %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	g.WaitRoute(t, topic)
}

// ConsumerOffset asks addr for the committed offset of group on topic/queueId; -1 when the
// broker has none (QUERY_NOT_FOUND).
func (g *Group) ConsumerOffset(addr, group, topic string, queueID int) (int64, error) {
	return QueryConsumerOffset(g.Admin, addr, BrokerName, group, topic, queueID)
}

// QueryConsumerOffset asks the broker at addr (of broker group brokerName) for the committed
// offset of group on topic/queueId with QUERY_CONSUMER_OFFSET; -1 when it has none
// (QUERY_NOT_FOUND).
func QueryConsumerOffset(cli *remoting.Client, addr, brokerName, group, topic string, queueID int) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": fmt.Sprint(queueID), "bname": brokerName}
	resp, err := cli.Invoke(ctx, addr, remoting.NewRequest(remoting.QueryConsumerOffset, ext, nil))
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case remoting.Success:
		return resp.ExtInt64("offset")
	case remoting.QueryNotFound:
		return -1, nil
	}
	return 0, fmt.Errorf("query offset: code %d %s", resp.Code, resp.Remark)
}

// MaxOffset asks addr for the max logical offset of topic/queueId.
func (g *Group) MaxOffset(addr, topic string, queueID int) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ext := map[string]string{"topic": topic, "queueId": fmt.Sprint(queueID), "bname": BrokerName}
	resp, err := g.Admin.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset, ext, nil))
	if err != nil {
		return 0, err
	}
	if resp.Code != remoting.Success {
		return 0, fmt.Errorf("max offset: code %d %s", resp.Code, resp.Remark)
	}
	return resp.ExtInt64("offset")
}

// Logs returns the tails of every process log, for failure messages.
func (g *Group) Logs(n int64) string {
	var parts []string
	for _, p := range []*harness.Process{g.Namesrv, g.Master, g.Slave} {
		if p != nil {
			parts = append(parts, "--- "+p.Name()+" ---\n"+p.LogTail(n))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	l.SetOutput(os.Stderr)
	return l
}

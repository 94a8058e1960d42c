package acltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

const (
	topic       = "AclTopic"
	deniedTopic = "AclDenied"
	adminAK     = "groupadmin"
	appAK       = "appuser1"
	appSK       = "app-secret-1"
	subAK       = "subonly1"
	subSK       = "sub-secret-1"
	pubAK       = "pubonly1"
	pubSK       = "pub-secret-1"
)

// randomKey is a fresh 32-character secret (never a constant in the repository).
func randomKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// aclFile is the group's plain_acl.yml: the group's own admin account, an application account
// (PUB|SUB on AclTopic, AclDenied denied), a SUB-only and a PUB-only account. appPerm is the
// application's permission on AclTopic (changed by the reload test).
func aclFile(adminSK, appPerm string) string {
	return fmt.Sprintf(`# rmqha process test
accounts:
  - accessKey: %s
    secretKey: %s
    admin: true
  - accessKey: %s
    secretKey: %s
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - %s=%s
      - %s=DENY
  - accessKey: %s
    secretKey: %s
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: %s
    secretKey: %s
    defaultTopicPerm: PUB
    defaultGroupPerm: DENY
`, adminAK, adminSK, appAK, appSK, topic, appPerm, deniedTopic, subAK, subSK, pubAK, pubSK)
}

// writeAtomic replaces path with data by renaming a complete copy into place.
func writeAtomic(t testing.TB, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".tmp", []byte(data), 0o600))
	require.NoError(t, os.Rename(path+".tmp", path))
}

// aclGroup is a name server, SYNC_MASTER and slave with aclEnable=true on all three, sharing one
// plain_acl.yml; the brokers sign with the admin account. The slave pulls the master's metadata
// every second (metasyncFallbackInterval).
type aclGroup struct {
	*e2e.Group
	dir, aclPath, adminSK string
	nsHTTP                string // the name server's /metrics host:port
}

func startACLGroup(t *testing.T, aclOn bool, cfg e2e.GroupConfig) *aclGroup {
	t.Helper()
	dir := t.TempDir()
	a := &aclGroup{dir: dir, aclPath: filepath.Join(dir, "plain_acl.yml"), adminSK: randomKey(t)}
	writeAtomic(t, a.aclPath, aclFile(a.adminSK, "PUB|SUB"))
	cfg.Dir = filepath.Join(dir, "group")
	nsPort := harness.MustFreePorts(t, 1)[0]
	a.nsHTTP = harness.Addr(nsPort)
	cfg.ExtraNamesrv = append(cfg.ExtraNamesrv, fmt.Sprintf("httpPort=%d", nsPort))
	// The HA secret comes from the e2e fixture (haSecretFile).
	common := []string{"accessKey=" + adminAK, "secretKey=" + a.adminSK}
	if aclOn {
		common = append(common, "aclEnable=true", "aclPlainFile="+a.aclPath)
		cfg.ExtraNamesrv = append(cfg.ExtraNamesrv, "aclEnable=true", "aclPlainFile="+a.aclPath)
		cfg.AdminSigner = acl.Signer(adminAK, a.adminSK)
	}
	cfg.ExtraMaster = append(cfg.ExtraMaster, common...)
	cfg.ExtraSlave = append(cfg.ExtraSlave, append(common, "metasyncFallbackInterval=1000")...)
	a.Group = e2e.StartGroup(t, cfg)
	return a
}

var instanceSeq atomic.Int64

func newProducer(t *testing.T, ns, ak, sk string) rocketmq.Producer {
	t.Helper()
	opts := []producer.Option{
		producer.WithNameServer([]string{ns}),
		producer.WithGroupName("pg-acl"),
		producer.WithInstanceName(fmt.Sprintf("acl-p-%d", instanceSeq.Add(1))),
		producer.WithRetry(1),
		producer.WithSendMsgTimeout(5 * time.Second),
	}
	if ak != "" {
		opts = append(opts, producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}))
	}
	p, err := rocketmq.NewProducer(opts...)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// collector keeps what a push consumer delivered.
type collector struct {
	mu  sync.Mutex
	got map[string]int
}

func (c *collector) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.got[string(m.Body)]++
	}
	return consumer.ConsumeSuccess, nil
}

func (c *collector) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.got))
	for k, v := range c.got {
		out[k] = v
	}
	return out
}

func startConsumer(t *testing.T, ns, group, ak, sk string) (*collector, rocketmq.PushConsumer) {
	t.Helper()
	col := &collector{got: map[string]int{}}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNameServer([]string{ns}),
		consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("acl-c-%d", instanceSeq.Add(1))),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}),
	)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, col.handle))
	require.NoError(t, c.Start())
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { _ = c.Shutdown() }) })
	return col, c
}

func sendOne(p rocketmq.Producer, tp, body string) (*primitive.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return p.SendSync(ctx, primitive.NewMessage(tp, []byte(body)))
}

// topicEntries is the number of entries the broker at addr holds for tp (all queues).
func (a *aclGroup) topicEntries(t *testing.T, addr, tp string) int64 {
	t.Helper()
	var total int64
	for q := 0; q < e2e.MaxProbeQueues; q++ {
		n, err := a.MaxOffset(addr, tp, q)
		if err == nil {
			total += n
		}
	}
	return total
}

func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metrics reads the /metrics page at hostport, by series; a series it lacks reads as 0.
func (a *aclGroup) metrics(t *testing.T, hostport string) map[string]float64 {
	t.Helper()
	m, err := harness.Metrics(hostport)
	require.NoError(t, err)
	return m
}

// toolBin returns a built tool binary (mqadmin, bench, metasync) of this checkout:
// $RMQHA_BIN_DIR/<name> when present, else a go build into a temp folder once per process.
func toolBin(t testing.TB, name string) string {
	t.Helper()
	if d := os.Getenv("RMQHA_BIN_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name)
		}
	}
	toolMu.Lock()
	defer toolMu.Unlock()
	if p, ok := toolPaths[name]; ok {
		return p
	}
	root, err := harness.RepoRoot()
	require.NoError(t, err)
	pkg := map[string]string{"mqadmin": "./tools/cmd/mqadmin", "bench": "./tools/cmd/bench", "metasync": "./services/metasync"}[name]
	require.NotEmpty(t, pkg, name)
	dir, err := os.MkdirTemp("", "rmqha-acltest-")
	require.NoError(t, err)
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	toolPaths[name] = out
	return out
}

var (
	toolMu    sync.Mutex
	toolPaths = map[string]string{}
)

// runTool runs a tool binary to completion (bounded) and returns its exit code and output.
func runTool(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return 0, string(out)
}

// mkdirWrite writes data to path, creating its folder.
func mkdirWrite(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o600)
}

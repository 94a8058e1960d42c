package attacktest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
)

// Config describes a fixture.
type Config struct {
	// ExtraMaster and ExtraSlave are additional "key=value" broker properties.
	ExtraMaster, ExtraSlave []string
	// RSSBudget is the most resident memory, in bytes, each broker process may use when the
	// invariants are checked. Default 128 MiB.
	RSSBudget int64
	// SlaveTLS, when set, is the client TLS configuration the invariants read the slave with
	// (a slave whose remoting port runs tls.server.mode=enforcing). Default nil: plain.
	SlaveTLS *tls.Config
}

// Fixture is a running broker group under attack, with the history of the normal sends made
// next to the attack.
type Fixture struct {
	*e2e.Group
	Dir  string
	Hist *e2e.History
	cfg  Config
	prod rocketmq.Producer
	seq  atomic.Int64
}

var instanceSeq atomic.Int64

// Instance returns a client instance name unique in this test process (distinct client ids
// and connections at the brokers).
func Instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

// Start starts a name server, a SYNC_MASTER master and a slave for t, configured from
// properties files, with an HA secret generated for this run.
func Start(t *testing.T, cfg Config) *Fixture {
	t.Helper()
	if cfg.RSSBudget == 0 {
		cfg.RSSBudget = 128 << 20
	}
	// The HA and registration secrets are the e2e fixture's (random per run).
	gc := e2e.DefaultGroupConfig()
	gc.Dir = t.TempDir()
	gc.ExtraMaster = append([]string(nil), cfg.ExtraMaster...)
	gc.ExtraSlave = append([]string(nil), cfg.ExtraSlave...)
	f := &Fixture{Group: e2e.StartGroup(t, gc), Dir: gc.Dir, Hist: &e2e.History{}, cfg: cfg}
	return f
}

// MasterStore is the master's storePathRootDir.
func (f *Fixture) MasterStore() string { return filepath.Join(f.Dir, "master", "store") }

// SlaveStore is the slave's storePathRootDir.
func (f *Fixture) SlaveStore() string { return filepath.Join(f.Dir, "slave", "store") }

// Producer returns the fixture's normal producer (started on first use).
func (f *Fixture) Producer(t *testing.T) rocketmq.Producer {
	t.Helper()
	if f.prod != nil {
		return f.prod
	}
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{f.NamesrvAddr}),
		producer.WithGroupName("attack-bystander"),
		producer.WithInstanceName(Instance("attack-bystander")),
		producer.WithRetry(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	f.prod = p
	return p
}

// Send sends body to topic with the normal producer and records it in the history; an
// answer other than SEND_OK is an error. Safe from any goroutine.
func (f *Fixture) Send(t *testing.T, topic string, body []byte) (*primitive.SendResult, error) {
	m := primitive.NewMessage(topic, body)
	m.WithKeys([]string{"k" + strconv.FormatInt(f.seq.Add(1), 10)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := f.Producer(t).SendSync(ctx, m)
	f.Hist.Add(m, res, err)
	if err != nil {
		return res, fmt.Errorf("send to %s: %w", topic, err)
	}
	if res.Status != primitive.SendOK {
		return res, fmt.Errorf("send to %s: %s", topic, e2e.StatusName(res.Status))
	}
	return res, nil
}

// SendOK is Send that fails the test (test goroutine only).
func (f *Fixture) SendOK(t *testing.T, topic string, body []byte) *primitive.SendResult {
	t.Helper()
	res, err := f.Send(t, topic, body)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Invoke sends one raw request to addr with the fixture's admin client.
func (f *Fixture) Invoke(addr string, code int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	return Invoke(f.Admin, addr, code, ext, body)
}

// Invoke sends one raw request to addr with cli.
func Invoke(cli *remoting.Client, addr string, code int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cli.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
}

// Status reads a broker's /status document as a generic map.
func Status(hostport string) (map[string]any, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + hostport + "/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// Metric reads one series ("name" or "name{labels}") from a broker's /metrics; 0 when absent.
func Metric(hostport, series string) (float64, error) {
	m, err := harness.Metrics(hostport)
	if err != nil {
		return 0, err
	}
	return m[series], nil
}

// RSS returns the resident memory of a process in bytes (VmRSS).
func RSS(p *harness.Process) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", p.PID())
}

// CheckInvariants ends every attack: all processes alive, a normal send SEND_OK, the slave
// caught up, every acknowledged message present and byte-exact on master and slave, and each
// broker's resident memory within the budget.
func (f *Fixture) CheckInvariants(t *testing.T) {
	t.Helper()
	for _, p := range []*harness.Process{f.Namesrv, f.Master, f.Slave} {
		if !p.Running() {
			t.Fatalf("%s is not running: %v\n%s", p.Name(), p.ExitErr(), p.LogTail(4096))
		}
	}
	f.SendOK(t, "AttackInvariant", []byte("after the attack "+strconv.FormatInt(time.Now().UnixNano(), 10)))
	f.WaitSlaveCaughtUp(t)
	// The queues are read next: both brokers must have indexed everything they hold (after
	// an attack that created hundreds of topics, the dispatcher is still creating their
	// consume-queue files).
	start := time.Now()
	harness.Eventually(t, time.Minute, func() error {
		for _, get := range []func() (e2e.BrokerStatus, error){f.MasterStatus, f.SlaveStatus} {
			st, err := get()
			if err != nil {
				return err
			}
			if st.DispatchedOffset < st.MaxOffset {
				return fmt.Errorf("dispatched %d of %d", st.DispatchedOffset, st.MaxOffset)
			}
		}
		return nil
	})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Logf("waited %v for the dispatchers", d.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if f.cfg.SlaveTLS == nil {
		if err := f.Hist.Check(ctx, f.Admin, f.MasterAddr, f.SlaveAddr); err != nil {
			t.Fatal(err)
		}
	} else {
		cc := remoting.DefaultClientConfig()
		cc.TLS = f.cfg.SlaveTLS
		sc := remoting.NewClient(cc)
		defer sc.Close()
		if err := f.Hist.Check(ctx, f.Admin, f.MasterAddr); err != nil {
			t.Fatal(err)
		}
		if err := f.Hist.Check(ctx, sc, f.SlaveAddr); err != nil {
			t.Fatalf("slave (over TLS): %v", err)
		}
	}
	for _, p := range []*harness.Process{f.Master, f.Slave} {
		rss, err := RSS(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s RSS %.1f MiB (budget %.0f MiB)", p.Name(), float64(rss)/(1<<20), float64(f.cfg.RSSBudget)/(1<<20))
		if rss > f.cfg.RSSBudget {
			t.Fatalf("%s RSS %d bytes above the budget of %d", p.Name(), rss, f.cfg.RSSBudget)
		}
	}
	t.Logf("history: %v checked on master and slave", f.Hist.Counts())
}

// batchBody encodes one SEND_BATCH_MESSAGE member as clients do.
func batchBody(body, properties string) []byte {
	total := 20 + len(body) + 2 + len(properties)
	out := make([]byte, 0, total)
	be := func(v uint32) { out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	be(uint32(total))
	be(0)
	be(0)
	be(0)
	be(uint32(len(body)))
	out = append(out, body...)
	out = append(out, byte(len(properties)>>8), byte(len(properties)))
	return append(out, properties...)
}

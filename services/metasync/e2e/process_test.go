// Package e2e runs the built metasync binary as a process (kill -9, restart,
// two instances sharing a group through Consul).
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/services/metasync/internal/testenv"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

var (
	binMu    sync.Mutex
	binDir   string
	binBuilt = map[string]string{}
)

// serviceBinary returns a built service of this checkout: $RMQHA_BIN_DIR/<name>
// when the test command built it, else a build of ./services/<name> alone (so
// that this package does not depend on every other service building).
func serviceBinary(t testing.TB, name string) string {
	t.Helper()
	if d := os.Getenv("RMQHA_BIN_DIR"); d != "" {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binBuilt[name]; ok {
		return p
	}
	root, err := harness.RepoRoot()
	require.NoError(t, err)
	if binDir == "" {
		binDir, err = os.MkdirTemp("", "metasync-e2e-bin-")
		require.NoError(t, err)
	}
	out := filepath.Join(binDir, name)
	cmd := exec.Command("go", "build", "-o", out, "./services/"+name)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	binBuilt[name] = out
	return out
}

func metasyncBinary(t testing.TB) string { return serviceBinary(t, "metasync") }

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

const (
	cluster = testenv.Cluster
	broker  = testenv.Broker
)

var (
	startFakeMaster    = testenv.StartMaster
	putTopic           = testenv.PutTopic
	startSlave         = testenv.StartSlave
	waitFor            = testenv.WaitFor
	dialBus            = testenv.DialBus
	watchAnnouncements = testenv.WatchAnnouncements
	registerMaster     = testenv.RegisterMaster
)

func startBinary(t testing.TB, bin, name string, port int, keys map[string]string, env []string) *harness.Process {
	t.Helper()
	dir := t.TempDir()
	var conf strings.Builder
	keys["httpPort"] = fmt.Sprint(port)
	keys["bindAddress"] = "127.0.0.1"
	keys["storePathRootDir"] = filepath.Join(dir, "store")
	for k, v := range keys {
		fmt.Fprintf(&conf, "%s=%s\n", k, v)
	}
	path := filepath.Join(dir, "metasync.conf")
	require.NoError(t, os.WriteFile(path, []byte(conf.String()), 0o644))
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: name, Bin: bin, Args: []string{"-c", path}, Env: env, Dir: dir})
	waitHealthy(t, port)
	return p
}

func waitHealthy(t testing.TB, port int) {
	t.Helper()
	waitFor(t, 20*time.Second, "metasync /health", func() bool {
		r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
}

// TestBinaryKillRestart runs the built binary: SIGKILL and restart keep the
// snapshots (same sequence, nothing announced twice) and the slave goes on
// converging; then two binaries share a group through Consul and a SIGKILLed
// owner is replaced once its session expires.
func TestBinaryKillRestart(t *testing.T) {
	t.Parallel() // mostly waiting (Consul session expiry, client commit period)
	bin := metasyncBinary(t)
	nats := harness.StartNATST(t)
	master := startFakeMaster(t, "")
	ports := harness.MustFreePorts(t, 3)
	url := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", ports[i]) }
	keys := map[string]string{
		"masterAddrs": cluster + "/" + broker + "@" + master.Addr, "syncIntervalMillis": "200",
		"natsUrl": nats.URL(), "advertisedUrl": url(0), "logLevel": "debug",
	}
	p := startBinary(t, bin, "metasync-static", ports[0], keys, nil)
	sl := startSlave(t, dialBus(t, nats.URL()), []string{url(0)}, func() string { return master.Addr }, time.Hour)
	putTopic(t, master.T(), "P1")
	master.T().Offsets.Commit("g", "P1", 0, 10)
	waitFor(t, 10*time.Second, "P1 on the slave", func() bool { off, _ := sl.Tables.Offsets.Query("g", "P1", 0); return sl.HasTopic("P1") && off == 10 })
	c := metasync.NewHTTPSnapshots(url(0))
	var before metasync.Snapshot
	waitFor(t, 10*time.Second, "metasync holds the master's versions", func() bool {
		for _, tbl := range metasync.AllTables {
			s, err := c.Fetch(context.Background(), cluster, broker, tbl, "")
			if err != nil {
				return false
			}
			if tbl == metasync.TableTopics {
				before = s
			}
			if tbl == metasync.TableTopics && !s.DataVersion.Equal(master.T().Topics.DataVersion()) ||
				tbl == metasync.TableConsumerOffsets && !s.DataVersion.Equal(master.T().Offsets.DataVersion()) {
				return false
			}
		}
		return true
	})

	p.Kill()
	ann := watchAnnouncements(t, dialBus(t, nats.URL()))
	require.NoError(t, p.Restart())
	waitHealthy(t, ports[0])
	after, err := c.Fetch(context.Background(), cluster, broker, metasync.TableTopics, "")
	require.NoError(t, err)
	require.Equal(t, before.Sequence, after.Sequence)
	require.True(t, after.SameContent(before))
	master.T().Offsets.Commit("g", "P1", 0, 11)
	waitFor(t, 10*time.Second, "offset after restart", func() bool { off, _ := sl.Tables.Offsets.Query("g", "P1", 0); return off == 11 })
	for _, a := range ann.List() {
		require.Equal(t, metasync.TableConsumerOffsets, a.Table, "only the changed table is announced after a restart")
	}
	p.Kill()

	// Two binaries, one group lock in Consul.
	consul := harness.StartConsulT(t)
	registerMaster(t, consul.HTTPAddr(), master.Addr, 1)
	env := []string{"CONSUL_HTTP_ADDR=" + consul.HTTPAddr()}
	ck := func(i int) map[string]string {
		return map[string]string{"syncIntervalMillis": "200", "natsUrl": nats.URL(), "advertisedUrl": url(i), "instanceName": fmt.Sprintf("ms%d", i)}
	}
	p1 := startBinary(t, bin, "metasync-1", ports[1], ck(1), env)
	p2 := startBinary(t, bin, "metasync-2", ports[2], ck(2), env)
	procs := map[int]*harness.Process{1: p1, 2: p2}
	ownerOf := func() []int {
		var out []int
		for _, i := range []int{1, 2} {
			if !procs[i].Running() {
				continue
			}
			if _, err := metasync.NewHTTPSnapshots(url(i)).Fetch(context.Background(), cluster, broker, metasync.TableTopics, ""); err == nil {
				out = append(out, i)
			}
		}
		return out
	}
	waitFor(t, 20*time.Second, "one owner among the binaries", func() bool { return len(ownerOf()) == 1 })
	own := ownerOf()[0]
	sl2 := startSlave(t, dialBus(t, nats.URL()), []string{url(1), url(2)}, func() string { return master.Addr }, time.Hour)
	putTopic(t, master.T(), "P2")
	waitFor(t, 10*time.Second, "P2 on the slave", func() bool { return sl2.HasTopic("P2") })

	procs[own].Kill()
	start := time.Now()
	putTopic(t, master.T(), "P3")
	master.T().Offsets.Commit("g", "P1", 0, 12)
	waitFor(t, 45*time.Second, "takeover after the session expired", func() bool { return len(ownerOf()) == 1 })
	waitFor(t, 10*time.Second, "P3 through the new owner", func() bool {
		return sl2.HasTopic("P3") && sl2.F.Status().Table(metasync.TableTopics).Source == metasync.SourceNATS
	})
	t.Logf("takeover after SIGKILL of the owner: %v (session TTL 10s)", time.Since(start).Round(100*time.Millisecond))
	waitFor(t, 10*time.Second, "offset through the new owner", func() bool { off, _ := sl2.Tables.Offsets.Query("g", "P1", 0); return off == 12 })
}

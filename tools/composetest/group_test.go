package composetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/tools/harness"
)

// composeCommand finds how compose is run here: the `docker compose` plugin, else the
// standalone `docker-compose`. Empty when neither answers.
func composeCommand() []string {
	for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		args := append(append([]string{}, c[1:]...), "version")
		if _, err := runCmd(20*time.Second, nil, "", c[0], args...); err == nil {
			return c
		}
	}
	return nil
}

// runCmd runs a command with a deadline and returns its combined output.
func runCmd(timeout time.Duration, env []string, dir, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %s", name, strings.Join(args, " "), timeout)
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// group is one compose project of the whole broker group.
type group struct {
	t        testing.TB
	metasync bool
	root     string
	compose  []string
	project  string
	env      []string
	net      string // first three octets of the project's /24
	services []string
	files    []string // compose files after docker-compose.yml and the offline override

	namesrvPort, masterPort, slavePort, masterHTTP, slaveHTTP int
}

// newGroup prepares a unique project: a free /24 and free host ports.
func newGroup(t testing.TB, root string, compose []string, withMetasync bool) *group {
	g := &group{t: t, root: root, compose: compose, project: "rmqhacompose" + randHex(4)}
	var err error
	g.net, err = freeNet()
	if err != nil {
		t.Fatalf("no free /24 for the compose network: %v", err)
	}
	ports := harness.MustFreePorts(t, 6)
	g.namesrvPort, g.masterPort, g.slavePort, g.masterHTTP, g.slaveHTTP = ports[0], ports[1], ports[2], ports[3], ports[4]
	g.env = append(os.Environ(),
		"RMQHA_NET="+g.net,
		"RMQHA_ADVERTISED_IP="+g.gateway(),
		"RMQHA_NAMESRV_PORT="+strconv.Itoa(g.namesrvPort),
		"RMQHA_MASTER_PORT="+strconv.Itoa(g.masterPort),
		"RMQHA_SLAVE_PORT="+strconv.Itoa(g.slavePort),
		"RMQHA_MASTER_HTTP_PORT="+strconv.Itoa(g.masterHTTP),
		"RMQHA_SLAVE_HTTP_PORT="+strconv.Itoa(g.slaveHTTP),
		"RMQHA_CONSUL_PORT="+strconv.Itoa(ports[5]),
	)
	g.services = []string{"consul", "nats", "namesrv", "master", "slave"}
	if withMetasync {
		g.metasync = true
		g.services = append(g.services, "metasync")
	}
	return g
}

func (g *group) gateway() string { return g.net + ".1" }
func (g *group) slaveIP() string { return g.net + ".12" }

// namesrv is the name server address for clients on the host.
func (g *group) namesrv() string { return "127.0.0.1:" + strconv.Itoa(g.namesrvPort) }

// run runs one compose command for this project.
func (g *group) run(timeout time.Duration, args ...string) (string, error) {
	full := append(append([]string{}, g.compose[1:]...), "-p", g.project,
		"-f", filepath.Join(g.root, "docker-compose.yml"),
		"-f", filepath.Join(g.root, "deploy", "docker-compose.offline.yml"))
	for _, f := range g.files {
		full = append(full, "-f", filepath.Join(g.root, f))
	}
	full = append(full, args...)
	return runCmd(timeout, g.env, g.root, g.compose[0], full...)
}

func (g *group) must(timeout time.Duration, args ...string) string {
	g.t.Helper()
	out, err := g.run(timeout, args...)
	if err != nil {
		g.t.Fatal(err)
	}
	return out
}

// up starts the group and returns how long it took until every container was healthy.
func (g *group) up() time.Duration {
	g.t.Helper()
	start := time.Now()
	g.must(5*time.Minute, append([]string{"up", "-d"}, g.services...)...)
	g.waitHealthy(g.services...)
	return time.Since(start)
}

// container is the id of a service's container (running or not), "" when there is none.
func (g *group) container(service string) string {
	out, err := runCmd(30*time.Second, nil, "", "docker", "ps", "-aq",
		"--filter", "label=com.docker.compose.project="+g.project,
		"--filter", "label=com.docker.compose.service="+service)
	if err != nil {
		g.t.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// registrationSecretFile copies the group's registration secret out of the master's container
// (the secrets volume) into a file of the test's, for tools that sign admin writes.
func (g *group) registrationSecretFile() string {
	g.t.Helper()
	path := filepath.Join(g.t.TempDir(), "registration.secret")
	g.docker("cp", g.container("master")+":/etc/rmqha/secrets/registration.secret", path)
	return path
}

// health is the healthcheck state of a service's container ("healthy", "starting", "exited"...).
func (g *group) health(service string) string {
	id := g.container(service)
	if id == "" {
		return "missing"
	}
	out, err := runCmd(30*time.Second, nil, "", "docker", "inspect", "-f",
		"{{if .State.Running}}{{if .State.Health}}{{.State.Health.Status}}{{else}}running{{end}}{{else}}{{.State.Status}}{{end}}", id)
	if err != nil {
		return "inspect: " + err.Error()
	}
	return strings.TrimSpace(out)
}

func (g *group) waitHealthy(services ...string) {
	g.t.Helper()
	eventually(g.t, 4*time.Minute, 500*time.Millisecond, func() error {
		for _, s := range services {
			if h := g.health(s); h != "healthy" {
				return fmt.Errorf("%s is %s", s, h)
			}
		}
		return nil
	})
}

// docker runs a docker command and fails the test on error.
func (g *group) docker(args ...string) string {
	g.t.Helper()
	out, err := runCmd(2*time.Minute, nil, "", "docker", args...)
	if err != nil {
		g.t.Fatal(err)
	}
	return out
}

// network is the name of the project's network.
func (g *group) network() string {
	out := g.docker("network", "ls", "--format", "{{.Name}}", "--filter", "label=com.docker.compose.project="+g.project)
	f := strings.Fields(out)
	if len(f) != 1 {
		g.t.Fatalf("networks of %s: %q", g.project, out)
	}
	return f[0]
}

// leftovers lists what still exists of the project: containers, volumes, networks.
func (g *group) leftovers() []string {
	var left []string
	for _, kind := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}, {"network", "ls", "-q"}} {
		args := append(append([]string{}, kind...), "--filter", "label=com.docker.compose.project="+g.project)
		out, err := runCmd(30*time.Second, nil, "", "docker", args...)
		if err != nil {
			left = append(left, err.Error())
			continue
		}
		for _, id := range strings.Fields(out) {
			left = append(left, kind[0]+" "+id)
		}
	}
	return left
}

// logs returns the tail of every container's output, for failure reports.
func (g *group) logs() string {
	out, _ := g.run(time.Minute, "logs", "--no-color", "--tail", "40")
	return out
}

// brokerStatus is the part of a broker's /status the test reads.
type brokerStatus struct {
	Role           string `json:"role"`
	AdvertisedAddr string `json:"advertisedAddr"`
	MaxOffset      int64  `json:"maxOffset"`
	PullRequests   uint64 `json:"pullRequests"`
	Topics         int    `json:"topics"`
	Groups         int    `json:"groups"`
	HAMaster       *struct {
		InSyncCount int   `json:"InSyncCount"`
		Confirmed   int64 `json:"Confirmed"`
	} `json:"haMaster"`
	HASlave *struct {
		Connected      bool   `json:"Connected"`
		State          string `json:"State"`
		LocalMaxOffset int64  `json:"LocalMaxOffset"`
		LastError      string `json:"LastError"`
		Reconnects     int    `json:"Reconnects"`
	} `json:"haSlave"`
}

// status reads a broker's /status through its published HTTP port.
func status(port int) (brokerStatus, error) {
	var st brokerStatus
	err := getJSON("http://127.0.0.1:"+strconv.Itoa(port)+"/status", &st)
	return st, err
}

// rawStatus is a broker's /status as it answered, or the error, for failure reports.
func rawStatus(port int) string {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/status")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// getJSON decodes the JSON answer of a GET into v.
func getJSON(url string, v any) error {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// eventually polls cond until it returns nil or the deadline passes, then fails with its last error.
func eventually(t testing.TB, timeout, every time.Duration, cond func() error) {
	t.Helper()
	if err := harness.WaitFor(timeout, func() error {
		err := cond()
		if err != nil {
			time.Sleep(every)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freeNet picks a 10.x.y.0/24 that overlaps no Docker network and no address of this machine.
func freeNet() (string, error) {
	var used []netip.Prefix
	out, err := runCmd(30*time.Second, nil, "", "docker", "network", "ls", "-q")
	if err != nil {
		return "", err
	}
	if ids := strings.Fields(out); len(ids) > 0 {
		args := append([]string{"network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}"}, ids...)
		out, err := runCmd(30*time.Second, nil, "", "docker", args...)
		if err != nil {
			return "", err
		}
		for _, s := range strings.Fields(out) {
			if p, err := netip.ParsePrefix(s); err == nil {
				used = append(used, p)
			}
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				used = append(used, p)
			}
		}
	}
	for i := 0; i < 200; i++ {
		b := make([]byte, 2)
		_, _ = rand.Read(b)
		cand := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 100 + b[0]%150, b[1], 0}), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(cand) {
				free = false
				break
			}
		}
		if free {
			a := cand.Addr().As4()
			return fmt.Sprintf("%d.%d.%d", a[0], a[1], a[2]), nil
		}
	}
	return "", errors.New("every candidate overlaps")
}

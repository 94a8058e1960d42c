package composetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/tools/harness"
)

// TestCompose runs docker-compose.yml with the offline images and checks, through the ports
// published on the host and the real rocketmq-client-go:
//   - produce and consume on a healthy group (SYNC_MASTER: every send SEND_OK);
//   - docker kill of the master: producers get an error, a consumer that was behind keeps
//     reading the replicated messages from the slave;
//   - docker network disconnect of the slave: SYNC_MASTER sends answer FLUSH_SLAVE_TIMEOUT or
//     SLAVE_NOT_AVAILABLE before the client's deadline; after reconnecting, the slave catches up
//     and sends are SEND_OK again;
//   - down and up with the volumes kept: every message and the consumer offsets are still there;
//   - with metasync in the group: the slave's topics and groups equal the master's (reported as
//     an error that does not stop the test);
//   - down -v leaves nothing of the project behind.
func TestCompose(t *testing.T) {
	root, compose := composeReady(t, "compose end-to-end test")
	bin := buildImages(t, root)
	_, statErr := os.Stat(filepath.Join(bin, "metasync"))
	g := newGroup(t, root, compose, statErr == nil)
	t.Logf("project %s, compose %q, network %s.0/24, name server %s, metasync %v", g.project, strings.Join(compose, " "), g.net, g.namesrv(), statErr == nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container logs:\n%s", g.logs())
		}
		if out, err := g.run(3*time.Minute, "down", "-v", "--remove-orphans", "--timeout", "20"); err != nil {
			t.Logf("cleanup: %v\n%s", err, out)
		}
	})

	// 1. Up, healthy, produce and consume through the published ports.
	took := g.up()
	t.Logf("compose up -> every container healthy: %s", took.Round(100*time.Millisecond))
	ms, err := status(g.masterHTTP)
	if err != nil {
		t.Fatal(err)
	}
	if want := g.gateway() + ":" + strconv.Itoa(g.masterPort); ms.AdvertisedAddr != want {
		t.Fatalf("master advertises %s, want %s", ms.AdvertisedAddr, want)
	}
	run := randHex(3)
	topic := "ComposeTopic"
	led := newLedger()
	p := newProducer(t, g.namesrv(), "compose-p1-"+run)
	defer p.Shutdown()
	// Healthy is not yet registered: the first send waits for the route to the master.
	waitSendOK(t, led, p, topic, "first-"+run)
	var batchA []string
	for i := 0; i < 100; i++ {
		body := fmt.Sprintf("a-%s-%d", run, i)
		st, _, err := led.send(p, topic, body)
		if err != nil || st != primitive.SendOK {
			t.Fatalf("send %s on a healthy group: status %v, err %v", body, st, err)
		}
		batchA = append(batchA, body)
	}
	live := startSink(t, g.namesrv(), "compose-live", "compose-live-"+run, topic)
	eventually(t, time.Minute, 100*time.Millisecond, func() error {
		if n := live.missing(batchA); n > 0 {
			return fmt.Errorf("consumer still misses %d of %d", n, len(batchA))
		}
		return nil
	})
	t.Logf("produced and consumed %d messages through %s", len(batchA), g.namesrv())

	runBench(t, bin, g.namesrv(), g.registrationSecretFile())

	// 2. Kill the master while the consumer is behind.
	live.pause()
	var batchB []string
	for i := 0; i < 200; i++ {
		body := fmt.Sprintf("b-%s-%d", run, i)
		st, _, err := led.send(p, topic, body)
		if err != nil || st != primitive.SendOK {
			t.Fatalf("send %s: status %v, err %v", body, st, err)
		}
		batchB = append(batchB, body)
	}
	eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		m, err1 := status(g.masterHTTP)
		s, err2 := status(g.slaveHTTP)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("status: %v %v", err1, err2)
		}
		if s.HASlave == nil || s.HASlave.LocalMaxOffset != m.MaxOffset {
			return fmt.Errorf("slave not caught up with master offset %d", m.MaxOffset)
		}
		return nil
	})
	before, err := status(g.slaveHTTP)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("consumer behind by %d of %d messages; docker kill master", live.missing(batchB), len(batchB))
	g.docker("kill", g.container("master"))
	killed := time.Now()
	_, took, err = led.send(p, topic, "after-kill-"+run)
	if err == nil {
		t.Fatalf("send with the master killed succeeded")
	}
	t.Logf("send with the master killed: error after %s: %v", took.Round(time.Millisecond), err)
	live.resume()
	// The client learns that the master is gone from its next route poll (every 30 s); until
	// then its pulls to the master fail and are retried every 3 s, or, on a connection that
	// died silently, time out after the client's fixed 30 s. Two minutes cover both.
	if err := harness.WaitFor(2*time.Minute, func() error {
		if n := live.missing(batchB); n > 0 {
			return fmt.Errorf("consumer with the master gone still misses %d of %d", n, len(batchB))
		}
		return nil
	}); err != nil {
		// Enough to tell a client that never switched (the route still names the master) from
		// a slave that refused or held its pulls (its counters) or a queue the client gave up.
		t.Fatalf("%v\nmissing by queue: %v\nname server route of %s: %s\nslave /status: %s",
			err, led.missingByQueue(live, batchB), topic, routeBody(g.namesrv(), topic), rawStatus(g.slaveHTTP))
	}
	after, err := status(g.slaveHTTP)
	if err != nil {
		t.Fatal(err)
	}
	if after.PullRequests <= before.PullRequests {
		t.Fatalf("slave served no pulls (%d before, %d after)", before.PullRequests, after.PullRequests)
	}
	t.Logf("consumer read every replicated message from the slave %s after the kill (slave pulls %d -> %d)",
		time.Since(killed).Round(100*time.Millisecond), before.PullRequests, after.PullRequests)
	live.stop()

	// 3. Master back, then cut the slave off the network.
	g.must(2*time.Minute, "start", "master")
	g.waitHealthy("master", "slave")
	waitSendOK(t, led, p, topic, "c-"+run)
	net := g.network()
	g.docker("network", "disconnect", net, g.container("slave"))
	for i := 0; i < 3; i++ {
		body := fmt.Sprintf("d-%s-%d", run, i)
		st, took, err := led.send(p, topic, body)
		if err != nil {
			t.Fatalf("send %s with the slave cut off: no answer before the client's deadline (%s): %v", body, took.Round(time.Millisecond), err)
		}
		if st != primitive.SendFlushSlaveTimeout && st != primitive.SendSlaveNotAvailable {
			t.Fatalf("send %s with the slave cut off: status %s, want FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE", body, sendStatus(st))
		}
		t.Logf("send with the slave cut off: %s after %s", sendStatus(st), took.Round(time.Millisecond))
	}
	ms, err = status(g.masterHTTP)
	if err != nil {
		t.Fatal(err)
	}
	if ms.HAMaster == nil || ms.HAMaster.Confirmed >= ms.MaxOffset {
		t.Fatalf("master reports its tail confirmed by the cut-off slave: %+v, log end %d", ms.HAMaster, ms.MaxOffset)
	}
	t.Logf("master log end %d, confirmed by the slave up to %d; reconnecting the slave", ms.MaxOffset, ms.HAMaster.Confirmed)
	g.docker("network", "connect", "--ip", g.slaveIP(), net, g.container("slave"))
	reconnected := time.Now()
	eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		m, err1 := status(g.masterHTTP)
		s, err2 := status(g.slaveHTTP)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("status: %v %v", err1, err2)
		}
		if s.HASlave == nil || s.HASlave.LocalMaxOffset != m.MaxOffset {
			return fmt.Errorf("slave at %v, master at %d", s.HASlave, m.MaxOffset)
		}
		return nil
	})
	t.Logf("slave caught up %s after reconnecting", time.Since(reconnected).Round(100*time.Millisecond))
	waitSendOK(t, led, p, topic, "e-"+run)

	// 4. Offsets of a group that read everything, then down and up with the volumes kept.
	all := led.storedBodies()
	offs := startSink(t, g.namesrv(), "compose-offsets", "compose-offsets-"+run, topic)
	eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if n := offs.missing(all); n > 0 {
			return fmt.Errorf("offset group still misses %d of %d", n, len(all))
		}
		return nil
	})
	offs.stop() // commits its offsets to the master
	p.Shutdown()
	masterBefore, err := status(g.masterHTTP)
	if err != nil {
		t.Fatal(err)
	}
	g.must(3*time.Minute, "down", "--timeout", "40")
	if left := g.leftovers(); len(containersOf(left)) > 0 {
		t.Fatalf("down left containers: %v", left)
	}
	took = g.up()
	t.Logf("compose up again (volumes kept) -> every container healthy: %s", took.Round(100*time.Millisecond))
	masterAfter, err := status(g.masterHTTP)
	if err != nil {
		t.Fatal(err)
	}
	if masterAfter.MaxOffset != masterBefore.MaxOffset {
		t.Fatalf("master log end %d after recreation, was %d", masterAfter.MaxOffset, masterBefore.MaxOffset)
	}
	p2 := newProducer(t, g.namesrv(), "compose-p2-"+run)
	defer p2.Shutdown()
	waitSendOK(t, led, p2, topic, "f-"+run)
	var batchG []string
	for i := 0; i < 20; i++ {
		body := fmt.Sprintf("g-%s-%d", run, i)
		if st, _, err := led.send(p2, topic, body); err != nil || st != primitive.SendOK {
			t.Fatalf("send %s after recreation: status %v, err %v", body, st, err)
		}
		batchG = append(batchG, body)
	}
	// Every message, by a new group from the first offset.
	fresh := startSink(t, g.namesrv(), "compose-fresh", "compose-fresh-"+run, topic)
	all = led.storedBodies()
	eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if n := fresh.missing(all); n > 0 {
			return fmt.Errorf("new group misses %d of %d stored messages after recreation", n, len(all))
		}
		return nil
	})
	for body := range fresh.received() {
		if !led.wasAttempted(body) {
			t.Fatalf("unexpected message %q", body)
		}
	}
	// The offsets group resumes where it stopped: only the messages sent after recreation.
	offs2 := startSink(t, g.namesrv(), "compose-offsets", "compose-offsets2-"+run, topic)
	eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if n := offs2.missing(batchG); n > 0 {
			return fmt.Errorf("offset group misses %d of %d new messages", n, len(batchG))
		}
		return nil
	})
	old := 0
	for body := range offs2.received() {
		if !strings.HasPrefix(body, "f-") && !strings.HasPrefix(body, "g-") {
			old++
		}
	}
	if old > 0 {
		t.Fatalf("offset group got %d messages it had consumed before the recreation: offsets lost", old)
	}
	t.Logf("after recreation: all %d stored messages readable, committed offsets kept", len(all))
	offs2.stop()
	fresh.stop()
	p2.Shutdown()

	if g.metasync {
		// Every topic and consumer group was created on the master; metasync brings them to the
		// slave. Checked last (minutes after their creation), without stopping the test.
		err := harness.WaitFor(30*time.Second, func() error {
			m, err1 := status(g.masterHTTP)
			s, err2 := status(g.slaveHTTP)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("status: %v %v", err1, err2)
			}
			if s.Topics != m.Topics || s.Groups != m.Groups {
				return fmt.Errorf("slave has %d topics and %d groups, master %d and %d", s.Topics, s.Groups, m.Topics, m.Groups)
			}
			return nil
		})
		if err != nil {
			t.Errorf("metasync: slave metadata differs from the master's: %v", err)
		} else {
			t.Logf("metasync: slave topics and groups equal the master's")
		}
	}

	// 5. down -v removes everything.
	g.must(3*time.Minute, "down", "-v", "--remove-orphans", "--timeout", "20")
	if left := g.leftovers(); len(left) > 0 {
		t.Fatalf("down -v left: %v", left)
	}
}

// composeReady skips the test (what names it) unless a Docker engine and compose answer and
// RMQHA_SKIP_COMPOSE is not 1; it returns the repository root and the compose command.
func composeReady(t *testing.T, what string) (string, []string) {
	t.Helper()
	if os.Getenv("RMQHA_SKIP_COMPOSE") == "1" {
		t.Skip("RMQHA_SKIP_COMPOSE=1: " + what + " skipped")
	}
	if out, err := runCmd(20*time.Second, nil, "", "docker", "version", "--format", "{{.Server.Version}}"); err != nil {
		t.Skipf("%s skipped: no Docker engine reachable (docker version: %v)", what, strings.TrimSpace(firstLine(out, err)))
	}
	compose := composeCommand()
	if compose == nil {
		t.Skip(what + " skipped: neither `docker compose` nor `docker-compose` works here")
	}
	rlog.SetLogLevel("fatal") // the client logs every failed route lookup during the faults
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root, compose
}

// runBench produces and consumes with the bench tool through the published ports, when the
// binary folder has it: every send SEND_OK, every message consumed.
func runBench(t *testing.T, bin, namesrv, secretFile string) {
	t.Helper()
	tool := filepath.Join(bin, "bench")
	if _, err := os.Stat(tool); err != nil {
		t.Logf("no %s: bench step skipped", tool)
		return
	}
	const n = 2000
	out, err := runCmd(4*time.Minute, nil, "", tool, "-namesrv", namesrv, "-registrationSecretFile", secretFile, "-topic", "ComposeBench",
		"-n", strconv.Itoa(n), "-producers", "2", "-consumers", "1", "-mode", "sync", "-progress", "0", "-drain", "2m")
	if err != nil {
		t.Fatal(err)
	}
	count := func(re string) int {
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("bench output lacks %q:\n%s", re, out)
		}
		v, _ := strconv.Atoi(m[1])
		return v
	}
	sent, consumed := count(`send:\s+(\d+) messages`), count(`consume:\s+(\d+) messages`)
	if sent != n || consumed < n || !strings.Contains(out, "SEND_OK="+strconv.Itoa(n)) {
		t.Fatalf("bench: sent %d, consumed %d of %d:\n%s", sent, consumed, n, out)
	}
	t.Logf("bench through the published ports:\n%s", strings.TrimSpace(out))
}

// firstLine is the first line of a failed command's output, or its error.
func firstLine(out string, err error) string {
	if l, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); l != "" {
		return l
	}
	return err.Error()
}

// containersOf keeps the container entries of a leftovers list.
func containersOf(left []string) []string {
	var out []string
	for _, l := range left {
		if strings.HasPrefix(l, "ps ") {
			out = append(out, l)
		}
	}
	return out
}

// buildImages builds the offline images with deploy/build-offline-images.sh from this checkout's
// binaries ($RMQHA_BIN_DIR when it holds them, else a fresh build) and returns the binary folder.
func buildImages(t *testing.T, root string) string {
	t.Helper()
	// Once per test binary: the tests of this package share the images.
	if builtFrom != "" {
		if _, err := os.Stat(builtFrom); err == nil {
			return builtFrom
		}
	}
	bin := os.Getenv("RMQHA_BIN_DIR")
	for _, s := range []string{"namesrv", "master", "slave", "healthcheck", "secretinit"} {
		if bin == "" {
			break
		}
		if _, err := os.Stat(filepath.Join(bin, s)); err != nil {
			bin = ""
		}
	}
	if bin == "" {
		bin = t.TempDir()
		start := time.Now()
		if _, err := runCmd(10*time.Minute, os.Environ(), root, filepath.Join(root, "scripts", "build.sh"), bin); err != nil {
			t.Fatal(err)
		}
		t.Logf("built the binaries in %s", time.Since(start).Round(100*time.Millisecond))
	}
	env := os.Environ()
	if c, err := harness.ConsulBinary(); err == nil {
		env = append(env, "RMQHA_CONSUL_BIN="+c)
	}
	if n, err := harness.NATSServerBinary(); err == nil {
		env = append(env, "RMQHA_NATS_SERVER_BIN="+n)
	}
	start := time.Now()
	if _, err := runCmd(10*time.Minute, env, root, filepath.Join(root, "deploy", "build-offline-images.sh"), bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the offline images in %s", time.Since(start).Round(100*time.Millisecond))
	builtFrom = bin
	return bin
}

// builtFrom is the binary folder the offline images were last built from in this process.
var builtFrom string

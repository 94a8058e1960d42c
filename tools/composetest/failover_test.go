package composetest

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqha/rmqha/tools/harness"
)

// failoverNode is one node of deploy/docker-compose.failover.yml as the test reaches it.
type failoverNode struct {
	service string
	http    int
}

// TestComposeFailover runs the automatic-failover group of deploy/docker-compose.failover.yml
// (two nodes started as slaves, the election in the compose Consul) with the offline images:
// one node becomes master and the other follows it; SEND_OK through the published ports;
// docker kill of the master: the other node takes over within seconds and stores new sends;
// docker start of the killed one: it rejoins as a slave and sends are SEND_OK again; a new
// consumer group reads every stored message.
func TestComposeFailover(t *testing.T) {
	root, compose := composeReady(t, "compose failover test")
	buildImages(t, root)
	g := newGroup(t, root, compose, false)
	g.files = []string{"deploy/docker-compose.failover.yml"}
	ports := harness.MustFreePorts(t, 4)
	g.env = append(g.env, "RMQHA_TAG=offline",
		"RMQHA_F1_PORT="+strconv.Itoa(ports[0]), "RMQHA_F2_PORT="+strconv.Itoa(ports[1]),
		"RMQHA_F1_HTTP_PORT="+strconv.Itoa(ports[2]), "RMQHA_F2_HTTP_PORT="+strconv.Itoa(ports[3]))
	g.services = []string{"consul", "nats", "namesrv", "node-f1", "node-f2"}
	nodes := []failoverNode{{"node-f1", ports[2]}, {"node-f2", ports[3]}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container logs:\n%s", g.logs())
		}
		if out, err := g.run(3*time.Minute, "down", "-v", "--remove-orphans", "--timeout", "20"); err != nil {
			t.Logf("cleanup: %v\n%s", err, out)
		}
	})
	took := g.up()
	t.Logf("project %s: failover group healthy after %s", g.project, took.Round(100*time.Millisecond))

	// master returns the node serving as master with want nodes in its in-sync set.
	master := func(want int) failoverNode {
		var m failoverNode
		eventually(t, 2*time.Minute, 100*time.Millisecond, func() error {
			found := 0
			for _, n := range nodes {
				st, err := failoverStatus(n.http)
				if err != nil || st.Role == "SLAVE" || st.WritesFenced {
					continue
				}
				if st.Failover == nil || len(st.Failover.InSync) < want {
					return fmt.Errorf("%s master, in sync %+v", n.service, st.Failover)
				}
				m = n
				found++
			}
			if found != 1 {
				return fmt.Errorf("%d masters", found)
			}
			return nil
		})
		return m
	}
	m := master(2)
	run := randHex(3)
	topic := "FailoverComposeTopic"
	led := newLedger()
	p := newProducer(t, g.namesrv(), "compose-fo-p1-"+run)
	defer p.Shutdown()
	waitSendOK(t, led, p, topic, "fo-first-"+run)
	for i := 0; i < 50; i++ {
		body := fmt.Sprintf("fo-a-%s-%d", run, i)
		if st, _, err := led.send(p, topic, body); err != nil || st != primitive.SendOK {
			t.Fatalf("send %s: status %v, err %v", body, st, err)
		}
	}
	p.Shutdown()

	// Kill the master: the other node takes over.
	g.docker("kill", g.container(m.service))
	killed := time.Now()
	nm := master(1)
	if nm.service == m.service {
		t.Fatalf("%s is master again right after it was killed", m.service)
	}
	tookOver := time.Since(killed)
	// A new producer reads the routes now (a running one refreshes them every 30 s). Alone,
	// the SYNC_MASTER stores and answers SLAVE_NOT_AVAILABLE.
	p2 := newProducer(t, g.namesrv(), "compose-fo-p2-"+run)
	defer p2.Shutdown()
	eventually(t, time.Minute, 200*time.Millisecond, func() error {
		st, _, err := led.send(p2, topic, "fo-b-"+run+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err != nil {
			return err
		}
		if st != primitive.SendSlaveNotAvailable && st != primitive.SendOK {
			return fmt.Errorf("status %s", sendStatus(st))
		}
		return nil
	})
	t.Logf("docker kill %s: %s master (seen) after %s, stored sends again after %s",
		m.service, nm.service, tookOver.Round(10*time.Millisecond), time.Since(killed).Round(10*time.Millisecond))

	// The killed node comes back as a slave of the new master; SEND_OK again.
	g.must(2*time.Minute, "start", m.service)
	g.waitHealthy(m.service)
	if again := master(2); again.service != nm.service {
		t.Fatalf("master moved to %s after %s rejoined", again.service, m.service)
	}
	st, err := failoverStatus(m.http)
	if err != nil || st.Role != "SLAVE" {
		t.Fatalf("%s after restart: %+v, %v", m.service, st, err)
	}
	waitSendOK(t, led, p2, topic, "fo-c-"+run)
	p2.Shutdown()

	all := led.storedBodies()
	s := startSink(t, g.namesrv(), "compose-fo-read", "compose-fo-read-"+run, topic)
	defer s.stop()
	eventually(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if n := s.missing(all); n > 0 {
			return fmt.Errorf("reader misses %d of %d stored messages", n, len(all))
		}
		return nil
	})
	t.Logf("after the failover and the rejoin: all %d stored messages read by a new group", len(all))
}

// failoverStatusBody is the part of /status the failover test reads.
type failoverStatusBody struct {
	Role         string `json:"role"`
	WritesFenced bool   `json:"writesFenced"`
	Failover     *struct {
		Holder int64   `json:"lockHolder"`
		Epoch  int64   `json:"epoch"`
		InSync []int64 `json:"inSync"`
	} `json:"failover"`
}

func failoverStatus(port int) (failoverStatusBody, error) {
	var st failoverStatusBody
	err := getJSON("http://127.0.0.1:"+strconv.Itoa(port)+"/status", &st)
	return st, err
}

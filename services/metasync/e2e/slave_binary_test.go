package e2e

import (
	"context"
	"fmt"
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
	"github.com/stretchr/testify/require"
)

// haSecret is the HA secret of this run's brokers: random, drawn once per test process.
var haSecret = secretfile.New()

// adminSecret is these brokers' registration secret; the test's admin writes are signed with it.
var adminSecret = secretfile.New()

// startBrokerBinary returns the broker's client and HA addresses.
func startBrokerBinary(t *testing.T, name, role string, id int, extra string, env []string) (string, string, *harness.Process) {
	t.Helper()
	ports := harness.MustFreePorts(t, 3)
	dir := filepath.Join(t.TempDir(), name)
	var b strings.Builder
	fmt.Fprintf(&b, "brokerClusterName=%s\nbrokerName=%s\nbrokerId=%d\nbrokerRole=%s\n", cluster, broker, id, role)
	fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\n", ports[0], ports[1], ports[2])
	fmt.Fprintf(&b, "storePathRootDir=%s\nmappedFileSizeCommitLog=16777216\nhaSecret=%s\nregistrationSecret=%s\n%s", filepath.Join(dir, "store"), haSecret, adminSecret, extra)
	conf := writeConf(t, dir, "broker.conf", b.String())
	bin := "master"
	if role == "SLAVE" {
		bin = "slave"
	}
	p := harness.StartProcessT(t, harness.ProcessConfig{Name: name, Bin: serviceBinary(t, bin), Dir: dir, Args: []string{"-c", conf}, Env: env})
	addr := harness.Addr(ports[0])
	waitUp(t, p, addr)
	return addr, harness.Addr(ports[1]), p
}

func topicsOf(rc *remoting.Client, addr string) (map[string]route.TopicConfig, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("GET_ALL_TOPIC_CONFIG: %s %s", remoting.ResponseName(resp.Code), resp.Remark)
	}
	w, err := route.DecodeTopicConfigSerializeWrapper(resp.Body)
	return w.TopicConfigTable, err
}

// TestSlaveBinaryFollowsMaster runs the master, slave and metasync binaries
// with a real NATS server: topics created on the master (admin request) reach
// the slave's own table — what the slave answers GET_ALL_TOPIC_CONFIG from —
// through the master's doorbell, metasync's pull and the NATS announcement,
// each round within waitFor's 10 s (the latencies are logged: about 0.2 s on an
// idle machine); a deleted topic disappears from the slave.
func TestSlaveBinaryFollowsMaster(t *testing.T) {
	nats := harness.StartNATST(t)
	env := []string{"NATS_URL=" + nats.URL()}
	masterAddr, masterHA, _ := startBrokerBinary(t, "master", "ASYNC_MASTER", 0, "", env)

	msPort := harness.MustFreePorts(t, 1)[0]
	startBinary(t, serviceBinary(t, "metasync"), "metasync", msPort, map[string]string{
		"masterAddrs": fmt.Sprintf("%s/%s@%s", cluster, broker, masterAddr),
		// A long schedule: convergence below comes from the doorbell, not the timer.
		"syncIntervalMillis": "30000", "natsUrl": nats.URL(),
		"advertisedUrl": fmt.Sprintf("http://127.0.0.1:%d", msPort),
	}, env)
	rcc := remoting.DefaultClientConfig()
	rcc.Signer = acl.Signer(acl.BrokerAccessKey, adminSecret)
	rc := remoting.NewClient(rcc)
	defer rc.Close()
	slaveAddr, _, _ := startBrokerBinary(t, "slave", "SLAVE", 1,
		fmt.Sprintf("haMasterAddress=%s\nmetasyncAddrs=127.0.0.1:%d\nmetasyncFallbackInterval=60000\n", masterHA, msPort), env)

	admin := func(code int32, ext map[string]string) {
		t.Helper()
		// Generous: an admin write fsyncs the topic table, which a loaded disk can hold for
		// seconds; what this test checks is that the change arrives, not how fast.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		resp, err := rc.Invoke(ctx, masterAddr, remoting.NewRequest(code, ext, nil))
		require.NoError(t, err)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	hasTopic := func(topic string) bool {
		ts, err := topicsOf(rc, slaveAddr)
		if err != nil {
			return false
		}
		_, ok := ts[topic]
		return ok
	}
	// First sync: the master's system topics.
	waitFor(t, 30*time.Second, "initial topics on the slave", func() bool { return hasTopic("TBW102") })

	const rounds = 20
	var lat []time.Duration
	for i := 0; i < rounds; i++ {
		topic := fmt.Sprintf("FollowTopic%02d", i)
		start := time.Now()
		admin(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"})
		waitFor(t, 10*time.Second, topic+" on the slave", func() bool { return hasTopic(topic) })
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("topic created on master → on slave, %d rounds: min %v p50 %v p90 %v max %v", rounds,
		lat[0].Round(time.Millisecond), lat[rounds/2].Round(time.Millisecond), lat[rounds*9/10].Round(time.Millisecond), lat[rounds-1].Round(time.Millisecond))
	// Speed is reported, not asserted (a loaded machine stretches any round): the bound each
	// round must meet is waitFor's.
	over := 0
	for _, l := range lat {
		if l > 2*time.Second {
			over++
		}
	}
	t.Logf("rounds over 2 s: %d of %d", over, rounds)

	admin(remoting.DeleteTopicInBroker, map[string]string{"topic": "FollowTopic00"})
	waitFor(t, 10*time.Second, "deleted topic gone from the slave", func() bool { return !hasTopic("FollowTopic00") && hasTopic("FollowTopic01") })
}

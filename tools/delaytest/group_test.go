package delaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/rmqha/rmqha/tools/secretfile"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

const (
	brokerName  = "broker-a"
	clusterName = "DefaultCluster"
	// delayLevels are one second apart, so level n waits n seconds.
	delayLevels = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"
	// readyTimeout bounds each readiness wait (2 cores shared with builds).
	readyTimeout = 60 * time.Second
)

// levelDelay is the delay of level n under delayLevels.
func levelDelay(n int) time.Duration { return time.Duration(n) * time.Second }

// group is one name server and one ASYNC_MASTER (no slave) on loopback.
type group struct {
	dir        string
	namesrv    *harness.Process
	master     *harness.Process
	nsAddr     string
	masterAddr string
	storeDir   string
	admin      *remoting.Client
}

func startGroup(t *testing.T) *group {
	t.Helper()
	ports := harness.MustFreePorts(t, 4)
	g := &group{dir: t.TempDir(), nsAddr: harness.Addr(ports[0]), masterAddr: harness.Addr(ports[1])}
	g.storeDir = filepath.Join(g.dir, "master", "store")
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	ccfg := remoting.DefaultClientConfig()
	ccfg.Logger = log
	// One registration secret per run: it signs registrations and this client's admin writes.
	secret := harness.NewSecret()
	ccfg.Signer = acl.Signer(acl.BrokerAccessKey, secret)
	g.admin = remoting.NewClient(ccfg)
	t.Cleanup(func() { _ = g.admin.Close() })

	start := func(name, conf string) *harness.Process {
		dir := filepath.Join(g.dir, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		path := filepath.Join(dir, name+".conf")
		require.NoError(t, os.WriteFile(path, []byte(conf), 0o644))
		return harness.StartProcessT(t, harness.ProcessConfig{Name: name, Bin: harness.Binary(t, name), Args: []string{"-c", path}, Dir: dir})
	}
	g.namesrv = start("namesrv", fmt.Sprintf("listenPort=%d\nbindAddress=127.0.0.1\nregistryBackend=memory\nregistrationSecret=%s\n", ports[0], secret))
	g.waitProc(t, g.namesrv, func() error { return harness.DialOK(g.nsAddr) })

	var b strings.Builder
	fmt.Fprintf(&b, "brokerClusterName=%s\nbrokerName=%s\nbrokerId=0\nbrokerRole=ASYNC_MASTER\n", clusterName, brokerName)
	fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nhttpPort=%d\nbindAddress=127.0.0.1\n", ports[1], ports[2], ports[3])
	fmt.Fprintf(&b, "brokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\nnamesrvAddr=%s\nstorePathRootDir=%s\nregistrationSecret=%s\n", g.nsAddr, g.storeDir, secret)
	fmt.Fprintf(&b, "flushDiskType=ASYNC_FLUSH\nmappedFileSizeCommitLog=%d\nmaxMessageSize=%d\nmessageDelayLevel=%s\n", 4<<20, 1<<20, delayLevels)
	haSecret, _, err := secretfile.EnsureInstall(filepath.Join(g.dir, "secrets")) // a random HA secret per run
	require.NoError(t, err)
	fmt.Fprintf(&b, "haSecretFile=%s\n", haSecret)
	g.master = start("master", b.String())
	g.waitMaster(t)
	return g
}

// waitProc polls cond until it holds, failing early when p exits.
func (g *group) waitProc(t *testing.T, p *harness.Process, cond func() error) {
	t.Helper()
	var exited error
	err := harness.WaitFor(readyTimeout, func() error {
		if !p.Running() {
			exited = fmt.Errorf("%s exited: %v\n%s", p.Name(), p.ExitErr(), p.LogTail(4096))
			return nil
		}
		return cond()
	})
	if exited != nil {
		err = exited
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitMaster waits until a (re)started master serves and the name server routes TBW102 to it.
func (g *group) waitMaster(t *testing.T) {
	t.Helper()
	g.waitProc(t, g.master, func() error {
		if err := harness.DialOK(g.masterAddr); err != nil {
			return err
		}
		_, err := g.route("TBW102")
		return err
	})
}

func (g *group) invoke(addr string, code int32, ext map[string]string) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return g.admin.Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
}

// queueData is the part of a route's queue data the tests read.
type queueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
}

var intKey = regexp.MustCompile(`([{,])(-?\d+):`)

// route asks the name server for topic's route and returns its queue data once it names the
// master.
func (g *group) route(topic string) (queueData, error) {
	resp, err := g.invoke(g.nsAddr, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return queueData{}, err
	}
	if resp.Code != remoting.Success {
		return queueData{}, fmt.Errorf("route of %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	if !bytes.Contains(resp.Body, []byte(`"`+g.masterAddr+`"`)) {
		return queueData{}, fmt.Errorf("route of %s does not name the master: %s", topic, resp.Body)
	}
	var r struct {
		QueueDatas []queueData `json:"queueDatas"`
	}
	if err := json.Unmarshal(intKey.ReplaceAll(resp.Body, []byte(`$1"$2":`)), &r); err != nil {
		return queueData{}, fmt.Errorf("route of %s: %w: %s", topic, err, resp.Body)
	}
	for _, q := range r.QueueDatas {
		if q.BrokerName == brokerName {
			return q, nil
		}
	}
	return queueData{}, fmt.Errorf("route of %s has no queues of %s: %s", topic, brokerName, resp.Body)
}

func (g *group) waitRoute(t *testing.T, topic string) queueData {
	t.Helper()
	var q queueData
	harness.Eventually(t, readyTimeout, func() error {
		var err error
		q, err = g.route(topic)
		return err
	})
	return q
}

// createTopic creates topic on the master with n queues and waits for its route.
// waitGroupEmpty waits until the master lists no consumer in cgroup (GET_CONSUMER_LIST_BY_GROUP),
// for longer than a silent client's expiry (120 s) when one lingers.
func (g *group) waitGroupEmpty(t *testing.T, cgroup string) {
	t.Helper()
	require.NoError(t, harness.WaitFor(150*time.Second, func() error {
		resp, err := g.invoke(g.masterAddr, remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": cgroup})
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return nil // the group has no consumers (SYSTEM_ERROR "no consumer")
		}
		var body struct {
			ConsumerIDList []string `json:"consumerIdList"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return err
		}
		if len(body.ConsumerIDList) > 0 {
			return fmt.Errorf("group %s still lists %v", cgroup, body.ConsumerIDList)
		}
		return nil
	}))
}

func (g *group) createTopic(t *testing.T, topic string, n int) {
	t.Helper()
	ext := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": fmt.Sprint(n), "writeQueueNums": fmt.Sprint(n),
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}
	resp, err := g.invoke(g.masterAddr, remoting.UpdateAndCreateTopic, ext)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	g.waitRoute(t, topic)
}

// maxOffset is the master's max logical offset of topic/queueID.
func (g *group) maxOffset(topic string, queueID int) (int64, error) {
	resp, err := g.invoke(g.masterAddr, remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": fmt.Sprint(queueID)})
	if err != nil {
		return 0, err
	}
	if resp.Code != remoting.Success {
		return 0, fmt.Errorf("max offset of %s/%d: code %d %s", topic, queueID, resp.Code, resp.Remark)
	}
	return resp.ExtInt64("offset")
}

// delayOffsets is the master's GET_ALL_DELAY_OFFSET table: level -> next schedule-queue offset.
func (g *group) delayOffsets() (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := g.admin.Invoke(ctx, g.masterAddr, remoting.NewRequest(remoting.GetAllDelayOffset, nil, nil))
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("delay offsets: code %d %s", resp.Code, resp.Remark)
	}
	return decodeDelayOffsets(resp.Body)
}

func decodeDelayOffsets(body []byte) (map[int32]int64, error) {
	var s struct {
		OffsetTable map[int32]int64 `json:"offsetTable"`
	}
	if err := json.Unmarshal(intKey.ReplaceAll(body, []byte(`$1"$2":`)), &s); err != nil {
		return nil, fmt.Errorf("delay offsets: %w: %s", err, body)
	}
	return s.OffsetTable, nil
}

var instanceSeq atomic.Int64

// instance gives every client its own instance name, so clients of one test process get
// distinct client ids at the broker.
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), instanceSeq.Add(1))
}

func newProducer(t *testing.T, g *group, pgroup string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNameServer([]string{g.nsAddr}),
		producer.WithGroupName(pgroup),
		producer.WithInstanceName(instance(pgroup)),
		producer.WithRetry(2),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

type handler func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)

// startConsumer starts a clustering push consumer of cgroup on topic, from the first offset.
// The returned stop function shuts it down (also done at the end of the test).
func startConsumer(t *testing.T, g *group, cgroup, topic string, h handler, opts ...consumer.Option) func() {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNameServer([]string{g.nsAddr}),
		consumer.WithGroupName(cgroup),
		consumer.WithInstance(instance(cgroup)),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := rocketmq.NewPushConsumer(all...)
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, h))
	require.NoError(t, c.Start())
	var stopped atomic.Bool
	stop := func() {
		if stopped.CompareAndSwap(false, true) {
			_ = c.Shutdown()
		}
	}
	t.Cleanup(stop)
	return stop
}

func sendSync(t *testing.T, p rocketmq.Producer, msg *primitive.Message) *primitive.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, msg)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status, res.String())
	return res
}

package attacktest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namesrvRSSBudget is the most resident memory the name server may hold after the attacks
// (it starts at about 20 MiB; a 1 MiB cluster name must not be kept, let alone copied around).
const namesrvRSSBudget = 128 << 20

// fakeHA is the stranger's HA port: a slave that followed the stranger would dial it.
type fakeHA struct {
	ln    net.Listener
	dials atomic.Int64
}

func newFakeHA(t *testing.T) *fakeHA {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeHA{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.dials.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return f
}

// strangerRegister is a REGISTER_BROKER of the group's broker name as a broker sends it,
// unsigned.
func strangerRegister(cluster string, id int64, addr, haAddr string, epoch int64, topics ...string) *remoting.Command {
	return strangerRegisterAs(cluster, e2e.BrokerName, id, addr, haAddr, epoch, topics...)
}

func strangerRegisterAs(cluster, brokerName string, id int64, addr, haAddr string, epoch int64, topics ...string) *remoting.Command {
	w := route.TopicConfigSerializeWrapper{DataVersion: route.NewDataVersion(time.Now()), TopicConfigTable: map[string]route.TopicConfig{}}
	for _, tp := range topics {
		tc := route.NewTopicConfig(tp)
		tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
		w.TopicConfigTable[tp] = tc
	}
	body := route.AppendRegisterBrokerBody(nil, route.RegisterBrokerBody{TopicConfigSerializeWrapper: w, FilterServerList: []string{}})
	return remoting.NewRequest(remoting.RegisterBroker, map[string]string{
		"brokerName": brokerName, "brokerAddr": addr, "clusterName": cluster, "haServerAddr": haAddr,
		"brokerId": strconv.FormatInt(id, 10), "compressed": "false", "epoch": strconv.FormatInt(epoch, 10),
		"bodyCrc32": strconv.Itoa(int(route.BodyCRC32(body))),
	}, body)
}

func strangerUnregister(id int64, addr string) *remoting.Command {
	return remoting.NewRequest(remoting.UnregisterBroker, map[string]string{
		"brokerName": e2e.BrokerName, "brokerAddr": addr, "clusterName": e2e.ClusterName, "brokerId": strconv.FormatInt(id, 10),
	}, nil)
}

func rssOf(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// TestStrangerCannotTakeTheRoute plays every registration attack of a client without the
// registration secret against a SYNC_MASTER group whose slave has no haMasterAddress (it
// follows the master the name server names), and after each checks the invariants. The
// master's and the slave's name-server connections pass through taps: the master's gives the
// replay attack a recorded registration, the slave's shows every master it was told.
func TestStrangerCannotTakeTheRoute(t *testing.T) {
	var masterTap, slaveTap *tap
	cfg := e2e.DefaultGroupConfig()
	cfg.SlaveFollowsNameServer = true
	// The shortest period RocketMQ allows: the final check waits for a registration round.
	cfg.ExtraMaster = []string{"registerNameServerPeriod=10000"}
	cfg.ExtraSlave = []string{"registerNameServerPeriod=10000"}
	cfg.NamesrvFor = func(id int, ns string) string {
		tp := newTap(t, ns)
		if id == 0 {
			masterTap = tp
		} else {
			slaveTap = tp
		}
		return tp.addr()
	}
	g := e2e.StartGroup(t, cfg)
	g.CreateTopic(t, topic, 4)

	fake := newFakeHA(t)
	strangerAddr := harness.Addr(harness.MustFreePorts(t, 1)[0])
	x := remoting.NewClient(remoting.DefaultClientConfig()) // the stranger: no secret, no signer
	t.Cleanup(func() { _ = x.Close() })
	ask := func(t *testing.T, req *remoting.Command) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := x.Invoke(ctx, g.NamesrvAddr, req)
		require.NoError(t, err)
		return resp
	}
	// refused is not fatal: the invariants after it show what an accepted attack did.
	refused := func(t *testing.T, resp *remoting.Command, code int32, remark string) {
		t.Helper()
		assert.Equal(t, remoting.ResponseName(code), remoting.ResponseName(resp.Code), resp.Remark)
		assert.Contains(t, resp.Remark, remark)
	}

	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{g.NamesrvAddr}), producer.WithGroupName("attack-pg"),
		producer.WithInstanceName(fmt.Sprintf("attack-%d", os.Getpid())), producer.WithRetry(2))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	h := &e2e.History{}

	check := func(t *testing.T, step string) {
		t.Helper()
		for _, pr := range []*harness.Process{g.Namesrv, g.Master, g.Slave} {
			require.True(t, pr.Running(), "%s: %s exited: %v\n%s", step, pr.Name(), pr.ExitErr(), pr.LogTail(4096))
		}
		for _, tp := range []string{topic, "TBW102"} {
			r, err := g.Route(tp)
			require.NoError(t, err, step)
			require.Equal(t, map[int]string{0: g.MasterAddr, 1: g.SlaveAddr}, r.Addrs(), "%s: route of %s", step, tp)
			if tp == topic {
				require.Equal(t, 4, r.WriteQueues(), "%s: route of %s", step, tp)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := g.Admin.Invoke(ctx, g.NamesrvAddr, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
		cancel()
		require.NoError(t, err)
		ci, err := route.DecodeClusterInfo(resp.Body)
		require.NoError(t, err)
		require.Equal(t, map[string][]string{e2e.ClusterName: {e2e.BrokerName}}, ci.ClusterAddrTable, step)
		require.Equal(t, int64(0), fake.dials.Load(), "%s: a slave dialled the stranger's HA port", step)

		// A normal send: SYNC_MASTER answers SEND_OK only once the slave holds it.
		msg := primitive.NewMessage(topic, []byte("after "+step))
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := p.SendSync(sctx, msg)
		scancel()
		h.Add(msg, res, err)
		require.NoError(t, err, step)
		require.Equal(t, primitive.SendOK, res.Status, "%s: %s", step, e2e.StatusName(res.Status))
		st, err := g.MasterStatus()
		require.NoError(t, err)
		require.NotNil(t, st.HAMaster)
		streaming := false
		for _, s := range st.HAMaster.Slaves {
			streaming = streaming || (s.Streaming && s.InSync)
		}
		require.True(t, streaming, "%s: the slave does not replicate from the master: %+v", step, st.HAMaster.Slaves)
		g.WaitSlaveCaughtUp(t)
		cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
		require.NoError(t, h.Check(cctx, g.Admin, g.MasterAddr, g.SlaveAddr), step)
		ccancel()
	}
	check(t, "start")
	slaveAnswersBefore := len(slaveTap.answers(remoting.RegisterBroker))

	t.Run("HigherEpochMaster", func(t *testing.T) {
		refused(t, ask(t, strangerRegister(e2e.ClusterName, 0, strangerAddr, fake.ln.Addr().String(), 1<<40, topic, "TBW102")),
			remoting.NoPermission, "registrationSecret")
		check(t, "a higher-epoch master registration")
	})
	t.Run("SlaveIDAtMasterAddress", func(t *testing.T) {
		refused(t, ask(t, strangerRegister(e2e.ClusterName, 1, g.MasterAddr, fake.ln.Addr().String(), 0)), remoting.NoPermission, "registrationSecret")
		check(t, "brokerId 1 at the master's address")
	})
	t.Run("MasterWithEmptyTopicTable", func(t *testing.T) {
		refused(t, ask(t, strangerRegister(e2e.ClusterName, 0, g.MasterAddr, g.MasterHA, 0)), remoting.NoPermission, "registrationSecret")
		check(t, "the master with an empty topic table")
	})
	t.Run("HugeClusterName", func(t *testing.T) {
		huge := strings.Repeat("c", 1<<20)
		for i := 0; i < 20; i++ {
			refused(t, ask(t, strangerRegisterAs(huge, "broker-x"+strconv.Itoa(i), 0, strangerAddr, fake.ln.Addr().String(), 0, topic)),
				remoting.SystemError, "maxClusterNameLength")
		}
		check(t, "a 1 MiB cluster name")
		rss, err := rssOf(g.Namesrv.PID())
		require.NoError(t, err)
		t.Logf("name server RSS after 20 registrations with a 1 MiB cluster name: %d MiB (budget %d MiB)", rss>>20, namesrvRSSBudget>>20)
		require.Less(t, rss, int64(namesrvRSSBudget))
	})
	t.Run("UnregisterMasterAndSlave", func(t *testing.T) {
		refused(t, ask(t, strangerUnregister(0, g.MasterAddr)), remoting.NoPermission, "registrationSecret")
		refused(t, ask(t, strangerUnregister(1, g.SlaveAddr)), remoting.NoPermission, "registrationSecret")
		check(t, "unregistering the master and the slave")
	})
	t.Run("ReplayRecordedRegistration", func(t *testing.T) {
		// The topic created above made the master register again after its first registration.
		var regs []frame
		harness.Eventually(t, 30*time.Second, func() error {
			if regs = masterTap.requests(remoting.RegisterBroker); len(regs) < 2 {
				return fmt.Errorf("%d master registrations recorded", len(regs))
			}
			return nil
		})
		first, last := regs[0], regs[len(regs)-1]
		require.NotEmpty(t, first.cmd.Ext("Signature"), "the master signs its registrations")
		refused(t, replay(t, g.NamesrvAddr, first.raw), remoting.NoPermission, "not after")
		refused(t, replay(t, g.NamesrvAddr, last.raw), remoting.NoPermission, "not after")
		// The recorded registration turned into an UNREGISTER_BROKER (the signature does not
		// cover the request code).
		unreg := *first.cmd
		unreg.Code = remoting.UnregisterBroker
		raw, err := remoting.EncodeFrame(nil, &unreg)
		require.NoError(t, err)
		refused(t, replay(t, g.NamesrvAddr, raw), remoting.NoPermission, "registrationDigest")
		check(t, "a recorded registration played again")
	})

	// The slave keeps registering while the stranger keeps claiming the master role: every
	// answer it gets names the real master's HA address, and it never dials the stranger.
	t.Run("SlaveFollowsOnlyTheRealMaster", func(t *testing.T) {
		next := time.Now()
		harness.Eventually(t, 40*time.Second, func() error {
			if time.Now().After(next) {
				refused(t, ask(t, strangerRegister(e2e.ClusterName, 0, strangerAddr, fake.ln.Addr().String(), 1<<40, topic, "TBW102")),
					remoting.NoPermission, "registrationSecret")
				next = time.Now().Add(500 * time.Millisecond)
			}
			if n := len(slaveTap.answers(remoting.RegisterBroker)); n <= slaveAnswersBefore {
				return fmt.Errorf("the slave has not registered since the attacks began (%d answers)", n)
			}
			return nil
		})
		for i, a := range slaveTap.answers(remoting.RegisterBroker) {
			require.Equal(t, remoting.Success, a.Code, "answer %d: %s", i, a.Remark)
			require.Equal(t, g.MasterHA, a.Ext("haServerAddr"), "answer %d told the slave another master", i)
		}
		check(t, "the slave's registration round")
	})
}

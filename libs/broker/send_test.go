package broker

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func TestSendAndPull(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	addr := b.Addr()

	resp := send(t, c, addr, "TopicA", 1, "TagA", "hello")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.True(t, resp.IsResponse())
	require.Equal(t, "1", resp.Ext("queueId"))
	require.Equal(t, "0", resp.Ext("queueOffset"))
	require.Equal(t, "true", resp.Ext("stored"))
	require.Equal(t, "1", resp.Ext("replicas"))
	require.Equal(t, "IDhello", resp.Ext("transactionId"))
	require.Equal(t, "DefaultRegion", resp.Ext("MSG_REGION"))
	ap, off, err := commitlog.ParseOffsetMsgID(resp.Ext("msgId"))
	require.NoError(t, err)
	require.Equal(t, b.storeHost, ap)
	require.Equal(t, int64(0), off)

	// Auto-created from TBW102 with min(4, 8) queues.
	tc, ok := b.tables.Topics.Get("TopicA")
	require.True(t, ok)
	require.Equal(t, int32(4), tc.WriteQueueNums)
	require.Equal(t, int32(6), tc.Perm)

	// WAIT=false is honoured and dropped from the stored properties.
	resp = invoke(t, c, addr, remoting.SendMessage, sendExt("TopicA", 1, props("WAIT", "false", "TAGS", "TagB")), []byte("second"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "1", resp.Ext("queueOffset"))
	// Pulls answer what is indexed; the dispatcher runs behind the append.
	require.NoError(t, b.store.WaitDispatched(b.store.MaxOffset(), time.Now().Add(10*time.Second)))

	hb := invoke(t, c, addr, remoting.HeartBeat, nil, heartbeatBody("c1", "cg", map[string]string{"TopicA": "*"}))
	require.Equal(t, remoting.Success, hb.Code, hb.Remark)
	require.GreaterOrEqual(t, hb.Version, int16(317))

	pr := invoke(t, c, addr, remoting.PullMessage, pullExt("cg", "TopicA", 1, 0, 2, 1000), nil)
	require.Equal(t, remoting.Success, pr.Code, pr.Remark)
	require.Equal(t, "2", pr.Ext("nextBeginOffset"))
	require.Equal(t, "0", pr.Ext("minOffset"))
	require.Equal(t, "2", pr.Ext("maxOffset"))
	require.Equal(t, "0", pr.Ext("suggestWhichBrokerId"))
	recs := decodeRecords(t, pr.Body)
	require.Len(t, recs, 2)
	require.Equal(t, "hello", string(recs[0].Body))
	p := commitlog.ParseProperties(recs[1].Properties)
	require.Equal(t, "TagB", p["TAGS"])
	require.Equal(t, "DefaultCluster", p["CLUSTER"])
	_, hasWait := p["WAIT"]
	require.False(t, hasWait)
	require.Equal(t, int64(1), recs[1].QueueOffset)
}

func TestSendV2AndBatch(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	short := map[string]string{"a": "pg", "b": "TopicB", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1",
		"h": "0", "i": props("TAGS", "x"), "j": "0", "k": "false", "l": "0", "m": "false", "n": "broker-a"}
	resp := invoke(t, c, b.Addr(), remoting.SendMessageV2, short, []byte("v2"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	short["m"] = "true"
	short["i"] = ""
	body := batchBody([]string{"b1", "b2", "b3"}, []string{props("TAGS", "t1"), "", props("KEYS", "k3")})
	resp = invoke(t, c, b.Addr(), remoting.SendBatchMessage, short, body)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "1", resp.Ext("queueOffset"))
	require.Len(t, strings.Split(resp.Ext("msgId"), ","), 3)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("TopicB", 0) == 4 }, 5*time.Second, 5*time.Millisecond)

	// A broken batch body is refused and the broker keeps serving.
	resp = invoke(t, c, b.Addr(), remoting.SendBatchMessage, short, []byte{0, 0, 0, 99, 1, 2})
	require.Equal(t, remoting.MessageIllegal, resp.Code)
	short["m"] = "false"
	resp = invoke(t, c, b.Addr(), remoting.SendMessageV2, short, []byte("again"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

func TestSendErrors(t *testing.T) {
	cfg := testConfig(t)
	cfg.AutoCreateTopicEnable = false
	b := startBroker(t, cfg)
	c := newTestClient(t)

	resp := send(t, c, b.Addr(), "Missing", 0, "", "x")
	require.Equal(t, remoting.TopicNotExist, resp.Code)

	resp = invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "T2", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, remoting.Success, send(t, c, b.Addr(), "T2", 1, "", "ok").Code)
	require.Equal(t, remoting.SystemError, send(t, c, b.Addr(), "T2", 5, "", "bad queue").Code)
	resp = send(t, c, b.Addr(), "T2", -1, "", "any queue")
	require.Equal(t, remoting.Success, resp.Code)

	resp = send(t, c, b.Addr(), "bad topic!", 0, "", "x")
	require.Equal(t, remoting.MessageIllegal, resp.Code)

	big := make([]byte, cfg.MaxMessageSize+1)
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("T2", 0, ""), big)
	require.Equal(t, remoting.MessageIllegal, resp.Code)

	resp = invoke(t, c, b.Addr(), remoting.SendMessage, map[string]string{"topic": "T2"}, []byte("no queue id"))
	require.Equal(t, remoting.SystemError, resp.Code)

	// Read-only topic.
	invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "RO", "readQueueNums": "1", "writeQueueNums": "1", "perm": "4"}, nil)
	require.Equal(t, remoting.NoPermission, send(t, c, b.Addr(), "RO", 0, "", "x").Code)
}

func TestSlaveRefusesWrites(t *testing.T) {
	cfg := testConfig(t)
	cfg.BrokerRole = RoleSlave
	cfg.BrokerID = 1
	cfg.HAMasterAddress = "127.0.0.1:1" // nobody there; the slave keeps retrying
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := send(t, c, b.Addr(), "TopicA", 0, "", "x")
	require.Equal(t, remoting.ServiceNotAvailable, resp.Code)
	require.Contains(t, resp.Remark, "slave is read-only")
	resp = invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, map[string]string{"group": "g", "offset": "0"}, nil)
	require.Equal(t, remoting.ServiceNotAvailable, resp.Code)
	// Reads still work.
	resp = invoke(t, c, b.Addr(), remoting.GetMaxOffset, map[string]string{"topic": "TopicA", "queueId": "0"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "0", resp.Ext("offset"))
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HASecret = testHASecret
	require.NoError(t, cfg.Validate())
	cfg.BrokerRole = RoleSlave
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "brokerId")
	cfg = DefaultConfig()
	cfg.BrokerID = 1
	require.ErrorContains(t, cfg.Validate(), "brokerRole=ASYNC_MASTER needs brokerId=0")
	cfg = DefaultConfig()
	cfg.BrokerRole = RoleSyncMaster
	cfg.InSyncReplicas = 1
	require.ErrorContains(t, cfg.Validate(), "inSyncReplicas")
	cfg = DefaultConfig()
	cfg.HAMasterAddress = "10.0.0.1:10912"
	require.ErrorContains(t, cfg.Validate(), "haMasterAddress")
	cfg = DefaultConfig()
	cfg.FlushDiskType = "SOMETIMES"
	require.ErrorContains(t, cfg.Validate(), "flushDiskType")
	require.Equal(t, 10912, DefaultConfig().EffectiveHAListenPort())
	cfg = DefaultConfig()
	cfg.NamesrvAddr = "127.0.0.1:9876; 127.0.0.2:9876"
	require.Equal(t, []string{"127.0.0.1:9876", "127.0.0.2:9876"}, cfg.NamesrvAddrs())
}

func TestSyncFlush(t *testing.T) {
	cfg := testConfig(t)
	cfg.FlushDiskType = FlushSync
	cfg.SyncFlushTimeout = 300 * time.Millisecond
	var stall atomic.Bool
	release := make(chan struct{})
	cfg.StoreFS = vfs.NewErrorFS(vfs.Default, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && stall.Load() && strings.Contains(path, "commitlog") {
			<-release
		}
		return nil
	}))
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := send(t, c, b.Addr(), "SF", 0, "", "durable")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "true", resp.Ext("flushed"))
	require.GreaterOrEqual(t, b.store.FlushedOffset(), int64(1))

	// The disk stalls: the send is stored but not fsynced in time.
	stall.Store(true)
	resp = send(t, c, b.Addr(), "SF", 0, "", "stalled")
	require.Equal(t, remoting.FlushDiskTimeout, resp.Code, resp.Remark)
	require.Equal(t, "false", resp.Ext("flushed"))
	require.Equal(t, "true", resp.Ext("stored"))
	stall.Store(false)
	close(release)

	// WAIT=false does not wait for the disk.
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("SF", 0, props("WAIT", "false")), []byte("nowait"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

func TestStartFailureCleansUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg := testConfig(t)
	cfg.ListenPort = ln.Addr().(*net.TCPAddr).Port // taken
	b, err := New(cfg, testLogger())
	require.NoError(t, err)
	require.Error(t, b.Start())
	require.ErrorIs(t, b.Start(), ErrClosed)
	require.NoError(t, b.Shutdown(context.Background()))

	// The HA port taken: the store opened before is closed again (a new broker can open it).
	cfg = testConfig(t)
	cfg.HAListenPort = ln.Addr().(*net.TCPAddr).Port
	cfg.ListenPort = 0
	b, err = New(cfg, testLogger())
	require.NoError(t, err)
	require.Error(t, b.Start())
	cfg.HAListenPort = 0
	b2 := startBroker(t, cfg)
	require.NotEmpty(t, b2.Addr())
}

func TestDelayedSend(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("DT", 0, props("DELAY", "5", "TAGS", "late")), []byte("later"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, phys := mustParseMsgID(t, resp.Ext("msgId"))
	raw, err := b.store.ReadRecord(phys)
	require.NoError(t, err)
	sched, _, err := commitlog.DecodeRecord(raw)
	require.NoError(t, err)
	require.Equal(t, "SCHEDULE_TOPIC_XXXX", sched.Topic)
	require.Equal(t, int32(4), sched.QueueID)

	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("DT", 0) == 1 }, 10*time.Second, 5*time.Millisecond)
	g := b.store.GetMessages("DT", 0, 0, 1, 0, nil)
	require.Len(t, g.Records, 1)
	rec, _, err := commitlog.DecodeRecord(g.Records[0])
	require.NoError(t, err)
	require.Equal(t, "later", string(rec.Body))
	p := commitlog.ParseProperties(rec.Properties)
	require.Equal(t, "late", p["TAGS"])
	require.Equal(t, "DT", p["REAL_TOPIC"])
	require.GreaterOrEqual(t, rec.StoreTimestamp-sched.StoreTimestamp, int64(100), "delivered before its 100ms level")
	_, hasDelay := p["DELAY"]
	require.False(t, hasDelay)
}

func TestBlankIsTrimSpace(t *testing.T) {
	for _, s := range []string{"", " ", "\t\r\n", "\u00a0", "\u0085 ", "\u2003", "1", " 1", "1 ", "\u00a01", "-", "é", "\x80"} {
		require.Equal(t, strings.TrimSpace(s) == "", blank(s), "%q", s)
	}
}

package broker

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/broker/txn"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// sendHalf sends a transactional half as the clients do (TRAN_MSG, PGROUP, sysFlag PREPARED).
func sendHalf(t *testing.T, c *remoting.Client, addr, topic, body string) *remoting.Command {
	t.Helper()
	ext := sendExt(topic, 1, props("TAGS", "tx", "KEYS", "k-"+body, "UNIQ_KEY", "ID"+body, txn.PropTranMsg, "true", txn.PropProducerGroup, "pg"))
	ext["sysFlag"] = strconv.Itoa(int(txn.TypePrepared))
	return invoke(t, c, addr, remoting.SendMessage, ext, []byte(body))
}

func endExt(t *testing.T, sendResp *remoting.Command, state int32, fromCheck bool) map[string]string {
	t.Helper()
	_, off := mustParseMsgID(t, sendResp.Ext("msgId"))
	return map[string]string{
		"producerGroup": "pg", "tranStateTableOffset": sendResp.Ext("queueOffset"),
		"commitLogOffset": strconv.FormatInt(off, 10), "commitOrRollback": strconv.Itoa(int(state)),
		"fromTransactionCheck": strconv.FormatBool(fromCheck), "msgId": sendResp.Ext("msgId"),
		"transactionId": sendResp.Ext("transactionId"),
	}
}

// visible returns the bodies stored in topic's queue 1.
func visible(t *testing.T, b *Broker, topic string) []string {
	t.Helper()
	require.NoError(t, b.store.WaitDispatched(b.store.MaxOffset(), time.Now().Add(10*time.Second)))
	res := b.store.GetMessages(topic, 1, 0, 1000, 1<<20, nil)
	var out []string
	for _, raw := range res.Records {
		rec, _, err := commitlog.DecodeRecord(raw)
		require.NoError(t, err)
		out = append(out, string(rec.Body))
	}
	return out
}

func TestTransactionCommitRollbackIdempotent(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	addr := b.Addr()
	require.Equal(t, remoting.Success, send(t, c, addr, "TxT", 1, "", "plain").Code)

	h1 := sendHalf(t, c, addr, "TxT", "one")
	require.Equal(t, remoting.Success, h1.Code, h1.Remark)
	require.Equal(t, "1", h1.Ext("queueId"), "the answer names the real queue")
	require.Equal(t, "0", h1.Ext("queueOffset"), "and the half-queue offset")
	require.Equal(t, "IDone", h1.Ext("transactionId"))
	h2 := sendHalf(t, c, addr, "TxT", "two")
	require.Equal(t, remoting.Success, h2.Code, h2.Remark)
	require.Equal(t, []string{"plain"}, visible(t, b, "TxT"), "halves are invisible")

	// The half record: real topic and queue in properties, transaction type cleared.
	_, off := mustParseMsgID(t, h1.Ext("msgId"))
	raw, err := b.store.ReadRecord(off)
	require.NoError(t, err)
	rec, _, err := commitlog.DecodeRecord(raw)
	require.NoError(t, err)
	require.Equal(t, txn.HalfTopic, rec.Topic)
	p := commitlog.ParseProperties(rec.Properties)
	require.Equal(t, "TxT", p[txn.PropRealTopic])
	require.Equal(t, "1", p[txn.PropRealQueueID])
	require.Equal(t, int32(0), rec.SysFlag&txn.TypeMask)

	// Wrong group, offsets: refused with RocketMQ's remarks.
	bad := endExt(t, h1, txn.TypeCommit, false)
	bad["producerGroup"] = "other"
	r := invoke(t, c, addr, remoting.EndTransaction, bad, nil)
	require.Equal(t, remoting.SystemError, r.Code)
	require.Equal(t, "The producer group wrong", r.Remark)
	bad = endExt(t, h1, txn.TypeCommit, false)
	bad["tranStateTableOffset"] = "7"
	require.Equal(t, "The transaction state table offset wrong", invoke(t, c, addr, remoting.EndTransaction, bad, nil).Remark)
	bad = endExt(t, h1, txn.TypeCommit, false)
	bad["commitLogOffset"] = "0" // the plain message: not a half
	require.Equal(t, "Find prepared transaction message failed", invoke(t, c, addr, remoting.EndTransaction, bad, nil).Remark)

	// Commit: visible once, with its tags, keys and properties; a second commit changes nothing.
	r = invoke(t, c, addr, remoting.EndTransaction, endExt(t, h1, txn.TypeCommit, false), nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	r = invoke(t, c, addr, remoting.EndTransaction, endExt(t, h1, txn.TypeCommit, true), nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	// Rollback of the other: never visible; a late commit of it changes nothing either.
	r = invoke(t, c, addr, remoting.EndTransaction, endExt(t, h2, txn.TypeRollback, false), nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	r = invoke(t, c, addr, remoting.EndTransaction, endExt(t, h2, txn.TypeCommit, false), nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.Equal(t, []string{"plain", "one"}, visible(t, b, "TxT"))

	res := b.store.GetMessages("TxT", 1, 1, 1, 1<<20, nil)
	require.Len(t, res.Records, 1)
	cm, _, err := commitlog.DecodeRecord(res.Records[0])
	require.NoError(t, err)
	cp := commitlog.ParseProperties(cm.Properties)
	require.Equal(t, "tx", cp["TAGS"])
	require.Equal(t, "k-one", cp["KEYS"])
	require.Equal(t, "IDone", cp["UNIQ_KEY"])
	require.Empty(t, cp[txn.PropRealTopic])
	require.Empty(t, cp[txn.PropTranMsg])
	require.Equal(t, txn.TypeCommit, cm.SysFlag&txn.TypeMask)
	require.Equal(t, off, cm.PreparedTransactionOffset)

	// Two op records (TAGS=d), bodies the half offsets.
	ops := b.store.GetMessages(txn.OpTopic, 0, 0, 10, 1<<20, nil)
	require.Len(t, ops.Records, 2)
	for i, raw := range ops.Records {
		op, _, err := commitlog.DecodeRecord(raw)
		require.NoError(t, err)
		require.Equal(t, "d", commitlog.ParseProperties(op.Properties)["TAGS"])
		require.Equal(t, strconv.Itoa(i), string(op.Body))
	}
	st := txnInfo(b)
	require.Equal(t, "1", st["transactionCommits"])
	require.Equal(t, "1", st["transactionRollbacks"])
	require.Equal(t, "2", st["transactionDuplicateEnds"])

	// Batches cannot be transactional; rejectTransactionMessage refuses halves.
	ext := sendExt("TxT", 1, "")
	ext["sysFlag"] = strconv.Itoa(int(txn.TypePrepared))
	ext["batch"] = "true"
	require.Equal(t, remoting.MessageIllegal, invoke(t, c, addr, remoting.SendBatchMessage, ext, batchBody([]string{"a"}, []string{""})).Code)
}

// TestTransactionHalfSyncMaster: a half is answered like any send: a SYNC_MASTER with no slave
// in sync stores it and answers SLAVE_NOT_AVAILABLE (the clients then roll back).
func TestTransactionHalfSyncMaster(t *testing.T) {
	b := startBroker(t, syncMasterConfig(t))
	c := newTestClient(t)
	r := sendHalf(t, c, b.Addr(), "TxS", "s1")
	require.Equal(t, remoting.SlaveNotAvailable, r.Code, r.Remark)
	require.Equal(t, "true", r.Ext("stored"))
	require.Equal(t, "1", r.Ext("replicas"))
	r = invoke(t, c, b.Addr(), remoting.EndTransaction, endExt(t, r, txn.TypeRollback, false), nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.Empty(t, visible(t, b, "TxS"))
}

func TestTransactionRejectAndSlave(t *testing.T) {
	cfg := testConfig(t)
	cfg.RejectTransactionMessage = true
	b := startBroker(t, cfg)
	c := newTestClient(t)
	r := sendHalf(t, c, b.Addr(), "TxT", "x")
	require.Equal(t, remoting.NoPermission, r.Code)
	require.Contains(t, r.Remark, "sending transaction message is forbidden")

	scfg := testConfig(t)
	scfg.BrokerRole, scfg.BrokerID = RoleSlave, 1
	scfg.HAMasterAddress = "127.0.0.1:1"
	s := startBroker(t, scfg)
	r = invoke(t, c, s.Addr(), remoting.EndTransaction, map[string]string{
		"producerGroup": "pg", "tranStateTableOffset": "0", "commitLogOffset": "0", "commitOrRollback": "8"}, nil)
	require.Equal(t, remoting.SlaveNotAvailable, r.Code)
}

func TestTransactionCheckBack(t *testing.T) {
	cfg := testConfig(t)
	cfg.TransactionTimeOut = 200 * time.Millisecond
	cfg.TransactionCheckInterval = 100 * time.Millisecond
	cfg.TransactionCheckMax = 2
	b := startBroker(t, cfg)
	c := newTestClient(t)
	addr := b.Addr()

	// The producer: registered by heartbeat, answers check-backs as the client does.
	var checks atomic.Int32
	answer := atomic.Int32{}
	answer.Store(txn.TypeNot)
	c.HandleRequest(remoting.CheckTransactionState, func(req *remoting.Command) *remoting.Command {
		checks.Add(1)
		msgs, _, err := commitlog.DecodeRecord(req.Body)
		if err != nil || msgs.Topic != "TxT" || commitlog.ParseProperties(msgs.Properties)[txn.PropProducerGroup] != "pg" {
			t.Errorf("check-back body: %v %+v", err, msgs)
			return nil
		}
		ext := map[string]string{
			"producerGroup": "pg", "tranStateTableOffset": req.Ext("tranStateTableOffset"),
			"commitLogOffset": req.Ext("commitLogOffset"), "commitOrRollback": strconv.Itoa(int(answer.Load())),
			"fromTransactionCheck": "true", "msgId": req.Ext("msgId"), "transactionId": req.Ext("transactionId"),
		}
		go func() { _ = c.InvokeOneway(t.Context(), addr, remoting.NewRequest(remoting.EndTransaction, ext, nil)) }()
		return nil
	})
	hb := invoke(t, c, addr, remoting.HeartBeat, nil, heartbeatBody("p1", "cg", map[string]string{"TxT": "*"}))
	require.Equal(t, remoting.Success, hb.Code, hb.Remark)

	require.Equal(t, remoting.Success, sendHalf(t, c, addr, "TxT", "u1").Code)
	// Unknown at first: checked again, then committed by the check-back.
	require.Eventually(t, func() bool { return checks.Load() >= 1 }, 20*time.Second, 20*time.Millisecond)
	answer.Store(txn.TypeCommit)
	require.Eventually(t, func() bool { return len(visible(t, b, "TxT")) == 1 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"u1"}, visible(t, b, "TxT"))

	// Never answered: moved to TRANS_CHECK_MAX_TIME_TOPIC after transactionCheckMax checks.
	answer.Store(txn.TypeNot)
	require.Equal(t, remoting.Success, sendHalf(t, c, addr, "TxT", "u2").Code)
	discarded := func() []string {
		require.NoError(t, b.store.WaitDispatched(b.store.MaxOffset(), time.Now().Add(10*time.Second)))
		var out []string
		for _, raw := range b.store.GetMessages(txn.CheckMaxTimeTopic, 0, 0, 10, 1<<20, nil).Records {
			rec, _, err := commitlog.DecodeRecord(raw)
			require.NoError(t, err)
			out = append(out, string(rec.Body))
		}
		return out
	}
	require.Eventually(t, func() bool { return slices.Contains(discarded(), "u2") }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"u1"}, visible(t, b, "TxT"))
	half, ok := b.tables.Offsets.Query(txn.ProgressGroup, txn.HalfTopic, 0)
	require.True(t, ok)
	require.Positive(t, half)
	// The counters follow the store (a round updates them after its appends).
	require.Eventually(t, func() bool {
		st := txnInfo(b)
		return st["transactionDiscarded"] == strconv.Itoa(len(discarded())) && st["transactionPendingHalves"] == "0"
	}, 20*time.Second, 20*time.Millisecond)
}

func txnInfo(b *Broker) map[string]string {
	m := map[string]string{}
	b.txnRuntimeInfo(m)
	return m
}

// TestTransactionCommitWaitsForTimer: a half carrying a timer is not timed at its send (it is a
// half), and its commit waits for the timer from the commit instead of becoming visible at once.
func TestTransactionCommitWaitsForTimer(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	addr := b.Addr()
	ext := sendExt("TxTimer", 1, props("TAGS", "tx", "UNIQ_KEY", "IDtimer", txn.PropTranMsg, "true",
		txn.PropProducerGroup, "pg", timer.PropertyDelaySec, "3600"))
	ext["sysFlag"] = strconv.Itoa(int(txn.TypePrepared))
	h := invoke(t, c, addr, remoting.SendMessage, ext, []byte("later"))
	require.Equal(t, remoting.Success, h.Code, h.Remark)
	require.NoError(t, b.store.WaitDispatched(b.store.MaxOffset(), time.Now().Add(10*time.Second)))
	require.Equal(t, int64(0), b.store.QueueMaxOffset(timer.Topic, 0), "a half is not timed at its send")

	r := invoke(t, c, addr, remoting.EndTransaction, endExt(t, h, txn.TypeCommit, false), nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.Empty(t, visible(t, b, "TxTimer"), "the committed message waits for its timer")
	res := b.store.GetMessages(timer.Topic, 0, 0, 10, 1<<20, nil)
	require.Len(t, res.Records, 1)
	rec, _, err := commitlog.DecodeRecord(res.Records[0])
	require.NoError(t, err)
	p := commitlog.ParseProperties(rec.Properties)
	require.Equal(t, "TxTimer", p[timer.PropertyRealTopic])
	require.Equal(t, "later", string(rec.Body))
}

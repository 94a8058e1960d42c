package broker

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/broker/txn"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// Transactional messages, as RocketMQ 4.9/5.x serve them (package txn holds the pure parts):
//
//   - A half send (TRAN_MSG=true, or sysFlag PREPARED) goes through the normal send path,
//     stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC, REAL_QID and PGROUP, and is
//     answered like any send (SYNC_MASTER: SEND_OK once replicated). Consumers never see it.
//     rejectTransactionMessage refuses it with NO_PERMISSION.
//   - END_TRANSACTION (37) names the half by its CommitLog offset and half-queue offset. A
//     commit stores the message rebuilt from the half in its real topic and queue (visible
//     once), then an op record (RMQ_SYS_TRANS_OP_HALF_TOPIC, TAGS=d, body the half-queue
//     offset); a rollback writes only the op record. A half already resolved (an op record
//     names it, the scan passed it, or another half of the same transaction key was
//     resolved) is answered SUCCESS and changes nothing: a repeated commit never delivers
//     twice. A slave answers SLAVE_NOT_AVAILABLE.
//   - The check service runs on the master every transactionCheckInterval: halves older than
//     transactionTimeOut with no op record are copied to the half queue with
//     TRANSACTION_CHECK_TIMES+1 and a CHECK_TRANSACTION_STATE (39, one-way) for the copy goes to
//     a producer of the group connected here; after transactionCheckMax checks a half goes to
//     TRANS_CHECK_MAX_TIME_TOPIC. Its progress (the next half-queue offset and the op-queue
//     offset below which every op is done) is stored as consumer offsets of CID_RMQ_SYS_TRANS,
//     so it persists and reaches the slaves with the other offsets: a promoted slave continues
//     from there.
type txnService struct {
	b        *Broker
	cfg      txn.Config
	interval time.Duration
	log      logrus.FieldLogger
	wake     chan struct{}

	mu   sync.Mutex
	core *txn.Checker // nil until loaded under the current master view
	view *roleView    // the view core was loaded under

	halfSends, halfRefused, commits, rollbacks, unknowns       atomic.Uint64
	duplicates, checks, checksNoProducer, discarded, badHalves atomic.Uint64
	halfNext, removed                                          atomic.Int64 // for the pending gauge
}

// txnReadBatch is how many records one read of the half or op queue takes.
const txnReadBatch = 32

// txnMaxScan bounds the halves one check round examines (the next round continues).
const txnMaxScan = 100000

func newTxnService(b *Broker) *txnService {
	cfg := txn.DefaultConfig()
	cfg.TransactionTimeout = b.cfg.TransactionTimeOut
	cfg.CheckMax = b.cfg.TransactionCheckMax
	// A resolved transaction's key is remembered over more than one check round, so that a
	// check copy made just before the producer's answer arrived is not delivered again.
	cfg.KeyWindow = max(cfg.KeyWindow, 3*b.cfg.TransactionCheckInterval+b.cfg.TransactionTimeOut)
	return &txnService{b: b, cfg: cfg, interval: b.cfg.TransactionCheckInterval,
		log: b.log.WithField("component", "transaction"), wake: make(chan struct{}, 1)}
}

func (t *txnService) run() {
	defer t.b.wg.Done()
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		select {
		case <-t.b.ctx.Done():
			return
		case <-tick.C:
		case <-t.wake:
		}
		t.round()
	}
}

// prepareHalf turns a half send into its half-queue message; it answers the request itself
// and reports false when the send is refused.
func (b *Broker) prepareHalf(w remoting.ResponseWriter, req *remoting.Command, msg *commitlog.Message, pm map[string]string, producerGroup string) bool {
	t := b.txn
	if b.live.rejectTransactionMessage.Load() {
		t.halfRefused.Add(1)
		b.reply(w, req, remoting.NoPermission, "the broker["+b.brokerAddr+"] sending transaction message is forbidden")
		return false
	}
	if err := txn.ToHalf(msg, pm, producerGroup); err != nil {
		b.reply(w, req, remoting.MessageIllegal, err.Error())
		return false
	}
	t.halfSends.Add(1)
	return true
}

// refuseBatchTxn refuses a batch with a transaction type, as RocketMQ's CommitLog does.
func (b *Broker) refuseBatchTxn(w remoting.ResponseWriter, req *remoting.Command, sysFlag int32) bool {
	if sysFlag&txn.TypeMask == txn.TypeNot {
		return false
	}
	b.reply(w, req, remoting.MessageIllegal, "batch messages cannot be transactional")
	return true
}

// endHeader is EndTransactionRequestHeader.
type endHeader struct {
	producerGroup        string
	tranStateTableOffset int64
	commitLogOffset      int64
	commitOrRollback     int32
	fromTransactionCheck bool
	msgID, transactionID string
}

func decodeEndHeader(req *remoting.Command) (endHeader, error) {
	var h endHeader
	var err error
	if h.tranStateTableOffset, err = req.ExtInt64In("tranStateTableOffset", 0, math.MaxInt64); err != nil {
		return h, err
	}
	if h.commitLogOffset, err = req.ExtInt64In("commitLogOffset", 0, math.MaxInt64); err != nil {
		return h, err
	}
	if h.commitOrRollback, err = req.ExtInt32("commitOrRollback"); err != nil {
		return h, err
	}
	if req.HasExt("fromTransactionCheck") {
		if h.fromTransactionCheck, err = req.ExtBool("fromTransactionCheck"); err != nil {
			return h, err
		}
	}
	h.producerGroup, h.msgID, h.transactionID = req.Ext("producerGroup"), req.Ext("msgId"), req.Ext("transactionId")
	return h, nil
}

func (b *Broker) handleEndTransaction(w remoting.ResponseWriter, req *remoting.Command) {
	t := b.txn
	v := b.view()
	if !v.isMaster() {
		b.reply(w, req, remoting.SlaveNotAvailable, "Message store is slave mode, so end transaction is forbidden.")
		return
	}
	if b.refuseWrite(v, w, req) {
		return
	}
	h, err := decodeEndHeader(req)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	// Built only when something is logged: this is the per-transaction path.
	log := func() logrus.FieldLogger {
		return t.log.WithFields(logrus.Fields{"group": h.producerGroup, "halfOffset": h.tranStateTableOffset,
			"commitLogOffset": h.commitLogOffset, "msgId": h.msgID, "fromCheck": h.fromTransactionCheck, "peer": bornHostOfString(w)})
	}
	switch h.commitOrRollback {
	case txn.TypeCommit, txn.TypeRollback:
	case txn.TypeNot:
		// The producer does not know yet: the half waits for the next check (RocketMQ
		// answers nothing; the clients send this one-way).
		t.unknowns.Add(1)
		log().Debug("end transaction with an unknown state: left for the check-back")
		b.replyOK(w, req, nil)
		return
	default:
		b.reply(w, req, remoting.SystemError, "commitOrRollback "+strconv.Itoa(int(h.commitOrRollback))+" is not a transaction end (8 commit, 12 rollback)")
		return
	}
	raw, err := b.store.ReadRecord(h.commitLogOffset)
	var rec *commitlog.Record
	if err == nil {
		rec, _, err = commitlog.DecodeRecord(raw)
	}
	if err != nil || rec.Topic != txn.HalfTopic {
		b.reply(w, req, remoting.SystemError, "Find prepared transaction message failed")
		return
	}
	props := commitlog.ParseProperties(rec.Properties)
	now := b.now().UnixMilli()
	if !h.fromTransactionCheck {
		// RocketMQ's rejectCommitOrRollback: past its own immunity, only the check decides.
		if hf := txn.HalfOfProps(rec, props); hf.Immunity > 0 && now-rec.BornTimestamp > t.cfg.TransactionTimeout.Milliseconds() &&
			now-rec.BornTimestamp > hf.Immunity.Milliseconds() {
			b.reply(w, req, remoting.IllegalOperation, "end transaction after its check immunity time: left for the check-back")
			return
		}
	}
	switch {
	case props[txn.PropProducerGroup] != h.producerGroup:
		b.reply(w, req, remoting.SystemError, "The producer group wrong")
		return
	case rec.QueueOffset != h.tranStateTableOffset:
		b.reply(w, req, remoting.SystemError, "The transaction state table offset wrong")
		return
	case rec.PhysicalOffset != h.commitLogOffset:
		b.reply(w, req, remoting.SystemError, "The commit log offset wrong")
		return
	}
	key := props[txn.PropUniqKey]
	var m *commitlog.Message
	if h.commitOrRollback == txn.TypeCommit {
		if m, err = txn.RestoreProps(rec, props); err != nil {
			b.reply(w, req, remoting.SystemError, "half message unusable: "+err.Error())
			return
		}
		mp := commitlog.ParseProperties(m.Properties)
		// A committed message waits for its timer like a plain send (RocketMQ applies its
		// schedule hook to COMMIT puts); the timer counts from the commit. A timer the rules
		// refuse leaves the half unresolved for its check-backs, never delivered early.
		if _, err := b.timerRules.Transform(m, mp, now); err != nil {
			b.reply(w, req, remoting.MessageIllegal, "timer: "+err.Error())
			return
		}
		if level := schedule.DelayLevel(mp); level > 0 {
			// A committed message is delayed like a plain one (RocketMQ's CommitLog does).
			if err := b.levels.ToSchedule(m, level); err != nil {
				b.reply(w, req, remoting.MessageIllegal, "delay level: "+err.Error())
				return
			}
		}
	}
	// Decide and claim under the lock; append outside it, so that ends of different halves
	// do not wait for one another's appends.
	t.mu.Lock()
	c := t.ensure(v)
	if c.Resolved(rec.QueueOffset, key, now) {
		t.mu.Unlock()
		t.duplicates.Add(1)
		log().Info("end transaction for a half already resolved: nothing to do")
		b.replyOK(w, req, nil)
		return
	}
	c.MarkResolved(rec.QueueOffset, key, now)
	t.updatePending(c)
	if c.Removed() > t.cfg.MaxOpsAhead/2 {
		// Many resolved halves the scan has not passed: a round now passes them, so the
		// memory they take is bounded by the ends of about one transactionTimeOut.
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	t.mu.Unlock()
	resp := remoting.NewResponse(req, remoting.Success, "")
	if m != nil {
		res, err := b.store.Append(m)
		if err != nil {
			t.mu.Lock()
			c.Unresolve(rec.QueueOffset, key)
			t.updatePending(c)
			t.mu.Unlock()
			b.replyStoreError(w, req, err)
			return
		}
		resp.ExtFields["msgId"] = res.MsgID
		resp.ExtFields["queueOffset"] = strconv.FormatInt(res.QueueOffset, 10)
	}
	// The op record. Should it fail after a commit was stored, the check-back asks again and
	// the key remembered above keeps the answer from delivering a second copy.
	if _, err := b.store.Append(txn.OpMessage(rec.QueueOffset, key)); err != nil {
		log().WithError(err).Error("op record not stored")
	}
	if m != nil {
		t.commits.Add(1)
	} else {
		t.rollbacks.Add(1)
	}
	_ = w.Write(resp)
}

// ensure returns the checker for master view v, loading it from the progress offsets when
// the view changed (start, promotion). Called with t.mu held.
func (t *txnService) ensure(v *roleView) *txn.Checker {
	if t.core != nil && t.view == v {
		return t.core
	}
	offs := t.b.tables.Offsets
	half, ok := offs.Query(txn.ProgressGroup, txn.HalfTopic, 0)
	if !ok {
		half = t.b.store.QueueMinOffset(txn.HalfTopic, 0)
	}
	op, ok := offs.Query(txn.ProgressGroup, txn.OpTopic, 0)
	if !ok {
		op = t.b.store.QueueMinOffset(txn.OpTopic, 0)
	}
	t.core, t.view = txn.NewChecker(t.cfg, half, op), v
	// The op records written before (by this broker before a restart, or by the old master)
	// are read once here; those written from now on are marked as they are written.
	t.readOps(t.core)
	t.updatePending(t.core)
	t.log.WithFields(logrus.Fields{"halfOffset": half, "opOffset": op, "opsRead": t.core.OpRead() - op}).Info("transaction check progress loaded")
	return t.core
}

// readOps feeds the op records not read yet to c (up to MaxOpsAhead ahead of the scan).
func (t *txnService) readOps(c *txn.Checker) {
	for c.CanReadOps() {
		off := c.OpRead()
		res := t.b.store.GetMessages(txn.OpTopic, 0, off, txnReadBatch, 1<<20, nil)
		if res.Status != commitlog.Found {
			if res.NextBeginOffset > off && res.Status != commitlog.OffsetOverflowBadly {
				c.SkipOps(res.NextBeginOffset)
				continue
			}
			return
		}
		for i, raw := range res.Records {
			rec, _, err := commitlog.DecodeRecord(raw)
			if err != nil {
				c.AddOp(off+int64(i), nil, "", 0)
				continue
			}
			var halves []int64
			isOp, key := txn.OpOf(rec)
			if isOp {
				if halves, err = txn.DecodeOpBody(rec.Body); err != nil {
					t.log.WithError(err).WithField("opOffset", rec.QueueOffset).Warn("op record unreadable; ignored")
				}
			}
			c.AddOp(rec.QueueOffset, halves, key, t.b.now().UnixMilli())
		}
		if res.NextBeginOffset <= off {
			return
		}
	}
}

// round is one pass of the check service over the half queue (masters only).
func (t *txnService) round() {
	b := t.b
	v := b.view()
	if !v.isMaster() || !b.running() || b.role.fenced.Load() || b.store.Err() != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.ensure(v)
	t.readOps(c)
	start := b.now().UnixMilli()
	scanned := 0
scan:
	for scanned < txnMaxScan {
		off, _ := c.Progress()
		res := b.store.GetMessages(txn.HalfTopic, 0, off, txnReadBatch, 1<<20, nil)
		if res.Status != commitlog.Found {
			if res.NextBeginOffset > off && res.Status != commitlog.OffsetOverflowBadly && res.Status != commitlog.OffsetOverflowOne {
				t.log.WithFields(logrus.Fields{"offset": off, "next": res.NextBeginOffset, "status": res.Status.String()}).Warn("half queue entries unreadable or removed; passed")
				c.PassTo(res.NextBeginOffset)
				continue
			}
			break
		}
		for _, raw := range res.Records {
			scanned++
			rec, _, err := commitlog.DecodeRecord(raw)
			if err != nil {
				t.badHalves.Add(1)
				c.Pass(off)
				off++
				continue
			}
			now := b.now().UnixMilli()
			switch a := c.Decide(txn.HalfOf(rec), now, start); a {
			case txn.Skip:
				c.Pass(rec.QueueOffset)
			case txn.Wait:
				break scan
			case txn.Discard:
				if _, err := b.store.Append(txn.Discarded(rec)); err != nil {
					t.log.WithError(err).Warn("half not moved to " + txn.CheckMaxTimeTopic + "; retried next round")
					break scan
				}
				t.ensureCheckMaxTopic()
				t.discarded.Add(1)
				t.log.WithFields(logrus.Fields{"halfOffset": rec.QueueOffset, "realTopic": commitlog.ParseProperties(rec.Properties)[txn.PropRealTopic]}).
					Warn("half still unresolved after transactionCheckMax check-backs: moved to " + txn.CheckMaxTimeTopic)
				c.PassOpen(rec.QueueOffset, now)
			case txn.Check:
				if !t.check(rec) {
					break scan
				}
				c.PassOpen(rec.QueueOffset, now)
			}
			off = rec.QueueOffset + 1
		}
		if res.NextBeginOffset <= off && len(res.Records) == 0 {
			break
		}
	}
	half, op := c.Progress()
	b.tables.Offsets.Commit(txn.ProgressGroup, txn.HalfTopic, 0, half)
	b.tables.Offsets.Commit(txn.ProgressGroup, txn.OpTopic, 0, op)
	t.updatePending(c)
}

// updatePending sets the pending-halves gauge: half-queue entries the scan has not passed,
// less those already resolved. Called with t.mu held.
func (t *txnService) updatePending(c *txn.Checker) {
	half, _ := c.Progress()
	t.halfNext.Store(half)
	t.removed.Store(int64(c.Removed()))
}

// pendingHalves is the pending-halves gauge (0 on a slave, whose scan does not run).
func (t *txnService) pendingHalves() int64 {
	if !t.b.view().isMaster() {
		return 0
	}
	return max(t.b.store.QueueMaxOffset(txn.HalfTopic, 0)-t.halfNext.Load()-t.removed.Load(), 0)
}

// check appends the check copy of rec and sends CHECK_TRANSACTION_STATE for it; false when
// the copy could not be stored (the round ends; the half is checked next round).
func (t *txnService) check(rec *commitlog.Record) bool {
	b := t.b
	cp, err := txn.CheckCopy(rec)
	if err != nil {
		// Not a usable half (no REAL_TOPIC/REAL_QID): nothing to check, passed.
		t.badHalves.Add(1)
		t.log.WithError(err).WithField("halfOffset", rec.QueueOffset).Warn("half unusable; passed")
		return true
	}
	res, err := b.store.Append(cp)
	if err != nil {
		t.log.WithError(err).WithField("halfOffset", rec.QueueOffset).Warn("check copy not stored; retried next round")
		return false
	}
	copyRec := *rec
	copyRec.QueueOffset, copyRec.PhysicalOffset = res.QueueOffset, res.WroteOffset
	copyRec.Properties, copyRec.StoreTimestamp, copyRec.StoreHost = cp.Properties, res.StoreTimestamp, b.storeHost
	t.checks.Add(1)
	props := commitlog.ParseProperties(cp.Properties)
	group := props[txn.PropProducerGroup]
	var conns []*remoting.ServerConn
	for _, m := range b.clients.reg.Producers(group) {
		if sc, ok := m.Conn.(*remoting.ServerConn); ok {
			conns = append(conns, sc)
		}
	}
	log := t.log.WithFields(logrus.Fields{"group": group, "halfOffset": copyRec.QueueOffset, "checkTimes": props[txn.PropCheckTimes]})
	if len(conns) == 0 {
		t.checksNoProducer.Add(1)
		log.Info("no producer of the group connected: check-back not sent")
		return true
	}
	body, err := txn.CheckBody(nil, &copyRec)
	if err != nil {
		log.WithError(err).Warn("check-back not encoded")
		return true
	}
	key := props[txn.PropUniqKey]
	req := remoting.NewRequest(remoting.CheckTransactionState, map[string]string{
		"tranStateTableOffset": strconv.FormatInt(copyRec.QueueOffset, 10),
		"commitLogOffset":      strconv.FormatInt(copyRec.PhysicalOffset, 10),
		"msgId":                key,
		"transactionId":        key,
		"offsetMsgId":          res.MsgID,
		"topic":                props[txn.PropRealTopic],
		"brokerName":           b.cfg.BrokerName,
	}, body)
	conn := conns[rand.IntN(len(conns))]
	if err := conn.SendOneway(req); err != nil {
		log.WithError(err).WithField("peer", conn.RemoteAddr()).Info("check-back not sent")
	}
	return true
}

// ensureCheckMaxTopic gives TRANS_CHECK_MAX_TIME_TOPIC a topic config (one queue, read and
// write) so an operator can read it, as RocketMQ creates it on first use.
func (t *txnService) ensureCheckMaxTopic() {
	if _, ok := t.b.tables.Topics.Get(txn.CheckMaxTimeTopic); ok {
		return
	}
	tc := route.NewTopicConfig(txn.CheckMaxTimeTopic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, route.PermRead|route.PermWrite
	if _, _, err := t.b.tables.Topics.PutIfAbsent(tc); err != nil {
		t.log.WithError(err).Warn(txn.CheckMaxTimeTopic + " topic config not stored")
	}
}

// txnRuntimeInfo adds the transaction keys to GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus).
func (b *Broker) txnRuntimeInfo(m map[string]string) {
	t := b.txn
	if t == nil {
		return
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	half, _ := b.tables.Offsets.Query(txn.ProgressGroup, txn.HalfTopic, 0)
	op, _ := b.tables.Offsets.Query(txn.ProgressGroup, txn.OpTopic, 0)
	m["transactionHalfSends"] = u(t.halfSends.Load())
	m["transactionCommits"] = u(t.commits.Load())
	m["transactionRollbacks"] = u(t.rollbacks.Load())
	m["transactionCheckBacks"] = u(t.checks.Load())
	m["transactionDiscarded"] = u(t.discarded.Load())
	m["transactionDuplicateEnds"] = u(t.duplicates.Load())
	m["transactionPendingHalves"] = strconv.FormatInt(t.pendingHalves(), 10)
	m["transactionHalfOffset"] = strconv.FormatInt(half, 10)
	m["transactionOpOffset"] = strconv.FormatInt(op, 10)
	m["rejectTransactionMessage"] = strconv.FormatBool(b.live.rejectTransactionMessage.Load())
}

// Metrics of transactional messages, read at scrape time (served with or without metricsEnable).
var (
	descTxnHalves  = desc("transaction_half_sends_total", "Half (prepared) messages stored, and refused by rejectTransactionMessage.", "result")
	descTxnEnds    = desc("transaction_ends_total", "END_TRANSACTION requests by outcome: commit, rollback, unknown (left for the check-back), duplicate (half already resolved: nothing done).", "outcome")
	descTxnChecks  = desc("transaction_checks_total", "Check-backs (CHECK_TRANSACTION_STATE) by result: sent, no_producer (no producer of the group connected; the half is checked again next time).", "result")
	descTxnDiscard = desc("transaction_discarded_total", "Halves moved to TRANS_CHECK_MAX_TIME_TOPIC after transactionCheckMax check-backs.")
	descTxnPending = desc("transaction_pending_halves", "Halves the master's check scan has not passed and no op record resolves (0 on a slave).")
)

// txnCollector serves the transaction metrics.
type txnCollector struct{ b *Broker }

func (c *txnCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTxnHalves, descTxnEnds, descTxnChecks, descTxnDiscard, descTxnPending} {
		ch <- d
	}
}

func (c *txnCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.b.txn
	if t == nil {
		return
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descTxnHalves, t.halfSends.Load(), "stored")
	counter(descTxnHalves, t.halfRefused.Load(), "refused")
	counter(descTxnEnds, t.commits.Load(), "commit")
	counter(descTxnEnds, t.rollbacks.Load(), "rollback")
	counter(descTxnEnds, t.unknowns.Load(), "unknown")
	counter(descTxnEnds, t.duplicates.Load(), "duplicate")
	counter(descTxnChecks, t.checks.Load()-t.checksNoProducer.Load(), "sent")
	counter(descTxnChecks, t.checksNoProducer.Load(), "no_producer")
	counter(descTxnDiscard, t.discarded.Load())
	if c.b.running() {
		ch <- prometheus.MustNewConstMetric(descTxnPending, prometheus.GaugeValue, float64(t.pendingHalves()))
	}
}

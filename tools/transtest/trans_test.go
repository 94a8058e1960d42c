package transtest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	rlog.SetLogger(quiet{})
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Debug(string, map[string]interface{})   {}
func (quiet) Info(string, map[string]interface{})    {}
func (quiet) Warning(string, map[string]interface{}) {}
func (quiet) Error(string, map[string]interface{})   {}
func (quiet) Fatal(string, map[string]interface{})   {}
func (quiet) Level(string)                           {}
func (quiet) OutputPath(string) error                { return nil }

const (
	readyTimeout = 60 * time.Second
	queues       = 4
	pgroup       = "pg-tx"
)

// Short check timing so check-backs come within a test (defaults: 6 s, 60 s, 15).
var txnConf = []string{"transactionTimeOut=1000", "transactionCheckInterval=300", "transactionCheckMax=200"}

func startGroup(t *testing.T) *e2e.Group {
	cfg := e2e.DefaultGroupConfig()
	cfg.ExtraMaster = txnConf
	// The slave pulls the master's tables (the check progress among them) every second.
	cfg.ExtraSlave = append([]string{"metasyncFallbackInterval=1000"}, txnConf...)
	g := e2e.StartGroup(t, cfg)
	return g
}

var instanceSeq atomic.Int64

// outcome is what the test's local transaction decides for a message.
type outcome int

const (
	commit outcome = iota
	rollback
	unknownThenCommit
	unknownThenRollback
)

func (o outcome) committed() bool { return o == commit || o == unknownThenCommit }

// ledger is the transactional history of a run: what was sent, what the producer decided,
// what a reader saw too early. Safe for concurrent use.
type ledger struct {
	mu      sync.Mutex
	want    map[string]outcome // body -> decision
	props   map[string]string  // body -> its user property
	checks  map[string]int     // body -> check-backs answered
	maybe   map[string]bool    // bodies whose half send failed: stored or not, unknown
	early   []string           // bodies readable before their commit
	pending atomic.Bool        // answer check-backs with UNKNOWN while set
	visible func() map[string]int
}

func newLedger() *ledger {
	return &ledger{want: map[string]outcome{}, props: map[string]string{}, checks: map[string]int{}, maybe: map[string]bool{}}
}

func (l *ledger) decision(body string) outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.want[body]
}

// ExecuteLocalTransaction runs while the half is stored and unresolved: the message must not
// be readable yet.
func (l *ledger) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	body := string(m.Body)
	if l.visible != nil && l.visible()[body] > 0 {
		l.mu.Lock()
		l.early = append(l.early, body)
		l.mu.Unlock()
	}
	switch l.decision(body) {
	case commit:
		return primitive.CommitMessageState
	case rollback:
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *ledger) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	body := string(m.Body)
	l.mu.Lock()
	l.checks[body]++
	l.mu.Unlock()
	if l.pending.Load() {
		return primitive.UnkonwnState
	}
	switch l.decision(body) {
	case commit, unknownThenCommit:
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func newTxProducer(t *testing.T, g *e2e.Group, l *ledger) rocketmq.TransactionProducer {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNameServer([]string{g.NamesrvAddr}),
		producer.WithGroupName(pgroup),
		producer.WithInstanceName(fmt.Sprintf("%s-%d-%d", pgroup, os.Getpid(), instanceSeq.Add(1))),
		producer.WithRetry(2),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// sendTx sends one transactional message and records the decision; it reports whether the
// half was stored (SEND_OK).
func sendTx(t *testing.T, p rocketmq.TransactionProducer, l *ledger, topic, body string, o outcome) bool {
	t.Helper()
	l.mu.Lock()
	l.want[body] = o
	l.props[body] = "v-" + body
	l.mu.Unlock()
	msg := primitive.NewMessage(topic, []byte(body))
	msg.WithTag("tx")
	msg.WithKeys([]string{"k-" + body})
	msg.WithProperty("p", "v-"+body)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := p.SendMessageInTransaction(ctx, msg)
	if err != nil || res.Status != primitive.SendOK {
		// The half may still be stored (the answer was lost): then its transaction resolves
		// like the others, at most once.
		t.Logf("half %s: no SEND_OK: %v %v", body, err, res)
		l.mu.Lock()
		l.maybe[body] = true
		l.mu.Unlock()
		return false
	}
	return true
}

// readTopic pulls every message of topic from addr (all queues).
func readTopic(g *e2e.Group, addr, topic string) ([]*primitive.MessageExt, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const reader = "tx-reader"
	hb := fmt.Sprintf(`{"clientID":"127.0.0.1@tx-reader","producerDataSet":[],"consumerDataSet":[{"groupName":%q,`+
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",`+
		`"subscriptionDataSet":[{"classFilterMode":false,"topic":%q,"subString":"*","tagsSet":[],"codeSet":[],`+
		`"subVersion":1,"expressionType":"TAG"}],"unitMode":false}]}`, reader, topic)
	if resp, err := g.Admin.Invoke(ctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb))); err != nil || resp.Code != remoting.Success {
		return nil, fmt.Errorf("heartbeat: %v %v", err, resp)
	}
	var out []*primitive.MessageExt
	for q := 0; q < queues; q++ {
		for off := int64(0); ; {
			ext := map[string]string{"consumerGroup": reader, "topic": topic, "queueId": strconv.Itoa(q),
				"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "-1",
				"suspendTimeoutMillis": "0", "subscription": "", "subVersion": "0", "expressionType": "TAG", "bname": e2e.BrokerName}
			resp, err := g.Admin.Invoke(ctx, addr, remoting.NewRequest(remoting.PullMessage, ext, nil))
			if err != nil {
				return nil, err
			}
			if resp.Code != remoting.Success {
				break
			}
			msgs := primitive.DecodeMessage(resp.Body)
			if len(msgs) == 0 {
				break
			}
			out = append(out, msgs...)
			next, err := resp.ExtInt64("nextBeginOffset")
			if err != nil || next <= off {
				return nil, fmt.Errorf("queue %d: next offset %d after %d (%v)", q, next, off, err)
			}
			off = next
		}
	}
	return out, nil
}

func counts(msgs []*primitive.MessageExt) map[string]int {
	m := map[string]int{}
	for _, x := range msgs {
		m[string(x.Body)]++
	}
	return m
}

// check compares what addr serves with the ledger: it returns the problems (lost commits,
// duplicates, rolled-back or unknown messages served, properties changed) and whether every
// committed message is there (the caller polls until it is).
func (l *ledger) check(g *e2e.Group, addr, topic string) (problems []string, complete bool, err error) {
	msgs, err := readTopic(g, addr, topic)
	if err != nil {
		return nil, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := counts(msgs)
	complete = true
	for body, o := range l.want {
		n := seen[body]
		switch {
		case o.committed() && n == 0 && !l.maybe[body]:
			complete = false
		case o.committed() && n > 1:
			problems = append(problems, fmt.Sprintf("%s: committed, served %d times", body, n))
		case !o.committed() && n > 0:
			problems = append(problems, fmt.Sprintf("%s: rolled back, served %d times", body, n))
		}
	}
	for _, m := range msgs {
		body := string(m.Body)
		if _, ok := l.want[body]; !ok {
			problems = append(problems, fmt.Sprintf("%s: served, never sent", body))
			continue
		}
		if m.GetProperty("p") != l.props[body] || m.GetTags() != "tx" || m.GetKeys() != "k-"+body || m.Topic != topic {
			problems = append(problems, fmt.Sprintf("%s: stored differently: topic %s tags %q keys %q p %q", body, m.Topic, m.GetTags(), m.GetKeys(), m.GetProperty("p")))
		}
		if m.GetProperty(primitive.PropertyTransactionPrepared) != "" {
			problems = append(problems, fmt.Sprintf("%s: committed copy still carries TRAN_MSG", body))
		}
	}
	sort.Strings(problems)
	return problems, complete, nil
}

// waitResolved polls until every committed message is readable on addr, then requires the
// ledger's invariants there.
func (l *ledger) waitResolved(t *testing.T, g *e2e.Group, addr, topic string) {
	t.Helper()
	var last []string
	harness.Eventually(t, readyTimeout, func() error {
		p, complete, err := l.check(g, addr, topic)
		if err != nil {
			return err
		}
		last = p
		if len(p) > 0 {
			return nil // reported below
		}
		if !complete {
			return fmt.Errorf("%s: committed messages missing", addr)
		}
		return nil
	})
	require.Empty(t, last, "invariants on %s", addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.early, "readable before their commit")
}

// metric reads one series from a broker's /metrics; -1 when absent, so that a missing series
// never passes for a zero count.
func metric(t *testing.T, hostport, series string) float64 {
	t.Helper()
	m, err := harness.Metrics(hostport)
	require.NoError(t, err)
	if v, ok := m[series]; ok {
		return v
	}
	return -1
}

// TestTransactionOutcomes: COMMIT and ROLLBACK from the local transaction, and UNKNOWN resolved
// by the check-back to commit and to rollback. Nothing is readable before its commit (checked
// inside the local transaction and while the unknown ones wait); at the end every committed
// message is readable exactly once, byte-exact with its tag, keys and properties, on the
// master and on the slave, and nothing rolled back is.
func TestTransactionOutcomes(t *testing.T) {
	g := startGroup(t)
	const topic = "TxTopic"
	g.CreateTopic(t, topic, queues)
	l := newLedger()
	l.visible = func() map[string]int {
		msgs, err := readTopic(g, g.MasterAddr, topic)
		require.NoError(t, err)
		return counts(msgs)
	}
	p := newTxProducer(t, g, l)
	l.pending.Store(true)
	t0 := time.Now()
	defer func() { t.Logf("took %v", time.Since(t0)) }()
	outcomes := []outcome{commit, rollback, unknownThenCommit, unknownThenRollback}
	for i := 0; i < 24; i++ {
		o := outcomes[i%len(outcomes)]
		require.True(t, sendTx(t, p, l, topic, fmt.Sprintf("m%02d-%d", i, o), o))
	}
	t.Logf("sent after %v", time.Since(t0))
	// The unknown ones stay invisible while the producer keeps answering UNKNOWN.
	harness.Eventually(t, readyTimeout, func() error {
		if metric(t, g.MasterHTTP, `rmqha_broker_transaction_checks_total{result="sent"}`) < 12 {
			return fmt.Errorf("check-backs not sent yet")
		}
		return nil
	})
	seen := l.visible()
	for body, o := range l.want {
		if o == unknownThenCommit || o == unknownThenRollback {
			require.Zero(t, seen[body], "%s readable while its transaction is unknown", body)
		}
	}
	t.Logf("checked after %v", time.Since(t0))
	l.pending.Store(false)
	l.waitResolved(t, g, g.MasterAddr, topic)
	t.Logf("resolved after %v", time.Since(t0))
	g.WaitSlaveCaughtUp(t)
	l.waitResolved(t, g, g.SlaveAddr, topic)

	require.Equal(t, float64(12), metric(t, g.MasterHTTP, `rmqha_broker_transaction_ends_total{outcome="commit"}`))
	require.Equal(t, float64(12), metric(t, g.MasterHTTP, `rmqha_broker_transaction_ends_total{outcome="rollback"}`))
	require.Equal(t, float64(24), metric(t, g.MasterHTTP, `rmqha_broker_transaction_half_sends_total{result="stored"}`))
	require.Equal(t, float64(0), metric(t, g.MasterHTTP, `rmqha_broker_transaction_discarded_total`))
	harness.Eventually(t, readyTimeout, func() error {
		if v := metric(t, g.MasterHTTP, "rmqha_broker_transaction_pending_halves"); v != 0 {
			return fmt.Errorf("%v halves pending", v)
		}
		return nil
	})
	// The check progress is kept as CID_RMQ_SYS_TRANS consumer offsets and reaches the slave.
	harness.Eventually(t, readyTimeout, func() error {
		for _, tp := range []string{"RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"} {
			mo, err := g.ConsumerOffset(g.MasterAddr, "CID_RMQ_SYS_TRANS", tp, 0)
			if err != nil {
				return err
			}
			so, err := g.ConsumerOffset(g.SlaveAddr, "CID_RMQ_SYS_TRANS", tp, 0)
			if err != nil {
				return err
			}
			if mo <= 0 || so != mo {
				return fmt.Errorf("%s progress: master %d, slave %d", tp, mo, so)
			}
		}
		return nil
	})
	// END_TRANSACTION on the slave is refused as RocketMQ does.
	resp, err := g.Admin.Invoke(context.Background(), g.SlaveAddr, remoting.NewRequest(remoting.EndTransaction, map[string]string{
		"producerGroup": pgroup, "tranStateTableOffset": "0", "commitLogOffset": "0", "commitOrRollback": "8"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.SlaveNotAvailable, resp.Code)
	require.True(t, g.Master.Running() && g.Slave.Running() && g.Namesrv.Running())
}

// TestTransactionMasterRestartAndKill: halves pending (the producer answers UNKNOWN) across a
// graceful restart and then a kill -9 of the master; afterwards the check-backs resolve every
// one (a second producer of the group, started after the restart, registers at once; the
// first one re-registers on its next heartbeat). None is lost, none is served twice, nothing
// rolled back is served, on the master and the slave.
func TestTransactionMasterRestartAndKill(t *testing.T) {
	g := startGroup(t)
	const topic = "TxRestart"
	g.CreateTopic(t, topic, queues)
	l := newLedger()
	p := newTxProducer(t, g, l)
	l.pending.Store(true)
	n := 0
	sendSome := func(k int) {
		for i := 0; i < k; i++ {
			o := unknownThenCommit
			if n%3 == 2 {
				o = unknownThenRollback
			}
			if n%5 == 0 {
				o = commit
			}
			sendTx(t, p, l, topic, fmt.Sprintf("r%03d-%d", n, o), o)
			n++
		}
	}
	sendSome(20)
	// Some halves get checked (copies written) before the restart.
	harness.Eventually(t, readyTimeout, func() error {
		if metric(t, g.MasterHTTP, `rmqha_broker_transaction_checks_total{result="sent"}`) < 1 {
			return fmt.Errorf("no check-back yet")
		}
		return nil
	})
	require.NoError(t, g.Master.Stop(30*time.Second), "graceful stop")
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	g.WaitSlaveInSync(t)
	sendSome(20)
	// kill -9 with halves pending and check copies being written.
	g.Master.Kill()
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	g.WaitSlaveInSync(t)
	l.pending.Store(false)
	newTxProducer(t, g, l) // registers with the restarted master at once
	sendSome(10)
	l.waitResolved(t, g, g.MasterAddr, topic)
	g.WaitSlaveCaughtUp(t)
	l.waitResolved(t, g, g.SlaveAddr, topic)
	require.True(t, g.Master.Running() && g.Slave.Running())
	l.mu.Lock()
	t.Logf("%d transactions, %d check-backs answered", len(l.want), func() int {
		s := 0
		for _, c := range l.checks {
			s += c
		}
		return s
	}())
	l.mu.Unlock()
}

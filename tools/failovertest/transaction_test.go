package failovertest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmqproducer "github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// txListener answers UNKNOWN from the local transaction and, once answer is set, the
// check-backs with the decision recorded per body (even: commit, odd: rollback).
type txListener struct {
	answer atomic.Bool
	checks atomic.Int64
}

func txCommits(body string) bool {
	var i int
	_, _ = fmt.Sscanf(body, "tx-%d", &i)
	return i%2 == 0
}

func (l *txListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.checks.Add(1)
	if !l.answer.Load() {
		return primitive.UnkonwnState
	}
	if txCommits(string(m.Body)) {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func startTxProducer(t *testing.T, g *group, l *txListener) rocketmq.TransactionProducer {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l,
		rmqproducer.WithNameServer([]string{g.nsAddr}),
		rmqproducer.WithGroupName("failover-tx-producer"),
		rmqproducer.WithInstanceName("fo-tx-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		rmqproducer.WithRetry(2),
		rmqproducer.WithSendMsgTimeout(3*time.Second),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TestTransactionsAcrossFailover: halves are pending (the producer answers UNKNOWN, check-backs
// already under way) when the master is killed -9; the node that takes over continues the
// checks from the progress it synced (CID_RMQ_SYS_TRANS offsets) and the halves it replicated,
// and once the producer answers, every half acknowledged SEND_OK ends as decided: each
// committed one readable exactly once, no rolled-back one readable.
func TestTransactionsAcrossFailover(t *testing.T) {
	g := startGroup(t, 2)
	m := g.waitMaster(2)
	require.NoError(t, g.createTopic(m.addr))
	l := &txListener{}
	p := startTxProducer(t, g, l)

	var mu sync.Mutex
	acked := map[string]bool{} // SEND_OK halves
	maybe := map[string]bool{} // no SEND_OK: stored or not
	for i := 0; i < 30; i++ {
		body := fmt.Sprintf("tx-%03d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		cancel()
		mu.Lock()
		if err == nil && res.Status == primitive.SendOK {
			acked[body] = true
		} else {
			maybe[body] = true
		}
		mu.Unlock()
	}
	require.NotEmpty(t, acked)
	// Check-backs are under way on the master (copies in the half queue) before it dies.
	harness.Eventually(t, readyTimeout, func() error {
		if l.checks.Load() < int64(len(acked)) {
			return fmt.Errorf("%d check-backs so far", l.checks.Load())
		}
		return nil
	})
	m.proc.Kill()
	l.answer.Store(true)
	nm := g.waitMaster(1)
	require.NotEqual(t, m.id, nm.id)
	// A producer of the group that registers with the new master at once (the first one
	// heartbeats every 30 s).
	startTxProducer(t, g, l)

	var last string
	harness.Eventually(t, 2*readyTimeout, func() error {
		bodies, err := g.readTopic(nm.addr)
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for _, b := range bodies {
			seen[b]++
		}
		last = ""
		for b, n := range seen {
			switch {
			case n > 1:
				last += fmt.Sprintf("%s served %d times; ", b, n)
			case !txCommits(b):
				last += fmt.Sprintf("%s rolled back, served; ", b)
			case !acked[b] && !maybe[b]:
				last += fmt.Sprintf("%s never sent; ", b)
			}
		}
		if last != "" {
			return nil // reported below
		}
		for b := range acked {
			if txCommits(b) && seen[b] == 0 {
				return fmt.Errorf("%s committed, not readable yet", b)
			}
		}
		return nil
	})
	require.Empty(t, last)
	require.True(t, nm.proc.Running() && g.ns.Running())
	t.Logf("%d halves acknowledged, %d check-backs answered", len(acked), l.checks.Load())
}

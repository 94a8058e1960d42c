package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// received counts what a push consumer got, per body.
type received struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *received) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.counts[string(m.Body)]++
	}
	return consumer.ConsumeSuccess, nil
}

func (r *received) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

func sendBodies(t *testing.T, p rocketmq.Producer, topic string, bodies []string) {
	t.Helper()
	for _, b := range bodies {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(b)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status, res.String())
	}
}

// slaveResets reads the explicit resets the slave holds (its GET_ALL_CONSUMER_OFFSET body).
func slaveResets(g *e2e.Group) ([]meta.OffsetReset, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := g.Admin.Invoke(ctx, g.SlaveAddr, remoting.NewRequest(remoting.GetAllConsumerOffset, nil, nil))
	if err != nil {
		return nil, err
	}
	s, err := meta.DecodeConsumerOffsetSnapshot(resp.Body)
	return s.Resets, err
}

// TestResetOffsetByTimeWithRunningConsumer: a rocketmq-client-go push consumer has consumed
// batches A and B; resetOffsetByTime to a time between them makes it receive B again (and not
// A), the broker's committed offsets and the slave's follow, and cloneGroupOffset copies the
// group's offsets.
func TestResetOffsetByTimeWithRunningConsumer(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.ExtraSlave = []string{"metasyncFallbackInterval=500"}
	g := e2e.StartGroup(t, cfg)
	const topic, group = "ResetTopic", "reset-group"
	g.CreateTopic(t, topic, 2)
	p := startProducer(t, g.NamesrvAddr, "pg-reset", 2)

	var batchA, batchB []string
	for i := 0; i < 8; i++ {
		batchA = append(batchA, "A-"+strconv.Itoa(i))
		batchB = append(batchB, "B-"+strconv.Itoa(i))
	}
	sendBodies(t, p, topic, batchA)
	mid := time.Now().UnixMilli() + 1
	harness.Eventually(t, 5*time.Second, func() error { // B is stored strictly after mid
		if time.Now().UnixMilli() <= mid {
			return fmt.Errorf("clock at %d", time.Now().UnixMilli())
		}
		return nil
	})
	sendBodies(t, p, topic, batchB)

	r := &received{counts: map[string]int{}}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{g.NamesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("reset-%d", time.Now().UnixNano())), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, r.handle))
	require.NoError(t, c.Start())
	defer func() { _ = c.Shutdown() }()

	all := append(append([]string(nil), batchA...), batchB...)
	harness.Eventually(t, 60*time.Second, func() error {
		got := r.snapshot()
		for _, b := range all {
			if got[b] != 1 {
				return fmt.Errorf("%s received %d times", b, got[b])
			}
		}
		// Committed at the master up to the end of both queues.
		for q := 0; q < 2; q++ {
			max, err := g.MaxOffset(g.MasterAddr, topic, q)
			if err != nil {
				return err
			}
			off, err := g.ConsumerOffset(g.MasterAddr, group, topic, q)
			if err != nil || off != max {
				return fmt.Errorf("queue %d committed %d of %d (%v)", q, off, max, err)
			}
		}
		return nil
	})

	out := mustRun(t, "resetOffsetByTime", "-n", g.NamesrvAddr, "-g", group, "-t", topic, "-s", strconv.FormatInt(mid, 10), "-registrationSecretFile", g.RegistrationSecretFile)
	require.Contains(t, out, "rollback consumer offset by specified group="+group)
	require.Contains(t, out, e2e.BrokerName)

	// The consumer receives B again (the Go client applies a reset after 10 s), A only once.
	harness.Eventually(t, 90*time.Second, func() error {
		got := r.snapshot()
		for _, b := range batchB {
			if got[b] < 2 {
				return fmt.Errorf("%s received %d times", b, got[b])
			}
		}
		return nil
	})
	got := r.snapshot()
	for _, b := range batchA {
		require.Equal(t, 1, got[b], "%s is before the reset time", b)
	}
	for _, b := range batchB {
		require.Equal(t, 2, got[b], "%s once before and once after the reset", b)
	}

	// The slave holds the reset (explicit values, applied through the metadata follower), and
	// its offsets end where the master's do.
	harness.Eventually(t, 30*time.Second, func() error {
		rs, err := slaveResets(g)
		if err != nil {
			return err
		}
		for _, rr := range rs {
			if rr.Topic == topic && rr.Group == group && len(rr.Offsets) == 2 {
				return nil
			}
		}
		return fmt.Errorf("slave resets: %+v", rs)
	})
	harness.Eventually(t, 60*time.Second, func() error {
		for q := 0; q < 2; q++ {
			m, err := g.ConsumerOffset(g.MasterAddr, group, topic, q)
			if err != nil {
				return err
			}
			s, err := g.ConsumerOffset(g.SlaveAddr, group, topic, q)
			if err != nil || s != m {
				return fmt.Errorf("queue %d: slave %d, master %d (%v)", q, s, m, err)
			}
		}
		return nil
	})

	// Offsets of the group copied to another.
	out = mustRun(t, "cloneGroupOffset", "-n", g.NamesrvAddr, "-s", group, "-d", "reset-copy", "-t", topic, "-registrationSecretFile", g.RegistrationSecretFile)
	require.Contains(t, out, "clone group offset success")
	for q := 0; q < 2; q++ {
		m, err := g.ConsumerOffset(g.MasterAddr, group, topic, q)
		require.NoError(t, err)
		cp, err := g.ConsumerOffset(g.MasterAddr, "reset-copy", topic, q)
		require.NoError(t, err)
		require.Equal(t, m, cp, "queue %d", q)
	}
	// Status and connection views of the same group, producer and topic.
	out = mustRun(t, "topicStatus", "-n", g.NamesrvAddr, "-t", topic)
	require.Contains(t, out, "MAX_OFFSET")
	var ts struct {
		Queues []TopicStatusRow `json:"queues"`
	}
	mustJSON(t, &ts, "topicStatus", "-n", g.NamesrvAddr, "-t", topic)
	var sum int64
	for _, q := range ts.Queues {
		sum += q.MaxOffset
	}
	require.Equal(t, int64(len(all)), sum)
	eventuallyRun(t, func(code int, out string) error {
		if code != ExitOK || !strings.Contains(out, "Diff Total: 0") {
			return fmt.Errorf("exit %d", code)
		}
		return nil
	}, "consumerStatus", "-n", g.NamesrvAddr, "-g", group)
	out = mustRun(t, "consumerConnection", "-n", g.NamesrvAddr, "-g", group)
	require.Contains(t, out, "GO")
	require.Contains(t, out, topic)
	require.Contains(t, out, "CLUSTERING")
	out = mustRun(t, "producerConnection", "-n", g.NamesrvAddr, "-g", "pg-reset", "-t", topic)
	require.Contains(t, out, "pg-reset-")
	code, _, _ := runOut("consumerConnection", "-n", g.NamesrvAddr, "-g", "nobody")
	require.Equal(t, ExitServer, code)

	// A group without consumers online: its stored offsets are set queue by queue (the broker
	// answers CONSUMER_NOT_ONLINE to the whole-topic form), down to the start with -s 0.
	code, out, errOut := runOut("resetOffsetByTime", "-n", g.NamesrvAddr, "-g", "reset-copy", "-t", topic, "-s", "0", "-registrationSecretFile", g.RegistrationSecretFile)
	require.Equal(t, ExitOK, code, "stdout %s stderr %s", out, errOut)
	require.Contains(t, errOut, "no consumer online")
	for q := 0; q < 2; q++ {
		cp, err := g.ConsumerOffset(g.MasterAddr, "reset-copy", topic, q)
		require.NoError(t, err)
		require.Equal(t, int64(0), cp, "queue %d", q)
	}
	// -f false never moves an offset up.
	code, _, _ = runOut("resetOffsetByTime", "-n", g.NamesrvAddr, "-g", "reset-copy", "-t", topic, "-s", "now", "-f", "false", "-registrationSecretFile", g.RegistrationSecretFile)
	require.Equal(t, ExitOK, code)
	cp, err := g.ConsumerOffset(g.MasterAddr, "reset-copy", topic, 0)
	require.NoError(t, err)
	require.Equal(t, int64(0), cp)
	code, _, _ = runOut("resetOffsetByTime", "-n", g.NamesrvAddr, "-g", "nobody", "-t", topic, "-s", "now", "-registrationSecretFile", g.RegistrationSecretFile)
	require.Equal(t, ExitServer, code, "a group without offsets")
	require.True(t, g.Master.Running() && g.Slave.Running(), "processes alive")
}

// mustJSON runs a command with --json that must succeed and decodes its output into v.
func mustJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := mustRun(t, append(args, "--json")...)
	require.NoError(t, json.Unmarshal([]byte(out), v))
}

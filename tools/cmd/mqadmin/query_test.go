package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// keyed is one message sent with keys: its order key, its client id (UNIQ_KEY), its body.
type keyed struct {
	key, id, body string
	queue         int
	offset        int64
}

func sendKeyed(t *testing.T, p rocketmq.Producer, topic string, from, n int) []keyed {
	t.Helper()
	var out []keyed
	for i := from; i < from+n; i++ {
		body := fmt.Sprintf("payload-%03d-%s", i, strings.Repeat("b", i%7*50))
		msg := primitive.NewMessage(topic, []byte(body))
		key := fmt.Sprintf("order-%03d", i)
		msg.WithKeys([]string{key, "shared-key"})
		msg.WithTag("T" + strconv.Itoa(i%3))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status, res.String())
		out = append(out, keyed{key: key, id: res.MsgID, body: body, queue: res.MessageQueue.QueueId, offset: res.QueueOffset})
	}
	return out
}

// queryJSON runs a query command with --json and returns the messages it printed.
func queryJSON(t *testing.T, args ...string) ([]FoundMessage, int) {
	t.Helper()
	code, out, errOut := runOut(append(args, "--json")...)
	var v struct {
		Messages []FoundMessage `json:"messages"`
	}
	if code == ExitOK || code == ExitServer {
		require.NoError(t, json.Unmarshal([]byte(out), &v), "stdout %q stderr %q", out, errOut)
	}
	return v.Messages, code
}

// checkFound asserts that every sent message is found by its key and by its id on addr, once,
// byte for byte, and that the shared key finds all of them.
func checkFound(t *testing.T, g *e2e.Group, topic, addr string, sent []keyed) {
	t.Helper()
	for _, s := range sent {
		ms, code := queryJSON(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", s.key, "--addr", addr)
		require.Equal(t, ExitOK, code, "key %s on %s", s.key, addr)
		require.Len(t, ms, 1, "key %s on %s: exactly one message", s.key, addr)
		require.Equal(t, s.body, ms[0].Body, "key %s on %s", s.key, addr)
		require.Equal(t, s.id, ms[0].MsgID)
		require.Equal(t, int32(s.queue), ms[0].QueueID)
		require.Equal(t, s.offset, ms[0].QueueOffset)

		ms, code = queryJSON(t, "queryMsgByUniqueKey", "-n", g.NamesrvAddr, "-t", topic, "-i", s.id, "--addr", addr)
		require.Equal(t, ExitOK, code, "id %s on %s", s.id, addr)
		require.Len(t, ms, 1)
		require.Equal(t, s.body, ms[0].Body)
		require.Equal(t, s.key+" shared-key", ms[0].Keys)
	}
	ms, code := queryJSON(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", "shared-key", "--addr", addr)
	require.Equal(t, ExitOK, code)
	want := min(len(sent), 64)
	require.Len(t, ms, want, "the shared key on %s, capped by the broker's 64", addr)
	seen := map[string]bool{}
	for _, m := range ms {
		require.False(t, seen[m.MsgID], "duplicate %s on %s", m.MsgID, addr)
		seen[m.MsgID] = true
	}
}

// TestQueryByKeyMasterAndSlave sends keyed messages with the unmodified rocketmq-client-go to a
// SYNC_MASTER with a slave (real binaries), finds each by key and by message id on both, by
// queue offset through queryMsgByOffset, then kill -9s both brokers, restarts them and finds
// everything again (the index's unfinished files are rebuilt from the CommitLog), including
// messages sent after the restart.
func TestQueryByKeyMasterAndSlave(t *testing.T) {
	cfg := e2e.DefaultGroupConfig()
	cfg.Dir = t.TempDir()
	g := e2e.StartGroup(t, cfg)
	const topic = "KeyTopic"
	g.CreateTopic(t, topic, 2)
	p := startProducer(t, g.NamesrvAddr, "pg-keys", 2)

	sent := sendKeyed(t, p, topic, 0, 30)
	g.WaitSlaveCaughtUp(t)
	// The slave indexes what it replicated; give its dispatcher a moment via polling.
	harness.Eventually(t, 30*time.Second, func() error {
		ms, code := queryJSON(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", sent[len(sent)-1].key, "--addr", g.SlaveAddr)
		if code != ExitOK || len(ms) != 1 {
			return fmt.Errorf("slave not indexed yet (exit %d, %d messages)", code, len(ms))
		}
		return nil
	})
	checkFound(t, g, topic, g.MasterAddr, sent)
	checkFound(t, g, topic, g.SlaveAddr, sent)

	// Through the route (the group's master), as a table.
	out := mustRun(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", sent[3].key)
	require.Contains(t, out, sent[3].id)
	require.Contains(t, out, "MSG_ID")
	out = mustRun(t, "queryMsgByUniqueKey", "-n", g.NamesrvAddr, "-t", topic, "-i", sent[4].id)
	require.Contains(t, out, sent[4].body)
	require.Contains(t, out, "Offset Message ID:")
	// By queue offset, from the master and from the slave.
	for _, addr := range []string{"", g.SlaveAddr} {
		args := []string{"queryMsgByOffset", "-n", g.NamesrvAddr, "-t", topic, "-b", e2e.BrokerName,
			"-i", strconv.Itoa(sent[5].queue), "-o", strconv.FormatInt(sent[5].offset, 10)}
		if addr != "" {
			args = append(args, "--addr", addr)
		}
		ms, code := queryJSON(t, args...)
		require.Equal(t, ExitOK, code)
		require.Len(t, ms, 1)
		require.Equal(t, sent[5].body, ms[0].Body)
	}
	// printMsg: every message of the topic, or those of one tag, from the master or the slave.
	for _, addr := range []string{"", g.SlaveAddr} {
		args := []string{"printMsg", "-n", g.NamesrvAddr, "-t", topic}
		if addr != "" {
			args = append(args, "--addr", addr)
		}
		ms, code := queryJSON(t, args...)
		require.Equal(t, ExitOK, code)
		require.Len(t, ms, len(sent), "printMsg %v", args)
		bodies := map[string]bool{}
		for _, m := range ms {
			bodies[m.Body] = true
		}
		for _, s := range sent {
			require.True(t, bodies[s.body], "%s printed", s.key)
		}
		ms, code = queryJSON(t, append(args, "-s", "T1")...)
		require.Equal(t, ExitOK, code)
		require.Len(t, ms, len(sent)/3, "tag T1")
	}
	out = mustRun(t, "printMsg", "-n", g.NamesrvAddr, "-t", topic, "-d", "false", "-m", "2")
	require.Contains(t, out, "MSG_ID")
	require.NotContains(t, out, "BODY")

	checkSendConsumeByID(t, g, topic, sent)

	// Not found: exit 1 with an empty list.
	ms, code := queryJSON(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", "no-such-key")
	require.Equal(t, ExitServer, code)
	require.Empty(t, ms)
	code, _, _ = runOut("queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic)
	require.Equal(t, ExitUsage, code)

	// kill -9 both, restart, find everything again.
	g.Slave.Kill()
	g.Master.Kill()
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	require.NoError(t, g.Slave.Restart())
	g.WaitSlaveInSync(t)
	sent = append(sent, sendKeyed(t, p, topic, 30, 6)...)
	g.WaitSlaveCaughtUp(t)
	harness.Eventually(t, 30*time.Second, func() error {
		ms, code := queryJSON(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", sent[len(sent)-1].key, "--addr", g.SlaveAddr)
		if code != ExitOK || len(ms) != 1 {
			return fmt.Errorf("slave not indexed yet (exit %d, %d messages)", code, len(ms))
		}
		return nil
	})
	checkFound(t, g, topic, g.MasterAddr, sent)
	checkFound(t, g, topic, g.SlaveAddr, sent)
	// Both rebuilt their unfinished index file from the CommitLog at start.
	require.True(t, g.Master.LogContains("index file rebuilt from the CommitLog"), "master log")
	require.True(t, g.Slave.LogContains("index file rebuilt from the CommitLog"), "slave log")

	// A clean stop finishes the index files; a damaged one is found by the verification that
	// follows the start, named in the log with the reason, and rebuilt.
	require.NoError(t, g.Master.Stop(30*time.Second))
	dir := filepath.Join(cfg.Dir, "master", "store", "index")
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, names)
	victim := filepath.Join(dir, names[0].Name())
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff // the trailer's checksum
	require.NoError(t, os.WriteFile(victim, b, 0o644))
	require.NoError(t, g.Master.Restart())
	g.WaitMasterReady(t)
	harness.Eventually(t, 30*time.Second, func() error {
		st, err := g.MasterStatus()
		if err != nil {
			return err
		}
		if st.StoreCheck == nil || st.StoreCheck.Index == nil || st.StoreCheck.Index.Pending > 0 {
			return fmt.Errorf("index files not verified yet: %+v", st.StoreCheck)
		}
		if ix := st.StoreCheck.Index; ix.Rebuilt != 1 || ix.Failed != 0 || !strings.Contains(ix.Last, victim) {
			return fmt.Errorf("index check %+v: want the damaged file %s rebuilt", *ix, victim)
		}
		return nil
	})
	require.True(t, g.Master.LogContains("invalid index file: checksum"), "the damage is reported")
	require.True(t, g.Master.LogContains("index file failed verification"), "the damage is reported")
	checkFound(t, g, topic, g.MasterAddr, sent)
	require.True(t, g.Master.Running(), "master alive")
	require.True(t, g.Slave.Running(), "slave alive")
}

// checkSendConsumeByID covers sendMessage, queryMsgById and consumeMessage on the group of
// TestQueryByKeyMasterAndSlave: a message sent with the tool is found by its offset id (on the
// master, and on the slave with --addr), byte-exact; consumeMessage reads every message once,
// one queue from an offset, and commits no consumer offset.
func checkSendConsumeByID(t *testing.T, g *e2e.Group, topic string, sent []keyed) {
	t.Helper()
	// sendMessage to a chosen queue, as JSON and as a table.
	code, out, errOut := runOut("sendMessage", "-n", g.NamesrvAddr, "-t", topic, "-p", "tool-body", "-k", "tool-key",
		"-c", "TT", "-b", e2e.BrokerName, "-i", "1", "--json")
	require.Equal(t, ExitOK, code, "stdout %q stderr %q", out, errOut)
	var res SendResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "SEND_OK", res.SendStatus)
	require.Equal(t, e2e.BrokerName, res.BrokerName)
	require.Equal(t, 1, res.QueueID)
	require.Len(t, res.MsgID, 32)
	out = mustRun(t, "sendMessage", "-n", g.NamesrvAddr, "-t", topic, "-p", "tool-body-2")
	require.NotNil(t, tableRow(out, e2e.BrokerName), out)
	require.Contains(t, out, "SEND_OK")
	code, _, _ = runOut("sendMessage", "-n", g.NamesrvAddr, "-t", topic, "-p", "x", "-i", "99")
	require.Equal(t, ExitServer, code, "no such queue")
	code, _, _ = runOut("sendMessage", "-n", g.NamesrvAddr, "-t", topic)
	require.Equal(t, ExitUsage, code)

	// queryMsgById: the tool's message and a client's, from the broker the id names and from the slave.
	ms, code := queryJSON(t, "queryMsgByKey", "-n", g.NamesrvAddr, "-t", topic, "-k", sent[2].key)
	require.Equal(t, ExitOK, code)
	require.Len(t, ms, 1)
	clientOffsetID := ms[0].OffsetMsgID
	ms, code = queryJSON(t, "queryMsgById", "-n", g.NamesrvAddr, "-i", res.OffsetMsgID, "-i", clientOffsetID)
	require.Equal(t, ExitOK, code)
	require.Len(t, ms, 2)
	require.Equal(t, "tool-body", ms[0].Body)
	require.Equal(t, res.MsgID, ms[0].MsgID)
	require.Equal(t, "tool-key", ms[0].Keys)
	require.Equal(t, "TT", ms[0].Tags)
	require.Equal(t, res.QueueOffset, ms[0].QueueOffset)
	require.Equal(t, sent[2].body, ms[1].Body)
	g.WaitSlaveCaughtUp(t)
	ms, code = queryJSON(t, "queryMsgById", "-n", g.NamesrvAddr, "-i", res.OffsetMsgID, "--addr", g.SlaveAddr)
	require.Equal(t, ExitOK, code)
	require.Len(t, ms, 1)
	require.Equal(t, "tool-body", ms[0].Body)
	out = mustRun(t, "queryMsgById", "-n", g.NamesrvAddr, "-i", clientOffsetID)
	require.Contains(t, out, sent[2].body)
	require.Contains(t, out, "Offset Message ID:")
	// An id past the end: exit 1; a malformed one: exit 2.
	host, off, err := commitlog.ParseOffsetMsgID(res.OffsetMsgID)
	require.NoError(t, err)
	_, code = queryJSON(t, "queryMsgById", "-n", g.NamesrvAddr, "-i", commitlog.OffsetMsgID(host, off+1<<40))
	require.Equal(t, ExitServer, code)
	code, _, _ = runOut("queryMsgById", "-n", g.NamesrvAddr, "-i", "XYZ")
	require.Equal(t, ExitUsage, code)

	// consumeMessage: every message once, byte-exact; one queue from an offset; -c caps.
	ms, code = queryJSON(t, "consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-c", "1000")
	require.Equal(t, ExitOK, code)
	require.Len(t, ms, len(sent)+2)
	bodies := map[string]int{}
	for _, m := range ms {
		bodies[m.Body]++
	}
	for _, s := range sent {
		require.Equal(t, 1, bodies[s.body], "%s consumed once", s.key)
	}
	require.Equal(t, 1, bodies["tool-body"])
	ms, code = queryJSON(t, "consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-b", e2e.BrokerName,
		"-i", strconv.Itoa(sent[5].queue), "-o", strconv.FormatInt(sent[5].offset, 10), "-c", "1")
	require.Equal(t, ExitOK, code)
	require.Len(t, ms, 1)
	require.Equal(t, sent[5].body, ms[0].Body)
	out = mustRun(t, "consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-c", "3")
	require.Contains(t, out, "QUEUE_OFFSET")
	// A time range: from an hour ahead nothing; up to an hour ahead (Java's date form) everything.
	ahead := time.Now().Add(time.Hour)
	ms, code = queryJSON(t, "consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-s", strconv.FormatInt(ahead.UnixMilli(), 10))
	require.Equal(t, ExitOK, code)
	require.Empty(t, ms)
	ms, code = queryJSON(t, "consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-e", ahead.Format("2006-01-02#15:04:05:000"), "-c", "1000")
	require.Equal(t, ExitOK, code)
	require.Len(t, ms, len(sent)+2)
	code, _, _ = runOut("consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-e", "yesterday")
	require.Equal(t, ExitUsage, code)
	code, _, _ = runOut("consumeMessage", "-n", g.NamesrvAddr, "-t", topic, "-o", "3")
	require.Equal(t, ExitUsage, code, "-o without -b and -i")
	// Nothing was committed for the tools' group.
	acfg := DefaultConfig()
	acfg.Namesrvs = []string{g.NamesrvAddr}
	admin, err := NewAdmin(acfg)
	require.NoError(t, err)
	defer admin.Close()
	for q := 0; q < 2; q++ {
		// RocketMQ answers 0 for a queue the group never committed whose first message is still
		// stored; a commit of the pulled messages would leave it past 0.
		off, found, err := admin.ConsumerOffset(context.Background(), g.MasterAddr, toolsConsumerGroup, topic, int32(q))
		require.NoError(t, err)
		require.False(t, found && off > 0, "queue %d: offset %d committed for %s", q, off, toolsConsumerGroup)
	}
}

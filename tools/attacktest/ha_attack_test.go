package attacktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// haGroup is an e2e group whose slave dials its master through a Front.
type haGroup struct {
	*e2e.Group
	dir   string
	front *Front
	p     rocketmq.Producer
	h     *e2e.History
	seq   atomic.Int64
}

func startHAGroup(t *testing.T) *haGroup {
	t.Helper()
	hg := &haGroup{dir: t.TempDir(), h: &e2e.History{}}
	cfg := e2e.DefaultGroupConfig()
	cfg.Dir = hg.dir
	cfg.HAFront = func(masterHA string) string {
		f, err := NewFront(masterHA)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		hg.front = f
		return f.Addr()
	}
	hg.Group = e2e.StartGroup(t, cfg)
	hg.CreateTopic(t, topic, 4)
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{hg.NamesrvAddr}), producer.WithGroupName("attack-pg"),
		producer.WithInstanceName(fmt.Sprintf("attack-%d", os.Getpid())), producer.WithRetry(2))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	hg.p = p
	return hg
}

// send sends n messages and returns their statuses; every answer is recorded in the history.
func (hg *haGroup) send(t *testing.T, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("attack-%06d-%s", hg.seq.Add(1), strings.Repeat("x", 200))
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithTag("t")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := hg.p.SendSync(ctx, msg)
		cancel()
		hg.h.Add(msg, res, err)
		if err != nil {
			got["error"]++
			continue
		}
		got[e2e.StatusName(res.Status)]++
	}
	return got
}

// invariants ends every case: all processes alive, a normal send answered SEND_OK once the
// slave is back in sync, and every acknowledged message byte-exact on master and slave.
func (hg *haGroup) invariants(t *testing.T) {
	t.Helper()
	for _, p := range []*harness.Process{hg.Namesrv, hg.Master, hg.Slave} {
		require.True(t, p.Running(), "%s died: %v\n%s", p.Name(), p.ExitErr(), p.LogTail(4096))
	}
	hg.WaitSlaveInSync(t)
	require.Equal(t, map[string]int{"SEND_OK": 1}, hg.send(t, 1), "a normal send")
	hg.WaitSlaveCaughtUp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, hg.h.Check(ctx, hg.Admin, hg.MasterAddr, hg.SlaveAddr))
	t.Logf("history %v byte-exact on master and slave", hg.h.Counts())
}

// slaveHA is the part of the slave's /status the cases read.
type slaveHA struct {
	MaxOffset     int64 `json:"maxOffset"`
	FlushedOffset int64 `json:"flushedOffset"`
	HASlave       *struct {
		Connected      bool
		State          string
		LastError      string
		Reconnects     uint64
		LocalMaxOffset int64
		Counters       hawire.SlaveCounters
	} `json:"haSlave"`
}

func status(t *testing.T, hostport string) slaveHA {
	t.Helper()
	var st slaveHA
	resp, err := http.Get("http://" + hostport + "/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.NotNil(t, st.HASlave)
	return st
}

// metric reads one series from a broker's /metrics (0 when absent).
func metric(t *testing.T, hostport, series string) float64 {
	t.Helper()
	v, err := Metric(hostport, series)
	require.NoError(t, err)
	return v
}

// logFingerprint hashes every file of the slave's CommitLog and its epoch file.
func logFingerprint(t *testing.T, storeDir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(path, storeDir)] = fmt.Sprintf("%d:%s", len(b), hex.EncodeToString(sum[:8]))
	}
	entries, err := os.ReadDir(filepath.Join(storeDir, "commitlog"))
	require.NoError(t, err)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		add(filepath.Join(storeDir, "commitlog", n))
	}
	add(filepath.Join(storeDir, hawire.EpochFileName))
	require.NotEmpty(t, names)
	return out
}

// TestHAAttacks plays the HA-link attacks of issue 15 against one group, in order; each case
// ends with the invariants.
func TestHAAttacks(t *testing.T) {
	hg := startHAGroup(t)
	require.Equal(t, map[string]int{"SEND_OK": 200}, hg.send(t, 200))
	hg.invariants(t)

	t.Run("FakeMaster", func(t *testing.T) { testFakeMaster(t, hg) })
	t.Run("FakeSlave", func(t *testing.T) { testFakeSlave(t, hg) })
	t.Run("Replay", func(t *testing.T) { testReplay(t, hg) })
}

// testFakeMaster: the slave's master address answers, for 20 s, DIVERGED at 0 and
// OFFSET_TOO_OLD without the secret and with a wrong one. Before issue 15 the slave wiped its
// log on the first answer and redialled about 500 times a second.
func testFakeMaster(t *testing.T, hg *haGroup) {
	storeDir := filepath.Join(hg.dir, "slave", "store")
	master, err := hg.MasterStatus()
	require.NoError(t, err)
	harness.Eventually(t, 30*time.Second, func() error { // everything on the slave's disk
		st := status(t, hg.SlaveHTTP)
		if st.MaxOffset != master.MaxOffset || st.FlushedOffset != st.MaxOffset {
			return fmt.Errorf("slave max %d flushed %d, master max %d", st.MaxOffset, st.FlushedOffset, master.MaxOffset)
		}
		return nil
	})
	before := logFingerprint(t, storeDir)
	slaveMax := status(t, hg.SlaveHTTP).MaxOffset
	wrong := hawiretest.NewSecret()
	answers := []func(hawire.Hello, hawire.Handshake) [][]byte{
		hawiretest.Refusal("", hawire.CodeDiverged, 0, 1000, 0, 0),
		hawiretest.Refusal("", hawire.CodeOffsetTooOld, 1<<40, 1000, 1<<40, 1<<41),
		hawiretest.Refusal(wrong, hawire.CodeDiverged, 0, 1000, 0, 0),
		hawiretest.Refusal(wrong, hawire.CodeOffsetTooOld, 1<<40, 1000, 1<<40, 1<<41),
	}
	var turn atomic.Int64
	fake := hawiretest.NewFakeMaster(t, func(h hawire.Hello, hs hawire.Handshake) [][]byte {
		return answers[int(turn.Add(1)-1)%len(answers)](h, hs)
	})
	reconnects := status(t, hg.SlaveHTTP).HASlave.Reconnects
	hg.front.Forward(fake.Addr())
	const attack = 20 * time.Second
	start := time.Now()
	for time.Since(start) < attack {
		st := status(t, hg.SlaveHTTP)
		require.NotEqual(t, hawire.SlaveFailed.String(), st.HASlave.State, "the impostor stopped replication: %s", st.HASlave.LastError)
		require.Equal(t, slaveMax, st.MaxOffset, "the impostor changed the slave's log")
		require.True(t, hg.Slave.Running())
		time.Sleep(500 * time.Millisecond)
	}
	st := status(t, hg.SlaveHTTP)
	n := fake.Handshakes()
	t.Logf("in %s the slave dialled the impostor %d times (%d reconnects); refusals %+v; last error: %s",
		time.Since(start).Round(time.Millisecond), fake.Connections(), st.HASlave.Reconnects-reconnects, st.HASlave.Counters, st.HASlave.LastError)
	// Backoff from 100 ms doubling to 5 s, each wait at least half the bound: at most 14
	// dials in 20 s (a few more for the slack of the loop); a busy loop makes thousands.
	require.GreaterOrEqual(t, n, int64(4), "the slave kept trying")
	require.LessOrEqual(t, fake.Connections(), int64(20), "redials bounded by the backoff")
	require.GreaterOrEqual(t, st.HASlave.Counters.UnprovenMasters, uint64(4))
	require.Zero(t, st.HASlave.Counters.Wipes)
	require.Contains(t, st.HASlave.LastError, "did not prove")
	require.GreaterOrEqual(t, metric(t, hg.SlaveHTTP, `rmqha_broker_ha_refused_masters_total{reason="unproven"}`), 4.0)
	require.True(t, hg.Slave.LogContains("HA slave refused the peer at the master's address"))
	require.Equal(t, before, logFingerprint(t, storeDir), "the slave's CommitLog and epoch file are byte-identical")

	hg.front.Forward(hg.MasterHA)
	fake.Close()
	hg.invariants(t)
}

// fakeSlave connects to the master's HA port, hands in a handshake proven with secret ("" =
// none) and acknowledges the master's whole log, again and again, until stop.
func fakeSlave(masterHA, secret string, seg int64, maxOffset func() int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := net.DialTimeout("tcp", masterHA, time.Second)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		fr := hawire.NewFrameReader(c, 0)
		if typ, body, err := fr.Next(hawire.MaxHandshakeFrame); err == nil && typ == hawire.FrameHello {
			hello, _ := hawire.DecodeHello(body)
			hs := hawire.Handshake{Version: hawire.MaxVersion, Cluster: e2e.ClusterName, BrokerName: e2e.BrokerName, BrokerID: 1,
				SegmentSize: seg, MinOffset: 0, MaxOffset: 0}
			if secret != "" {
				hs.Proof = hawire.SlaveProof(secret, hello.Nonce, hs)
			}
			_, _ = c.Write(hawire.AppendHandshake(nil, hs))
			for i := 0; i < 50; i++ {
				m := maxOffset()
				if _, err := c.Write(hawire.AppendAck(nil, hawire.Ack{Written: m, Flushed: m})); err != nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		_ = c.Close()
	}
}

// testFakeSlave: with the real slave down, strangers on the master's HA port (no secret, a
// wrong one) cannot make a SYNC_MASTER answer SEND_OK: before issue 15 a peer acknowledging
// every frame turned SLAVE_NOT_AVAILABLE into SEND_OK replicas=2.
func testFakeSlave(t *testing.T, hg *haGroup) {
	require.NoError(t, hg.Slave.Stop(30*time.Second))
	harness.Eventually(t, 30*time.Second, func() error {
		st, err := hg.MasterStatus()
		if err != nil {
			return err
		}
		if st.HAMaster == nil || st.HAMaster.InSyncCount != 1 {
			return fmt.Errorf("master still counts a slave: %+v", st.HAMaster)
		}
		return nil
	})
	authBefore := metric(t, hg.MasterHTTP, `rmqha_broker_ha_errors_total{kind="auth_failure"}`)
	var maxOff atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, secret := range []string{"", hawiretest.NewSecret()} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fakeSlave(hg.MasterHA, secret, e2e.DefaultGroupConfig().MappedFileSizeCommitLog, func() int64 { return maxOff.Load() }, stop)
		}()
	}
	poll := make(chan struct{})
	go func() { // the strangers acknowledge whatever the master holds
		defer close(poll)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if st, err := hg.MasterStatus(); err == nil {
				maxOff.Store(st.MaxOffset)
			}
		}
	}()
	harness.Eventually(t, 20*time.Second, func() error {
		if n := metric(t, hg.MasterHTTP, `rmqha_broker_ha_errors_total{kind="auth_failure"}`) - authBefore; n < 4 {
			return fmt.Errorf("%v auth failures so far", n)
		}
		return nil
	})
	got := hg.send(t, 30)
	close(stop)
	wg.Wait()
	<-poll
	require.Equal(t, map[string]int{"SLAVE_NOT_AVAILABLE": 30}, got, "strangers must never count as a copy")
	st, err := hg.MasterStatus()
	require.NoError(t, err)
	for _, s := range st.HAMaster.Slaves {
		require.False(t, s.Streaming, "a stranger was accepted: %+v", s)
	}
	t.Logf("master refused %v stranger handshakes", metric(t, hg.MasterHTTP, `rmqha_broker_ha_errors_total{kind="auth_failure"}`)-authBefore)

	require.NoError(t, hg.Slave.Restart())
	hg.invariants(t)
}

// frames splits recorded bytes into whole frames (a partial last one is dropped).
func frames(b []byte) (types []hawire.FrameType, raw [][]byte) {
	for len(b) > 0 {
		typ, _, rest, err := hawire.SplitFrame(b)
		if err != nil {
			break
		}
		types = append(types, typ)
		raw = append(raw, b[:len(b)-len(rest)])
		b = rest
	}
	return types, raw
}

// testReplay: a genuine conversation recorded on the wire is worthless on another connection:
// the slave's Handshake replayed to the master is refused NOT_AUTHORISED (its proof covers the
// master's old nonce), and the master's Hello and Accept replayed to the slave are refused
// (the Accept's proof covers the slave's old nonce).
func testReplay(t *testing.T, hg *haGroup) {
	hg.front.Record(64 << 10)
	hg.front.CutAll() // the slave reconnects through the front, recorded
	var rec Recording
	harness.Eventually(t, 30*time.Second, func() error {
		for _, r := range hg.front.Recordings() {
			up, _ := frames(r.ToUpstream)
			down, _ := frames(r.FromUpstream)
			if len(up) > 0 && up[0] == hawire.FrameHandshake && len(down) > 1 && down[0] == hawire.FrameHello && down[1] == hawire.FrameAccept {
				rec = r
				return nil
			}
		}
		return fmt.Errorf("no genuine handshake recorded yet (%d connections)", len(hg.front.Recordings()))
	})
	hg.front.Record(0)
	_, up := frames(rec.ToUpstream)
	types, down := frames(rec.FromUpstream)
	hs, err := hawire.DecodeHandshake(up[0][hawire.FrameHeaderLen:])
	require.NoError(t, err)
	require.Len(t, hs.Proof, hawire.ProofLen, "the genuine slave proves the secret")

	// 1. The handshake replayed to the master.
	authBefore := metric(t, hg.MasterHTTP, `rmqha_broker_ha_errors_total{kind="auth_failure"}`)
	for i := 0; i < 3; i++ {
		c, err := net.DialTimeout("tcp", hg.MasterHA, time.Second)
		require.NoError(t, err)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fr := hawire.NewFrameReader(c, 0)
		typ, _, err := fr.Next(hawire.MaxHandshakeFrame)
		require.NoError(t, err)
		require.Equal(t, hawire.FrameHello, typ)
		_, err = c.Write(up[0])
		require.NoError(t, err)
		typ, body, err := fr.Next(hawire.MaxControlFrame)
		require.NoError(t, err)
		require.Equal(t, hawire.FrameError, typ, "the replayed handshake was accepted")
		e, err := hawire.DecodeError(body)
		require.NoError(t, err)
		require.Equal(t, hawire.CodeNotAuthorised, e.Code)
		require.Zero(t, e.MasterEpoch+e.MasterMin+e.MasterMax, "a refused peer learns nothing about the log")
		_ = c.Close()
	}
	require.Equal(t, 3.0, metric(t, hg.MasterHTTP, `rmqha_broker_ha_errors_total{kind="auth_failure"}`)-authBefore)

	// 2. The master's Hello, Accept (and any Data that followed) replayed to the slave.
	var replay []byte
	for i, typ := range types {
		if typ == hawire.FrameHello || typ == hawire.FrameAccept || typ == hawire.FrameData || typ == hawire.FrameHeartbeat {
			replay = append(replay, down[i]...)
		}
	}
	slaveMax := status(t, hg.SlaveHTTP).MaxOffset
	unproven := status(t, hg.SlaveHTTP).HASlave.Counters.UnprovenMasters
	accepted := hg.front.Accepted()
	hg.front.Replay(replay)
	harness.Eventually(t, 30*time.Second, func() error {
		st := status(t, hg.SlaveHTTP)
		if st.HASlave.Counters.UnprovenMasters < unproven+2 || hg.front.Accepted() < accepted+2 {
			return fmt.Errorf("refusals %+v, connections %d", st.HASlave.Counters, hg.front.Accepted()-accepted)
		}
		return nil
	})
	st := status(t, hg.SlaveHTTP)
	require.Equal(t, slaveMax, st.MaxOffset, "data taken from a replayed Accept")
	require.False(t, st.HASlave.Connected)
	require.Contains(t, st.HASlave.LastError, "ACCEPT")

	hg.front.Forward(hg.MasterHA)
	hg.invariants(t)
}

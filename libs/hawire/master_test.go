package hawire_test

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

func TestDemotedMasterAnswersNotMaster(t *testing.T) {
	ml, sl := memlog.New(64<<10), memlog.New(64<<10)
	m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
	s := hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), sl, m.Addr().String())
	hawiretest.Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "connected")
	m.Demote()
	hawiretest.Eventually(t, 10*time.Second, func() bool {
		st := s.Status()
		return !st.Connected && strings.Contains(st.LastError, "NOT_MASTER") && st.State != "failed"
	}, "slave status %+v", s.Status())
	if st := <-m.WaitReplicated(ml.MaxOffset()+1, time.Now().Add(time.Second)); st != hawire.ReplSlaveNotAvailable {
		t.Fatalf("demoted master wait: %v", st)
	}
}

func TestStrictModeAndInSyncCount(t *testing.T) {
	ml, sl := memlog.New(64<<10), memlog.New(64<<10)
	cfg := hawiretest.MasterConfig(t.TempDir())
	cfg.MinInSyncReplicas = 2
	m := hawiretest.StartMaster(t, cfg, ml)
	if err := m.CanAccept(); err == nil {
		t.Fatal("strict mode accepted a write with no slave")
	}
	hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), sl, m.Addr().String())
	hawiretest.Eventually(t, 10*time.Second, func() bool { return m.CanAccept() == nil }, "strict mode with a slave in sync")
	if m.InSyncCount() != 2 {
		t.Fatalf("in sync %d", m.InSyncCount())
	}
}

func TestMasterRestartBumpsEpoch(t *testing.T) {
	dir := t.TempDir()
	ml := memlog.New(64 << 10)
	for i := 1; i <= 3; i++ {
		if _, err := ml.Append(hawiretest.Record(100, uint64(i))); err != nil {
			t.Fatal(err)
		}
		m, err := hawire.NewMaster(hawiretest.MasterConfig(dir), ml)
		if err != nil {
			t.Fatal(err)
		}
		if m.Epoch() != int64(i) {
			t.Fatalf("start %d: epoch %d", i, m.Epoch())
		}
	}
	entries, err := hawire.LoadEpochFile(dir)
	if err != nil || len(entries) != 3 || entries[2].StartOffset != ml.MaxOffset() {
		t.Fatalf("epochs %+v %v", entries, err)
	}
	// A start with no write since the last one replaces the empty epoch.
	if _, err := hawire.NewMaster(hawiretest.MasterConfig(dir), ml); err != nil {
		t.Fatal(err)
	}
	entries, _ = hawire.LoadEpochFile(dir)
	if len(entries) != 3 || entries[2].Epoch != 4 {
		t.Fatalf("epochs %+v", entries)
	}
}

func TestConfigValidation(t *testing.T) {
	// Secure by default: neither side runs without a secret unless told to.
	mc := hawire.DefaultMasterConfig()
	if err := mc.Validate(); !errors.Is(err, hawire.ErrNoSecret) || !strings.Contains(err.Error(), "AllowUnauthenticated") {
		t.Fatalf("master without a secret: %v", err)
	}
	if err := hawire.DefaultSlaveConfig().Validate(); !errors.Is(err, hawire.ErrNoSecret) {
		t.Fatalf("slave without a secret: %v", err)
	}
	mc.Secret = "too-short"
	if err := mc.Validate(); err == nil || !strings.Contains(err.Error(), "minimum of 16") {
		t.Fatalf("short secret: %v", err)
	}
	mc.Secret, mc.AllowUnauthenticated = "", true
	if err := mc.Validate(); err != nil {
		t.Fatal(err)
	}
	mc.Secret, mc.AllowUnauthenticated = hawiretest.Secret, false
	if err := mc.Validate(); err != nil {
		t.Fatal(err)
	}
	mc.InSyncReplicas = 0
	if err := mc.Validate(); err == nil || !strings.Contains(err.Error(), "InSyncReplicas") {
		t.Fatalf("got %v", err)
	}
	sc := hawire.DefaultSlaveConfig()
	sc.Secret = hawiretest.Secret
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	sc.OnTooOld = "ignore"
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "OnTooOld") {
		t.Fatalf("got %v", err)
	}
	if hawire.DefaultMasterConfig().SlaveTimeout >= 3*time.Second {
		t.Fatal("SlaveTimeout must stay below the Go client's 3 s send timeout")
	}
}

func TestFlushedOffsetReachesMasterStatus(t *testing.T) {
	ml, sl := memlog.New(64<<10), memlog.New(64<<10)
	sl.SetAutoFlush(false)
	m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
	s := hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), sl, m.Addr().String())
	for i := 0; i < 50; i++ {
		if _, err := ml.Append(hawiretest.Record(700, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	hawiretest.WaitCaughtUp(t, ml, sl, 10*time.Second)
	hawiretest.Eventually(t, 5*time.Second, func() bool {
		st := m.Status()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset == ml.MaxOffset() && st.Slaves[0].FlushedOffset == 0
	}, "written acked, nothing flushed: %+v", m.Status())
	sl.Flush()
	hawiretest.Eventually(t, 5*time.Second, func() bool {
		st := m.Status()
		return st.Slaves[0].FlushedOffset == ml.MaxOffset() && st.Slaves[0].LagBytes == 0 && st.Slaves[0].InSync
	}, "flushed offset reported by heartbeat acks: %+v", m.Status())
	ss := s.Status()
	if ss.LagBytes != 0 || ss.FlushedOffset != ml.MaxOffset() || ss.MasterMaxOffset != ml.MaxOffset() {
		t.Fatalf("slave status %+v", ss)
	}
}

func TestLagSecondsGrowsWhileSlaveIsAway(t *testing.T) {
	ml, sl := memlog.New(64<<10), memlog.New(64<<10)
	m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
	p := hawiretest.NewProxy(t, m.Addr().String())
	hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), sl, p.Addr())
	hawiretest.Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "connected")
	p.SetDelay(300 * time.Millisecond)
	if _, err := ml.Append(hawiretest.Record(500, 1)); err != nil {
		t.Fatal(err)
	}
	hawiretest.Eventually(t, 10*time.Second, func() bool {
		st := m.Status()
		return len(st.Slaves) == 1 && st.Slaves[0].LagBytes == 500 && st.Slaves[0].LagSeconds >= 0.1
	}, "lag in bytes and seconds: %+v", m.Status())
	hawiretest.Eventually(t, 10*time.Second, func() bool {
		st := m.Status()
		return st.Slaves[0].LagBytes == 0 && st.Slaves[0].LagSeconds == 0
	}, "lag gone: %+v", m.Status())
}

func TestMasterDropsSilentSlave(t *testing.T) {
	ml := memlog.New(64 << 10)
	cfg := hawiretest.MasterConfig(t.TempDir())
	cfg.HousekeepingInterval = 400 * time.Millisecond
	m := hawiretest.StartMaster(t, cfg, ml)
	c, err := net.DialTimeout("tcp", m.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fr := hawire.NewFrameReader(c, 0)
	typ, body, err := fr.Next(hawire.MaxControlFrame)
	if err != nil || typ != hawire.FrameHello {
		t.Fatalf("hello: %v %v", typ, err)
	}
	hello, err := hawire.DecodeHello(body)
	if err != nil {
		t.Fatal(err)
	}
	hs := hawire.Handshake{Version: hawire.MaxVersion, Cluster: cfg.ClusterName, BrokerName: cfg.BrokerName, BrokerID: 3, SegmentSize: ml.SegmentSize()}
	hs.Proof = hawire.SlaveProof(cfg.Secret, hello.Nonce, hs)
	if _, err := c.Write(hawire.AppendHandshake(nil, hs)); err != nil {
		t.Fatal(err)
	}
	hawiretest.Eventually(t, 5*time.Second, func() bool { return m.InSyncCount() == 2 }, "fake slave accepted")
	// It never acknowledges anything: the master drops it.
	hawiretest.Eventually(t, 10*time.Second, func() bool { return len(m.Status().Slaves) == 0 }, "silent slave dropped")
	if m.Status().Counters.Expired != 1 {
		t.Fatalf("counters %+v", m.Status().Counters)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := fr.Next(hawire.MaxDataFrame); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("connection left open")
			}
			break
		}
	}
}

func TestSlaveReconnectsWhenMasterGoesSilent(t *testing.T) {
	ml, sl := memlog.New(64<<10), memlog.New(64<<10)
	m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
	p := hawiretest.NewProxy(t, m.Addr().String())
	scfg := hawiretest.SlaveConfig(t.TempDir())
	scfg.HousekeepingInterval = 400 * time.Millisecond
	s := hawiretest.StartSlave(t, scfg, sl, p.Addr())
	hawiretest.Eventually(t, 5*time.Second, func() bool { return s.Status().Connected }, "connected")
	p.SetDelay(time.Hour) // bytes stop arriving, the TCP connection stays up
	hawiretest.Eventually(t, 10*time.Second, func() bool { return p.Accepted() >= 2 }, "slave redials after silence")
	p.SetDelay(0)
	if _, err := ml.Append(hawiretest.Record(300, 1)); err != nil {
		t.Fatal(err)
	}
	hawiretest.WaitCaughtUp(t, ml, sl, 10*time.Second)
}

func TestMasterNeverReusesAnEpochNumber(t *testing.T) {
	dir := t.TempDir()
	if err := hawire.SaveEpochFile(dir, []hawire.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}, {Epoch: 3, StartOffset: 200}}); err != nil {
		t.Fatal(err)
	}
	ml := memlog.New(64 << 10)
	if _, err := ml.Append(hawiretest.Record(150, 1)); err != nil { // the log was cut back to 150
		t.Fatal(err)
	}
	m, err := hawire.NewMaster(hawiretest.MasterConfig(dir), ml)
	if err != nil {
		t.Fatal(err)
	}
	if m.Epoch() != 4 {
		t.Fatalf("epoch %d", m.Epoch())
	}
	got, _ := hawire.LoadEpochFile(dir)
	want := []hawire.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}, {Epoch: 4, StartOffset: 150}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("epochs %+v", got)
	}
}

// Every replication wait ends once the master closes, however it races with Close: a wait
// registered after Close had completed the others once never ended (a SYNC send blocked for
// minutes past its deadline in a failover test). The waits here have an hour's deadline and
// ask for bytes the log does not hold, so only Close can end them.
func TestWaitsRacingCloseAllEnd(t *testing.T) {
	for round := 0; round < 10; round++ {
		ml := memlog.New(64 << 10)
		if _, err := ml.Append(hawiretest.Record(0, 1)); err != nil {
			t.Fatal(err)
		}
		m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
		// A slave in sync, so that the waits pend instead of failing at once.
		hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), memlog.New(64<<10), m.Addr().String())
		hawiretest.Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "connected")
		var (
			mu    sync.Mutex
			waits []<-chan hawire.ReplStatus
			stop  atomic.Bool
			wg    sync.WaitGroup
		)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					ch := m.WaitReplicated(ml.MaxOffset()+1, time.Now().Add(time.Hour))
					mu.Lock()
					waits = append(waits, ch)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(1+round%4) * time.Millisecond) // Close at different points
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		stop.Store(true)
		wg.Wait()
		deadline := time.After(10 * time.Second)
		for i, ch := range waits {
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("round %d: wait %d of %d never ended after Close", round, i, len(waits))
			}
		}
	}
}

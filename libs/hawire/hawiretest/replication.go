package hawiretest

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
)

// RunReplication runs master and slave drivers over loopback sockets against
// logs made by newLog and checks the guarantees of the HA protocol: once with
// appends sending inline when their connection's sender is idle
// (MasterConfig.InlineSend), and once with only the send loops sending.
func RunReplication(t *testing.T, newLog LogFactory) {
	runReplication(t, newLog)
	t.Run("SendLoopOnly", func(t *testing.T) {
		sendLoopOnly.Store(true)
		defer sendLoopOnly.Store(false)
		runReplication(t, newLog)
	})
}

// sendLoopOnly clears MasterConfig's InlineSend while RunReplication runs its second pass.
var sendLoopOnly atomic.Bool

func runReplication(t *testing.T, newLog LogFactory) {
	t.Run("ByteIdenticalAcrossSegments", func(t *testing.T) { testIdentical(t, newLog) })
	t.Run("SlaveRestartCatchesUpUnderLoad", func(t *testing.T) { testRestart(t, newLog) })
	t.Run("OffsetTooOld", func(t *testing.T) { testTooOld(t, newLog) })
	t.Run("DivergedTailIsTruncated", func(t *testing.T) { testDiverged(t, newLog) })
	t.Run("SyncWaitsThroughFaultyLink", func(t *testing.T) { testFaultyLink(t, newLog) })
	t.Run("HostilePeersCannotMoveAcks", func(t *testing.T) { testHostile(t, newLog) })
	if !sendLoopOnly.Load() { // a fake master: no Master sends there
		t.Run("ImpostorMasterCannotTouchTheLog", func(t *testing.T) { testImpostorMaster(t, newLog) })
	}
	t.Run("StrangerSlaveCannotConfirmSends", func(t *testing.T) { testStrangerSlave(t, newLog) })
	t.Run("SlowLinkIsNotDropped", func(t *testing.T) { testSlowLink(t, newLog) })
	t.Run("SlaveDiskFailureTimesOutSyncSends", func(t *testing.T) { testSlaveDiskFailure(t, newLog) })
	t.Run("MasterKilledUnderSyncLoadLosesNoAckedSend", func(t *testing.T) { testNoAckedLoss(t, newLog) })
	t.Run("AsyncLossBoundedByReportedLag", func(t *testing.T) { testAsyncLag(t, newLog) })
}

// testNoAckedLoss stops the master abruptly in the middle of SYNC load,
// several times, and checks that every send answered ReplOK is on the slave,
// intact and at the same offset, at the moment the master died.
func testNoAckedLoss(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	mdir := t.TempDir()
	disc := NewSwitchDiscovery("")
	s, err := hawire.NewSlave(SlaveConfig(t.TempDir()), sl, disc)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Start()
	t.Cleanup(func() { _ = s.Close() })
	type acked struct {
		off int64
		rec []byte
	}
	var all []acked
	for round := 0; round < 4; round++ {
		m, err := hawire.NewMaster(MasterConfig(mdir), ml)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
		disc.Set(m.Addr().String())
		Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "round %d: slave in sync", round)
		var mu sync.Mutex // the store's append lock
		var okMu sync.Mutex
		var ok []acked
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					rec := Record(200+(g*131+i*17)%3000, uint64(round)<<48|uint64(g)<<32|uint64(i))
					mu.Lock()
					off, err := AppendRecord(ml, rec)
					mu.Unlock()
					if err != nil {
						t.Error(err)
						return
					}
					binary.BigEndian.PutUint64(rec[PhysicalOffsetPos:], uint64(off))
					if <-m.WaitReplicated(off+int64(len(rec)), time.Now().Add(time.Second)) == hawire.ReplOK {
						okMu.Lock()
						ok = append(ok, acked{off, rec})
						okMu.Unlock()
					}
				}
			}()
		}
		Eventually(t, 10*time.Second, func() bool { okMu.Lock(); defer okMu.Unlock(); return len(ok) > 200 }, "round %d: sync sends succeed", round)
		_ = m.Close() // the master dies mid-load
		okMu.Lock()
		snapshot := append([]acked(nil), ok...)
		okMu.Unlock()
		for _, a := range snapshot {
			got, err := ReadRange(sl, a.off, a.off+int64(len(a.rec)))
			if err != nil || !bytes.Equal(got, a.rec) {
				t.Fatalf("round %d: acknowledged record at %d missing or different on the slave (%v)", round, a.off, err)
			}
		}
		close(stop)
		wg.Wait()
		all = append(all, snapshot...)
	}
	t.Logf("%d acknowledged sends checked, none lost", len(all))
}

// testAsyncLag: with ASYNC replication, what the slave lacks after the master
// dies is no more than the lag the master reported just before.
func testAsyncLag(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	p := NewProxy(t, m.Addr().String())
	p.SetThrottle(256 << 10) // a slave that trails
	StartSlave(t, SlaveConfig(t.TempDir()), sl, p.Addr())
	Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "connected")
	fillTo(t, ml, ml.MaxOffset()+ml.SegmentSize()*2, 21)
	Eventually(t, 10*time.Second, func() bool { return sl.MaxOffset() > 0 }, "some data through")
	st := m.Status()
	if len(st.Slaves) != 1 {
		t.Fatalf("status %+v", st)
	}
	lag := st.Slaves[0].LagBytes
	p.Cut() // the master is gone for the slave
	_ = m.Close()
	lost := ml.MaxOffset() - sl.MaxOffset()
	if lost > lag || lag <= 0 {
		t.Fatalf("slave lacks %d bytes, master reported a lag of %d", lost, lag)
	}
	t.Logf("reported lag %d bytes, lost %d", lag, lost)
}

// failingLog fails AppendRaw while broken is set, like a read-only disk.
type failingLog struct {
	hawire.Log
	broken atomic.Bool
}

var errDiskBroken = errors.New("injected: read-only file system")

func (f *failingLog) AppendRaw(offset int64, data []byte) error {
	if f.broken.Load() {
		return errDiskBroken
	}
	return f.Log.AppendRaw(offset, data)
}

// testSlaveDiskFailure: when the slave cannot write, SYNC sends end by their
// deadline with a replication error, and the slave catches up once its disk works.
func testSlaveDiskFailure(t *testing.T, newLog LogFactory) {
	ml := newLog(t)
	sl := &failingLog{Log: newLog(t)}
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	s := StartSlave(t, SlaveConfig(t.TempDir()), sl, m.Addr().String())
	fillTo(t, ml, ml.SegmentSize()/2, 13)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "in sync")
	sl.broken.Store(true)
	const timeout = 500 * time.Millisecond
	rs := syncSends(t, m, ml, 20, 1000, timeout, 14)
	checkByDeadline(t, "slave disk broken", rs, timeout, hawire.ReplTimeout, hawire.ReplSlaveNotAvailable)
	Eventually(t, 10*time.Second, func() bool { return strings.Contains(s.Status().LastError, "read-only") }, "slave reports the disk error: %+v", s.Status())
	sl.broken.Store(false)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	RequireIdentical(t, ml, sl.Log)
	rs = syncSends(t, m, ml, 5, 1000, time.Second, 15)
	checkByDeadline(t, "slave disk repaired", rs, time.Second, hawire.ReplOK)
}

// testSlowLink: a Data frame that takes longer than the housekeeping
// interval to cross a slow but moving link must not get the link dropped.
func testSlowLink(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	mcfg := MasterConfig(t.TempDir())
	mcfg.HousekeepingInterval = time.Second
	mcfg.TransferBatchSize = 512 << 10
	m := StartMaster(t, mcfg, ml)
	p := NewProxy(t, m.Addr().String())
	// One frame (at most a segment) takes 1.5 housekeeping intervals.
	frame := min(int64(mcfg.TransferBatchSize), ml.SegmentSize())
	p.SetThrottle(frame * 2 / 3)
	scfg := SlaveConfig(t.TempDir())
	scfg.HousekeepingInterval = time.Second
	StartSlave(t, scfg, sl, p.Addr())
	fillTo(t, ml, 3*frame-frame/8, 12)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	RequireIdentical(t, ml, sl)
	if n := p.Accepted(); n != 1 {
		t.Fatalf("slow link was dropped: %d connections", n)
	}
}

// appender writes mixed-size records to l from one goroutine until stopped.
type appender struct {
	l       hawire.Log
	stop    chan struct{}
	done    chan struct{}
	seq     atomic.Uint64
	err     atomic.Value
	minSize int
	maxSize int
}

func startAppender(l hawire.Log, seed uint64, pause time.Duration) *appender {
	a := &appender{l: l, stop: make(chan struct{}), done: make(chan struct{}), minSize: 64, maxSize: int(min(l.SegmentSize()/4, 16<<10))}
	go func() {
		defer close(a.done)
		sizes := Sizes(1<<16, a.minSize, a.maxSize, seed)
		for i := 0; ; i++ {
			select {
			case <-a.stop:
				return
			default:
			}
			s := a.seq.Add(1)
			if _, err := AppendRecord(l, Record(sizes[i%len(sizes)], seed<<40|s)); err != nil {
				a.err.Store(err)
				return
			}
			if pause > 0 && i%16 == 0 {
				time.Sleep(pause)
			}
		}
	}()
	return a
}

func (a *appender) Stop(t testing.TB) {
	close(a.stop)
	<-a.done
	if err, _ := a.err.Load().(error); err != nil {
		t.Fatal(err)
	}
}

func fillTo(t testing.TB, l hawire.Log, n int64, seed uint64) {
	t.Helper()
	sizes := Sizes(1<<16, 64, int(min(l.SegmentSize()/4, 16<<10)), seed)
	for i := 0; l.MaxOffset() < n; i++ {
		if _, err := AppendRecord(l, Record(sizes[i%len(sizes)], seed<<40|uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
}

func testIdentical(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	seg := ml.SegmentSize()
	fillTo(t, ml, seg+seg/2, 1) // some history before the slave exists
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	s := StartSlave(t, SlaveConfig(t.TempDir()), sl, m.Addr().String())
	a := startAppender(ml, 2, time.Millisecond)
	Eventually(t, 30*time.Second, func() bool { return ml.MaxOffset() > 12*seg }, "master growth")
	a.Stop(t)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	RequireIdentical(t, ml, sl)
	if sl.MinOffset() != ml.MinOffset() {
		t.Fatalf("fresh slave starts at %d, master min %d", sl.MinOffset(), ml.MinOffset())
	}
	Eventually(t, 5*time.Second, func() bool {
		ms := m.Status()
		return len(ms.Slaves) == 1 && ms.Slaves[0].InSync && ms.Slaves[0].AckOffset == ml.MaxOffset() && ms.Slaves[0].LagBytes == 0
	}, "master status %+v", m.Status())
	ss := s.Status()
	if !ss.Connected || ss.LastEpoch != m.Epoch() {
		t.Fatalf("slave status %+v", ss)
	}
	if m.InSyncCount() != 2 {
		t.Fatalf("in sync %d", m.InSyncCount())
	}
	requireNoAlarms(t, m)
}

// requireNoAlarms checks that a healthy run raised no protocol alarm (a
// genuine slave never sends an invalid ack).
func requireNoAlarms(t *testing.T, m *hawire.Master) {
	t.Helper()
	if c := m.Status().Counters; c.AckViolations+c.ProtocolErrors+c.AuthFailures+c.HandshakeErrors != 0 {
		t.Fatalf("alarms in a healthy run: %+v", c)
	}
}

func testRestart(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	seg := ml.SegmentSize()
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	sdir := t.TempDir()
	a := startAppender(ml, 3, time.Millisecond)
	for round := 0; round < 3; round++ {
		s, err := hawire.NewSlave(SlaveConfig(sdir), sl, hawire.StaticDiscovery(m.Addr().String()))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		target := ml.MaxOffset() + seg/2
		Eventually(t, 30*time.Second, func() bool { return sl.MaxOffset() > target }, "slave progress in round %d", round)
		_ = s.Close() // killed while the master keeps writing
		grow := ml.MaxOffset() + seg
		Eventually(t, 30*time.Second, func() bool { return ml.MaxOffset() > grow }, "master growth")
	}
	StartSlave(t, SlaveConfig(sdir), sl, m.Addr().String())
	a.Stop(t)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	RequireIdentical(t, ml, sl)
	requireNoAlarms(t, m)
}

func testTooOld(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	ret, ok := ml.(Retention)
	if !ok {
		t.Skip("log has no DeleteBefore")
	}
	seg := ml.SegmentSize()
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	sdir := t.TempDir()
	fillTo(t, ml, seg/2, 4)
	s1, err := hawire.NewSlave(SlaveConfig(sdir), sl, hawire.StaticDiscovery(m.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	_ = s1.Start()
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	_ = s1.Close()
	fillTo(t, ml, 5*seg, 5)
	ret.DeleteBefore(3 * seg)
	if ml.MinOffset() <= sl.MaxOffset() {
		t.Fatalf("retention left min %d, slave max %d", ml.MinOffset(), sl.MaxOffset())
	}
	slaveMax := sl.MaxOffset()

	// Default: report and stop, never a silent stall.
	s2 := StartSlave(t, SlaveConfig(sdir), sl, m.Addr().String())
	Eventually(t, 10*time.Second, func() bool {
		st := s2.Status()
		return st.State == "failed" && strings.Contains(st.LastError, "OFFSET_TOO_OLD")
	}, "slave status %+v", s2.Status())
	if sl.MaxOffset() != slaveMax {
		t.Fatal("failed slave changed its log")
	}
	_ = s2.Close()

	// Opt-in: wipe and copy again.
	cfg := SlaveConfig(sdir)
	cfg.OnTooOld, cfg.AllowWipe = hawire.OnTooOldWipe, true
	StartSlave(t, cfg, sl, m.Addr().String())
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	if sl.MinOffset() != ml.MinOffset() {
		t.Fatalf("wiped slave starts at %d, master min %d", sl.MinOffset(), ml.MinOffset())
	}
	RequireIdentical(t, ml, sl)
}

func testDiverged(t *testing.T, newLog LogFactory) {
	for _, mode := range []string{hawire.OnDivergedTruncate, hawire.OnDivergedFail} {
		t.Run(mode, func(t *testing.T) {
			ml, sl := newLog(t), newLog(t)
			seg := ml.SegmentSize()
			mdir, sdir := t.TempDir(), t.TempDir()
			fillTo(t, ml, seg+seg/3, 6)
			m1 := StartMaster(t, MasterConfig(mdir), ml)
			s1 := StartSlave(t, SlaveConfig(sdir), sl, m1.Addr().String())
			fillTo(t, ml, 2*seg+seg/3, 7)
			WaitCaughtUp(t, ml, sl, 30*time.Second)
			_ = s1.Close()
			_ = m1.Close()

			// The master loses its tail and, restarted in a new epoch, writes
			// different records at the same offsets.
			all, err := ReadAll(ml)
			if err != nil {
				t.Fatal(err)
			}
			cut := recordBoundaryNear(t, all, seg+seg/2)
			if err := ml.Truncate(cut); err != nil {
				t.Fatal(err)
			}
			m2 := StartMaster(t, MasterConfig(mdir), ml)
			if m2.Epoch() != 2 {
				t.Fatalf("restarted master epoch %d", m2.Epoch())
			}
			fillTo(t, ml, 3*seg, 8)
			slaveMax := sl.MaxOffset()

			cfg := SlaveConfig(sdir)
			cfg.OnDiverged = mode
			s2 := StartSlave(t, cfg, sl, m2.Addr().String())
			if mode == hawire.OnDivergedFail {
				Eventually(t, 10*time.Second, func() bool {
					st := s2.Status()
					return st.State == "failed" && strings.Contains(st.LastError, "DIVERGED")
				}, "slave status %+v", s2.Status())
				if sl.MaxOffset() != slaveMax {
					t.Fatal("failed slave changed its log")
				}
				return
			}
			WaitCaughtUp(t, ml, sl, 30*time.Second)
			RequireIdentical(t, ml, sl)
			if st := s2.Status(); st.Truncations != 1 || st.TruncatedBytes != slaveMax-cut {
				t.Fatalf("slave reports %d truncations of %d bytes, want 1 of %d", st.Truncations, st.TruncatedBytes, slaveMax-cut)
			}
			entries, err := hawire.LoadEpochFile(sdir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 2 || entries[1] != (hawire.EpochEntry{Epoch: 2, StartOffset: cut}) {
				t.Fatalf("slave epochs %+v, want epoch 2 at %d", entries, cut)
			}
		})
	}
}

type syncResult struct {
	status  hawire.ReplStatus
	elapsed time.Duration
}

// syncSends appends n records and waits for each with a timeout, all in flight at once.
func syncSends(t *testing.T, m *hawire.Master, l hawire.Log, n, size int, timeout time.Duration, seed uint64) []syncResult {
	t.Helper()
	type pending struct {
		ch    <-chan hawire.ReplStatus
		start time.Time
	}
	var ps []pending
	for i := 0; i < n; i++ {
		rec := Record(size, seed<<40|uint64(i))
		off, err := AppendRecord(l, rec)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		ps = append(ps, pending{m.WaitReplicated(off+int64(len(rec)), now.Add(timeout)), now})
	}
	out := make([]syncResult, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case st := <-p.ch:
				out[i] = syncResult{st, time.Since(p.start)}
			case <-time.After(timeout + 10*time.Second):
				out[i] = syncResult{-1, time.Since(p.start)}
			}
		}()
	}
	wg.Wait()
	return out
}

func checkByDeadline(t *testing.T, what string, rs []syncResult, timeout time.Duration, allowed ...hawire.ReplStatus) map[hawire.ReplStatus]int {
	t.Helper()
	// Slack for a loaded 2-core machine; the point is that nobody waits
	// for a wake-up count or forever.
	const slack = 2 * time.Second
	counts := map[hawire.ReplStatus]int{}
	for i, r := range rs {
		ok := false
		for _, a := range allowed {
			ok = ok || r.status == a
		}
		if !ok {
			t.Fatalf("%s: send %d finished with %v", what, i, r.status)
		}
		if r.elapsed > timeout+slack {
			t.Fatalf("%s: send %d took %s, deadline %s", what, i, r.elapsed, timeout)
		}
		counts[r.status]++
	}
	return counts
}

func testFaultyLink(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	mcfg := MasterConfig(t.TempDir())
	mcfg.HousekeepingInterval = 2 * time.Second
	m := StartMaster(t, mcfg, ml)
	// No slave yet: SLAVE_NOT_AVAILABLE at once.
	rs := syncSends(t, m, ml, 3, 500, time.Second, 1)
	checkByDeadline(t, "no slave", rs, time.Second, hawire.ReplSlaveNotAvailable)

	p := NewProxy(t, m.Addr().String())
	StartSlave(t, SlaveConfig(t.TempDir()), sl, p.Addr())
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "slave in sync")

	const timeout = 500 * time.Millisecond
	rs = syncSends(t, m, ml, 50, 1000, timeout, 2)
	checkByDeadline(t, "healthy", rs, timeout, hawire.ReplOK)
	requireNoAlarms(t, m)

	p.SetDelay(100 * time.Millisecond)
	rs = syncSends(t, m, ml, 20, 1000, timeout, 3)
	checkByDeadline(t, "delayed", rs, timeout, hawire.ReplOK, hawire.ReplTimeout)

	p.SetDelay(0)
	p.SetThrottle(40 << 10)
	rs = syncSends(t, m, ml, 100, 4000, timeout, 4)
	c := checkByDeadline(t, "throttled", rs, timeout, hawire.ReplOK, hawire.ReplTimeout)
	t.Logf("throttled link: %d OK, %d FLUSH_SLAVE_TIMEOUT", c[hawire.ReplOK], c[hawire.ReplTimeout])

	p.Cut()
	rs = syncSends(t, m, ml, 20, 1000, timeout, 5)
	checkByDeadline(t, "cut", rs, timeout, hawire.ReplTimeout, hawire.ReplSlaveNotAvailable)
	fillTo(t, ml, ml.MaxOffset()+ml.SegmentSize(), 6)
	Eventually(t, 10*time.Second, func() bool { return len(m.Status().Slaves) == 0 }, "master notices the cut")
	rs = syncSends(t, m, ml, 3, 1000, timeout, 7)
	checkByDeadline(t, "cut, noticed", rs, timeout, hawire.ReplSlaveNotAvailable)

	p.Heal()
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	RequireIdentical(t, ml, sl)
	Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "slave in sync after heal")
	rs = syncSends(t, m, ml, 20, 1000, timeout, 8)
	checkByDeadline(t, "healed", rs, timeout, hawire.ReplOK)
}

// fakeSlave speaks the protocol by hand.
type fakeSlave struct {
	t     *testing.T
	c     net.Conn
	fr    *hawire.FrameReader
	hello hawire.Hello
}

func dialFake(t *testing.T, addr string) *fakeSlave {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	f := &fakeSlave{t: t, c: c, fr: hawire.NewFrameReader(c, 0)}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	typ, body, err := f.fr.Next(hawire.MaxControlFrame)
	if err != nil || typ != hawire.FrameHello {
		t.Fatalf("no hello: %v %v", typ, err)
	}
	if f.hello, err = hawire.DecodeHello(body); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeSlave) send(b []byte) {
	if _, err := f.c.Write(b); err != nil && !errors.Is(err, net.ErrClosed) {
		f.t.Logf("write: %v", err)
	}
}

// expectClosed reads until the master closes the connection and returns the
// Error frame code it sent, if any.
func (f *fakeSlave) expectClosed() hawire.ErrorCode {
	f.t.Helper()
	var code hawire.ErrorCode
	for {
		typ, body, err := f.fr.Next(hawire.MaxDataFrame)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				f.t.Fatal("master did not close the connection")
			}
			return code
		}
		if typ == hawire.FrameError {
			e, _ := hawire.DecodeError(body)
			code = e.Code
		}
	}
}

func (f *fakeSlave) handshake(secret string, brokerID int64, seg int64) hawire.Handshake {
	hs := hawire.Handshake{Version: hawire.MaxVersion, Cluster: "DefaultCluster", BrokerName: "broker-a",
		BrokerID: brokerID, SegmentSize: seg}
	_, _ = rand.Read(hs.SlaveNonce[:])
	if secret != "" {
		hs.Proof = hawire.SlaveProof(secret, f.hello.Nonce, hs)
	}
	return hs
}

func testHostile(t *testing.T, newLog LogFactory) {
	secret := NewSecret()
	ml, sl := newLog(t), newLog(t)
	seg := ml.SegmentSize()
	mcfg := MasterConfig(t.TempDir())
	mcfg.Secret = secret
	m := StartMaster(t, mcfg, ml)
	scfg := SlaveConfig(t.TempDir())
	scfg.Secret = secret
	StartSlave(t, scfg, sl, m.Addr().String())
	fillTo(t, ml, seg, 9)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	Eventually(t, 5*time.Second, func() bool {
		ms := m.Status()
		return len(ms.Slaves) == 1 && ms.Slaves[0].AckOffset == ml.MaxOffset()
	}, "ack settles")
	before := m.Status()
	addr := m.Addr().String()

	// Garbage instead of a handshake.
	f := dialFake(t, addr)
	f.send([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("\xff", 64)))
	f.expectClosed()

	// Wrong secret.
	f = dialFake(t, addr)
	f.send(hawire.AppendHandshake(nil, f.handshake("wrong", 5, seg)))
	if code := f.expectClosed(); code != hawire.CodeNotAuthorised {
		t.Fatalf("wrong secret answered %v", code)
	}

	// No proof at all.
	f = dialFake(t, addr)
	f.send(hawire.AppendHandshake(nil, f.handshake("", 5, seg)))
	if code := f.expectClosed(); code != hawire.CodeNotAuthorised {
		t.Fatalf("missing proof answered %v", code)
	}

	// A handshake recorded on one connection, replayed on another.
	f1 := dialFake(t, addr)
	recorded := hawire.AppendHandshake(nil, f1.handshake(secret, 5, seg))
	f2 := dialFake(t, addr)
	f2.send(recorded)
	if code := f2.expectClosed(); code != hawire.CodeNotAuthorised {
		t.Fatalf("replayed handshake answered %v", code)
	}
	// Replayed inside its own session after being accepted.
	f1.send(recorded)
	typ, _, err := f1.fr.Next(hawire.MaxControlFrame)
	if err != nil || typ != hawire.FrameAccept {
		t.Fatalf("genuine handshake: %v %v", typ, err)
	}
	f1.send(recorded)
	f1.expectClosed()

	// Acknowledgements beyond the master's max offset, and going backwards.
	for _, bad := range []hawire.Ack{{Written: ml.MaxOffset() + 1<<20}, {Written: 1 << 62}} {
		f = dialFake(t, addr)
		f.send(hawire.AppendHandshake(nil, f.handshake(secret, 6, seg)))
		if typ, _, err := f.fr.Next(hawire.MaxControlFrame); err != nil || typ != hawire.FrameAccept {
			t.Fatalf("fake slave not accepted: %v %v", typ, err)
		}
		f.send(hawire.AppendAck(nil, bad))
		f.expectClosed()
	}
	f = dialFake(t, addr)
	hs := f.handshake(secret, 6, seg)
	all, err := ReadAll(ml)
	if err != nil {
		t.Fatal(err)
	}
	boundary := recordBoundaryNear(t, all, seg/2)
	hs.MinOffset, hs.MaxOffset, hs.LastEpoch, hs.LastEpochStart = 0, boundary, m.Epoch(), 0
	hs.Proof = hawire.SlaveProof(secret, f.hello.Nonce, hs)
	f.send(hawire.AppendHandshake(nil, hs))
	if typ, _, err := f.fr.Next(hawire.MaxControlFrame); err != nil || typ != hawire.FrameAccept {
		t.Fatalf("fake slave not accepted: %v %v", typ, err)
	}
	f.send(hawire.AppendAck(nil, hawire.Ack{Written: boundary - 1}))
	f.expectClosed()

	Eventually(t, 5*time.Second, func() bool { return len(m.Status().Slaves) == 1 }, "only the real slave remains")
	after := m.Status()
	if after.Slaves[0].AckOffset != before.Slaves[0].AckOffset || after.Confirmed != before.Confirmed {
		t.Fatalf("acknowledged offset moved: before %+v after %+v", before.Slaves[0], after.Slaves[0])
	}
	c := after.Counters
	if c.AuthFailures < 3 || c.AckViolations < 3 || c.ProtocolErrors < 2 {
		t.Fatalf("counters %+v", c)
	}
	// The real slave still replicates and SYNC sends still complete.
	rs := syncSends(t, m, ml, 10, 1000, time.Second, 10)
	checkByDeadline(t, "after attacks", rs, time.Second, hawire.ReplOK)
}

// testImpostorMaster: a non-empty slave pointed at a peer that does not know
// the secret (or knows another one) keeps its log byte for byte whatever
// the peer answers (DIVERGED at 0, OFFSET_TOO_OLD, an ACCEPT with data, a
// version-1 HELLO), redials only at the backoff's pace, and replicates
// again once it finds its real master. The slave may wipe (AllowWipe,
// OnTooOld=wipe), so only the proofs stand between the impostor and its log.
func testImpostorMaster(t *testing.T, newLog LogFactory) {
	ml, sl := newLog(t), newLog(t)
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	fillTo(t, ml, ml.SegmentSize()+ml.SegmentSize()/2, 31)
	disc := NewSwitchDiscovery(m.Addr().String())
	scfg := SlaveConfig(t.TempDir())
	scfg.AllowWipe, scfg.OnTooOld = true, hawire.OnTooOldWipe
	s, err := hawire.NewSlave(scfg, sl, disc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	before, err := ReadAll(sl)
	if err != nil {
		t.Fatal(err)
	}
	epoch := m.Epoch()
	wrong := NewSecret()
	recs := Record(300, 99)
	for _, c := range []struct {
		name   string
		answer func(hawire.Hello, hawire.Handshake) [][]byte
		hello  func() hawire.Hello
	}{
		{"diverged at 0, no proof", Refusal("", hawire.CodeDiverged, 0, epoch+5, 0, 0), nil},
		{"diverged at 0, wrong secret", Refusal(wrong, hawire.CodeDiverged, 0, epoch+5, 0, 0), nil},
		{"offset too old, no proof", Refusal("", hawire.CodeOffsetTooOld, 1<<40, epoch+5, 1<<40, 1<<41), nil},
		{"offset too old, wrong secret", Refusal(wrong, hawire.CodeOffsetTooOld, 1<<40, epoch+5, 1<<40, 1<<41), nil},
		{"config mismatch, wrong secret", Refusal(wrong, hawire.CodeConfigMismatch, 4096, epoch+5, 0, 0), nil},
		{"accept and data, wrong secret", AcceptWithData(wrong, epoch+5, recs), nil},
		{"version 1 hello", func(hawire.Hello, hawire.Handshake) [][]byte { return nil }, func() hawire.Hello {
			return hawire.Hello{MinVersion: hawire.Version1, MaxVersion: hawire.Version1}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := NewFakeMaster(t, c.answer)
			if c.hello != nil {
				f.SetHello(c.hello)
			}
			reconnects := s.Status().Reconnects
			disc.Set(f.Addr())
			const watch = 2 * time.Second
			start := time.Now()
			Eventually(t, 10*time.Second, func() bool { return f.Connections() >= 3 }, "slave dials the impostor")
			for time.Since(start) < watch {
				st := s.Status()
				if st.State == hawire.SlaveFailed.String() {
					t.Fatalf("the impostor stopped replication: %+v", st)
				}
				time.Sleep(20 * time.Millisecond)
			}
			elapsed := time.Since(start)
			// ReconnectMin 10ms doubling to 200ms, each wait at least half
			// the bound: a busy loop would make thousands of dials.
			if n := f.Connections(); n > int64(elapsed/(50*time.Millisecond))+8 {
				t.Fatalf("%d connections in %s: the slave does not back off", n, elapsed)
			}
			st := s.Status()
			if st.Reconnects-reconnects < 2 || st.Connected || st.LastError == "" {
				t.Fatalf("status %+v", st)
			}
			after, err := ReadAll(sl)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) || sl.MinOffset() != 0 {
				t.Fatalf("the impostor changed the slave log (%d bytes before, %d after, min %d)", len(before), len(after), sl.MinOffset())
			}
			disc.Set(m.Addr().String())
			f.Close()
			Eventually(t, 10*time.Second, func() bool { return s.Status().Connected }, "back to the real master: %+v", s.Status())
		})
	}
	k := s.Status().Counters
	if k.UnprovenMasters < 6 || k.VersionRefusals < 1 || k.Wipes != 0 {
		t.Fatalf("counters %+v", k)
	}
	fillTo(t, ml, ml.MaxOffset()+ml.SegmentSize()/2, 32)
	WaitCaughtUp(t, ml, sl, 30*time.Second)
	RequireIdentical(t, ml, sl)
	rs := syncSends(t, m, ml, 5, 1000, time.Second, 33)
	checkByDeadline(t, "after the impostor", rs, time.Second, hawire.ReplOK)
}

// testStrangerSlave: with the real slave gone, peers without the secret or
// with a wrong one that connect and acknowledge everything never turn a
// SYNC send into ReplOK.
func testStrangerSlave(t *testing.T, newLog LogFactory) {
	ml := newLog(t)
	m := StartMaster(t, MasterConfig(t.TempDir()), ml)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, secret := range []string{"", NewSecret()} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", m.Addr().String(), time.Second)
				if err != nil {
					continue
				}
				fr := hawire.NewFrameReader(c, 0)
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if typ, body, err := fr.Next(hawire.MaxControlFrame); err == nil && typ == hawire.FrameHello {
					hello, _ := hawire.DecodeHello(body)
					hs := hawire.Handshake{Version: hawire.MaxVersion, Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1, SegmentSize: ml.SegmentSize()}
					if secret != "" {
						hs.Proof = hawire.SlaveProof(secret, hello.Nonce, hs)
					}
					_, _ = c.Write(hawire.AppendHandshake(nil, hs))
					for i := 0; i < 20; i++ { // acknowledge everything the master has
						_, _ = c.Write(hawire.AppendAck(nil, hawire.Ack{Written: ml.MaxOffset(), Flushed: ml.MaxOffset()}))
					}
				}
				_ = c.Close()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	Eventually(t, 10*time.Second, func() bool { return m.Status().Counters.AuthFailures >= 4 }, "strangers refused: %+v", m.Status().Counters)
	rs := syncSends(t, m, ml, 30, 500, 500*time.Millisecond, 41)
	checkByDeadline(t, "strangers only", rs, 500*time.Millisecond, hawire.ReplSlaveNotAvailable, hawire.ReplTimeout)
	if m.InSyncCount() != 1 {
		t.Fatalf("in sync %d", m.InSyncCount())
	}
}

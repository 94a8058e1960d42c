package hawire_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

// fastLog is a memlog with the optional capabilities of *commitlog.Store
// (RawReaderInto, VerifiedAppender), recording how the drivers use them.
type fastLog struct {
	*memlog.Log
	reads      atomic.Int64 // ReadRawInto calls
	reused     atomic.Int64 // ... that reused the caller's buffer
	mu         sync.Mutex
	appended   [][]byte // copies of what AppendRawVerified was given
	dispatched int64    // end of what DispatchRaw was given
}

func (l *fastLog) ReadRawInto(dst []byte, off int64, n int) ([]byte, error) {
	b, err := l.ReadRaw(off, n)
	l.reads.Add(1)
	if cap(dst) >= len(b) {
		l.reused.Add(1)
	}
	return append(dst[:0], b...), err // never memlog's own array: the caller writes into it
}

func (l *fastLog) AppendRawVerified(off int64, data []byte) error {
	l.mu.Lock()
	l.appended = append(l.appended, append([]byte(nil), data...))
	l.mu.Unlock()
	return l.AppendRaw(off, data)
}

func (l *fastLog) DispatchRaw(off int64, data []byte) {
	l.mu.Lock()
	l.dispatched = off + int64(len(data))
	l.mu.Unlock()
}

// flipProxy forwards to target and flips one byte at position at of the
// first connection's master→slave stream.
type flipProxy struct {
	ln     net.Listener
	target string
	at     int
	conns  atomic.Int64
}

func (p *flipProxy) Addr() string { return p.ln.Addr().String() }

func newFlipProxy(t *testing.T, target string, at int) *flipProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flipProxy{ln: ln, target: target, at: at}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			first := p.conns.Add(1) == 1
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				seen := 0
				for {
					n, err := up.Read(buf)
					if n > 0 {
						if first && seen <= p.at && p.at < seen+n {
							buf[p.at-seen] ^= 0x10
						}
						seen += n
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// TestWireCorruptionDetectedByFrameCRC: one byte flipped on the wire inside
// a Data frame's records is caught by the frame's CRC on the slave (the one
// check of that hop), before anything reaches the log; the slave reconnects and
// ends byte-identical. The drivers use the logs' fast paths: the master reads
// into one reused buffer, the slave appends what it verified and hands the
// same bytes to DispatchRaw.
func TestWireCorruptionDetectedByFrameCRC(t *testing.T) {
	ml := &fastLog{Log: memlog.New(64 << 10)}
	for i := 0; i < 40; i++ {
		if _, err := hawiretest.AppendRecord(ml, hawiretest.Record(3000, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	master, err := hawiretest.ReadAll(ml)
	if err != nil {
		t.Fatal(err)
	}
	m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
	// Hello and Accept take well under 1000 bytes; the first Data frame holds
	// 64 KiB of records, so byte 2000 is a record byte.
	px := newFlipProxy(t, m.Addr().String(), 2000)
	scfg := hawiretest.SlaveConfig(t.TempDir())
	scfg.ReconnectMin, scfg.ReconnectMax = time.Millisecond, 10*time.Millisecond
	sl := &fastLog{Log: memlog.New(64 << 10)}
	s := hawiretest.StartSlave(t, scfg, sl, px.Addr())
	hawiretest.WaitCaughtUp(t, ml, sl, 20*time.Second)
	hawiretest.RequireIdentical(t, ml, sl)
	if px.conns.Load() < 2 {
		t.Fatalf("the slave did not reconnect after the corrupted frame (%d connections)", px.conns.Load())
	}
	if st := s.Status(); st.Reconnects < 1 {
		t.Fatalf("status %+v", st)
	}
	// DispatchRaw runs after the ack went out.
	hawiretest.Eventually(t, 10*time.Second, func() bool {
		sl.mu.Lock()
		defer sl.mu.Unlock()
		return sl.dispatched == ml.MaxOffset()
	}, "DispatchRaw reaches the end")
	sl.mu.Lock()
	defer sl.mu.Unlock()
	off := int64(0)
	for _, b := range sl.appended {
		if !bytes.Equal(b, master[off:off+int64(len(b))]) {
			i := 0
			for i < len(b) && b[i] == master[off+int64(i)] {
				i++
			}
			t.Fatalf("the log was given corrupted bytes at %d (+%d of %d, %d chunks)", off, i, len(b), len(sl.appended))
		}
		off += int64(len(b))
	}
	if off != ml.MaxOffset() {
		t.Fatalf("verified appends reached %d, master %d", off, ml.MaxOffset())
	}
	if ml.reads.Load() == 0 || ml.reused.Load() == 0 {
		t.Fatalf("master reads %d, reused buffers %d", ml.reads.Load(), ml.reused.Load())
	}
}

// TestWaitReplicatedFuncAnsweredByAck: over a real link, a callback wait is
// answered once with ReplOK when the slave's ack covers it, at once with
// ReplSlaveNotAvailable without a slave or after Close, and with ReplTimeout at
// its deadline when the slave does not acknowledge in time.
func TestWaitReplicatedFuncAnsweredByAck(t *testing.T) {
	ml := memlog.New(64 << 10)
	m := hawiretest.StartMaster(t, hawiretest.MasterConfig(t.TempDir()), ml)
	got := make(chan hawire.ReplStatus, 4)
	m.WaitReplicatedFunc(1, time.Now().Add(time.Minute), func(st hawire.ReplStatus) { got <- st })
	if st := <-got; st != hawire.ReplSlaveNotAvailable {
		t.Fatalf("no slave: %v", st)
	}
	px := hawiretest.NewProxy(t, m.Addr().String())
	hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), memlog.New(64<<10), px.Addr())
	hawiretest.Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "slave in sync")
	off, err := hawiretest.AppendRecord(ml, hawiretest.Record(500, 1))
	if err != nil {
		t.Fatal(err)
	}
	m.WaitReplicatedFunc(off+500, time.Now().Add(time.Minute), func(st hawire.ReplStatus) { got <- st })
	if st := <-got; st != hawire.ReplOK {
		t.Fatalf("acknowledged: %v", st)
	}
	px.SetDelay(time.Minute) // the slave's ack cannot arrive in time
	off, err = hawiretest.AppendRecord(ml, hawiretest.Record(500, 2))
	if err != nil {
		t.Fatal(err)
	}
	m.WaitReplicatedFunc(off+500, time.Now().Add(50*time.Millisecond), func(st hawire.ReplStatus) { got <- st })
	if st := <-got; st != hawire.ReplTimeout {
		t.Fatalf("deadline: %v", st)
	}
	_ = m.Close()
	m.WaitReplicatedFunc(off+1000, time.Now().Add(time.Minute), func(st hawire.ReplStatus) { got <- st })
	if st := <-got; st != hawire.ReplSlaveNotAvailable {
		t.Fatalf("closed: %v", st)
	}
	select {
	case st := <-got:
		t.Fatalf("a wait answered twice: %v", st)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestEarlierDeadlineWakesSweeper: a wait whose deadline comes before the sweeper's next
// round wakes it, and one that comes after waits for that round. A SYNC send whose slave
// does not answer hears ReplTimeout at its own deadline, not at the sweeper's next round
// (up to a second later, past a client's own send timeout).
func TestEarlierDeadlineWakesSweeper(t *testing.T) {
	ml := memlog.New(64 << 10)
	cfg := hawiretest.MasterConfig(t.TempDir())
	cfg.HousekeepingInterval = 20 * time.Second // the sweeper's round: 1 s
	m := hawiretest.StartMaster(t, cfg, ml)
	px := hawiretest.NewProxy(t, m.Addr().String())
	hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), memlog.New(64<<10), px.Addr())
	hawiretest.Eventually(t, 10*time.Second, func() bool { return m.InSyncCount() == 2 }, "slave in sync")
	px.SetDelay(time.Minute) // no ack arrives in time
	off, err := hawiretest.AppendRecord(ml, hawiretest.Record(500, 1))
	if err != nil {
		t.Fatal(err)
	}
	// A first wait runs the sweeper once: its timer is then armed a round ahead.
	first := make(chan hawire.ReplStatus, 1)
	m.WaitReplicatedFunc(off+500, time.Now().Add(10*time.Millisecond), func(st hawire.ReplStatus) { first <- st })
	if st := <-first; st != hawire.ReplTimeout {
		t.Fatalf("first wait: %v", st)
	}
	late, early := make(chan hawire.ReplStatus, 1), make(chan hawire.ReplStatus, 1)
	m.WaitReplicatedFunc(off+500, time.Now().Add(3*time.Second), func(st hawire.ReplStatus) { late <- st })
	start := time.Now()
	m.WaitReplicatedFunc(off+500, start.Add(50*time.Millisecond), func(st hawire.ReplStatus) { early <- st })
	select {
	case st := <-early:
		if st != hawire.ReplTimeout {
			t.Fatalf("early deadline: %v", st)
		}
		if took := time.Since(start); took >= 900*time.Millisecond {
			t.Fatalf("a 50 ms deadline was answered after %v: at the sweeper's next round", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the early wait was never answered")
	}
	select {
	case st := <-late:
		if st != hawire.ReplTimeout {
			t.Fatalf("late deadline: %v", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the late wait was never answered")
	}
}

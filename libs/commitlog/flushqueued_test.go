package commitlog

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// flushDone is the broker's AppendDone under SYNC_FLUSH: once the write covers the record it
// checks the record is in the file (with mem) and registers the record's flush wait, as the
// broker's answer does (with s), and hands the wait on.
type flushDone struct {
	t     *testing.T
	s     *Store
	mem   *vfs.MemFS
	cfg   Config
	body  string
	calls int
	out   chan flushOut
}

type flushOut struct {
	body  string
	res   AppendResult
	err   error
	flush <-chan error
}

func (d *flushDone) Appended(res AppendResult, err error) {
	d.calls++
	o := flushOut{body: d.body, res: res, err: err}
	if err == nil {
		if d.mem != nil {
			if rec := recordOnFile(d.t, d.mem, d.cfg, res.WroteOffset); string(rec.Body) != d.body {
				o.err = fmt.Errorf("offset %d holds %q, want %q", res.WroteOffset, rec.Body, d.body)
			}
		}
		if d.s != nil {
			o.flush = d.s.WaitFlush(res.EndOffset, time.Now().Add(10*time.Second))
		}
	}
	d.out <- o
}

// awaitWritten receives n callbacks from out: records bodyN(0) to bodyN(n-1), written
// without error and answered in offset order.
func awaitWritten(t *testing.T, out <-chan flushOut, n int) []flushOut {
	t.Helper()
	got := make([]flushOut, 0, n)
	for i := 0; i < n; i++ {
		var o flushOut
		select {
		case o = <-out:
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d not written", i)
		}
		require.NoError(t, o.err)
		require.Equal(t, bodyN(i), o.body, "answered in offset order")
		got = append(got, o)
	}
	return got
}

// awaitFlushed waits until the flush wait of every record in got completes without error.
func awaitFlushed(t *testing.T, got []flushOut) {
	t.Helper()
	for _, o := range got {
		select {
		case err := <-o.flush:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("flush of %s not completed", o.body)
		}
	}
}

// syncFlushStore opens a SYNC_FLUSH store over fs whose flusher runs only when asked (no
// ticker round within a test), with 1 MiB segments.
func syncFlushStore(t *testing.T, fs vfs.FS, mode FlushDiskType) (*Store, Config) {
	t.Helper()
	cfg := testConfig(fs)
	cfg.SegmentSize = 1 << 20
	cfg.FlushDiskType = mode
	cfg.FlushInterval = time.Hour
	cfg.CheckpointInterval = time.Hour
	s := openStore(t, cfg)
	t.Cleanup(func() { _ = s.Close() })
	return s, cfg
}

// Under SYNC_FLUSH a burst ended with FlushQueued is written by the flusher, in one write,
// right before the one fsync that covers every record of it: nothing is written before, each
// callback finds its record in the file and its flush wait is completed by that fsync, and a
// crash image taken then holds every record.
func TestFlushQueuedWritesRightBeforeTheFsync(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s, cfg := syncFlushStore(t, mem, SyncFlush)
	const burst = 20
	out := make(chan flushOut, burst)
	dones := make([]*flushDone, burst)
	w0, f0 := s.gwrites.Load(), s.Stats().Fsyncs
	for i := range dones {
		dones[i] = &flushDone{t: t, s: s, mem: mem, cfg: cfg, body: bodyN(i), out: out}
		require.NoError(t, s.AppendQueued(msg("F", int32(i%3), bodyN(i), ""), dones[i]))
	}
	require.Equal(t, w0, s.gwrites.Load(), "nothing written before FlushQueued")
	require.Len(t, out, 0, "nothing answered before FlushQueued")
	s.FlushQueued()
	got := awaitWritten(t, out, burst)
	awaitFlushed(t, got)
	require.EqualValues(t, 1, s.gwrites.Load()-w0, "one write for the burst")
	require.EqualValues(t, 1, s.Stats().Fsyncs-f0, "one fsync for the burst")
	for i, d := range dones {
		require.Equal(t, 1, d.calls, "record %d answered once", i)
	}
	require.GreaterOrEqual(t, s.FlushedOffset(), got[burst-1].res.EndOffset)

	// What a power cut leaves: every record whose wait completed, byte-exact.
	c := cfg
	c.FS = mem.CrashClone(1)
	s2 := openStore(t, c)
	defer s2.Close()
	for _, o := range got {
		b, err := s2.ReadRecord(o.res.WroteOffset)
		require.NoError(t, err)
		rec, _, err := DecodeRecord(b)
		require.NoError(t, err)
		require.Equal(t, o.body, string(rec.Body))
		require.Equal(t, o.res.QueueOffset, rec.QueueOffset)
	}
}

// Under ASYNC_FLUSH the answer must not wait for the flusher: FlushQueued writes the burst
// before it returns, as WriteQueued does, and asks for no fsync.
func TestFlushQueuedUnderAsyncFlushWritesAtOnce(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s, cfg := syncFlushStore(t, mem, AsyncFlush)
	const burst = 8
	out := make(chan flushOut, burst)
	w0, f0 := s.gwrites.Load(), s.Stats().Fsyncs
	for i := 0; i < burst; i++ {
		// No flush wait: under ASYNC_FLUSH the broker answers without one.
		d := &flushDone{t: t, mem: mem, cfg: cfg, body: bodyN(i), out: out}
		require.NoError(t, s.AppendQueued(msg("F", 0, bodyN(i), ""), d))
	}
	s.FlushQueued()
	require.Len(t, out, burst, "every record written and answered when FlushQueued returns")
	require.EqualValues(t, 1, s.gwrites.Load()-w0)
	require.Equal(t, f0, s.Stats().Fsyncs, "no fsync asked for")
	for i := 0; i < burst; i++ {
		require.NoError(t, (<-out).err)
	}
}

// A failed write in the flusher's round fails every queued record's callback with the write's
// error and makes the store read-only; nothing is fsynced or published.
func TestFlushQueuedWriteErrorFailsEveryRecord(t *testing.T) {
	g, fs := newGatedFS(vfs.NewCrashableMem())
	s, _ := syncFlushStore(t, fs, SyncFlush)
	mustAppend(t, s, msg("F", 0, "warm-up", ""))
	max, f0 := s.MaxOffset(), s.Stats().Fsyncs
	const burst = 6
	out := make(chan flushOut, burst)
	dones := make([]*flushDone, burst)
	for i := range dones {
		dones[i] = &flushDone{t: t, s: s, body: bodyN(i), out: out}
		require.NoError(t, s.AppendQueued(msg("F", 1, bodyN(i), ""), dones[i]))
	}
	g.fail.Store(true)
	s.FlushQueued()
	for range dones {
		select {
		case o := <-out:
			require.ErrorIs(t, o.err, errInjected)
		case <-time.After(10 * time.Second):
			t.Fatal("queued records not answered")
		}
	}
	for i, d := range dones {
		require.Equal(t, 1, d.calls, "record %d answered once", i)
	}
	require.ErrorIs(t, s.Err(), ErrReadOnly)
	require.Equal(t, max, s.MaxOffset())
	require.Equal(t, f0, s.Stats().Fsyncs)
	require.Zero(t, queuedBytes(s))
}

// A burst ended with FlushQueued while a round's fsync holds on (here: a stalled disk) is not
// left for the next round: after maxFlushHold the store's writer writes it, its callbacks run
// and its flush waits start, so they time out as they did when each sender wrote its own.
func TestFlushQueuedDuringAStalledFsyncIsWrittenAfterTheHold(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var stall atomic.Bool
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "/commitlog/") && stall.CompareAndSwap(true, false) {
			held <- struct{}{}
			<-release
		}
		return nil
	}))
	s, cfg := syncFlushStore(t, fs, SyncFlush)
	defer close(release)
	out := make(chan flushOut, 4)
	stall.Store(true)
	require.NoError(t, s.AppendQueued(msg("F", 0, "first", ""), &flushDone{t: t, s: s, mem: mem, cfg: cfg, body: "first", out: out}))
	s.FlushQueued()
	<-held // the round that writes "first" is in its fsync
	first := <-out
	require.NoError(t, first.err)

	d := &flushDone{t: t, s: s, mem: mem, cfg: cfg, body: "second", out: out}
	require.NoError(t, s.AppendQueued(msg("F", 0, "second", ""), d))
	queued := time.Now()
	s.FlushQueued()
	select {
	case o := <-out:
		require.NoError(t, o.err, "written while the fsync is held")
		require.GreaterOrEqual(t, time.Since(queued), maxFlushHold, "left to the next round first")
		require.Equal(t, "second", o.body)
	case <-time.After(10 * time.Second):
		t.Fatal("a burst queued during a stalled fsync was not written")
	}
	select {
	case err := <-first.flush:
		t.Fatalf("flush completed during the stall: %v", err)
	default:
	}
}

// A round writes what was queued when it started, as one write, and fsyncs it: a burst queued
// while that write is under way waits for the next round instead of holding this round's
// fsync back (with senders that keep queuing, a round that wrote on would never fsync).
func TestFlushQueuedRoundWritesOnlyWhatWasQueuedAtItsStart(t *testing.T) {
	g, fs := newGatedFS(vfs.NewCrashableMem())
	s, _ := syncFlushStore(t, fs, SyncFlush)
	mustAppend(t, s, msg("F", 0, "warm-up", ""))
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(10*time.Second)))
	w0, f0 := s.gwrites.Load(), s.Stats().Fsyncs
	out := make(chan flushOut, 8)
	queue := func(from, to int) {
		for i := from; i < to; i++ {
			require.NoError(t, s.AppendQueued(msg("F", 1, bodyN(i), ""), &flushDone{t: t, s: s, body: bodyN(i), out: out}))
		}
		s.FlushQueued()
	}
	g.armed.Store(true)
	queue(0, 3)
	<-g.held // the first round's write is under way
	queue(3, 6)
	close(g.release)
	awaitFlushed(t, awaitWritten(t, out, 6))
	require.EqualValues(t, 2, s.gwrites.Load()-w0, "one write per burst")
	require.EqualValues(t, 2, s.Stats().Fsyncs-f0, "the first round fsynced its burst alone")
}

package commitlog

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// doneRec is an AppendDone that records each call, checking the record is already in the
// file when Appended runs.
type doneRec struct {
	t     *testing.T
	mem   *vfs.MemFS
	cfg   Config
	body  string
	calls atomic.Int32
	out   chan asyncOut
}

type asyncOut struct {
	body string
	res  AppendResult
	err  error
}

func (d *doneRec) Appended(res AppendResult, err error) {
	d.calls.Add(1)
	if err == nil && d.mem != nil {
		rec := recordOnFile(d.t, d.mem, d.cfg, res.WroteOffset)
		if string(rec.Body) != d.body {
			err = fmt.Errorf("offset %d holds %q, want %q", res.WroteOffset, rec.Body, d.body)
		}
	}
	d.out <- asyncOut{d.body, res, err}
}

// Async appends that arrive while a write is in progress return at once, without their
// answer; the next write carries all of them (written by the store's writer goroutine: no
// appender waits for it), and each Appended runs once its record is in the file, in offset
// order.
func TestAsyncAppendsQueueBehindAWrite(t *testing.T) {
	s, g, mem, cfg := openGatedStore(t)
	before := s.gwrites.Load()

	const queued = 10
	out := make(chan asyncOut, queued+1)
	dones := make([]*doneRec, queued+1)
	for i := range dones {
		dones[i] = &doneRec{t: t, mem: mem, cfg: cfg, body: bodyN(i), out: out}
	}
	g.armed.Store(true)
	leaderErr := make(chan error, 1)
	go func() { leaderErr <- s.AppendAsync(msg("G", 0, bodyN(0), ""), dones[0]) }() // leads: inside its write
	<-g.held
	for i := 1; i <= queued; i++ {
		require.NoError(t, s.AppendAsync(msg("G", int32(i%4), bodyN(i), ""), dones[i]), "queued behind the write")
		require.Zero(t, dones[i].calls.Load(), "answered before its write")
	}
	close(g.release)
	require.NoError(t, <-leaderErr)
	last := int64(-1)
	for i := 0; i <= queued; i++ {
		o := <-out
		require.NoError(t, o.err)
		require.Greater(t, o.res.WroteOffset, last, "Appended in offset order")
		last = o.res.WroteOffset
		require.Empty(t, o.res.MsgID, "left to AppendOffsetMsgID")
		require.Equal(t, OffsetMsgID(cfg.StoreHost, o.res.WroteOffset), string(AppendOffsetMsgID(nil, s.StoreHost(), o.res.WroteOffset)))
	}
	for i, d := range dones {
		require.EqualValues(t, 1, d.calls.Load(), "append %d answered once", i)
	}
	require.EqualValues(t, 2, s.gwrites.Load()-before, "the leader's write and one for the %d queued behind it", queued)
	require.Zero(t, queuedBytes(s))
}

// A sync Append queued behind async ones leads the write that covers it; async records queued
// after it go with it or in the writer's next write, and nothing is left queued.
func TestAsyncAndSyncAppendsShareWrites(t *testing.T) {
	s, g, mem, cfg := openGatedStore(t)

	out := make(chan asyncOut, 8)
	g.armed.Store(true)
	go func() {
		_ = s.AppendAsync(msg("G", 0, "lead", ""), &doneRec{t: t, mem: mem, cfg: cfg, body: "lead", out: out})
	}()
	<-g.held
	require.NoError(t, s.AppendAsync(msg("G", 1, "a1", ""), &doneRec{t: t, mem: mem, cfg: cfg, body: "a1", out: out}))
	syncRes := make(chan error, 1)
	go func() {
		r, err := s.Append(msg("G", 2, "sync", ""))
		if err == nil && string(recordOnFile(t, mem, cfg, r.WroteOffset).Body) != "sync" {
			err = fmt.Errorf("sync record not in the file at %d", r.WroteOffset)
		}
		syncRes <- err
	}()
	require.Eventually(t, func() bool {
		s.appendMu.Lock()
		defer s.appendMu.Unlock()
		return s.gsyncEnd > s.maxOffset.Load()
	}, 10*time.Second, time.Millisecond, "sync append did not queue")
	require.NoError(t, s.AppendAsync(msg("G", 3, "a2", ""), &doneRec{t: t, mem: mem, cfg: cfg, body: "a2", out: out}))
	close(g.release)
	require.NoError(t, <-syncRes)
	got := map[string]bool{}
	for i := 0; i < 3; i++ {
		o := <-out
		require.NoError(t, o.err)
		got[o.body] = true
	}
	require.Equal(t, map[string]bool{"lead": true, "a1": true, "a2": true}, got)
	require.Eventually(t, func() bool { return queuedBytes(s) == 0 }, 10*time.Second, time.Millisecond)
}

// A failed write fails every async append queued with it, once each; later AppendAsync calls
// are refused at once (done not called).
func TestAsyncAppendsWriteErrorFailsAll(t *testing.T) {
	s, g, _, _ := openGatedStore(t)
	max := s.MaxOffset()

	out := make(chan asyncOut, 8)
	dones := make([]*doneRec, 6)
	for i := range dones {
		dones[i] = &doneRec{t: t, body: bodyN(i), out: out}
	}
	g.armed.Store(true)
	go func() { _ = s.AppendAsync(msg("G", 0, bodyN(0), ""), dones[0]) }()
	<-g.held
	for i := 1; i < len(dones); i++ {
		require.NoError(t, s.AppendAsync(msg("G", 1, bodyN(i), ""), dones[i]))
	}
	g.fail.Store(true)
	close(g.release)
	for range dones {
		require.ErrorIs(t, (<-out).err, errInjected)
	}
	for i, d := range dones {
		require.EqualValues(t, 1, d.calls.Load(), "append %d answered once", i)
	}
	late := &doneRec{t: t, out: out}
	require.ErrorIs(t, s.AppendAsync(msg("G", 0, "late", ""), late), ErrReadOnly)
	require.Zero(t, late.calls.Load())
	require.Equal(t, max, s.MaxOffset())
	require.Zero(t, queuedBytes(s))
}

// Many senders mixing async and sync appends across small segments (padding between groups):
// every Appended runs once, every acknowledged record is where its result says, byte-exact,
// each queue's offsets are dense and unique, and Close returns only after every queued
// record was answered.
func TestAsyncAppendsManySenders(t *testing.T) {
	mem := vfs.NewCrashableMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 16 << 10
	s := openStore(t, cfg)
	const senders, each = 8, 150
	out := make(chan asyncOut, senders*each)
	var calls atomic.Int64
	var wg sync.WaitGroup
	var syncMu sync.Mutex
	var syncAcked []asyncOut
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := fmt.Sprintf("s%02d-%04d-%s", w, i, strings.Repeat("y", (w*13+i)%300))
				m := msg("M", int32((w+i)%4), body, "t")
				if (w+i)%5 == 0 {
					r, err := s.Append(m)
					if err != nil {
						t.Error(err)
						return
					}
					syncMu.Lock()
					syncAcked = append(syncAcked, asyncOut{body: body, res: r})
					syncMu.Unlock()
					continue
				}
				calls.Add(1)
				if err := s.AppendAsync(m, &doneRec{t: t, body: body, out: out}); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	require.NoError(t, s.Close())
	close(out)
	var acked []asyncOut
	for o := range out {
		require.NoError(t, o.err)
		acked = append(acked, o)
	}
	require.EqualValues(t, calls.Load(), len(acked), "every async append answered by Close")
	acked = append(acked, syncAcked...)
	s2 := openStore(t, cfg)
	defer s2.Close()
	offsets := map[int64]bool{}
	for _, o := range acked {
		require.False(t, offsets[o.res.WroteOffset], "offset %d holds two messages", o.res.WroteOffset)
		offsets[o.res.WroteOffset] = true
		b, err := s2.ReadRecord(o.res.WroteOffset)
		require.NoError(t, err)
		rec, _, err := DecodeRecord(b)
		require.NoError(t, err)
		require.Equal(t, o.body, string(rec.Body), "offset %d", o.res.WroteOffset)
		require.Equal(t, o.res.QueueOffset, rec.QueueOffset)
	}
	waitDispatched(t, s2)
	total := 0
	for q := int32(0); q < 4; q++ {
		next := int64(0)
		for {
			res := s2.GetMessages("M", q, next, 32, 1<<20, nil)
			if res.Status != Found {
				break
			}
			for _, b := range res.Records {
				rec, _, err := DecodeRecord(b)
				require.NoError(t, err)
				require.Equal(t, next, rec.QueueOffset, "queue %d dense", q)
				next++
			}
		}
		total += int(next)
	}
	require.Equal(t, senders*each, total)
}

// AppendQueued records wait, unanswered and unwritten, for WriteQueued, which writes the whole
// burst with one write and answers each in offset order; a segment end in the middle of a
// burst pads after the records queued before it, which the writer goroutine writes.
func TestAppendQueuedWaitsForWriteQueued(t *testing.T) {
	mem := vfs.NewCrashableMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 1 << 20
	s := openStore(t, cfg)
	defer s.Close()
	mustAppend(t, s, msg("Q", 0, "warm-up", ""))
	before := s.gwrites.Load()
	const burst = 20
	out := make(chan asyncOut, burst)
	dones := make([]*doneRec, burst)
	for i := range dones {
		dones[i] = &doneRec{t: t, mem: mem, cfg: cfg, body: bodyN(i), out: out}
		require.NoError(t, s.AppendQueued(msg("Q", int32(i%3), bodyN(i), ""), dones[i]))
	}
	for i, d := range dones {
		require.Zero(t, d.calls.Load(), "record %d answered before WriteQueued", i)
	}
	require.Equal(t, before, s.gwrites.Load(), "nothing written before WriteQueued")
	s.WriteQueued()
	last := int64(-1)
	for i := 0; i < burst; i++ {
		o := <-out
		require.NoError(t, o.err)
		require.Equal(t, bodyN(i), o.body, "answered in offset order")
		require.Greater(t, o.res.WroteOffset, last)
		last = o.res.WroteOffset
	}
	require.EqualValues(t, 1, s.gwrites.Load()-before, "one write for the burst")
	s.WriteQueued() // nothing queued: a no-op
	require.EqualValues(t, 1, s.gwrites.Load()-before)

	// KickQueued hands the burst to the writer goroutine and returns at once.
	for i := range dones {
		dones[i] = &doneRec{t: t, mem: mem, cfg: cfg, body: bodyN(100 + i), out: out}
		require.NoError(t, s.AppendQueued(msg("Q", int32(i%3), bodyN(100+i), ""), dones[i]))
	}
	s.KickQueued()
	for i := 0; i < burst; i++ {
		o := <-out
		require.NoError(t, o.err)
		require.Equal(t, bodyN(100+i), o.body, "answered in offset order")
	}
	require.EqualValues(t, 2, s.gwrites.Load()-before, "one write for the kicked burst")

	// Small segments: records queued, then one that needs the padding first.
	cfg2 := testConfig(vfs.NewCrashableMem())
	cfg2.SegmentSize = 4 << 10
	s2 := openStore(t, cfg2)
	defer s2.Close()
	out2 := make(chan asyncOut, 64)
	n := 0
	for ; s2.MaxOffset()+queuedBytes(s2) < 3*cfg2.SegmentSize; n++ {
		require.NoError(t, s2.AppendQueued(msg("Q", 0, strings.Repeat("z", 300)+bodyN(n), ""), &doneRec{t: t, body: bodyN(n), out: out2}))
	}
	s2.WriteQueued()
	// The padding's wait hands the records before it to the writer goroutine, and WriteQueued
	// writes the rest: two goroutines answer, each group in order, the groups in either order.
	// Every record is answered once, at offsets in the order of the appends.
	got := map[string]AppendResult{}
	for i := 0; i < n; i++ {
		o := <-out2
		require.NoError(t, o.err)
		_, dup := got[o.body]
		require.False(t, dup, "%s answered twice", o.body)
		got[o.body] = o.res
	}
	for i := 1; i < n; i++ {
		require.Greater(t, got[bodyN(i)].WroteOffset, got[bodyN(i-1)].WroteOffset, "record %d", i)
	}
	require.Zero(t, queuedBytes(s2))
}

// After a sync append and a truncation below it (a master demoted and promoted again in one
// process), queued appends are still written: the sync appender's end does not outlive the
// records it covered.
func TestQueuedAppendsAfterTruncate(t *testing.T) {
	cfg := testConfig(vfs.NewCrashableMem())
	cfg.SegmentSize = 1 << 20
	s := openStore(t, cfg)
	defer s.Close()
	first := mustAppend(t, s, msg("T", 0, "kept", ""))
	mustAppend(t, s, msg("T", 0, "cut", ""))
	mustAppend(t, s, msg("T", 0, "cut too", ""))
	waitDispatched(t, s)
	require.NoError(t, s.Truncate(first.EndOffset))
	out := make(chan asyncOut, 4)
	for i := 0; i < 4; i++ {
		require.NoError(t, s.AppendQueued(msg("T", 0, bodyN(i), ""), &doneRec{t: t, body: bodyN(i), out: out}))
	}
	s.WriteQueued()
	for i := 0; i < 4; i++ {
		select {
		case o := <-out:
			require.NoError(t, o.err)
			require.Equal(t, bodyN(i), o.body)
		case <-time.After(10 * time.Second):
			t.Fatalf("queued append %d not written after the truncation", i)
		}
	}
	require.Zero(t, queuedBytes(s))
}

package commitlog

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

func recvErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("waiter never completed")
		return nil
	}
}

func TestSyncFlushGroupCommit(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	cfg.FlushDiskType = SyncFlush
	cfg.FlushInterval = time.Hour // only waiters trigger fsyncs
	s := openStore(t, cfg)
	defer s.Close()
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			r, err := s.Append(msg("T", int32(i%4), bodyN(i), ""))
			if err != nil {
				errs <- err
				return
			}
			errs <- <-s.WaitFlush(r.EndOffset, time.Now().Add(10*time.Second))
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := s.Stats()
	require.Equal(t, s.MaxOffset(), s.FlushedOffset())
	require.LessOrEqual(t, st.FlushedWaiters, int64(n)) // some were already covered when they asked
	require.LessOrEqual(t, st.Fsyncs, int64(n))
	t.Logf("%d waiters completed by %d fsync rounds", n, st.Fsyncs)
	// Already flushed: immediate nil.
	require.NoError(t, recvErr(t, s.WaitFlush(1, time.Now())))
}

// blockingSync holds every fsync until released.
type blockingSync struct {
	mu      sync.Mutex
	blocked bool
	release chan struct{}
}

func (b *blockingSync) MaybeError(op vfs.Op, _ string) error {
	if op != vfs.OpSync {
		return nil
	}
	b.mu.Lock()
	blocked, ch := b.blocked, b.release
	b.mu.Unlock()
	if blocked {
		<-ch
	}
	return nil
}

func TestSyncFlushDeadline(t *testing.T) {
	inj := &blockingSync{release: make(chan struct{})}
	cfg := testConfig(vfs.NewErrorFS(vfs.NewMem(), inj))
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	defer s.Close()
	var once sync.Once
	release := func() {
		once.Do(func() {
			inj.mu.Lock()
			inj.blocked = false
			close(inj.release)
			inj.mu.Unlock()
		})
	}
	defer release() // runs before Close, even when an assertion fails
	inj.mu.Lock()
	inj.blocked = true
	inj.mu.Unlock()
	r := mustAppend(t, s, msg("T", 0, "x", ""))
	late := s.WaitFlush(r.EndOffset, time.Now().Add(time.Hour))
	early := s.WaitFlush(r.EndOffset, time.Now().Add(50*time.Millisecond))
	require.ErrorIs(t, recvErr(t, early), ErrFlushTimeout)
	require.Equal(t, int64(1), s.Stats().FlushTimeouts)
	release()
	require.NoError(t, recvErr(t, late))
}

func TestAsyncFlushBackground(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	cfg.FlushInterval = 10 * time.Millisecond
	s := openStore(t, cfg)
	defer s.Close()
	r := mustAppend(t, s, msg("T", 0, "x", ""))
	require.Eventually(t, func() bool { return s.FlushedOffset() >= r.EndOffset }, 10*time.Second, 5*time.Millisecond)
}

func TestWriteFailureTurnsReadOnly(t *testing.T) {
	for _, errno := range []error{vfs.ENOSPC, vfs.EIO} {
		var sw vfs.Switch
		mem := vfs.NewMem()
		cfg := testConfig(vfs.NewErrorFS(mem, &sw))
		cfg.FlushDiskType = SyncFlush
		s := openStore(t, cfg)
		r0 := mustAppend(t, s, msg("T", 0, "before", ""))
		require.NoError(t, recvErr(t, s.WaitFlush(r0.EndOffset, time.Now().Add(5*time.Second))))
		sw.Arm(vfs.OpWrite, errno)
		_, err := s.Append(msg("T", 0, "failing", ""))
		require.ErrorIs(t, err, ErrReadOnly)
		require.ErrorIs(t, err, errno)
		require.ErrorIs(t, s.Err(), ErrReadOnly)
		require.ErrorIs(t, s.Err(), errno)
		sw.Disarm(vfs.OpWrite)
		_, err = s.Append(msg("T", 0, "after", ""))
		require.ErrorIs(t, err, ErrReadOnly, "stays read-only")
		require.ErrorIs(t, s.AppendRaw(s.MaxOffset(), nil), ErrReadOnly)
		require.ErrorIs(t, recvErr(t, s.WaitFlush(r0.EndOffset+1, time.Now().Add(time.Second))), ErrReadOnly)
		// Earlier data stays readable.
		rec, err := s.ReadRecord(r0.WroteOffset)
		require.NoError(t, err)
		require.Equal(t, "before", bodyOf(t, rec))
		waitDispatched(t, s)
		g := s.GetMessages("T", 0, 0, 32, 1<<20, nil)
		require.Equal(t, Found, g.Status)
		require.Len(t, g.Records, 1)
		require.True(t, s.Stats().ReadOnly)
		require.ErrorIs(t, s.Close(), ErrReadOnly)
		// Reopen: crash recovery keeps the acknowledged record only.
		s2 := openStore(t, testConfig(mem))
		require.False(t, s2.Recovery().Clean)
		require.Equal(t, r0.EndOffset, s2.MaxOffset())
		require.NoError(t, s2.Close())
	}
}

func TestFsyncFailureTurnsReadOnly(t *testing.T) {
	var sw vfs.Switch
	cfg := testConfig(vfs.NewErrorFS(vfs.NewMem(), &sw))
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	defer s.Close()
	r0 := mustAppend(t, s, msg("T", 0, "durable", ""))
	require.NoError(t, recvErr(t, s.WaitFlush(r0.EndOffset, time.Now().Add(5*time.Second))))
	sw.Arm(vfs.OpSync, vfs.EIO)
	r1 := mustAppend(t, s, msg("T", 0, "not durable", ""))
	err := recvErr(t, s.WaitFlush(r1.EndOffset, time.Now().Add(5*time.Second)))
	require.ErrorIs(t, err, ErrReadOnly)
	require.True(t, errors.Is(err, syscall.EIO))
	require.ErrorIs(t, s.Err(), syscall.EIO)
	require.Equal(t, r0.EndOffset, s.FlushedOffset())
	_, err = s.Append(msg("T", 0, "x", ""))
	require.ErrorIs(t, err, ErrReadOnly)
	rec, err := s.ReadRecord(r0.WroteOffset)
	require.NoError(t, err)
	require.Equal(t, "durable", bodyOf(t, rec))
}

func TestWaitFlushAfterClose(t *testing.T) {
	inj := &blockingSync{release: make(chan struct{})}
	cfg := testConfig(vfs.NewErrorFS(vfs.NewMem(), inj))
	s := openStore(t, cfg)
	require.NoError(t, s.Close())
	require.ErrorIs(t, recvErr(t, s.WaitFlush(1<<40, time.Now().Add(time.Hour))), ErrClosed)
}

func TestWriteBufferCommitAndFlush(t *testing.T) {
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.WriteBuffer = 1 << 20
	cfg.CommitInterval = time.Hour // only flushes and full buffers commit
	cfg.FlushInterval = time.Hour
	s := openStore(t, cfg)
	r := mustAppend(t, s, msg("T", 0, "buffered", ""))
	require.Equal(t, int64(0), s.MaxOffset(), "not in the file yet")
	_, err := s.ReadRecord(r.WroteOffset)
	require.ErrorIs(t, err, ErrOffsetBeyondEnd)
	require.NoError(t, recvErr(t, s.WaitFlush(r.EndOffset, time.Now().Add(5*time.Second))))
	require.Equal(t, r.EndOffset, s.MaxOffset())
	rec, err := s.ReadRecord(r.WroteOffset)
	require.NoError(t, err)
	require.Equal(t, "buffered", bodyOf(t, rec))
	r2 := mustAppend(t, s, msg("T", 0, "on close", ""))
	require.NoError(t, s.Close())
	s = openStore(t, testConfig(mem))
	defer s.Close()
	require.Equal(t, r2.EndOffset, s.MaxOffset())
}

// flushLinger: the flusher waits for as many waiters as its last flush released, for half that
// flush's time at most (capped), and never for a lone appender.
func TestFlushLinger(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		last    flushRound
		pending int
		want    time.Duration
	}{
		{flushRound{released: 0, took: ms}, 0, 0},
		{flushRound{released: 1, took: ms}, 0, 0}, // a lone appender: no wait
		{flushRound{released: 30, took: 400 * time.Microsecond}, 3, 200 * time.Microsecond},
		{flushRound{released: 30, took: 400 * time.Microsecond}, 30, 0}, // gathered
		{flushRound{released: 30, took: 400 * time.Microsecond}, 31, 0},
		{flushRound{released: 64, took: 10 * ms}, 1, maxFlushLinger}, // capped
	} {
		require.Equal(t, tc.want, flushLinger(tc.last, tc.pending), "%+v pending %d", tc.last, tc.pending)
	}
}

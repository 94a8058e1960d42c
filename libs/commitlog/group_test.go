package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// gatedFS holds commitlog writes while armed, so a test can queue appends behind a write in
// progress; fail makes the held write (and later ones) fail.
type gatedFS struct {
	armed   atomic.Bool
	held    chan struct{} // a write reached the gate
	release chan struct{}
	fail    atomic.Bool
}

var errInjected = errors.New("injected EIO")

func newGatedFS(inner vfs.FS) (*gatedFS, vfs.FS) {
	g := &gatedFS{held: make(chan struct{}, 1), release: make(chan struct{})}
	return g, vfs.NewErrorFS(inner, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op != vfs.OpWrite || !strings.Contains(path, "/commitlog/") {
			return nil
		}
		if g.armed.CompareAndSwap(true, false) {
			g.held <- struct{}{}
			<-g.release
		}
		if g.fail.Load() {
			return errInjected
		}
		return nil
	}))
}

// openGatedStore opens a store on a gatedFS over a crashable MemFS, 1 MiB segments, with one
// record appended (its segment created), closed at the end of the test.
func openGatedStore(t *testing.T) (*Store, *gatedFS, *vfs.MemFS, Config) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	g, fs := newGatedFS(mem)
	cfg := testConfig(fs)
	cfg.SegmentSize = 1 << 20
	s := openStore(t, cfg)
	t.Cleanup(func() { _ = s.Close() })
	mustAppend(t, s, msg("G", 0, "warm-up", ""))
	return s, g, mem, cfg
}

// recordOnFile reads the record at off straight from the segment file: what a process
// started after a kill -9 would find.
func recordOnFile(t *testing.T, mem *vfs.MemFS, cfg Config, off int64) *Record {
	t.Helper()
	seg := off - off%cfg.SegmentSize
	b, err := mem.ReadFile(filepath.Join(cfg.Dir, "commitlog", segName(seg)))
	require.NoError(t, err)
	require.Greater(t, int64(len(b)), off-seg, "offset %d beyond the file", off)
	r, _, err := DecodeRecord(b[off-seg:])
	require.NoError(t, err, "offset %d", off)
	return r
}

// queuedBytes is what the group holds beyond the file (encoded, not yet published).
func queuedBytes(s *Store) int64 {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	return s.gpending
}

// Appends that arrive while a write is in progress leave together in the next write, and each
// returns only once its record is in the file.
func TestGroupedAppendsShareOneWrite(t *testing.T) {
	s, g, mem, cfg := openGatedStore(t)
	before := s.gwrites.Load()

	g.armed.Store(true)
	type out struct {
		res AppendResult
		err error
	}
	const followers = 10
	results := make(chan out, followers+1)
	appendOne := func(i int) {
		r, err := s.Append(msg("G", int32(i%4), bodyN(i), ""))
		if err == nil { // the record must be in the file before Append returns
			rec := recordOnFile(t, mem, cfg, r.WroteOffset)
			if string(rec.Body) != bodyN(i) {
				err = fmt.Errorf("offset %d holds %q, want %q", r.WroteOffset, rec.Body, bodyN(i))
			}
		}
		results <- out{r, err}
	}
	go appendOne(0)
	<-g.held // the leader is inside its write
	one := queuedBytes(s)
	for i := 1; i <= followers; i++ {
		go appendOne(i)
	}
	require.Eventually(t, func() bool { return queuedBytes(s) == one*(followers+1) }, 10*time.Second, time.Millisecond,
		"followers did not queue behind the write in progress")
	close(g.release)
	seen := map[int64]bool{}
	for i := 0; i <= followers; i++ {
		o := <-results
		require.NoError(t, o.err)
		require.False(t, seen[o.res.WroteOffset])
		seen[o.res.WroteOffset] = true
	}
	require.EqualValues(t, 2, s.gwrites.Load()-before, "the leader's write and one for the %d queued behind it", followers)
	require.Zero(t, queuedBytes(s))
}

// A failed group write fails every append in it; none reports success, and the store turns
// read-only.
func TestGroupedAppendsWriteErrorFailsAll(t *testing.T) {
	s, g, _, _ := openGatedStore(t)
	max := s.MaxOffset()

	g.armed.Store(true)
	errs := make(chan error, 6)
	go func() { _, err := s.Append(msg("G", 0, "body-0", "")); errs <- err }()
	<-g.held
	one := queuedBytes(s)
	for i := 0; i < 5; i++ {
		go func() { _, err := s.Append(msg("G", 1, "body-1", "")); errs <- err }()
	}
	require.Eventually(t, func() bool { return queuedBytes(s) == 6*one }, 10*time.Second, time.Millisecond)
	g.fail.Store(true)
	close(g.release)
	for i := 0; i < 6; i++ {
		require.Error(t, <-errs)
	}
	require.Error(t, s.Err())
	require.Equal(t, max, s.MaxOffset())
}

// Many concurrent senders across small segments (padding between groups), SYNC_FLUSH
// style: every append that WaitFlush confirmed survives a power cut, byte-exact, once.
func TestGroupedAppendsCrashKeepsFlushed(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		mem := vfs.NewCrashableMem()
		cfg := testConfig(mem)
		cfg.SegmentSize = 16 << 10
		s := openStore(t, cfg)
		const senders, each = 16, 40
		var mu sync.Mutex
		acked := map[string]AppendResult{}
		var wg sync.WaitGroup
		for w := 0; w < senders; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					body := fmt.Sprintf("s%02d-%04d-%s", w, i, strings.Repeat("x", (w*7+i)%200))
					r, err := s.Append(msg("C", int32(w%4), body, "t"))
					if err != nil {
						t.Error(err)
						return
					}
					if err := <-s.WaitFlush(r.EndOffset, time.Now().Add(10*time.Second)); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[body] = r
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
		crashed := mem.CrashClone(seed)
		require.NoError(t, s.Close())
		c := cfg
		c.FS = crashed
		s2 := openStore(t, c)
		require.Len(t, acked, senders*each)
		for body, r := range acked {
			b, err := s2.ReadRecord(r.WroteOffset)
			require.NoError(t, err)
			rec, _, err := DecodeRecord(b)
			require.NoError(t, err)
			require.Equal(t, body, string(rec.Body), "offset %d", r.WroteOffset)
			require.Equal(t, r.QueueOffset, rec.QueueOffset)
		}
		// No record twice: every queue offset of every queue appears once.
		waitDispatched(t, s2)
		for q := int32(0); q < 4; q++ {
			n := 0
			for off := int64(0); ; {
				res := s2.GetMessages("C", q, off, 32, 1<<20, nil)
				if res.Status != Found {
					break
				}
				n += len(res.Records)
				off = res.NextBeginOffset
			}
			require.Equal(t, senders*each/4, n, "queue %d", q)
		}
		require.NoError(t, s2.Close())
	}
}

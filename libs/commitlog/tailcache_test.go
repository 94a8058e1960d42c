package commitlog

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// pattern is the byte a test log holds at offset o.
func pattern(o int64) byte { return byte(o*7 + o>>11) }

func patternBytes(off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(off + int64(i))
	}
	return b
}

func TestTailCacheServesTheNewestBytes(t *testing.T) {
	tc := newTailCache(2 * tailChunk)
	var max atomic.Int64
	// 3.5 MiB written in odd-sized pieces, published after each write as the store does.
	for off := int64(0); off < 3*tailChunk+tailChunk/2; {
		n := 70001
		tc.write(off, patternBytes(off, n))
		off += int64(n)
		max.Store(off)
	}
	end := max.Load()
	got := make([]byte, 300000)
	// The last two chunks ([2 MiB, end)) are served, across their boundary too.
	for _, off := range []int64{end - 300000, 3*tailChunk - 1000, 2 * tailChunk} {
		require.True(t, tc.read(got, off, &max), "read at %d", off)
		require.Equal(t, patternBytes(off, len(got)), got, "bytes at %d", off)
	}
	// Older bytes were taken over by newer chunks: the file must serve them.
	require.False(t, tc.read(got[:10], tailChunk, &max))
	require.False(t, tc.read(got[:10], 2*tailChunk-20, &max), "a range starting in an evicted chunk")
	// Nothing at or beyond the max offset is served.
	require.False(t, tc.read(got[:10], end-5, &max))
	// A cut forgets everything; bytes written again below the old max are the new ones.
	tc.invalidate()
	require.False(t, tc.read(got[:10], end-20, &max))
	cut := end - 100000
	max.Store(cut)
	again := bytes.Repeat([]byte{0xAB}, 50000)
	tc.write(cut, again)
	max.Store(cut + int64(len(again)))
	require.True(t, tc.read(got[:50000], cut, &max))
	require.Equal(t, again, got[:50000])
	require.False(t, tc.read(got[:10], cut-10, &max), "below the first byte written after the cut")
	require.Nil(t, newTailCache(0))
	require.False(t, (*tailCache)(nil).read(got[:1], 0, &max))
}

func TestFreshReadsDoNotReadTheFileBack(t *testing.T) {
	for _, size := range []int{DefaultConfig().TailCacheBytes, 0} {
		fsys, ops := countingFS(vfs.NewMem())
		cfg := testConfig(fsys)
		cfg.SegmentSize = 1 << 20
		cfg.TailCacheBytes = size
		s := openStore(t, cfg)
		ops.reset()
		var last AppendResult
		for i := 0; i < 200; i++ {
			last = mustAppend(t, s, msg("T", int32(i%4), bodyN(i), "a"))
		}
		waitDispatched(t, s)
		raw, err := s.ReadRaw(last.WroteOffset, 1<<16)
		require.NoError(t, err)
		require.Equal(t, bodyN(199), bodyOf(t, raw))
		res := s.GetMessages("T", 3, 0, 16, 1<<20, nil)
		require.Len(t, res.Records, 16)
		require.Equal(t, bodyN(3), bodyOf(t, res.Records[0]))
		if size > 0 {
			require.Zero(t, ops.readsUnder(s.clDir), "dispatch, raw reads and gets of fresh records read the file")
		} else {
			require.NotZero(t, ops.readsUnder(s.clDir), "without the cache every read goes to the file")
		}
		require.NoError(t, s.Close())
	}
}

// TestTailCacheDeferred opens a store with the cache deferred (a slave's): its reads go to the
// file. Once enabled in the middle of a chunk, fresh records are served from memory, and the
// records written before, in the same chunk, still come whole from the file, as does a read
// across the point where the cache was turned on.
func TestTailCacheDeferred(t *testing.T) {
	fsys, ops := countingFS(vfs.NewMem())
	cfg := testConfig(fsys)
	cfg.SegmentSize = 1 << 20
	cfg.TailCacheDeferred = true
	s := openStore(t, cfg)
	defer s.Close()
	var offs []int64
	for i := 0; i < 100; i++ {
		offs = append(offs, mustAppend(t, s, msg("T", 0, bodyN(i), "a")).WroteOffset)
	}
	waitDispatched(t, s)
	ops.reset()
	raw, err := s.ReadRaw(offs[99], 1<<16)
	require.NoError(t, err)
	require.Equal(t, bodyN(99), bodyOf(t, raw))
	require.NotZero(t, ops.readsUnder(s.clDir), "a deferred cache served a read")

	s.EnableTailCache()
	s.EnableTailCache() // idempotent: the second call keeps what the first made
	for i := 100; i < 200; i++ {
		offs = append(offs, mustAppend(t, s, msg("T", 0, bodyN(i), "a")).WroteOffset)
	}
	require.Less(t, offs[199], int64(tailChunk), "the test wants the enable point inside the first chunk")
	waitDispatched(t, s)
	ops.reset()
	for _, i := range []int{100, 150, 199} {
		raw, err := s.ReadRaw(offs[i], 1<<16)
		require.NoError(t, err)
		require.Equal(t, bodyN(i), bodyOf(t, raw))
	}
	res := s.GetMessages("T", 0, 160, 16, 1<<20, nil) // one consume-queue file of the test config
	require.Len(t, res.Records, 16)
	require.Equal(t, bodyN(160), bodyOf(t, res.Records[0]))
	require.Zero(t, ops.readsUnder(s.clDir), "reads of records written after EnableTailCache read the file")

	res = s.GetMessages("T", 0, 80, 16, 1<<20, nil)
	require.Len(t, res.Records, 16)
	for k, r := range res.Records {
		require.Equal(t, bodyN(80+k), bodyOf(t, r))
	}
	require.NotZero(t, ops.readsUnder(s.clDir), "records written before EnableTailCache came from memory")
}

// TestTailCacheUnderTruncate reads records near the end of the log while they are appended
// and the log is cut and written again: every record read is whole (its CRC checks), and
// under -race no read overlaps a write.
func TestTailCacheUnderTruncate(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	cfg.SegmentSize = 1 << 20
	cfg.TailCacheBytes = 2 * tailChunk
	s := openStore(t, cfg)
	defer s.Close()
	var starts sync.Map // offset -> struct{}: record starts of the log as it is now
	// gen is odd while a cut runs and counts cuts: a read that straddles one may find a record
	// start of the old log in the middle of a new record, which is not a torn read.
	var gen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var checked atomic.Int64
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				starts.Range(func(k, _ any) bool {
					off := k.(int64)
					g := gen.Load()
					if g%2 == 1 || off < s.MaxOffset()-64<<10 {
						return true
					}
					raw, err := s.ReadRaw(off, 4096)
					if err != nil {
						return true // cut meanwhile
					}
					if _, _, err := s.checkRecord(raw, off); err != nil {
						if gen.Load() != g {
							return true // the log was cut meanwhile
						}
						errs <- fmt.Errorf("record at %d: %w", off, err)
						return false
					}
					checked.Add(1)
					return true
				})
			}
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	var recs []int64
	for i := 0; i < 6000 && time.Now().Before(deadline); i++ {
		res := mustAppend(t, s, msg("T", int32(i%2), strings.Repeat("x", i%700)+bodyN(i), ""))
		starts.Store(res.WroteOffset, struct{}{})
		recs = append(recs, res.WroteOffset)
		if i%500 == 499 {
			cut := recs[len(recs)-200]
			gen.Add(1)
			for _, off := range recs[len(recs)-200:] {
				starts.Delete(off)
			}
			require.NoError(t, s.Truncate(cut))
			gen.Add(1)
			recs = recs[:len(recs)-200]
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	require.NotZero(t, checked.Load())
	// Every record still in the log reads back as the file holds it.
	for _, off := range recs[len(recs)-100:] {
		raw, err := s.ReadRaw(off, 4096)
		require.NoError(t, err)
		_, size, err := s.checkRecord(raw, off)
		require.NoError(t, err)
		file := make([]byte, size)
		sg := s.segmentForLocked(off)
		_, err = sg.f.ReadAt(file, off-sg.start)
		require.NoError(t, err)
		require.Equal(t, file, raw[:size])
	}
}

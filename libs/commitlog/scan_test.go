package commitlog

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// chunkedLog writes one segment whose records meet the crash scan's 4 MiB chunk ends in
// every way the scan handles (recovery.go, scanChunk): a record cut by the end of a chunk
// that was read ahead, with a tail that fits in front of the next chunk (copied there) and
// one that does not (read again from its start), and a record larger than a chunk. It
// returns the records as appended and their bytes, and the index of a record that lies
// inside a chunk read ahead, well after a chunk end.
func chunkedLog(t *testing.T) (*vfs.MemFS, Config, []AppendResult, [][]byte, int) {
	t.Helper()
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 32 << 20
	cfg.CQUnitsPerFile = 4096
	cfg.MaxMessageSize = 8 << 20
	cfg.RecoveryFullScan = true
	s := openStore(t, cfg)
	var res []AppendResult
	put := func(size int) {
		body := strings.Repeat(strconv.Itoa(len(res)%10), size)
		res = append(res, mustAppend(t, s, msg("T", int32(len(res)%4), body, "")))
	}
	// fill appends 1 KiB records until the next one would start less than 1.2 KiB before to.
	fill := func(to int64) {
		for s.MaxOffset() < to-1200 {
			put(1024)
		}
	}
	fill(scanChunk - 40<<10)
	put(100 << 10) // cut by the first chunk's end, 40 KiB in: copied in front of the second
	fill(2*scanChunk - 280<<10)
	put(300 << 10) // cut 280 KiB in (more than scanHead): the scan reads again from its start
	put(5 << 20)   // larger than a chunk: read whole
	bigEnd := s.MaxOffset()
	fill(bigEnd + scanChunk + 1<<20)
	target := len(res) // a record of the chunk read ahead after the one read at bigEnd
	fill(20 << 20)
	require.Less(t, res[target].WroteOffset, int64(20<<20))
	raw := make([][]byte, len(res))
	for i, r := range res {
		b, err := s.ReadRecord(r.WroteOffset)
		require.NoError(t, err)
		raw[i] = append([]byte(nil), b...)
	}
	require.NoError(t, s.Close())
	return mem, cfg, res, raw, target
}

// crashMarker makes the next Open recover as after a kill: the abort marker is present.
func crashMarker(t *testing.T, mem *vfs.MemFS, cfg Config) {
	t.Helper()
	require.NoError(t, mem.WriteFile(filepath.Join(cfg.Dir, abortFile), nil))
}

// requireRecords checks that s holds exactly the records res (of chunkedLog, whose bytes are
// raw): each byte-exact at its offset, and one consume-queue unit for each.
func requireRecords(t *testing.T, s *Store, res []AppendResult, raw [][]byte) {
	t.Helper()
	for i, r := range res {
		got, err := s.ReadRecord(r.WroteOffset)
		require.NoError(t, err)
		require.True(t, bytes.Equal(raw[i], got), "record %d at %d differs", i, r.WroteOffset)
	}
	var units int64
	for q := int32(0); q < 4; q++ {
		units += s.QueueMaxOffset("T", q)
	}
	require.EqualValues(t, len(res), units)
}

func TestScanAcrossChunks(t *testing.T) {
	mem, cfg, res, raw, _ := chunkedLog(t)
	last := res[len(res)-1]
	for _, crash := range []bool{false, true} {
		if crash {
			crashMarker(t, mem, cfg)
		}
		s := openStore(t, cfg)
		rep := s.Recovery()
		require.Equal(t, !crash, rep.Clean)
		require.Negative(t, rep.CutAt, "nothing is cut (%+v)", rep)
		if crash {
			require.Equal(t, last.EndOffset, rep.ScannedBytes, "the whole log was validated")
		}
		require.Equal(t, last.EndOffset, s.MaxOffset())
		requireRecords(t, s, res, raw)
		require.NoError(t, s.Close())
	}
}

func TestScanCutInChunkReadAhead(t *testing.T) {
	mem, cfg, res, raw, target := chunkedLog(t)
	seg := filepath.Join(cfg.Dir, "commitlog", segName(0))
	b, err := mem.ReadFile(seg)
	require.NoError(t, err)
	b[res[target].WroteOffset+200] ^= 0x04 // inside the body
	require.NoError(t, mem.WriteFile(seg, b))
	crashMarker(t, mem, cfg)
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.Equal(t, res[target].WroteOffset, rep.CutAt)
	require.Equal(t, seg, rep.CutFile)
	require.Contains(t, rep.CutReason, "crc")
	require.Equal(t, res[len(res)-1].EndOffset-res[target].WroteOffset, rep.CutBytes)
	require.Equal(t, res[target].WroteOffset, s.MaxOffset())
	requireRecords(t, s, res[:target], raw)
}

// A read that fails during the crash scan (one of the last chunks, read ahead) stops the open
// with the disk's error and cuts nothing: the next open, with the disk answering again, finds
// every record.
func TestScanReadErrorCutsNothing(t *testing.T) {
	mem, cfg, res, raw, _ := chunkedLog(t)
	seg := filepath.Join(cfg.Dir, "commitlog", segName(0))
	var reads, failAt atomic.Int64
	counted := cfg
	counted.FS = vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, name string) error {
		if op == vfs.OpRead && name == seg {
			if n := reads.Add(1); n == failAt.Load() {
				return vfs.EIO
			}
		}
		return nil
	}))
	// How many reads of the segment a crash recovery makes.
	crashMarker(t, mem, cfg)
	s := openStore(t, counted)
	require.NoError(t, s.Close())
	total := reads.Swap(0)
	require.Greater(t, total, int64(4))

	crashMarker(t, mem, cfg)
	failAt.Store(total - 1)
	_, err := Open(counted)
	require.ErrorIs(t, err, vfs.EIO)
	require.Regexp(t, `^commitlog: reading `+regexp.QuoteMeta(seg)+` at [1-9][0-9]{6,}: `, err.Error())
	b, err := mem.ReadFile(seg)
	require.NoError(t, err)
	require.EqualValues(t, res[len(res)-1].EndOffset, len(b), "the segment is whole")

	failAt.Store(0)
	s = openStore(t, counted)
	defer s.Close()
	rep := s.Recovery()
	require.False(t, rep.Clean)
	require.Negative(t, rep.CutAt, "nothing is cut (%+v)", rep)
	require.Equal(t, res[len(res)-1].EndOffset, s.MaxOffset())
	requireRecords(t, s, res, raw)
}

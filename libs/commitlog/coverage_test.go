package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// coverageStore writes n messages to each of A/0, B/1 and C/2 (interleaved, over several
// segments and consume-queue files), closes the store cleanly and returns the records by queue.
func coverageStore(t testing.TB, n int) (*vfs.MemFS, Config, map[string][]AppendResult) {
	t.Helper()
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 16 << 10
	s := openStore(t, cfg)
	res := map[string][]AppendResult{}
	for i := 0; i < n; i++ {
		for _, q := range []struct {
			topic string
			qid   int32
		}{{"A", 0}, {"B", 1}, {"C", 2}} {
			k := fmt.Sprintf("%s/%d", q.topic, q.qid)
			res[k] = append(res[k], mustAppend(t, s, msg(q.topic, q.qid, fmt.Sprintf("%s-%04d-%s", k, i, strings.Repeat("x", 40)), "t")))
		}
	}
	require.NoError(t, s.Close())
	return mem, cfg, res
}

// requireQueue reads the whole queue through GetMessages and checks every record is the one
// appended, byte-exact, at its queue offset.
func requireQueue(t *testing.T, s *Store, topic string, qid int32, want []AppendResult) {
	t.Helper()
	require.Equal(t, int64(len(want)), s.QueueMaxOffset(topic, qid), "%s/%d max", topic, qid)
	for off := int64(0); off < int64(len(want)); {
		g := s.GetMessages(topic, qid, off, 32, 1<<20, nil)
		require.Equal(t, Found, g.Status, "%s/%d at %d", topic, qid, off)
		for _, rec := range g.Records {
			w := want[off]
			stored, err := s.ReadRecord(w.WroteOffset)
			require.NoError(t, err)
			require.True(t, bytes.Equal(stored, rec), "%s/%d entry %d is not the appended record", topic, qid, off)
			r, _, err := DecodeRecord(rec)
			require.NoError(t, err)
			require.Equal(t, off, r.QueueOffset)
			off++
		}
	}
}

// opCounter counts the write, truncate, create and remove operations (ops), and apart from
// them the reads, by path.
type opCounter struct {
	mu    sync.Mutex
	ops   map[string]int
	reads map[string]int
}

func countingFS(mem *vfs.MemFS) (*vfs.ErrorFS, *opCounter) {
	c := &opCounter{ops: map[string]int{}, reads: map[string]int{}}
	return vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, name string) error {
		switch op {
		case vfs.OpWrite, vfs.OpTruncate, vfs.OpCreate, vfs.OpRemove:
			c.mu.Lock()
			c.ops[name]++
			c.mu.Unlock()
		case vfs.OpRead:
			c.mu.Lock()
			c.reads[name]++
			c.mu.Unlock()
		}
		return nil
	})), c
}

// under is the number of modifying operations on paths under dir.
func (c *opCounter) under(dir string) int { return c.count(c.ops, dir) }

// readsUnder is the number of reads of paths under dir.
func (c *opCounter) readsUnder(dir string) int { return c.count(c.reads, dir) }

func (c *opCounter) count(m map[string]int, dir string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for name, k := range m {
		if strings.HasPrefix(name, dir+"/") {
			n += k
		}
	}
	return n
}

func (c *opCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.ops)
	clear(c.reads)
}

func cqDir(cfg Config, topic string, qid int) string {
	return filepath.Join(cfg.Dir, "consumequeue", topic, fmt.Sprint(qid))
}

// A queue folder deleted while the store was closed is noticed at the next clean start,
// rebuilt from the CommitLog (only that queue is written), and reported.
func TestCoverageMissingQueueRebuilt(t *testing.T) {
	mem, cfg, res := coverageStore(t, 100)
	require.NoError(t, mem.RemoveAll(cqDir(cfg, "B", 1)))
	fsys, ops := countingFS(mem)
	cfg.FS = fsys
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.True(t, rep.Clean)
	require.Equal(t, "checked against the manifest", rep.CQCheck)
	require.Equal(t, []CQRepair{{
		Topic: "B", QueueID: 1, Problem: "missing", ExpectedMin: 0, ExpectedMax: 100,
		FoundMin: 0, FoundMax: 0, RebuiltMin: 0, RebuiltMax: 100, From: res["B/1"][0].WroteOffset, Restored: 100,
	}}, rep.CQRepairs)
	require.EqualValues(t, 100, rep.CQRestored)
	require.Equal(t, rep.MaxOffset, rep.RedispatchFrom, "no global redispatch")
	requireQueue(t, s, "B", 1, res["B/1"])
	requireQueue(t, s, "A", 0, res["A/0"])
	require.Zero(t, ops.under(cqDir(cfg, "A", 0)), "an intact queue is not rewritten")
	require.Zero(t, ops.under(cqDir(cfg, "C", 2)))
	// New sends continue the rebuilt queue, never reuse its offsets.
	r := mustAppend(t, s, msg("B", 1, "after", ""))
	require.EqualValues(t, 100, r.QueueOffset)
}

// A queue's files cut short (the last file truncated, on a unit boundary or inside a unit,
// or emptied) are rebuilt from the end of the last good entry.
func TestCoverageTruncatedQueueRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lastKeep  int // bytes kept of the last file (units 96..99); -1 removes it
		prevKeep  int // bytes kept of the file before (units 80..95), when the last is removed
		wantFound int64
	}{
		{"unit boundary", 1 * CQUnitSize, 0, 97},
		{"inside a unit", 2*CQUnitSize + 7, 0, 98},
		{"empty", 0, 0, 96},
		{"last file gone, previous short", -1, 11 * CQUnitSize, 91},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, cfg, res := coverageStore(t, 100)
			last := filepath.Join(cqDir(cfg, "C", 2), segName(96*CQUnitSize))
			b, err := mem.ReadFile(last)
			require.NoError(t, err)
			require.Len(t, b, 4*CQUnitSize)
			if tc.lastKeep >= 0 {
				require.NoError(t, mem.WriteFile(last, b[:tc.lastKeep]))
			} else {
				require.NoError(t, mem.Remove(last))
				prev := filepath.Join(cqDir(cfg, "C", 2), segName(80*CQUnitSize))
				pb, err := mem.ReadFile(prev)
				require.NoError(t, err)
				require.NoError(t, mem.WriteFile(prev, pb[:tc.prevKeep]))
			}
			s := openStore(t, cfg)
			defer s.Close()
			rep := s.Recovery()
			require.Len(t, rep.CQRepairs, 1, "%+v", rep.CQRepairs)
			r := rep.CQRepairs[0]
			require.Equal(t, "C", r.Topic)
			require.Equal(t, "truncated", r.Problem)
			require.EqualValues(t, tc.wantFound, r.FoundMax)
			require.EqualValues(t, 100, r.RebuiltMax)
			require.EqualValues(t, 100-tc.wantFound, r.Restored)
			require.Equal(t, res["C/2"][tc.wantFound-1].EndOffset, r.From, "rebuilt from the end of the last good entry")
			requireQueue(t, s, "C", 2, res["C/2"])
		})
	}
}

// The first file of a queue deleted: the head is rebuilt; a middle file deleted (files that do
// not follow each other): the loader cuts there and the rest is rebuilt; both reported.
func TestCoverageHeadAndGapRebuilt(t *testing.T) {
	mem, cfg, res := coverageStore(t, 100)
	require.NoError(t, mem.Remove(filepath.Join(cqDir(cfg, "A", 0), segName(0))))
	require.NoError(t, mem.Remove(filepath.Join(cqDir(cfg, "B", 1), segName(32*CQUnitSize))))
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.Len(t, rep.CQRepairs, 2, "%+v", rep.CQRepairs)
	byTopic := map[string]CQRepair{}
	for _, r := range rep.CQRepairs {
		byTopic[r.Topic] = r
	}
	require.Equal(t, "head missing", byTopic["A"].Problem)
	require.EqualValues(t, 16, byTopic["A"].FoundMin)
	require.EqualValues(t, 0, byTopic["A"].RebuiltMin)
	require.Equal(t, res["A/0"][0].WroteOffset, byTopic["A"].From)
	require.Equal(t, "damaged file", byTopic["B"].Problem)
	require.EqualValues(t, 32, byTopic["B"].FoundMax)
	require.EqualValues(t, 100, byTopic["B"].RebuiltMax)
	requireQueue(t, s, "A", 0, res["A/0"])
	requireQueue(t, s, "B", 1, res["B/1"])
	requireQueue(t, s, "C", 2, res["C/2"])
}

// A last entry that points at another queue's record (a file overwritten with wrong units)
// is caught by the last-entry check and rebuilt.
func TestCoverageLastEntryMismatchRebuilt(t *testing.T) {
	mem, cfg, res := coverageStore(t, 40)
	last := filepath.Join(cqDir(cfg, "A", 0), segName(32*CQUnitSize))
	b, err := mem.ReadFile(last)
	require.NoError(t, err)
	// Entry 39 now points at B/1's record 39: same size, valid, wrong queue.
	var u [CQUnitSize]byte
	putUnit(u[:], cqUnit{phys: res["B/1"][39].WroteOffset, size: res["B/1"][39].WroteBytes})
	copy(b[7*CQUnitSize:], u[:])
	require.NoError(t, mem.WriteFile(last, b))
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.Len(t, rep.CQRepairs, 1, "%+v", rep.CQRepairs)
	require.Equal(t, "last entry", rep.CQRepairs[0].Problem)
	require.Equal(t, res["A/0"][38].EndOffset, rep.CQRepairs[0].From)
	requireQueue(t, s, "A", 0, res["A/0"])
}

// Intact queues: nothing reported, nothing rebuilt, the log not re-read (no global redispatch).
func TestCoverageIntactCostsNothing(t *testing.T) {
	mem, cfg, res := coverageStore(t, 100)
	s := openStore(t, cfg)
	rep := s.Recovery()
	require.Empty(t, rep.CQRepairs)
	require.Zero(t, rep.CQRestored)
	require.Equal(t, "checked against the manifest", rep.CQCheck)
	require.Equal(t, rep.MaxOffset, rep.RedispatchFrom)
	require.NoError(t, s.Close())
	fsys, ops := countingFS(mem)
	cfg.FS = fsys
	s = openStore(t, cfg)
	defer s.Close()
	require.Zero(t, ops.under(filepath.Join(cfg.Dir, "consumequeue")))
	for k, r := range res {
		var topic string
		var qid int32
		fmt.Sscanf(strings.Replace(k, "/", " ", 1), "%s %d", &topic, &qid)
		requireQueue(t, s, topic, qid, r)
	}
}

// Without a manifest (a store written before it existed, or the file lost or damaged) every
// queue is rebuilt from the whole log, and the report says why.
func TestCoverageWithoutManifestRebuildsEverything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(*vfs.MemFS, string)
		check  string
	}{
		{"missing", func(m *vfs.MemFS, p string) { require.NoError(t, m.Remove(p)) }, "no manifest: every consume queue rebuilt from the whole CommitLog"},
		{"bit flip", func(m *vfs.MemFS, p string) {
			b, _ := m.ReadFile(p)
			b[40] ^= 1
			require.NoError(t, m.WriteFile(p, b))
		}, "manifest unusable: commitlog: invalid consume-queue coverage manifest: checksum mismatch: every consume queue rebuilt from the whole CommitLog"},
		{"truncated", func(m *vfs.MemFS, p string) {
			b, _ := m.ReadFile(p)
			require.NoError(t, m.WriteFile(p, b[:20]))
		}, "manifest unusable: commitlog: invalid consume-queue coverage manifest: 20 bytes, shorter than header and checksum: every consume queue rebuilt from the whole CommitLog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, cfg, res := coverageStore(t, 60)
			require.NoError(t, mem.RemoveAll(cqDir(cfg, "C", 2)))
			tc.damage(mem, filepath.Join(cfg.Dir, manifestFile))
			s := openStore(t, cfg)
			defer s.Close()
			rep := s.Recovery()
			require.Equal(t, tc.check, rep.CQCheck)
			require.Equal(t, s.MinOffset(), rep.RedispatchFrom)
			requireQueue(t, s, "C", 2, res["C/2"])
			requireQueue(t, s, "A", 0, res["A/0"])
		})
	}
}

// A topic deleted with DeleteTopic is not brought back by the check; retention removing a
// queue's head is not damage.
func TestCoverageDeletedTopicAndRetentionAreNotDamage(t *testing.T) {
	mem, cfg, _ := coverageStore(t, 60)
	s := openStore(t, cfg)
	require.NoError(t, s.DeleteTopic("B"))
	require.NoError(t, s.Close())
	s = openStore(t, cfg)
	require.Empty(t, s.Recovery().CQRepairs)
	require.EqualValues(t, 0, s.QueueMaxOffset("B", 1))
	require.NoError(t, s.Close())

	clk := &fakeClock{}
	clk.Set(time.Now())
	mem.SetClock(clk.Now)
	cfg.Now = clk.Now
	cfg.FileReservedTime = time.Hour
	s = openStore(t, cfg)
	for i := 0; i < 200; i++ {
		mustAppend(t, s, msg("A", 0, strings.Repeat("n", 100), ""))
	}
	waitDispatched(t, s)
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
	clk.Advance(48 * time.Hour)
	n, err := s.RunRetention(true)
	require.NoError(t, err)
	require.Positive(t, n)
	minA := s.QueueMinOffset("A", 0)
	require.Positive(t, minA)
	require.NoError(t, s.Close())
	s = openStore(t, cfg)
	defer s.Close()
	require.Empty(t, s.Recovery().CQRepairs, "%+v", s.Recovery().CQRepairs)
	require.Equal(t, minA, s.QueueMinOffset("A", 0))
}

// A failing manifest write is an error of the checkpoint that wanted it (and of Close).
func TestManifestWriteFailureReported(t *testing.T) {
	mem := vfs.NewMem()
	var fail sync.Map
	fsys := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, name string) error {
		if _, on := fail.Load("x"); on && op == vfs.OpRename && strings.HasSuffix(name, manifestFile+".tmp") {
			return errInjectedCov
		}
		return nil
	}))
	cfg := testConfig(fsys)
	s := openStore(t, cfg)
	mustAppend(t, s, msg("A", 0, "one", ""))
	fail.Store("x", true)
	err := s.Close()
	require.ErrorIs(t, err, errInjectedCov)
}

var errInjectedCov = errors.New("injected manifest failure")

func TestManifestRoundTrip(t *testing.T) {
	m := &manifest{dispatched: 9000, minOffset: 4096, queues: []queueCoverage{
		{topic: "A", qid: 0, min: 0, max: 10, firstPhys: 4096, lastEnd: 5000},
		{topic: "%RETRY%g", qid: 7, min: 300000, max: 300001, firstPhys: 8000, lastEnd: 8100},
	}}
	b := appendManifest([]byte("prefix"), m)
	require.Equal(t, "prefix", string(b[:6]))
	got, err := decodeManifest(b[6:])
	require.NoError(t, err)
	require.Equal(t, m, got)
	empty, err := decodeManifest(appendManifest(nil, &manifest{}))
	require.NoError(t, err)
	require.Empty(t, empty.queues)

	enc := appendManifest(nil, m)
	// Every truncation and every single bit flip is refused.
	for i := 0; i < len(enc); i++ {
		_, err := decodeManifest(enc[:i])
		require.ErrorIs(t, err, ErrManifest, "cut at %d", i)
		for bit := 0; bit < 8; bit++ {
			c := append([]byte(nil), enc...)
			c[i] ^= 1 << bit
			_, err := decodeManifest(c)
			require.ErrorIs(t, err, ErrManifest, "flip at %d bit %d", i, bit)
		}
	}
	// Entries the checksum covers but the rules refuse.
	for _, bad := range []queueCoverage{
		{topic: "", qid: 0, min: 0, max: 1, firstPhys: 0, lastEnd: 1},
		{topic: "a b", qid: 0, min: 0, max: 1, firstPhys: 0, lastEnd: 1},
		{topic: "A", qid: -1, min: 0, max: 1, firstPhys: 0, lastEnd: 1},
		{topic: "A", qid: 0, min: 5, max: 5, firstPhys: 0, lastEnd: 1},
		{topic: "A", qid: 0, min: 0, max: 1, firstPhys: 10, lastEnd: 10},
	} {
		_, err := decodeManifest(appendManifest(nil, &manifest{dispatched: 1, queues: []queueCoverage{bad}}))
		require.ErrorIs(t, err, ErrManifest, "%+v", bad)
	}
	v2 := append([]byte(nil), enc...)
	v2[7] = 2
	body := v2[:len(v2)-4]
	v2 = binary.BigEndian.AppendUint32(append([]byte(nil), body...), crc32.ChecksumIEEE(body))
	_, err = decodeManifest(v2)
	require.ErrorContains(t, err, "version 2")
}

func FuzzManifest(f *testing.F) {
	f.Add(appendManifest(nil, &manifest{dispatched: 100, minOffset: 0, queues: []queueCoverage{{topic: "T", qid: 1, min: 0, max: 3, firstPhys: 0, lastEnd: 90}}}))
	f.Add(appendManifest(nil, &manifest{}))
	f.Add([]byte("RMCQ"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			require.ErrorIs(t, err, ErrManifest)
			return
		}
		again, err := decodeManifest(appendManifest(nil, m))
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}

// After a crash (no clean shutdown) a deleted queue is rebuilt the same way: the manifest
// written at the last start or interval still names it.
func TestCoverageAfterCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 16 << 10
	s := openStore(t, cfg)
	var res []AppendResult
	for i := 0; i < 80; i++ {
		res = append(res, mustAppend(t, s, msg("K", 3, fmt.Sprintf("k-%03d", i), "")))
		mustAppend(t, s, msg("L", 0, fmt.Sprintf("l-%03d", i), ""))
	}
	waitDispatched(t, s)
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
	require.NoError(t, s.writeCheckpoint(true))
	crashed := mem.CrashClone(1)
	require.NoError(t, s.Close())
	require.NoError(t, crashed.RemoveAll(cqDir(cfg, "K", 3)))
	c := cfg
	c.FS = crashed
	s2 := openStore(t, c)
	defer s2.Close()
	rep := s2.Recovery()
	require.False(t, rep.Clean)
	require.Len(t, rep.CQRepairs, 1, "%+v", rep.CQRepairs)
	require.Equal(t, "missing", rep.CQRepairs[0].Problem)
	requireQueue(t, s2, "K", 3, res)
}

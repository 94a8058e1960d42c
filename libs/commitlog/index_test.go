package commitlog

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// indexConfig is a store with tiny index files: few slots (collisions) and few
// entries per file (many files).
func indexConfig(fs vfs.FS) Config {
	c := testConfig(fs)
	c.MaxHashSlotNum = 7
	c.MaxIndexNum = 10
	return c
}

func keyedMsg(topic string, i int, keys, uniq string) *Message {
	m := msg(topic, int32(i%2), bodyN(i), "")
	if keys != "" {
		m.Properties += PropertyKeys + "\x01" + keys + "\x02"
	}
	if uniq != "" {
		m.Properties += PropertyUniqKey + "\x01" + uniq + "\x02"
	}
	return m
}

// writeKeyed appends n messages: message i has keys "k<i> all" and unique key
// "U<i>"; every fifth one has no key at all.
func writeKeyed(t *testing.T, s *Store, from, n int) map[int]AppendResult {
	out := map[int]AppendResult{}
	for i := from; i < from+n; i++ {
		if i%5 == 4 {
			mustAppend(t, s, msg("T", 0, bodyN(i), ""))
			continue
		}
		out[i] = mustAppend(t, s, keyedMsg("T", i, fmt.Sprintf("k%d all", i), fmt.Sprintf("U%d", i)))
	}
	waitDispatched(t, s)
	return out
}

func queryBodies(t *testing.T, s *Store, topic, key string, maxNum int) []string {
	t.Helper()
	res, err := s.QueryIndex(topic, key, maxNum, 0, math.MaxInt64, 64<<20)
	require.NoError(t, err)
	var out []string
	for _, rec := range res.Records {
		out = append(out, bodyOf(t, rec))
	}
	return out
}

// checkAllFound asserts every keyed message is found by each of its keys.
func checkAllFound(t *testing.T, s *Store, want map[int]AppendResult) {
	t.Helper()
	for i := range want {
		require.Equal(t, []string{bodyN(i)}, queryBodies(t, s, "T", fmt.Sprintf("k%d", i), 32), "key k%d", i)
		require.Equal(t, []string{bodyN(i)}, queryBodies(t, s, "T", fmt.Sprintf("U%d", i), 32), "unique key U%d", i)
	}
}

func TestIndexQueryByKeyAndUniqueKey(t *testing.T) {
	s := openStore(t, indexConfig(vfs.NewMem()))
	defer s.Close()
	want := writeKeyed(t, s, 0, 40)
	checkAllFound(t, s, want)
	// A shared key: every message carrying it, oldest first, bounded by maxNum.
	all := queryBodies(t, s, "T", "all", 100)
	require.Len(t, all, len(want))
	require.True(t, strings.Compare(all[0], all[len(all)-1]) < 0)
	require.Len(t, queryBodies(t, s, "T", "all", 3), 3)
	// Other topics and unknown keys find nothing.
	require.Empty(t, queryBodies(t, s, "Other", "k1", 32))
	require.Empty(t, queryBodies(t, s, "T", "nope", 32))
	require.Empty(t, queryBodies(t, s, "T", "k", 32))
	// Time range: nothing stored before 1970 + 1s.
	res, err := s.QueryIndex("T", "k1", 32, 0, 999, 1<<20)
	require.NoError(t, err)
	require.Empty(t, res.Records)
	require.Positive(t, res.LastUpdateTimestamp)
	require.Positive(t, res.LastUpdatePhyOffset)
	// maxBytes keeps at least one record.
	res, err = s.QueryIndex("T", "all", 32, 0, math.MaxInt64, 1)
	require.NoError(t, err)
	require.Len(t, res.Records, 1)
	// The files rolled over.
	names, err := s.fs.List(filepath.Join(s.cfg.Dir, "index"))
	require.NoError(t, err)
	require.Greater(t, len(names), 5)
}

func TestIndexDisabled(t *testing.T) {
	cfg := indexConfig(vfs.NewMem())
	cfg.MessageIndexEnable = false
	s := openStore(t, cfg)
	defer s.Close()
	writeKeyed(t, s, 0, 3)
	_, err := s.QueryIndex("T", "k0", 32, 0, math.MaxInt64, 1<<20)
	require.ErrorIs(t, err, ErrIndexDisabled)
	require.Equal(t, int64(-1), s.IndexedOffset())
}

func TestIndexCleanRestartKeepsFiles(t *testing.T) {
	mem := vfs.NewMem()
	s := openStore(t, indexConfig(mem))
	want := writeKeyed(t, s, 0, 23)
	require.NoError(t, s.Close())
	s = openStore(t, indexConfig(mem))
	require.Equal(t, int64(-1), s.Recovery().IndexFrom, "a clean start rebuilds nothing")
	require.Empty(t, s.Recovery().IndexCheck)
	for k, v := range writeKeyed(t, s, 23, 20) {
		want[k] = v
	}
	checkAllFound(t, s, want)
	require.Len(t, queryBodies(t, s, "T", "all", 100), len(want))
	// Without any keyed message since, a clean restart still remembers the position.
	require.NoError(t, s.Close())
	s = openStore(t, indexConfig(mem))
	mustAppend(t, s, msg("T", 0, "plain", ""))
	waitDispatched(t, s)
	require.NoError(t, s.Close())
	s = openStore(t, indexConfig(mem))
	defer s.Close()
	require.Equal(t, int64(-1), s.Recovery().IndexFrom)
	require.Equal(t, s.MaxOffset(), s.IndexedOffset())
	checkAllFound(t, s, want)
}

func TestIndexCrashRebuild(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		mem := vfs.NewCrashableMem()
		cfg := indexConfig(mem)
		cfg.FlushDiskType = SyncFlush
		s := openStore(t, cfg)
		want := writeKeyed(t, s, 0, 37)
		require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
		crashed := mem.CrashClone(seed)
		require.NoError(t, s.Close())

		s2 := openStore(t, indexConfig(crashed))
		rep := s2.Recovery()
		require.False(t, rep.Clean)
		require.GreaterOrEqual(t, rep.IndexFrom, int64(0), "the unfinished file is rebuilt")
		require.Contains(t, rep.IndexCheck, "rebuilt from CommitLog offset")
		checkAllFound(t, s2, want)
		require.Len(t, queryBodies(t, s2, "T", "all", 100), len(want), "no duplicates after the rebuild")
		// It keeps indexing.
		for k, v := range writeKeyed(t, s2, 37, 9) {
			want[k] = v
		}
		checkAllFound(t, s2, want)
		require.NoError(t, s2.Close())
	}
}

// waitIndexVerified polls until the background verifier has looked at every finished file.
func waitIndexVerified(t *testing.T, s *Store) IndexCheck {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := s.IndexCheck()
		if c.Pending == 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("index files still unverified: %+v", c)
		}
		time.Sleep(time.Millisecond)
	}
}

// A damaged slot in a finished file in the middle of the index: the open does not read it
// (it checks headers and trailers only), the background verifier finds it with the exact
// reason and replaces that file alone from the CommitLog; queries find every key before and
// after, and the replacement passes a full verification.
func TestIndexDamagedFileDetectedAndRebuilt(t *testing.T) {
	mem, want, names, victim := damagedIndexStore(t, 30, 1, flipSlot)
	dir := "/store/index"
	b, err := mem.ReadFile(victim)
	require.NoError(t, err)
	start, _ := parseIndexName(names[1])
	_, reason := verifyIndexFile(bytes.NewReader(b), int64(len(b)), start)
	require.ErrorIs(t, reason, ErrIndexCorrupt)
	others := map[string][]byte{}
	for _, n := range names {
		if n != names[1] {
			others[n], err = mem.ReadFile(filepath.Join(dir, n))
			require.NoError(t, err)
		}
	}

	s := openStore(t, indexConfig(mem))
	defer s.Close()
	rep := s.Recovery()
	require.Empty(t, rep.IndexCheck, "the open reads headers and trailers only")
	require.Equal(t, int64(-1), rep.IndexFrom, "the open rebuilds nothing")
	c := waitIndexVerified(t, s)
	require.Equal(t, 1, c.Rebuilt)
	require.Zero(t, c.Failed)
	s.idx.mu.RLock()
	end := s.idx.files[1].indexedTo
	s.idx.mu.RUnlock()
	require.Equal(t, victim+": "+reason.Error()+fmt.Sprintf("; rebuilt from CommitLog offsets [%d, %d)", start, end), c.Last)
	checkAllFound(t, s, want)
	require.Len(t, queryBodies(t, s, "T", "all", 100), len(want))

	// On disk: the replacement verifies whole, the other files are untouched, nothing is left
	// of the build.
	after, err := mem.List(dir)
	require.NoError(t, err)
	require.Equal(t, names, after)
	b, err = mem.ReadFile(victim)
	require.NoError(t, err)
	_, err = verifyIndexFile(bytes.NewReader(b), int64(len(b)), start)
	require.NoError(t, err)
	for n, want := range others {
		got, err := mem.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		require.Equal(t, want, got, n)
	}
	// It keeps indexing, and the next start finds nothing to rebuild.
	for k, v := range writeKeyed(t, s, 30, 12) {
		want[k] = v
	}
	checkAllFound(t, s, want)
	require.NoError(t, s.Close())
	s2 := openStore(t, indexConfig(mem))
	defer s2.Close()
	c = waitIndexVerified(t, s2)
	require.Zero(t, c.Rebuilt)
	require.Positive(t, c.Verified)
	checkAllFound(t, s2, want)
}

// A replacement an earlier run had not finished is removed at the next open.
func TestIndexUnfinishedRebuildRemoved(t *testing.T) {
	mem := vfs.NewMem()
	s := openStore(t, indexConfig(mem))
	want := writeKeyed(t, s, 0, 12)
	require.NoError(t, s.Close())
	names, err := mem.List("/store/index")
	require.NoError(t, err)
	stale := filepath.Join("/store/index", names[0]+rebuildSuffix)
	require.NoError(t, mem.WriteFile(stale, []byte("half a file")))
	s = openStore(t, indexConfig(mem))
	defer s.Close()
	after, err := mem.List("/store/index")
	require.NoError(t, err)
	require.Equal(t, names, after)
	require.Zero(t, waitIndexVerified(t, s).Rebuilt)
	checkAllFound(t, s, want)
}

// Damage the open's shape check sees (a trailer that no longer matches the file's size) is
// still handled at the open: that file and every newer one are rebuilt before the store serves.
func TestIndexBadTrailerRebuiltAtOpen(t *testing.T) {
	mem, want, names, victim := damagedIndexStore(t, 30, 1, func(b []byte) []byte { return b[:len(b)-1] })
	s := openStore(t, indexConfig(mem))
	defer s.Close()
	rep := s.Recovery()
	require.Contains(t, rep.IndexCheck, victim)
	require.Contains(t, rep.IndexCheck, "rebuilt from CommitLog offset")
	start, _ := parseIndexName(names[1])
	require.Equal(t, start, rep.IndexFrom)
	checkAllFound(t, s, want)
	require.Len(t, queryBodies(t, s, "T", "all", 100), len(want))
}

// A file larger than the verifier's chunk (entries past the first chunk, slots over more than
// one) passes the check of a clean start: nothing is rebuilt. (A 64 KiB chunk, not a multiple
// of the entry size, made every file of more than 3,276 entries fail as corrupt at every start,
// and the index was rebuilt from the CommitLog each time.)
func TestIndexCleanRestartKeepsLargeFiles(t *testing.T) {
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.MaxHashSlotNum = 3 * indexVerifyChunk / indexSlotSize // three chunks of slots
	cfg.MaxIndexNum = 20000
	cfg.SegmentSize = 4 << 20 // one segment, so one index file
	s := openStore(t, cfg)
	want := writeKeyed(t, s, 0, 5000) // 4,000 keyed messages, three entries each
	require.NoError(t, s.Close())
	names, err := mem.List("/store/index")
	require.NoError(t, err)
	require.Len(t, names, 1)
	b, err := mem.ReadFile(filepath.Join("/store/index", names[0]))
	require.NoError(t, err)
	require.Greater(t, len(b), indexHeaderSize+cfg.MaxHashSlotNum*indexSlotSize+2*indexVerifyChunk, "entries over more than two chunks")
	_, err = verifyIndexFile(bytes.NewReader(b), int64(len(b)), 0)
	require.NoError(t, err)

	s = openStore(t, cfg)
	defer s.Close()
	require.Empty(t, s.Recovery().IndexCheck)
	require.Equal(t, int64(-1), s.Recovery().IndexFrom, "a clean start rebuilds nothing")
	c := waitIndexVerified(t, s)
	require.Equal(t, IndexCheck{Verified: 1}, c, "the background verifier passes it too")
	checkAllFound(t, s, want)
}

func TestIndexVerifyReasons(t *testing.T) {
	mem := vfs.NewMem()
	s := openStore(t, indexConfig(mem))
	writeKeyed(t, s, 0, 12)
	require.NoError(t, s.Close())
	names, err := mem.List("/store/index")
	require.NoError(t, err)
	name := filepath.Join("/store/index", names[0])
	good, err := mem.ReadFile(name)
	require.NoError(t, err)
	start, _ := parseIndexName(names[0])
	_, err = verifyIndexFile(bytes.NewReader(good), int64(len(good)), start)
	require.NoError(t, err)
	cases := map[string]func(b []byte) []byte{
		"shorter than header": func(b []byte) []byte { return b[:30] },
		"no trailer":          func(b []byte) []byte { return b[:len(b)-1] },
		"checksum":            func(b []byte) []byte { b[len(b)-indexTrailerSize-1] ^= 1; return b },
		"index count":         func(b []byte) []byte { b[36] = 0x7f; return b },
		"header and trailer say": func(b []byte) []byte {
			return append(b[:len(b)-indexTrailerSize], append(make([]byte, 20), b[len(b)-indexTrailerSize:]...)...)
		},
		"trailer version": func(b []byte) []byte { b[len(b)-indexTrailerSize+7] = 9; return b },
	}
	for reason, damage := range cases {
		b := damage(append([]byte(nil), good...))
		_, err := verifyIndexFile(bytes.NewReader(b), int64(len(b)), start)
		require.ErrorIs(t, err, ErrIndexCorrupt, reason)
		require.Contains(t, err.Error(), reason)
	}
	_, err = verifyIndexFile(bytes.NewReader(good), int64(len(good)), 1<<40)
	require.ErrorIs(t, err, ErrIndexCorrupt)
	require.Contains(t, err.Error(), "before the file's start")
}

func TestIndexFollowsTruncateAndReset(t *testing.T) {
	mem := vfs.NewMem()
	s := openStore(t, indexConfig(mem))
	defer s.Close()
	want := writeKeyed(t, s, 0, 30)
	cut := want[15].WroteOffset
	require.NoError(t, s.Truncate(cut))
	for i := range want {
		if i >= 15 {
			require.Empty(t, queryBodies(t, s, "T", fmt.Sprintf("k%d", i), 32), "k%d was cut", i)
			delete(want, i)
		}
	}
	checkAllFound(t, s, want)
	for k, v := range writeKeyed(t, s, 100, 12) {
		want[k] = v
	}
	checkAllFound(t, s, want)
	require.Len(t, queryBodies(t, s, "T", "all", 100), len(want))

	require.NoError(t, s.Reset(4*s.SegmentSize()))
	require.Empty(t, queryBodies(t, s, "T", "all", 100))
	want = writeKeyed(t, s, 200, 6)
	checkAllFound(t, s, want)
}

func TestIndexRetentionDeletesFiles(t *testing.T) {
	clk := &fakeClock{}
	clk.Set(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
	mem := vfs.NewMem()
	mem.SetClock(clk.Now)
	cfg := indexConfig(mem)
	cfg.Now = clk.Now
	cfg.FileReservedTime = time.Hour
	s := openStore(t, cfg)
	defer s.Close()
	pad := strings.Repeat("r", 600)
	for i := 0; i < 60; i++ {
		m := keyedMsg("T", i, fmt.Sprintf("k%d", i), "")
		m.Body = []byte(bodyN(i) + pad)
		mustAppend(t, s, m)
	}
	waitDispatched(t, s)
	require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
	require.Greater(t, s.Stats().Segments, 3)
	before, err := mem.List("/store/index")
	require.NoError(t, err)
	clk.Advance(3 * time.Hour)
	n, err := s.RunRetention(false)
	require.NoError(t, err)
	require.Positive(t, n)
	after, err := mem.List("/store/index")
	require.NoError(t, err)
	require.Less(t, len(after), len(before))
	require.Empty(t, queryBodies(t, s, "T", "k0", 32), "deleted with its segment")
	require.Equal(t, []string{bodyN(59) + pad}, queryBodies(t, s, "T", "k59", 32))
}

func TestIndexKeyHashIsJavas(t *testing.T) {
	for _, k := range []string{"", "a", "ab", "abc", "abcd", "key-1", "key-12", "key-123", "key-1234", "ключ", "😀x", "abcdé", "abcdefg\xff", strings.Repeat("long", 50), "\xff\xfe"} {
		h := JavaStringHash("TopicTest#" + k)
		want := h
		if want < 0 {
			want = -want
		}
		if want < 0 {
			want = 0
		}
		require.Equal(t, want, indexKeyHash([]byte("TopicTest"), []byte(k)), k)
	}
}

func TestIndexHeaderTrailerRoundTrip(t *testing.T) {
	h := indexHeader{beginTimestamp: 1, endTimestamp: 2, beginPhyOffset: 3, endPhyOffset: 4, hashSlotCount: 5, indexCount: 6}
	b := appendIndexHeader(nil, h)
	require.Len(t, b, indexHeaderSize)
	got, err := decodeIndexHeader(b)
	require.NoError(t, err)
	require.Equal(t, h, got)
	_, err = decodeIndexHeader(b[:39])
	require.ErrorIs(t, err, ErrIndexCorrupt)
	tr := indexTrailer{slotNum: 7, maxIndexNum: 8, indexedTo: 9, crc: 10}
	b = appendIndexTrailer(nil, tr)
	require.Len(t, b, indexTrailerSize)
	gt, err := decodeIndexTrailer(b)
	require.NoError(t, err)
	require.Equal(t, tr, gt)
	_, err = decodeIndexTrailer(b[:27])
	require.ErrorIs(t, err, ErrIndexCorrupt)
	e := appendIndexEntry(nil, -5, 1<<40, 77, 3)
	require.Len(t, e, indexEntrySize)
	kh, phy, diff, prev := decodeIndexEntry(e)
	require.Equal(t, []int64{-5, 1 << 40, 77, 3}, []int64{int64(kh), phy, int64(diff), int64(prev)})
}

func FuzzIndexFile(f *testing.F) {
	mem := vfs.NewMem()
	s := openStore(f, indexConfig(mem))
	for i := 0; i < 12; i++ {
		mustAppend(f, s, keyedMsg("T", i, fmt.Sprintf("k%d", i), ""))
	}
	waitDispatched(f, s)
	require.NoError(f, s.Close())
	names, _ := mem.List("/store/index")
	for _, n := range names {
		b, _ := mem.ReadFile(filepath.Join("/store/index", n))
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := verifyIndexFile(bytes.NewReader(b), int64(len(b)), 0)
		if err != nil {
			require.ErrorIs(t, err, ErrIndexCorrupt)
			return
		}
		require.GreaterOrEqual(t, info.header.indexCount, int32(1))
	})
}

func TestIndexQueryWhileWriting(t *testing.T) {
	s := openStore(t, indexConfig(vfs.NewMem()))
	defer s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			_, _ = s.QueryIndex("T", "all", 32, 0, math.MaxInt64, 1<<20)
			_, _ = s.QueryIndex("T", fmt.Sprintf("k%d", i), 32, 0, math.MaxInt64, 1<<20)
		}
	}()
	want := writeKeyed(t, s, 0, 60)
	<-done
	checkAllFound(t, s, want)
}

func TestMessageStoreTime(t *testing.T) {
	s := openStore(t, testConfig(vfs.NewMem()))
	defer s.Close()
	r := mustAppend(t, s, msg("T", 0, "a", ""))
	waitDispatched(t, s)
	ts, err := s.MessageStoreTime("T", 0, 0)
	require.NoError(t, err)
	require.Equal(t, r.StoreTimestamp, ts)
	_, err = s.MessageStoreTime("T", 0, 1)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.MessageStoreTime("T", 1, 0)
	require.ErrorIs(t, err, ErrNotFound)
}

// damagedIndexStore writes n keyed messages (writeKeyed) over several index files of a new
// store, closes it and rewrites the index file at position victim (in name order) as damage
// returns it. It returns the FS, what was written, the index files' names and the victim's path.
func damagedIndexStore(t *testing.T, n, victim int, damage func([]byte) []byte) (*vfs.MemFS, map[int]AppendResult, []string, string) {
	t.Helper()
	mem := vfs.NewMem()
	s := openStore(t, indexConfig(mem))
	want := writeKeyed(t, s, 0, n)
	require.NoError(t, s.Close())
	names, err := mem.List("/store/index")
	require.NoError(t, err)
	require.Greater(t, len(names), victim+1)
	path := filepath.Join("/store/index", names[victim])
	b, err := mem.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, mem.WriteFile(path, damage(b)))
	return mem, want, names, path
}

// flipSlot damages a finished file where only a whole verification sees it: a slot.
func flipSlot(b []byte) []byte { b[indexHeaderSize+3] ^= 0x40; return b }

// The replacement is built and swapped in while keyed sends are indexed and queries run.
func TestIndexRebuildWhileServing(t *testing.T) {
	mem, want, _, _ := damagedIndexStore(t, 40, 1, flipSlot)
	s := openStore(t, indexConfig(mem))
	defer s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			res, err := s.QueryIndex("T", fmt.Sprintf("k%d", i%40), 4, 0, 1<<62, 1<<20)
			if err != nil {
				t.Error(err)
				return
			}
			for _, r := range res.Records {
				m, err := parseMeta(r)
				if err != nil || !hasIndexKey(m.props, fmt.Sprintf("k%d", i%40)) {
					t.Errorf("query k%d answered with another record", i%40)
					return
				}
			}
		}
	}()
	for k, v := range writeKeyed(t, s, 40, 20) {
		want[k] = v
	}
	<-done
	c := waitIndexVerified(t, s)
	require.Equal(t, 1, c.Rebuilt)
	checkAllFound(t, s, want)
}

// Closing while the verifier may still run stops it; the next open verifies again.
func TestIndexVerifyStopsAtClose(t *testing.T) {
	mem, want, _, victim := damagedIndexStore(t, 40, 1, flipSlot)
	s := openStore(t, indexConfig(mem))
	require.NoError(t, s.Close())
	s = openStore(t, indexConfig(mem))
	defer s.Close()
	c := waitIndexVerified(t, s)
	if c.Rebuilt == 0 {
		// The first run replaced it before its close: the file is whole now.
		b, err := mem.ReadFile(victim)
		require.NoError(t, err)
		start, _ := parseIndexName(filepath.Base(victim))
		_, err = verifyIndexFile(bytes.NewReader(b), int64(len(b)), start)
		require.NoError(t, err)
	}
	checkAllFound(t, s, want)
}

// A rolled-back half message's keys are not indexed, at append and in a replacement built by
// the background verifier; a committed one's are.
func TestIndexSkipsRolledBack(t *testing.T) {
	mem := vfs.NewMem()
	s := openStore(t, indexConfig(mem))
	rolled := msg("T", 0, "rolled-back", "")
	rolled.Properties = "KEYS\x01tx-key\x02UNIQ_KEY\x01U-rolled\x02"
	rolled.SysFlag = SysFlagTxRollback
	mustAppend(t, s, rolled)
	kept := msg("T", 0, "committed", "")
	kept.Properties = "KEYS\x01tx-key\x02UNIQ_KEY\x01U-kept\x02"
	mustAppend(t, s, kept)
	waitDispatched(t, s)
	require.Equal(t, []string{"committed"}, queryBodies(t, s, "T", "tx-key", 8))
	require.Empty(t, queryBodies(t, s, "T", "U-rolled", 8))

	// The same through a replacement: damage the file, reopen, wait for the rebuild.
	require.NoError(t, s.Close())
	names, err := mem.List("/store/index")
	require.NoError(t, err)
	victim := filepath.Join("/store/index", names[0])
	b, err := mem.ReadFile(victim)
	require.NoError(t, err)
	b[indexHeaderSize] ^= 0x01 // a slot's high byte: out of range
	require.NoError(t, mem.WriteFile(victim, b))
	s = openStore(t, indexConfig(mem))
	defer s.Close()
	require.Equal(t, 1, waitIndexVerified(t, s).Rebuilt)
	require.Equal(t, []string{"committed"}, queryBodies(t, s, "T", "tx-key", 8))
	require.Empty(t, queryBodies(t, s, "T", "U-rolled", 8))
}

// A dispatch pass leaves the entries it put pending, where queries find them: the file being
// written is rebuilt after a crash anyway, so they are written when indexPendingFlush bytes
// gather or the file is finished, not once per pass. A clean close writes them.
func TestIndexEntriesWrittenOnFlushNotPerPass(t *testing.T) {
	efs, indexWrites := countingWrites(vfs.NewMem(), "/index/")
	cfg := testConfig(efs)
	cfg.SegmentSize = 1 << 20
	cfg.MaxHashSlotNum, cfg.MaxIndexNum = 64, 1000
	s := openStore(t, cfg)
	want := writeKeyed(t, s, 0, 1) // the first pass creates the file
	before := indexWrites.Load()
	for i := 1; i < 60; i++ {
		for k, v := range writeKeyed(t, s, i, 1) { // one message, one dispatch pass
			want[k] = v
		}
	}
	require.Equal(t, before, indexWrites.Load(), "index writes during 59 dispatch passes")
	checkAllFound(t, s, want)
	require.NoError(t, s.Close())

	s2 := openStore(t, cfg)
	require.True(t, s2.Recovery().Clean)
	require.Equal(t, int64(-1), s2.Recovery().IndexFrom, "nothing to rebuild after a clean close")
	checkAllFound(t, s2, want)
	require.NoError(t, s2.Close())
}

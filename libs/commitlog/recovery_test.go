package commitlog

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

type written struct {
	res  AppendResult
	m    *Message
	rec  []byte // the stored record as read back before the crash
	sync bool   // acknowledged after WaitFlush
}

// checkServed asserts the recovered store serves only records that were
// written, byte for byte, and that every consume-queue unit points at one.
func checkServed(t testing.TB, s *Store, byOffset map[int64]*written) {
	checkServedMode(t, s, byOffset, true)
}

// checkServedMode with strict=false compares only what the record format
// protects (offsets, lengths, body under BODYCRC, topic, queue, properties
// shape; queue offsets are checked on the consume-queue path): a bit flip in an unprotected header field such as BORNTIMESTAMP
// is not detectable in RocketMQ's layout.
func checkServedMode(t testing.TB, s *Store, byOffset map[int64]*written, strict bool) {
	t.Helper()
	for off := s.MinOffset(); off < s.MaxOffset(); {
		raw, err := s.ReadRaw(off, 1<<20)
		require.NoError(t, err, "offset %d", off)
		for p := 0; p < len(raw); {
			r, n, err := DecodeRecord(raw[p:])
			require.NoError(t, err)
			if !r.IsBlank() {
				w := byOffset[off+int64(p)]
				require.NotNil(t, w, "record at %d was never written", off+int64(p))
				if strict {
					require.True(t, bytes.Equal(w.rec, raw[p:p+n]), "record at %d differs", off+int64(p))
				} else {
					o, _, err := DecodeRecord(w.rec)
					require.NoError(t, err)
					require.Equal(t, o.PhysicalOffset, r.PhysicalOffset)
					require.Equal(t, o.TotalSize, r.TotalSize)
					require.Equal(t, o.Body, r.Body)
				}
			}
			p += n
		}
		off += int64(len(raw))
	}
	require.NoError(t, s.WaitDispatched(s.MaxOffset(), time.Now().Add(10*time.Second)))
	for topic, qs := range s.Queues() {
		for _, q := range qs {
			min, max := s.QueueMinOffset(topic, q), s.QueueMaxOffset(topic, q)
			for off := min; off < max; {
				g := s.GetMessages(topic, q, off, 32, 1<<30, nil)
				if strict {
					require.Equal(t, Found, g.Status, "%s/%d at %d", topic, q, off)
				}
				prev := off - 1
				for i, rec := range g.Records {
					r, _, err := DecodeRecord(rec)
					require.NoError(t, err)
					if strict {
						require.Equal(t, off+int64(i), r.QueueOffset)
					}
					require.Greater(t, r.QueueOffset, prev)
					require.Less(t, r.QueueOffset, g.NextBeginOffset)
					prev = r.QueueOffset
					require.Equal(t, topic, r.Topic)
					require.Equal(t, q, r.QueueID)
				}
				require.Greater(t, g.NextBeginOffset, off)
				off = g.NextBeginOffset
			}
		}
	}
}

func TestCrashSimulationLoop(t *testing.T) {
	iterations := 30
	if testing.Short() {
		iterations = 8
	}
	cuts := 0
	defer func() { t.Logf("%d recoveries cut a damaged tail", cuts) }()
	for it := 0; it < iterations; it++ {
		seed := int64(it)
		rng := rand.New(rand.NewSource(seed))
		mem := vfs.NewMem()
		byOffset := map[int64]*written{}
		var acked []*written
		fs := vfs.FS(mem)
		for round := 0; round < 3; round++ {
			cfg := testConfig(fs)
			cfg.FlushDiskType = SyncFlush
			cfg.FlushInterval = time.Duration(1+rng.Intn(30)) * time.Millisecond
			if it%2 == 1 {
				cfg.WriteBuffer = 2048 // buffered appends: only WaitFlush makes them safe
			}
			s := openStore(t, cfg)
			if rep := s.Recovery(); rep.CutAt >= 0 {
				cuts++
			}
			checkServed(t, s, byOffset)
			for _, w := range acked {
				if w.res.WroteOffset < s.MinOffset() {
					continue
				}
				rec, err := s.ReadRecord(w.res.WroteOffset)
				require.NoError(t, err, "seed %d: acknowledged record at %d lost", seed, w.res.WroteOffset)
				require.True(t, bytes.Equal(rec, w.rec), "seed %d: acknowledged record changed", seed)
			}
			// Forget what did not survive.
			for off := range byOffset {
				if off >= s.MaxOffset() {
					delete(byOffset, off)
				}
			}
			n := 20 + rng.Intn(60)
			for i := 0; i < n; i++ {
				topic := fmt.Sprintf("T%d", rng.Intn(3))
				m := msg(topic, int32(rng.Intn(2)), strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(700)), fmt.Sprintf("tag%d", rng.Intn(4)))
				res, err := s.Append(m)
				require.NoError(t, err)
				rec := expectedRecord(m, res, cfg.StoreHost)
				w := &written{res: res, m: m, rec: rec}
				byOffset[res.WroteOffset] = w
				if rng.Intn(4) == 0 {
					require.NoError(t, <-s.WaitFlush(res.EndOffset, time.Now().Add(10*time.Second)))
					w.sync = true
					acked = append(acked, w)
				}
			}
			// Power cut while the store is running.
			crashed := mem.CrashClone(seed*10 + int64(round))
			s.Close()
			mem = crashed
			fs = mem
		}
		s := openStore(t, testConfig(fs))
		checkServed(t, s, byOffset)
		for _, w := range acked {
			rec, err := s.ReadRecord(w.res.WroteOffset)
			require.NoError(t, err)
			require.True(t, bytes.Equal(rec, w.rec))
		}
		require.NoError(t, s.Close())
	}
}

// expectedRecord is the stored form of m as Append reported it.
func expectedRecord(m *Message, res AppendResult, storeHost netip.AddrPort) []byte {
	return AppendRecord(nil, &Record{
		BodyCRC: BodyCRC(m.Body), QueueID: m.QueueID, Flag: m.Flag, QueueOffset: res.QueueOffset,
		PhysicalOffset: res.WroteOffset, SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		StoreTimestamp: res.StoreTimestamp, StoreHost: storeHost, ReconsumeTimes: m.ReconsumeTimes,
		PreparedTransactionOffset: m.PreparedTransactionOffset, Body: m.Body, Topic: m.Topic, Properties: m.Properties,
	})
}

// damagedStore writes n records to a closed store and returns it with the results.
func damagedStore(t testing.TB, n int) (*vfs.MemFS, Config, []AppendResult) {
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 64 << 10
	s := openStore(t, cfg)
	var res []AppendResult
	for i := 0; i < n; i++ {
		res = append(res, mustAppend(t, s, msg("T", 0, strings.Repeat("d", 200), "")))
	}
	require.NoError(t, s.Close())
	return mem, cfg, res
}

func segFile(cfg Config) string { return filepath.Join(cfg.Dir, "commitlog", segName(0)) }

func TestRecoveryTruncatedSegment(t *testing.T) {
	mem, cfg, res := damagedStore(t, 20)
	b, _ := mem.ReadFile(segFile(cfg))
	cutAt := res[12].WroteOffset + 50 // mid-record
	require.NoError(t, mem.WriteFile(segFile(cfg), b[:cutAt]))
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.Equal(t, res[12].WroteOffset, rep.CutAt)
	require.Equal(t, int64(50), rep.CutBytes)
	require.Contains(t, rep.CutReason, "torn")
	require.Equal(t, res[12].WroteOffset, s.MaxOffset())
	require.Equal(t, int64(12), s.QueueMaxOffset("T", 0))
	require.Positive(t, rep.CQUnitsCut)
}

func TestRecoveryZeroFilled(t *testing.T) {
	mem, cfg, res := damagedStore(t, 20)
	b, _ := mem.ReadFile(segFile(cfg))
	for i := res[7].WroteOffset; i < res[9].EndOffset; i++ {
		b[i] = 0
	}
	require.NoError(t, mem.WriteFile(segFile(cfg), b))
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.Equal(t, res[7].WroteOffset, rep.CutAt)
	require.Equal(t, res[19].EndOffset-res[7].WroteOffset, rep.CutBytes)
	require.Contains(t, rep.CutReason, "magic")
	require.Equal(t, segFile(cfg), rep.CutFile)
	require.Equal(t, int64(7), s.QueueMaxOffset("T", 0))
	checkPrefix(t, s, res[:7])
}

func TestRecoveryBitFlip(t *testing.T) {
	mem, cfg, res := damagedStore(t, 20)
	b, _ := mem.ReadFile(segFile(cfg))
	b[res[15].WroteOffset+120] ^= 0x10 // inside the body
	require.NoError(t, mem.WriteFile(segFile(cfg), b))
	s := openStore(t, cfg)
	defer s.Close()
	rep := s.Recovery()
	require.Equal(t, res[15].WroteOffset, rep.CutAt)
	require.Contains(t, rep.CutReason, "crc")
	require.Equal(t, int64(15), s.QueueMaxOffset("T", 0))
	checkPrefix(t, s, res[:15])
	// New appends continue at the cut.
	r := mustAppend(t, s, msg("T", 0, "fresh", ""))
	require.Equal(t, res[15].WroteOffset, r.WroteOffset)
	require.Equal(t, int64(15), r.QueueOffset)
}

// A flip in an older segment than RecoveryCheckSegments covers is caught at
// read time and never served; a full scan cuts there.
func TestBitFlipInOldSegmentNeverServed(t *testing.T) {
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	s := openStore(t, cfg)
	var res []AppendResult
	for i := 0; i < 40; i++ {
		res = append(res, mustAppend(t, s, msg("T", 0, strings.Repeat("o", 500), "")))
	}
	require.NoError(t, s.Close())
	b, _ := mem.ReadFile(segFile(cfg))
	b[res[2].WroteOffset+100] ^= 0x01
	require.NoError(t, mem.WriteFile(segFile(cfg), b))
	s = openStore(t, cfg)
	_, err := s.ReadRecord(res[2].WroteOffset)
	require.ErrorIs(t, err, ErrCorrupt)
	g := s.GetMessages("T", 0, 2, 1, 1<<20, nil)
	require.NotEqual(t, Found, g.Status)
	require.Empty(t, g.Records)
	require.NoError(t, s.Close())
	cfg.RecoveryFullScan = true
	s = openStore(t, cfg)
	defer s.Close()
	require.Equal(t, res[2].WroteOffset, s.Recovery().CutAt)
	require.Equal(t, res[2].WroteOffset, s.MaxOffset())
}

func checkPrefix(t *testing.T, s *Store, res []AppendResult) {
	t.Helper()
	for _, r := range res {
		rec, err := s.ReadRecord(r.WroteOffset)
		require.NoError(t, err)
		require.Equal(t, int(r.WroteBytes), len(rec))
	}
}

func TestCrashWithoutCheckpointRebuildsQueues(t *testing.T) {
	mem, cfg, _ := damagedStore(t, 30)
	require.NoError(t, mem.Remove("/store/checkpoint"))
	require.NoError(t, mem.RemoveAll("/store/consumequeue"))
	require.NoError(t, mem.MkdirAll("/store/consumequeue"))
	s := openStore(t, cfg)
	defer s.Close()
	require.False(t, s.Recovery().Clean)
	require.Equal(t, int64(30), s.QueueMaxOffset("T", 0))
}

func FuzzRecovery(f *testing.F) {
	// A fixed store, damaged by the fuzzer: (position, kind, length) triples.
	mem, cfg, _ := damagedStore(f, 60)
	names := []string{segFile(cfg), "/store/checkpoint", "/store/consumequeue/T/0/" + segName(0), "/store/consumequeue/T/0/" + segName(16*CQUnitSize)}
	orig := map[string][]byte{}
	for _, n := range names {
		if b, err := mem.ReadFile(n); err == nil {
			orig[n] = b
		}
	}
	s := openStore(f, cfg)
	byOffset := map[int64]*written{}
	for off := int64(0); off < s.MaxOffset(); {
		rec, err := s.ReadRecord(off)
		require.NoError(f, err)
		byOffset[off] = &written{rec: rec}
		off += int64(len(rec))
	}
	require.NoError(f, s.Close())
	f.Add([]byte{0, 1, 0, 100, 1, 4})
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 3})
	f.Add([]byte{1, 0, 0, 8, 1, 1})
	f.Add([]byte{2, 0, 1, 0, 2, 20})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := vfs.NewMem()
		for _, d := range []string{"/store/commitlog", "/store/consumequeue/T/0"} {
			m.MkdirAll(d)
		}
		files := map[string][]byte{}
		for n, b := range orig {
			files[n] = append([]byte(nil), b...)
		}
		for len(ops) >= 5 {
			name := names[int(ops[0])%len(names)]
			b := files[name]
			if len(b) == 0 {
				ops = ops[5:]
				continue
			}
			pos := (int(ops[1])<<16 | int(ops[2])<<8 | int(ops[3])) % len(b)
			switch ops[4] % 4 {
			case 0: // bit flip
				b[pos] ^= 1 << (ops[4] >> 5)
			case 1: // truncate
				b = b[:pos]
			case 2: // zero a run
				for i := pos; i < len(b) && i < pos+int(ops[4]); i++ {
					b[i] = 0
				}
			case 3: // garbage byte
				b[pos] = ops[4]
			}
			files[name] = b
			ops = ops[5:]
		}
		for n, b := range files {
			m.WriteFile(n, b)
		}
		c := cfg
		c.FS = m
		c.RecoveryFullScan = true
		st, err := Open(c)
		if err != nil {
			t.Fatalf("open after damage: %v", err)
		}
		defer st.Close()
		checkServedMode(t, st, byOffset, false)
		// Small reads never panic and never return a partial record.
		for off := range byOffset {
			for _, mb := range []int{1, 100, 3000} {
				raw, err := st.ReadRaw(off, mb)
				if err != nil {
					continue
				}
				for p := 0; p < len(raw); {
					r, n, err := DecodeRecord(raw[p:])
					require.NoError(t, err)
					if r.IsBlank() && p+n > len(raw) {
						t.Fatalf("partial blank at %d", off+int64(p))
					}
					p += n
				}
			}
			_, _ = st.ReadRecord(off)
		}
	})
}

// A record found invalid by the crash scan is cut with everything after it, and nothing the
// store held about those records survives: neither consume-queue units nor message-index
// entries (the pass that validates the log also indexes and dispatches it, and the queues
// and the index were ahead of the cut before the crash). The recovered queues and index are
// then what a rebuild from the cut log alone gives. The checkpoint names record 200 as the
// dispatch point: victims before it are cut below the point, the others above it.
func TestRecoveryCutTakesBackQueuesAndIndex(t *testing.T) {
	for _, victim := range []int{3, 61, 140, 188, 203, 231} {
		t.Run(fmt.Sprint(victim), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			cfg := indexConfig(mem)
			cfg.FlushDiskType = SyncFlush
			cfg.CheckpointInterval = time.Hour // only the checkpoint written below
			s := openStore(t, cfg)
			want := writeKeyed(t, s, 0, 200)
			require.Eventually(t, func() bool { return s.IndexedOffset() == s.MaxOffset() }, 5*time.Second, time.Millisecond)
			require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
			require.NoError(t, s.writeCheckpoint(true))
			d0 := s.MaxOffset()
			cp := s.readCheckpoint()
			require.Equal(t, d0, cp.dispatched)
			for k, v := range writeKeyed(t, s, 200, 40) {
				want[k] = v
			}
			require.NoError(t, <-s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second)))
			// Everything is dispatched and indexed, so the queues and the index hold the
			// records behind the victim when the store dies.
			require.Eventually(t, func() bool { return s.IndexedOffset() == s.MaxOffset() }, 5*time.Second, time.Millisecond)
			crashed := mem.CrashClone(1)
			require.NoError(t, s.Close())

			at := want[victim].WroteOffset
			seg := at - at%cfg.SegmentSize
			name := filepath.Join("/store/commitlog", segName(seg))
			b, err := crashed.ReadFile(name)
			require.NoError(t, err)
			b[at-seg+88] ^= 0x01 // the first body byte (IPv4 hosts): its CRC no longer matches
			require.NoError(t, crashed.WriteFile(name, b))

			cfg2 := indexConfig(crashed)
			cfg2.RecoveryFullScan = true
			s2 := openStore(t, cfg2)
			rep := s2.Recovery()
			require.Equal(t, at, rep.CutAt)
			require.Equal(t, "body crc mismatch", rep.CutReason)
			require.Equal(t, at, s2.MaxOffset())
			require.Equal(t, at, s2.IndexedOffset())
			require.Positive(t, rep.CQUnitsCut, "the queues held records behind the cut")
			require.Equal(t, min(at, d0), rep.RedispatchFrom)
			for i, r := range want {
				for _, key := range []string{fmt.Sprintf("U%d", i), fmt.Sprintf("k%d", i)} {
					offs, _, _, err := s2.idx.lookup("T", key, 100, 0, math.MaxInt64)
					require.NoError(t, err)
					if r.WroteOffset < at {
						require.Contains(t, offs, r.WroteOffset, "key %s of a kept record", key)
					}
					for _, o := range offs {
						require.Less(t, o, at, "key %s: the index answers a record that was cut", key)
					}
				}
				q := int32(i % 2)
				if r.WroteOffset >= at {
					require.LessOrEqual(t, s2.QueueMaxOffset("T", q), r.QueueOffset, "queue %d still holds a cut record", q)
				}
			}
			// The same log rebuilt from nothing: the same queues and the same index.
			clone := crashed.CrashClone(1)
			require.NoError(t, s2.Close())
			for _, dir := range []string{"/store/index", "/store/consumequeue"} {
				require.NoError(t, clone.RemoveAll(dir))
			}
			require.NoError(t, clone.Remove("/store/"+manifestFile))
			s3 := openStore(t, indexConfig(clone))
			defer s3.Close()
			s2 = openStore(t, indexConfig(crashed))
			defer s2.Close()
			for q := int32(0); q < 2; q++ {
				require.Equal(t, s3.QueueMaxOffset("T", q), s2.QueueMaxOffset("T", q))
				g2 := s2.GetMessages("T", q, 0, 1000, 1<<30, nil)
				g3 := s3.GetMessages("T", q, 0, 1000, 1<<30, nil)
				require.Equal(t, g3.Records, g2.Records, "queue %d", q)
			}
			for i := range want {
				for _, key := range []string{fmt.Sprintf("U%d", i), "all"} {
					require.Equal(t, queryBodies(t, s3, "T", key, 1000), queryBodies(t, s2, "T", key, 1000), "key %s", key)
				}
			}
		})
	}
}

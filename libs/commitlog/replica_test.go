package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// replicate copies the master's log to the replica the way HA does.
func replicate(t *testing.T, master, replica *Store, batch int) {
	t.Helper()
	for replica.MaxOffset() < master.MaxOffset() {
		data, err := master.ReadRaw(replica.MaxOffset(), batch)
		require.NoError(t, err)
		require.NotEmpty(t, data)
		require.NoError(t, replica.AppendRaw(replica.MaxOffset(), data))
	}
}

func TestReplicationByteIdentical(t *testing.T) {
	mfs, rfs := vfs.NewMem(), vfs.NewMem()
	master := openStore(t, testConfig(mfs))
	defer master.Close()
	replica := openStore(t, testConfig(rfs))
	defer replica.Close()
	var dispatched []int64
	replica.OnDispatch(func(topic string, q int32, max int64) {
		if topic == "T" && q == 1 {
			dispatched = append(dispatched, max)
		}
	})
	for i := 0; i < 60; i++ {
		mustAppend(t, master, msg("T", int32(i%3), strings.Repeat("v", 100+i*7), "tag"))
	}
	replicate(t, master, replica, 1000)
	require.Equal(t, master.MaxOffset(), replica.MaxOffset())
	for off := int64(0); off < master.MaxOffset(); off += master.SegmentSize() {
		a, err := master.ReadRaw(off, 1<<20)
		require.NoError(t, err)
		b, err := replica.ReadRaw(off, 1<<20)
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "segment at %d differs", off)
	}
	waitDispatched(t, replica)
	waitDispatched(t, master)
	for q := int32(0); q < 3; q++ {
		require.Equal(t, master.QueueMaxOffset("T", q), replica.QueueMaxOffset("T", q))
		g1 := master.GetMessages("T", q, 0, 32, 1<<20, nil)
		g2 := replica.GetMessages("T", q, 0, 32, 1<<20, nil)
		require.Equal(t, g1.Records, g2.Records)
	}
	require.NotEmpty(t, dispatched)
	// The replica, promoted, continues queue offsets.
	r := mustAppend(t, replica, msg("T", 1, "promoted", ""))
	require.Equal(t, int64(20), r.QueueOffset)
}

func TestAppendRawRefusals(t *testing.T) {
	master := openStore(t, testConfig(vfs.NewMem()))
	defer master.Close()
	for i := 0; i < 3; i++ {
		mustAppend(t, master, msg("T", 0, bodyN(i), ""))
	}
	data, err := master.ReadRaw(0, 1<<20)
	require.NoError(t, err)

	replica := openStore(t, testConfig(vfs.NewMem()))
	defer replica.Close()
	// Not at max offset and not segment aligned.
	err = replica.AppendRaw(100, data)
	require.ErrorIs(t, err, ErrOffsetMismatch)
	// Partial record.
	err = replica.AppendRaw(0, data[:len(data)-3])
	require.ErrorIs(t, err, ErrCorrupt)
	// Bit flip.
	bad := append([]byte(nil), data...)
	bad[95] ^= 0x40
	err = replica.AppendRaw(0, bad)
	require.ErrorIs(t, err, ErrCorrupt)
	// Records whose physical offsets do not match where they would land.
	err = replica.AppendRaw(master.SegmentSize(), data)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, master.SegmentSize(), replica.MaxOffset(), "empty store moved to the aligned offset")
	require.NoError(t, replica.Reset(0))
	require.NoError(t, replica.AppendRaw(0, data))
	require.Equal(t, master.MaxOffset(), replica.MaxOffset())
	err = replica.AppendRaw(0, data)
	var ce *CorruptError
	require.ErrorIs(t, err, ErrOffsetMismatch)
	require.False(t, errors.As(err, &ce))
	_, err = master.ReadRaw(master.MaxOffset(), 10)
	require.ErrorIs(t, err, ErrOffsetBeyondEnd)
}

func TestFreshReplicaStartsAtMastersLastSegment(t *testing.T) {
	master := openStore(t, testConfig(vfs.NewMem()))
	defer master.Close()
	for i := 0; i < 40; i++ {
		mustAppend(t, master, msg("T", 0, strings.Repeat("m", 500), ""))
	}
	start := master.MaxOffset() - master.MaxOffset()%master.SegmentSize()
	require.Greater(t, start, int64(0))
	rfs := vfs.NewMem()
	cfg := testConfig(rfs)
	replica := openStore(t, cfg)
	data, err := master.ReadRaw(start, 1<<20)
	require.NoError(t, err)
	require.NoError(t, replica.AppendRaw(start, data))
	require.Equal(t, start, replica.MinOffset())
	require.Equal(t, master.MaxOffset(), replica.MaxOffset())
	waitDispatched(t, replica)
	waitDispatched(t, master)
	// The replica's queue begins at the first queue offset it holds.
	mmax := master.QueueMaxOffset("T", 0)
	require.Equal(t, mmax, replica.QueueMaxOffset("T", 0))
	min := replica.QueueMinOffset("T", 0)
	require.Greater(t, min, int64(0))
	g := replica.GetMessages("T", 0, 0, 32, 1<<20, nil)
	require.Equal(t, OffsetTooSmall, g.Status)
	require.Equal(t, min, g.NextBeginOffset)
	g = replica.GetMessages("T", 0, min, 32, 1<<20, nil)
	require.Equal(t, Found, g.Status)
	require.NoError(t, replica.Close())
	// And it survives a restart.
	replica = openStore(t, cfg)
	defer replica.Close()
	require.True(t, replica.Recovery().Clean)
	require.Equal(t, start, replica.MinOffset())
	require.Equal(t, min, replica.QueueMinOffset("T", 0))
	require.Equal(t, mmax, replica.QueueMaxOffset("T", 0))
}

func TestTruncate(t *testing.T) {
	fs := vfs.NewMem()
	cfg := testConfig(fs)
	s := openStore(t, cfg)
	var res []AppendResult
	for i := 0; i < 40; i++ {
		res = append(res, mustAppend(t, s, msg("T", int32(i%2), strings.Repeat("z", 300), "")))
	}
	waitDispatched(t, s)
	cut := res[25].WroteOffset
	require.ErrorIs(t, s.Truncate(cut+1), ErrBadOffset)
	require.ErrorIs(t, s.Truncate(s.MaxOffset()+10), ErrBadOffset)
	require.NoError(t, s.Truncate(cut))
	require.Equal(t, cut, s.MaxOffset())
	require.Equal(t, int64(13), s.QueueMaxOffset("T", 0))
	require.Equal(t, int64(12), s.QueueMaxOffset("T", 1))
	_, err := s.ReadRecord(cut)
	require.ErrorIs(t, err, ErrOffsetBeyondEnd)
	r := mustAppend(t, s, msg("T", 1, "new", ""))
	require.Equal(t, cut, r.WroteOffset)
	require.Equal(t, int64(12), r.QueueOffset)
	require.NoError(t, s.Close())
	s = openStore(t, cfg)
	defer s.Close()
	require.Equal(t, r.EndOffset, s.MaxOffset())
	require.Equal(t, int64(13), s.QueueMaxOffset("T", 1))
}

// A crash between the truncate intent and its completion replays the cut.
func TestTruncateCrashReplays(t *testing.T) {
	mem := vfs.NewMem()
	var sw vfs.Switch
	cfg := testConfig(vfs.NewErrorFS(mem, &sw))
	s := openStore(t, cfg)
	var res []AppendResult
	for i := 0; i < 30; i++ {
		res = append(res, mustAppend(t, s, msg("T", 0, strings.Repeat("q", 300), "")))
	}
	waitDispatched(t, s)
	require.NoError(t, recvErr(t, s.WaitFlush(s.MaxOffset(), time.Now().Add(5*time.Second))))
	cut := res[10].WroteOffset
	sw.Arm(vfs.OpRemove, vfs.EIO) // the cut fails after the intent is durable
	err := s.Truncate(cut)
	require.ErrorIs(t, err, ErrReadOnly)
	crashed := mem.CrashClone(1)
	s.Close()
	cfg2 := testConfig(crashed)
	s2 := openStore(t, cfg2)
	defer s2.Close()
	require.Equal(t, "truncate to "+itoa(cut), s2.Recovery().Intent)
	require.Equal(t, cut, s2.MaxOffset())
	require.Equal(t, int64(10), s2.QueueMaxOffset("T", 0))
	_, err = crashed.Stat("/store/intent")
	require.Error(t, err, "intent cleared")
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestResetAndReader(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	s := openStore(t, cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, s, msg("T", 0, bodyN(i), ""))
	}
	rd := s.RegisterReader("replica-1", 0)
	require.ErrorIs(t, s.Reset(100), ErrBadOffset)
	require.NoError(t, s.Reset(3*cfg.SegmentSize))
	select {
	case <-rd.Removed():
	default:
		t.Fatal("reader not told")
	}
	require.Equal(t, 3*cfg.SegmentSize, s.MinOffset())
	require.Equal(t, 3*cfg.SegmentSize, s.MaxOffset())
	require.Empty(t, s.Queues())
	r := mustAppend(t, s, msg("T", 0, "again", ""))
	require.Equal(t, 3*cfg.SegmentSize, r.WroteOffset)
	require.Equal(t, int64(0), r.QueueOffset)
	require.NoError(t, s.Close())
	s = openStore(t, cfg)
	defer s.Close()
	require.Equal(t, 3*cfg.SegmentSize, s.MinOffset())
	require.Equal(t, r.EndOffset, s.MaxOffset())
}

// A partial record at the tail (bytes of a record not all there yet) makes
// the dispatcher wait, not fail.
func TestDispatcherWaitsOnPartialTail(t *testing.T) {
	s := openStore(t, testConfig(vfs.NewMem()))
	defer s.Close()
	mustAppend(t, s, msg("T", 0, "first", ""))
	waitDispatched(t, s)
	rec := AppendRecord(nil, &Record{QueueID: 0, QueueOffset: 1, PhysicalOffset: s.MaxOffset(), Body: []byte("second"), BodyCRC: BodyCRC([]byte("second")), Topic: "T", StoreHost: s.cfg.StoreHost})
	start := s.MaxOffset()
	s.appendMu.Lock()
	require.NoError(t, s.writeLocked(start, rec[:40]))
	s.maxOffset.Store(start + 40)
	s.appendMu.Unlock()
	require.NoError(t, s.dispatchAvailable())
	require.Equal(t, start, s.DispatchedOffset(), "waits at the partial record")
	require.Nil(t, s.Err())
	s.appendMu.Lock()
	require.NoError(t, s.writeLocked(start+40, rec[40:]))
	s.maxOffset.Store(start + int64(len(rec)))
	s.appendMu.Unlock()
	require.NoError(t, s.dispatchAvailable())
	require.Equal(t, s.MaxOffset(), s.DispatchedOffset())
	require.Equal(t, int64(2), s.QueueMaxOffset("T", 0))
}

// noteQueueOffset keeps, per topic and queue, the last next offset of a batch (what a map of
// every record's update would hold), with one entry per run of recent queues and no string
// made for a queue it finds among the recent ones.
func TestNoteQueueOffsetMatchesEveryRecord(t *testing.T) {
	want := map[qkey]int64{}
	var upd []queueUpdate
	topics := [][]byte{[]byte("A"), []byte("BB"), []byte("%RETRY%g")}
	for i := 0; i < 5000; i++ {
		topic := topics[(i/7)%len(topics)]
		q := int32((i * 5) % 40) // 40 queues: more than the recent window
		next := int64(i + 1)
		want[qkey{string(topic), q}] = next
		upd = noteQueueOffset(upd, nil, topic, q, next)
	}
	got := map[qkey]int64{}
	for _, u := range upd {
		got[u.k] = u.q
	}
	require.Equal(t, want, got)

	few := []queueUpdate(nil)
	var names topicNames
	for i := 0; i < 1000; i++ {
		few = noteQueueOffset(few, &names, topics[0], int32(i%8), int64(i))
	}
	require.Len(t, few, 8, "8 queues in turn: one entry each")
	allocs := testing.AllocsPerRun(100, func() { few = noteQueueOffset(few, &names, topics[0], 3, 7) })
	require.Zero(t, allocs, "a recent queue is updated without a string")

	// The next batch (a fresh slice, as appendRaw starts each call) adds its queues with the
	// topic string names kept.
	allocs = testing.AllocsPerRun(100, func() {
		next := few[:0]
		for q := int32(0); q < 8; q++ {
			next = noteQueueOffset(next, &names, topics[0], q, 9)
		}
	})
	require.Zero(t, allocs, "a known topic's queues are added without a string")
	require.Equal(t, "A", names.get(topics[0]))
	for i := 0; i < 3*recentTopics; i++ {
		require.Equal(t, fmt.Sprintf("T%d", i), names.get([]byte(fmt.Sprintf("T%d", i))))
	}
	require.Len(t, names.names, recentTopics, "names keeps a bounded number of topics")
}

// A dispatch pass over more queues than its linear scan covers indexes its runs in a map;
// the scratch runs and map are reused by later passes, over many queues or few, and every
// queue gets its own records in order.
func TestDispatchReusesScratchAcrossPasses(t *testing.T) {
	s := openStore(t, testConfig(vfs.NewMem()))
	defer s.Close()
	want := map[int32][]string{}
	for round := 0; round < 4; round++ {
		queues := int32(20)
		if round%2 == 1 {
			queues = 3 // few queues: the linear scan, after a pass that used the map
		}
		var ms []*Message
		for i := 0; i < 2; i++ {
			for q := int32(0); q < queues; q++ {
				body := fmt.Sprintf("r%d-q%d-%d", round, q, i)
				ms = append(ms, msg("T", q, body, "tag"))
				want[q] = append(want[q], body)
			}
		}
		s.dispatchMu.Lock() // the pass below takes every record at once
		for _, m := range ms {
			mustAppend(t, s, m)
		}
		require.NoError(t, s.dispatchLocked())
		s.dispatchMu.Unlock()
		require.Equal(t, s.MaxOffset(), s.DispatchedOffset())
	}
	for q, bodies := range want {
		res := s.GetMessages("T", q, 0, 100, 1<<20, nil)
		got := make([]string, 0, len(res.Records))
		for _, r := range res.Records {
			got = append(got, bodyOf(t, r))
		}
		require.Equal(t, bodies, got, "queue %d", q)
	}
	require.Len(t, s.dbyCQ, 0, "the map is left empty for the next pass")
	for _, p := range s.dpend[:cap(s.dpend)] {
		require.Nil(t, p.cq, "no queue is held by the scratch runs")
	}
}

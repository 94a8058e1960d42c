package commitlog

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// queueBodies reads the whole of queue (topic, 0) from offset 0 and returns its bodies in order,
// failing on a queue offset that does not hold the record it points at.
func queueBodies(t *testing.T, s *Store, topic string) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		res := s.GetMessages(topic, 0, off, 32, 1<<20, nil)
		if len(res.Records) == 0 {
			return out
		}
		for _, rec := range res.Records {
			r, _, err := DecodeRecord(rec)
			require.NoError(t, err)
			require.Equal(t, off, r.QueueOffset, "queue offset %d holds the record of %d", off, r.QueueOffset)
			out = append(out, string(r.Body))
			off++
		}
		require.Equal(t, off, res.NextBeginOffset)
	}
}

func bodiesUpTo(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = bodyN(i)
	}
	return out
}

// The units of one-message dispatch passes gather in memory (Units written late): reads see
// them at once, the queue's file gets them in one write at the next checkpoint, or once
// cqPendFlush bytes have gathered, and a clean close leaves every one in the file.
func TestCQUnitsWrittenLate(t *testing.T) {
	mem := vfs.NewMem()
	efs, cqWrites := countingWrites(mem, "/consumequeue/")
	cfg := testConfig(efs)
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 1000
	cfg.CheckpointInterval = time.Hour // checkpoints only where the test writes them
	s := openStore(t, cfg)
	appendEach(t, s, "T", 0, 40)
	require.Zero(t, cqWrites.Load(), "queue writes during 40 one-message passes")
	require.Equal(t, bodiesUpTo(40), queueBodies(t, s, "T"))

	require.NoError(t, s.writeCheckpoint(true))
	require.EqualValues(t, 1, cqWrites.Load(), "the checkpoint writes what gathered, once")
	file := filepath.Join(cfg.Dir, "consumequeue", "T", "0", segName(0))
	b, err := mem.ReadFile(file)
	require.NoError(t, err)
	require.Len(t, b, 40*CQUnitSize)
	require.Equal(t, bodiesUpTo(40), queueBodies(t, s, "T"))

	// Past cqPendFlush bytes the units leave without a checkpoint.
	n := 40 + 2*cqPendFlush/CQUnitSize
	appendEach(t, s, "T", 40, n)
	require.EqualValues(t, 3, cqWrites.Load())
	require.Equal(t, bodiesUpTo(n), queueBodies(t, s, "T"))
	require.NoError(t, s.Close())

	s2 := openStore(t, cfg)
	require.True(t, s2.Recovery().Clean)
	require.Equal(t, bodiesUpTo(n), queueBodies(t, s2, "T"))
	require.NoError(t, s2.Close())
}

// A queue's file reaching its end takes the units pending for it, and the next file starts
// with its own.
func TestCQUnitsWrittenLateAcrossFiles(t *testing.T) {
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 7
	cfg.CheckpointInterval = time.Hour
	s := openStore(t, cfg)
	appendEach(t, s, "T", 0, 30)
	for f := int64(0); f < 28; f += 7 {
		b, err := mem.ReadFile(filepath.Join(cfg.Dir, "consumequeue", "T", "0", segName(f*CQUnitSize)))
		require.NoError(t, err)
		require.Len(t, b, 7*CQUnitSize, "file %d", f)
	}
	require.Equal(t, bodiesUpTo(30), queueBodies(t, s, "T"))
	require.NoError(t, s.Close())
}

// A cut of the log (Truncate) that falls in the pending units drops the ones above it; the
// queue goes on from the cut, with no offset holding two records.
func TestCQUnitsWrittenLateCut(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 1000
	cfg.CheckpointInterval = time.Hour
	s := openStore(t, cfg)
	res := appendEach(t, s, "T", 0, 20)
	require.NoError(t, s.writeCheckpoint(true)) // 0..19 in the file
	res = append(res, appendEach(t, s, "T", 20, 30)...)
	require.NoError(t, s.Truncate(res[25].WroteOffset)) // in the pending units
	require.Equal(t, bodiesUpTo(25), queueBodies(t, s, "T"))
	require.NoError(t, s.Truncate(res[12].WroteOffset)) // in the file
	require.Equal(t, bodiesUpTo(12), queueBodies(t, s, "T"))
	appendEach(t, s, "T", 12, 40)
	require.Equal(t, bodiesUpTo(40), queueBodies(t, s, "T"))
	require.NoError(t, s.Close())
	s2 := openStore(t, cfg)
	require.Equal(t, bodiesUpTo(40), queueBodies(t, s2, "T"))
	require.NoError(t, s2.Close())
}

// What a kill -9 leaves (every byte written, none of the units still pending) opens with every
// record in its queue, once: the units above the last checkpoint are dispatched again.
func TestCQUnitsWrittenLateSurviveKill(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "store")
	cfg.FS = vfs.Default
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 1000
	cfg.CheckpointInterval = time.Hour
	s := openStore(t, cfg)
	appendEach(t, s, "T", 0, 20)
	require.NoError(t, s.writeCheckpoint(true))
	appendEach(t, s, "T", 20, 45)
	require.Equal(t, bodiesUpTo(45), queueBodies(t, s, "T"))
	image := filepath.Join(t.TempDir(), "image")
	require.NoError(t, copyTree(cfg.Dir, image))
	require.NoError(t, s.Close())

	cfg.Dir = image
	s2 := openStore(t, cfg)
	require.False(t, s2.Recovery().Clean)
	require.Equal(t, bodiesUpTo(45), queueBodies(t, s2, "T"))
	min, max := s2.getCQ("T", 0).bounds()
	require.Equal(t, [2]int64{0, 45}, [2]int64{min, max})
	require.NoError(t, s2.Close())
}

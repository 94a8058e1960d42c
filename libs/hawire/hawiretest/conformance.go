package hawiretest

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/rmqha/rmqha/libs/hawire"
)

// LogFactory returns a new, empty log starting at offset 0. Its segment size
// must be small (64 KiB to 1 MiB) so the suites cross segment ends quickly.
type LogFactory func(t *testing.T) hawire.Log

// RunLogConformance checks what replication relies on from a Log. It uses
// only the hawire.Log methods, so the real store runs the same checks as
// the in-memory twin.
func RunLogConformance(t *testing.T, newLog LogFactory) {
	t.Run("EmptyLog", func(t *testing.T) {
		l := newLog(t)
		if l.MinOffset() != 0 || l.MaxOffset() != 0 {
			t.Fatalf("new log spans [%d,%d)", l.MinOffset(), l.MaxOffset())
		}
		// At MaxOffset a log returns nothing; an error is tolerated
		// (replication never reads there).
		if b, _ := l.ReadRaw(0, 1<<20); len(b) != 0 {
			t.Fatalf("ReadRaw at max returned %d bytes", len(b))
		}
		if l.SegmentSize() <= 0 {
			t.Fatal("segment size")
		}
	})
	t.Run("AppendRawReadRawRoundTrip", func(t *testing.T) {
		l := newLog(t)
		var notified atomic.Int64
		l.OnAppend(func(max int64) { notified.Store(max) })
		want := fill(t, l, 3*l.SegmentSize()+l.SegmentSize()/3, 1)
		if notified.Load() != l.MaxOffset() {
			t.Fatalf("OnAppend saw %d, max %d", notified.Load(), l.MaxOffset())
		}
		got, err := ReadAll(l)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatal("ReadRaw does not return what AppendRaw wrote")
		}
		if l.FlushedOffset() > l.MaxOffset() {
			t.Fatal("flushed beyond max")
		}
	})
	t.Run("ReadRawWholeRecordsWithinSegment", func(t *testing.T) {
		l := newLog(t)
		fill(t, l, 2*l.SegmentSize()+100, 2)
		seg := l.SegmentSize()
		for off := int64(0); off < l.MaxOffset(); {
			b, err := l.ReadRaw(off, 3000)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 {
				b, err = l.ReadRaw(off, int(seg))
				if err != nil || len(b) == 0 {
					t.Fatalf("nothing readable at %d: %v", off, err)
				}
			} else if len(b) > 3000 && int(binary.BigEndian.Uint32(b)) != len(b) {
				// Beyond the limit only a single record larger than it is allowed.
				t.Fatalf("ReadRaw returned %d bytes for a 3000-byte limit", len(b))
			}
			if err := hawire.CheckRecords(off, b, seg); err != nil {
				t.Fatalf("ReadRaw at %d: %v", off, err)
			}
			off += int64(len(b))
		}
	})
	t.Run("AppendRawRejectsWrongOffsetAndPartialRecords", func(t *testing.T) {
		l := newLog(t)
		fill(t, l, 1000, 3)
		max := l.MaxOffset()
		if err := l.AppendRaw(max+8, RecordAt(200, 1, max+8)); err == nil {
			t.Fatal("append past the end accepted")
		}
		if err := l.AppendRaw(max-100, RecordAt(200, 1, max-100)); err == nil {
			t.Fatal("append before the end accepted")
		}
		if err := l.AppendRaw(max, RecordAt(200, 1, max)[:50]); err == nil {
			t.Fatal("partial record accepted")
		}
		if l.MaxOffset() != max {
			t.Fatal("rejected append moved MaxOffset")
		}
	})
	t.Run("EmptyLogAcceptsAlignedOffset", func(t *testing.T) {
		l := newLog(t)
		seg := l.SegmentSize()
		if err := l.AppendRaw(3*seg, RecordAt(200, 9, 3*seg)); err != nil {
			t.Fatalf("empty log refused an aligned offset: %v", err)
		}
		if l.MinOffset() != 3*seg || l.MaxOffset() != 3*seg+200 {
			t.Fatalf("log spans [%d,%d)", l.MinOffset(), l.MaxOffset())
		}
	})
	t.Run("TruncateAndReset", func(t *testing.T) {
		l := newLog(t)
		seg := l.SegmentSize()
		want := fill(t, l, 2*seg+seg/2, 4)
		cut := recordBoundaryNear(t, want, seg+seg/4)
		if err := l.Truncate(cut); err != nil {
			t.Fatal(err)
		}
		if l.MaxOffset() != cut {
			t.Fatalf("max %d after truncate to %d", l.MaxOffset(), cut)
		}
		got, err := ReadAll(l)
		if err != nil || !bytes.Equal(got, want[:cut]) {
			t.Fatalf("content after truncate differs: %v", err)
		}
		if _, err := AppendRecord(l, Record(300, 77)); err != nil {
			t.Fatalf("append after truncate: %v", err)
		}
		if err := l.Reset(4 * seg); err != nil {
			t.Fatal(err)
		}
		if l.MinOffset() != 4*seg || l.MaxOffset() != 4*seg {
			t.Fatalf("after reset: [%d,%d)", l.MinOffset(), l.MaxOffset())
		}
		if err := l.AppendRaw(4*seg, RecordAt(200, 5, 4*seg)); err != nil {
			t.Fatal(err)
		}
	})
}

// fill appends records of mixed sizes until the log reaches at least n
// bytes and returns the log's content.
func fill(t *testing.T, l hawire.Log, n int64, seed uint64) []byte {
	t.Helper()
	seg := l.SegmentSize()
	var seq uint64
	for _, sz := range Sizes(1<<20, 64, int(min(seg/4, 16<<10)), seed) {
		if l.MaxOffset() >= n {
			break
		}
		seq++
		if _, err := AppendRecord(l, Record(sz, seed<<32|seq)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := ReadAll(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordBoundaryNear walks the records in b (which starts at 0) and returns
// the first boundary at or after target.
func recordBoundaryNear(t *testing.T, b []byte, target int64) int64 {
	var off int64
	for off < target && off < int64(len(b)) {
		off += int64(binary.BigEndian.Uint32(b[off:]))
	}
	return off
}

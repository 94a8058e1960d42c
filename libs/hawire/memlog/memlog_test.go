package memlog_test

import (
	"testing"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

func TestConformance(t *testing.T) {
	hawiretest.RunLogConformance(t, func(t *testing.T) hawire.Log { return memlog.New(64 << 10) })
}

func TestAppendPadsSegmentEnd(t *testing.T) {
	l := memlog.New(1024)
	var offs []int64
	for i := 0; i < 10; i++ {
		off, err := l.Append(hawiretest.Record(300, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	// 3 records fit per 1 KiB segment (900 + 8 ≤ 1024, the 4th would leave < 8).
	if offs[3] != 1024 || offs[6] != 2048 {
		t.Fatalf("offsets %v", offs)
	}
	b, err := l.ReadRaw(600, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 424 {
		t.Fatalf("read to the segment end: %d bytes", len(b))
	}
	if err := hawire.CheckRecords(600, b, 1024); err != nil {
		t.Fatal(err)
	}
	if min := l.DeleteBefore(2048); min != 2048 {
		t.Fatalf("min after delete %d", min)
	}
	if _, err := l.ReadRaw(0, 100); err == nil {
		t.Fatal("read below min accepted")
	}
}

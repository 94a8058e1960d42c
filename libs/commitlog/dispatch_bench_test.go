package commitlog

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// rawBatchFeed produces batches of replicated records, as an HA master sends them: 1 KiB
// bodies spread over 8 queues of one topic, a UNIQ_KEY each, BLANK padding at a segment end.
// It encodes one template batch and patches each record's queue and physical offsets, so
// that the benchmark times the store, not the encoder.
type rawBatchFeed struct {
	tmpl   []byte
	starts []int // record offsets in tmpl
	qoff   [8]int64
	buf    []byte
	segSz  int64
}

func newRawBatchFeed(batch int, segSize int64) *rawBatchFeed {
	f := &rawBatchFeed{segSz: segSize}
	body := make([]byte, 1024)
	for i := 0; i < batch; i++ {
		f.starts = append(f.starts, len(f.tmpl))
		m := msg("PerfTopic", int32(i%8), string(body), "")
		m.Properties = fmt.Sprintf("UNIQ_KEY\x01AC11000100002A9F00000000%08X\x02WAIT\x01true\x02", i)
		f.tmpl = AppendRecord(f.tmpl, &Record{BodyCRC: BodyCRC(m.Body), QueueID: m.QueueID, BornHost: m.BornHost,
			BornTimestamp: m.BornTimestamp, StoreTimestamp: m.BornTimestamp, Body: m.Body, Topic: m.Topic, Properties: m.Properties})
	}
	return f
}

// next returns the bytes that go at pos and how many messages they hold.
func (f *rawBatchFeed) next(pos int64) ([]byte, int) {
	segEnd := (pos/f.segSz + 1) * f.segSz
	if pos+int64(len(f.tmpl))+BlankMinLength > segEnd {
		f.buf = AppendBlank(f.buf[:0], int(segEnd-pos))
		return f.buf, 0
	}
	f.buf = append(f.buf[:0], f.tmpl...)
	for i, st := range f.starts {
		q := i % 8
		be := f.buf[st:]
		putBE64(be[20:], uint64(f.qoff[q]))
		putBE64(be[28:], uint64(pos+int64(st)))
		f.qoff[q]++
	}
	return f.buf, len(f.starts)
}

func putBE64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// BenchmarkDispatch measures a slave's per-message cost of taking replicated batches of 32
// records: AppendRawVerified then DispatchRaw from memory (replica), and AppendRaw then the
// dispatcher reading the records back from the file as it does on a master (readback), with
// and without the message index. Each reports ns, process CPU ns (user and system: the disk's
// write-back pace, which ns/op follows on a slow disk, does not count) and allocations per
// message, and its CPU time against the same run's writes of the same batches to a plain file
// (x_pwrite, what storing the bytes costs at the least).
func BenchmarkDispatch(b *testing.B) {
	for _, index := range []bool{false, true} {
		for _, mode := range []string{"replica", "readback"} {
			b.Run(fmt.Sprintf("%s/index=%v", mode, index), func(b *testing.B) {
				base := pwriteBench(b, 100000)
				b.ResetTimer()
				per := dispatchBench(b, mode, index, b.N)
				b.StopTimer()
				b.ReportMetric(per, "cpu_ns/msg")
				b.ReportMetric(per/base, "x_pwrite")
			})
		}
	}
}

// dispatchBench takes n messages in mode and returns the process CPU nanoseconds per message;
// outside "append" it also reports allocations per message.
func dispatchBench(b *testing.B, mode string, index bool, n int) float64 {
	s := openBenchStore(b, index)
	defer s.Close()
	f := newRawBatchFeed(32, s.cfg.SegmentSize)
	var err error
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := procCPUTime()
	for done := 0; done < n; {
		pos := s.MaxOffset()
		data, k := f.next(pos)
		switch mode {
		case "replica":
			err = s.AppendRawVerified(pos, data)
			s.DispatchRaw(pos, data)
		case "readback":
			if err = s.AppendRaw(pos, data); err == nil {
				err = s.dispatchAvailable()
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		done += k
	}
	require.NoError(b, s.WaitDispatched(s.MaxOffset(), time.Now().Add(time.Minute)))
	cpu := procCPUTime() - cpu0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/msg")
	return float64(cpu.Nanoseconds()) / float64(n)
}

// pwriteBench writes the batches of n messages to plain 64 MiB files with one pwrite each and
// returns the process CPU nanoseconds per message.
func pwriteBench(b *testing.B, n int) float64 {
	const segSize = 64 << 20
	dir := b.TempDir()
	f := newRawBatchFeed(32, segSize)
	var file *os.File
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	cpu0 := procCPUTime()
	pos := int64(0)
	for done := 0; done < n; {
		data, k := f.next(pos)
		if pos%segSize == 0 {
			if file != nil {
				file.Close()
			}
			var err error
			file, err = os.Create(filepath.Join(dir, segName(pos)))
			require.NoError(b, err)
		}
		_, err := file.WriteAt(data, pos%segSize)
		require.NoError(b, err)
		pos += int64(len(data))
		done += k
	}
	return float64((procCPUTime() - cpu0).Nanoseconds()) / float64(n)
}

// procCPUTime is the user and system CPU time of this process so far.
func procCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseMeta measures parseMeta on a 1 KiB V1 record against the same run's
// parseMetaDecoder (x_decoder).
func BenchmarkParseMeta(b *testing.B) {
	f := newRawBatchFeed(1, 64<<20)
	rec, _ := f.next(0)
	var sink int64
	const n = 1 << 20
	start := time.Now()
	for i := 0; i < n; i++ {
		m, _ := parseMetaDecoder(rec)
		sink += m.queueOffset
	}
	base := time.Since(start).Seconds() / n
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		m, _ := parseMeta(rec)
		sink += m.queueOffset
	}
	per := time.Since(start).Seconds() / float64(b.N)
	b.StopTimer()
	b.ReportMetric(per/base, "x_decoder")
	if sink < 0 {
		b.Fatal(sink)
	}
}

// BenchmarkLookupProperty looks up the five properties a broker's dispatcher reads of every
// record (UNIQ_KEY, KEYS, TAGS, DELAY_SOURCE, TIMER_DEQUEUE_MS) against the same run's
// lookups by splitting every pair (x_split).
func BenchmarkLookupProperty(b *testing.B) {
	props := []byte("UNIQ_KEY\x01AC11000100002A9F0000000000000001\x02WAIT\x01true\x02TAGS\x01TagA\x02CLUSTER\x01DefaultCluster\x02")
	names := []string{PropertyUniqKey, PropertyKeys, PropertyTags, "DELAY_SOURCE", "TIMER_DEQUEUE_MS"}
	found := 0
	const n = 1 << 19
	start := time.Now()
	for i := 0; i < n; i++ {
		for _, name := range names {
			if _, ok := lookupPropertySplit(props, name); ok {
				found++
			}
		}
	}
	base := time.Since(start).Seconds() / n
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		for _, name := range names {
			if _, ok := lookupPropertyBytes(props, name); ok {
				found++
			}
		}
	}
	per := time.Since(start).Seconds() / float64(b.N)
	b.StopTimer()
	b.ReportMetric(per/base, "x_split")
	if found == 0 {
		b.Fatal("nothing found")
	}
}

// openBenchStore opens a store on the OS file system (64 MiB segments) for the dispatch
// benchmarks, with or without the message index.
func openBenchStore(b *testing.B, index bool) *Store {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.FS = vfs.Default
	cfg.SegmentSize = 64 << 20
	cfg.MessageIndexEnable = index
	s, err := Open(cfg)
	require.NoError(b, err)
	return s
}

// Package memlog is an in-memory CommitLog that satisfies hawire.Log. It
// lays records out like the real store: a record never spans two segments;
// when one does not fit (with 8 bytes to spare) the rest of the segment
// becomes a BLANK record (TOTALSIZE = rest, MAGIC = BLANK, zero padding).
// It exists for tests and benchmarks; hawiretest.RunLogConformance runs the
// same checks against it and against the real store.
package memlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/rmqha/rmqha/libs/hawire"
)

var (
	// ErrOffset is returned for an offset outside the log, not at its end
	// (AppendRaw), not segment-aligned (Reset, empty-log AppendRaw), or not on a record boundary (ReadRaw).
	ErrOffset = errors.New("memlog: bad offset")
	// ErrRecord is returned for data that is not whole records, or crosses a segment end.
	ErrRecord = errors.New("memlog: bad record data")
)

type segment struct {
	start int64
	data  []byte // written bytes
}

// Log is an in-memory CommitLog.
type Log struct {
	mu        sync.Mutex
	segSize   int64
	segs      []*segment
	min, max  int64
	flushed   int64
	autoFlush bool
	cbs       []func(int64)
	recycle   bool
	free      [][]byte
}

// RecycleSegments makes Truncate and Reset keep dropped segment memory for
// reuse, so a benchmark that wipes and refills a log measures the code, not
// the first touch of fresh memory. With it on, slices returned by ReadRaw
// before a Truncate or Reset may change afterwards.
func (l *Log) RecycleSegments(on bool) {
	l.mu.Lock()
	l.recycle = on
	l.mu.Unlock()
}

func (l *Log) release(segs []*segment) {
	if !l.recycle {
		return
	}
	for _, s := range segs {
		if int64(cap(s.data)) == l.segSize {
			l.free = append(l.free, s.data[:0])
		}
	}
}

// New returns an empty log starting at 0 whose FlushedOffset follows MaxOffset.
func New(segmentSize int64) *Log {
	if segmentSize < 64 {
		panic("memlog: segment size below 64 bytes") // programming error, not reachable from data
	}
	return &Log{segSize: segmentSize, autoFlush: true}
}

// SetAutoFlush chooses whether FlushedOffset follows MaxOffset (true) or
// only moves on Flush (false).
func (l *Log) SetAutoFlush(on bool) {
	l.mu.Lock()
	l.autoFlush = on
	l.mu.Unlock()
}

// Flush moves FlushedOffset to MaxOffset.
func (l *Log) Flush() {
	l.mu.Lock()
	l.flushed = l.max
	l.mu.Unlock()
}

// MinOffset implements hawire.Log.
func (l *Log) MinOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.min }

// MaxOffset implements hawire.Log.
func (l *Log) MaxOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.max }

// FlushedOffset implements hawire.Log.
func (l *Log) FlushedOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.autoFlush {
		return l.max
	}
	return l.flushed
}

// SegmentSize implements hawire.Log.
func (l *Log) SegmentSize() int64 { return l.segSize }

// OnAppend implements hawire.Log.
func (l *Log) OnAppend(fn func(maxOffset int64)) {
	l.mu.Lock()
	l.cbs = append(l.cbs, fn)
	l.mu.Unlock()
}

func (l *Log) notify(max int64) {
	l.mu.Lock()
	cbs := l.cbs
	l.mu.Unlock()
	for _, fn := range cbs {
		fn(max)
	}
}

// tail returns the segment that receives the next byte, creating it.
func (l *Log) tail() *segment {
	if n := len(l.segs); n > 0 {
		s := l.segs[n-1]
		if s.start+int64(len(s.data)) == l.max && int64(len(s.data)) < l.segSize {
			return s
		}
	}
	// Full capacity up front: growing by doubling would copy every segment
	// several times over.
	s := &segment{start: l.max}
	if n := len(l.free); n > 0 {
		s.data, l.free = l.free[n-1], l.free[:n-1]
	} else {
		s.data = make([]byte, 0, l.segSize)
	}
	l.segs = append(l.segs, s)
	return s
}

// Append writes one whole record (TOTALSIZE must equal len(record)), sets
// its PHYSICALOFFSET field (V1/V2 records) and returns its offset, padding the current segment with a BLANK first when
// the record does not fit.
func (l *Log) Append(record []byte) (int64, error) {
	if len(record) < 8 || int(int32(binary.BigEndian.Uint32(record))) != len(record) || int64(len(record))+8 > l.segSize {
		return 0, fmt.Errorf("%w: record of %d bytes", ErrRecord, len(record))
	}
	l.mu.Lock()
	s := l.tail()
	remaining := s.start + l.segSize - l.max
	if int64(len(record))+8 > remaining {
		pad := make([]byte, remaining)
		binary.BigEndian.PutUint32(pad, uint32(remaining))
		binary.BigEndian.PutUint32(pad[4:], hawire.MagicBlank)
		s.data = append(s.data, pad...)
		l.max += remaining
		s = l.tail()
	}
	off := l.max
	s.data = append(s.data, record...)
	if m := binary.BigEndian.Uint32(record[4:]); len(record) >= 36 && (m == hawire.MagicV1 || m == hawire.MagicV2) {
		// PHYSICALOFFSET: a record states where it is stored, as the real store writes it.
		binary.BigEndian.PutUint64(s.data[off-s.start+28:], uint64(off))
	}
	l.max += int64(len(record))
	max := l.max
	l.mu.Unlock()
	l.notify(max)
	return off, nil
}

func (l *Log) find(offset int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].start > offset }) - 1
	if i < 0 {
		return nil
	}
	return l.segs[i]
}

// ReadRaw implements hawire.Log: whole records from offset, at most maxBytes
// (nothing when the first record is larger), never crossing a segment end.
// The result aliases the log's memory and must not be modified: bytes below
// a segment's written length are never rewritten (Truncate copies the kept
// part to a new array), so it stays valid.
func (l *Log) ReadRaw(offset int64, maxBytes int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset == l.max {
		return nil, nil
	}
	if offset < l.min || offset > l.max {
		return nil, fmt.Errorf("%w: read at %d outside [%d,%d]", ErrOffset, offset, l.min, l.max)
	}
	s := l.find(offset)
	if s == nil || offset-s.start > int64(len(s.data)) {
		return nil, fmt.Errorf("%w: read at %d", ErrOffset, offset)
	}
	b := s.data[offset-s.start:]
	n := 0
	for n+8 <= len(b) {
		size := int(int32(binary.BigEndian.Uint32(b[n:])))
		magic := binary.BigEndian.Uint32(b[n+4:])
		if size < 8 || n+size > len(b) || (magic != hawire.MagicV1 && magic != hawire.MagicV2 && magic != hawire.MagicBlank) {
			if n == 0 {
				return nil, fmt.Errorf("%w: no record at %d", ErrOffset, offset)
			}
			break
		}
		if n+size > maxBytes {
			break
		}
		n += size
	}
	return b[:n:n], nil
}

// AppendRaw implements hawire.Log. data must be whole records that do not
// cross a segment end.
func (l *Log) AppendRaw(offset int64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if err := hawire.CheckRecords(offset, data, l.segSize); err != nil {
		return fmt.Errorf("%w: %v", ErrRecord, err)
	}
	l.mu.Lock()
	if offset != l.max {
		if l.min != l.max || offset%l.segSize != 0 || offset < 0 {
			l.mu.Unlock()
			return fmt.Errorf("%w: append at %d, log ends at %d", ErrOffset, offset, l.max)
		}
		l.segs, l.min, l.max, l.flushed = nil, offset, offset, offset
	}
	s := l.tail()
	s.data = append(s.data, data...)
	l.max += int64(len(data))
	max := l.max
	l.mu.Unlock()
	l.notify(max)
	return nil
}

// Truncate implements hawire.Log.
func (l *Log) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.min || offset > l.max {
		return fmt.Errorf("%w: truncate at %d outside [%d,%d]", ErrOffset, offset, l.min, l.max)
	}
	i := len(l.segs)
	for i > 0 && l.segs[i-1].start >= offset {
		i--
	}
	l.release(l.segs[i:])
	l.segs = l.segs[:i]
	if i > 0 {
		s := l.segs[i-1]
		s.data = append([]byte(nil), s.data[:min(int64(len(s.data)), offset-s.start)]...)
	}
	l.max = offset
	l.flushed = min(l.flushed, offset)
	return nil
}

// Reset implements hawire.Log.
func (l *Log) Reset(startOffset int64) error {
	if startOffset < 0 || startOffset%l.segSize != 0 {
		return fmt.Errorf("%w: reset at unaligned %d", ErrOffset, startOffset)
	}
	l.mu.Lock()
	l.release(l.segs)
	l.segs, l.min, l.max, l.flushed = nil, startOffset, startOffset, startOffset
	l.mu.Unlock()
	return nil
}

// DeleteBefore drops whole segments that end at or before offset, keeping
// the segment that holds MaxOffset, like retention in the real store. It
// returns the new MinOffset.
func (l *Log) DeleteBefore(offset int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.segs) > 1 && l.segs[0].start+l.segSize <= offset {
		l.segs = l.segs[1:]
	}
	if len(l.segs) > 0 {
		l.min = l.segs[0].start
	}
	return l.min
}

// Bytes returns a copy of the log's bytes in [from, to).
func (l *Log) Bytes(from, to int64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, s := range l.segs {
		lo, hi := max(from, s.start), min(to, s.start+int64(len(s.data)))
		if lo < hi {
			out = append(out, s.data[lo-s.start:hi-s.start]...)
		}
	}
	return out
}

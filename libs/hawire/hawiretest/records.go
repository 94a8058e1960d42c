// Package hawiretest holds reusable tests and helpers for hawire: the Log
// conformance suite, the replication scenarios (both run against any Log, so
// the broker can run them against the real store), record builders, and a
// TCP fault proxy.
package hawiretest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/rmqha/rmqha/libs/hawire"
)

// Record builds a V1-framed record of size bytes (≥ 16) whose content is
// derived from seq, so two logs holding the same records are byte-identical.
func Record(size int, seq uint64) []byte {
	if size < 16 {
		size = 16
	}
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(size))
	binary.BigEndian.PutUint32(b[4:], hawire.MagicV1)
	binary.BigEndian.PutUint64(b[8:], seq)
	x := seq*0x9E3779B97F4A7C15 + 1
	for i := 16; i < size; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// Sizes returns n record sizes in [min, max] from a fixed seed.
func Sizes(n, min, max int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 42))
	out := make([]int, n)
	for i := range out {
		out[i] = min + r.IntN(max-min+1)
	}
	return out
}

// AppendRecord writes one record at the log's end through AppendRaw,
// padding the segment with a BLANK record first when the record does not
// fit with 8 bytes to spare, as the real store does. Callers serialise it.
// It returns the record's offset.
func AppendRecord(l hawire.Log, rec []byte) (int64, error) {
	seg := l.SegmentSize()
	if int64(len(rec))+8 > seg {
		return 0, fmt.Errorf("record of %d bytes does not fit a %d-byte segment", len(rec), seg)
	}
	off := l.MaxOffset()
	remaining := seg - off%seg
	if int64(len(rec))+8 > remaining {
		pad := make([]byte, remaining)
		binary.BigEndian.PutUint32(pad, uint32(remaining))
		binary.BigEndian.PutUint32(pad[4:], hawire.MagicBlank)
		if err := l.AppendRaw(off, pad); err != nil {
			return 0, err
		}
		off += remaining
	}
	return off, l.AppendRaw(off, rec)
}

// ReadAll returns the log's bytes from MinOffset to MaxOffset, read with
// ReadRaw in chunks.
func ReadAll(l hawire.Log) ([]byte, error) {
	return ReadRange(l, l.MinOffset(), l.MaxOffset())
}

// ReadRange returns the bytes in [from, to) read with ReadRaw; from must be a record boundary.
func ReadRange(l hawire.Log, from, to int64) ([]byte, error) {
	var out []byte
	for off := from; off < to; {
		b, err := l.ReadRaw(off, 1<<20)
		if err == nil && len(b) == 0 {
			b, err = l.ReadRaw(off, hawire.MaxDataFrame)
		}
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("ReadRaw at %d returned nothing before %d", off, to)
		}
		out = append(out, b...)
		off += int64(len(b))
	}
	return out, nil
}

// Package hawiretest holds reusable tests and helpers for hawire: the Log
// conformance suite, the replication scenarios (both run against any Log, so
// the broker can run them against the real store), record builders, and a
// TCP fault proxy.
package hawiretest

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"

	"github.com/rmqha/rmqha/libs/hawire"
)

// Layout of the records built here: RocketMQ's V1 CommitLog record with IPv4
// hosts (see the protocol notes, §4.1), topic RecordTopic, no properties.
const (
	// RecordTopic is the topic of generated records.
	RecordTopic = "HaTest"
	// MinRecordSize is the smallest record Record builds (empty body).
	MinRecordSize = 91 + len(RecordTopic)
	// PhysicalOffsetPos is where a record stores its own CommitLog offset.
	PhysicalOffsetPos = 28
	// sysFlagTxPrepared marks a prepared transactional message: a store keeps
	// it in the CommitLog but builds no consume-queue entry for it, so
	// generated records need no consecutive queue offsets.
	sysFlagTxPrepared = 0x4
)

// Record builds a valid V1 CommitLog record of size bytes (at least
// MinRecordSize) whose body is derived from seq, so two logs holding the
// same records are byte-identical. Its physical offset field is 0; use
// RecordAt or AppendRecord to place it.
func Record(size int, seq uint64) []byte { return RecordAt(size, seq, 0) }

// RecordAt is Record with its physical offset field set to offset.
func RecordAt(size int, seq uint64, offset int64) []byte {
	size = max(size, MinRecordSize)
	bodyLen := size - MinRecordSize
	b := make([]byte, 0, size)
	be32 := func(v uint32) { b = binary.BigEndian.AppendUint32(b, v) }
	be64 := func(v uint64) { b = binary.BigEndian.AppendUint64(b, v) }
	body := make([]byte, bodyLen)
	x := seq*0x9E3779B97F4A7C15 + 1
	for i := range body {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		body[i] = byte(x)
	}
	be32(uint32(size))
	be32(hawire.MagicV1)
	be32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) // BODYCRC
	be32(0)                                     // QUEUEID
	be32(0)                                     // FLAG
	be64(0)                                     // QUEUEOFFSET (0 for prepared messages)
	be64(uint64(offset))                        // PHYSICALOFFSET
	be32(sysFlagTxPrepared)                     // SYSFLAG
	be64(1_700_000_000_000 + seq)               // BORNTIMESTAMP
	b = append(b, 127, 0, 0, 1)                 // BORNHOST
	be32(40000)
	be64(1_700_000_000_000 + seq) // STORETIMESTAMP
	b = append(b, 127, 0, 0, 1)   // STOREHOST
	be32(10911)
	be32(0) // RECONSUMETIMES
	be64(0) // PREPARED TRANSACTION OFFSET
	be32(uint32(bodyLen))
	b = append(b, body...)
	b = append(b, byte(len(RecordTopic)))
	b = append(b, RecordTopic...)
	b = binary.BigEndian.AppendUint16(b, 0) // no properties
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

// AppendRecord writes one record at the log's end through AppendRaw, with
// its physical offset field set to where it lands, padding the segment with a BLANK record first when the record does not
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
	placed := append([]byte(nil), rec...)
	if len(placed) >= PhysicalOffsetPos+8 {
		binary.BigEndian.PutUint64(placed[PhysicalOffsetPos:], uint64(off))
	}
	return off, l.AppendRaw(off, placed)
}

// ReadAll returns the log's bytes from MinOffset to MaxOffset, read with
// ReadRaw in chunks.
func ReadAll(l hawire.Log) ([]byte, error) {
	return ReadRange(l, l.MinOffset(), l.MaxOffset())
}

// ReadRange returns the bytes in [from, to) read with ReadRaw; from must be
// a record boundary.
func ReadRange(l hawire.Log, from, to int64) ([]byte, error) {
	var out []byte
	for off := from; off < to; {
		b, err := l.ReadRaw(off, int(min(to-off, 1<<20)))
		if err == nil && len(b) == 0 {
			b, err = l.ReadRaw(off, hawire.MaxDataFrame)
		}
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("ReadRaw at %d returned nothing before %d", off, to)
		}
		if int64(len(b)) > to-off {
			b = b[:to-off]
		}
		out = append(out, b...)
		off += int64(len(b))
	}
	return out, nil
}

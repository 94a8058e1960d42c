package timer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// # Index entry (one pending timer), 32 bytes, big endian
//
//	 0        8        16       24   28   32
//	+--------+--------+--------+----+----+
//	|  slot  | queue  |  phys  |size|crc |
//	|  (ms)  | offset | offset |    |    |
//	+--------+--------+--------+----+----+
//
//	slot          int64  the slot (ms, a multiple of timerPrecisionMs) the timer fires
//	                     in: TIMER_OUT_MS, or the slot being delivered when the record was
//	                     indexed after its slot had passed (late)
//	queue offset  int64  the record's offset in rmq_sys_wheel_timer queue 0
//	phys offset   int64  the record's CommitLog offset (diagnostics; reads go by queue offset)
//	size          uint32 bits 0..30: the record's size in bytes; bit 31 (markerBit) set:
//	                     the record is a delete marker (TIMER_DEL_UNIQKEY), which cancels
//	                     timers of its slot and is never delivered itself
//	crc           uint32 CRC-32 (IEEE) of bytes 0..27
//
// Index files hold entries back to back; a torn tail (a partial entry) is cut when the file
// is next opened for appending, and an entry whose CRC does not match is skipped.
const EntrySize = 32

// markerBit flags a delete marker in the size field (a record is far below 2 GiB).
const markerBit = 1 << 31

// Entry is one pending timer in the index.
type Entry struct {
	Slot        int64
	QueueOffset int64
	PhysOffset  int64
	Size        int32
	// Marker is set for a delete marker: a timer record carrying TIMER_DEL_UNIQKEY.
	Marker bool
}

// AppendEntry appends the 32-byte encoding of e to dst.
func AppendEntry(dst []byte, e Entry) []byte {
	var b [EntrySize]byte
	binary.BigEndian.PutUint64(b[0:], uint64(e.Slot))
	binary.BigEndian.PutUint64(b[8:], uint64(e.QueueOffset))
	binary.BigEndian.PutUint64(b[16:], uint64(e.PhysOffset))
	size := uint32(e.Size) &^ markerBit
	if e.Marker {
		size |= markerBit
	}
	binary.BigEndian.PutUint32(b[24:], size)
	binary.BigEndian.PutUint32(b[28:], crc32.ChecksumIEEE(b[:28]))
	return append(dst, b[:]...)
}

// DecodeEntry decodes one entry from the start of b.
func DecodeEntry(b []byte) (Entry, error) {
	if len(b) < EntrySize {
		return Entry{}, fmt.Errorf("%w: entry of %d bytes", ErrCorrupt, len(b))
	}
	if crc32.ChecksumIEEE(b[:28]) != binary.BigEndian.Uint32(b[28:]) {
		return Entry{}, fmt.Errorf("%w: entry CRC mismatch", ErrCorrupt)
	}
	size := binary.BigEndian.Uint32(b[24:])
	e := Entry{
		Slot:        int64(binary.BigEndian.Uint64(b[0:])),
		QueueOffset: int64(binary.BigEndian.Uint64(b[8:])),
		PhysOffset:  int64(binary.BigEndian.Uint64(b[16:])),
		Size:        int32(size &^ markerBit),
		Marker:      size&markerBit != 0,
	}
	if e.QueueOffset < 0 || e.PhysOffset < 0 || e.Size < 0 {
		return Entry{}, fmt.Errorf("%w: negative field", ErrCorrupt)
	}
	return e, nil
}

// DecodeEntries decodes an index file's bytes: every whole entry with a valid CRC, in file
// order. bad counts the entries skipped for a CRC mismatch and torn is the number of bytes of
// a partial entry at the end.
func DecodeEntries(b []byte) (entries []Entry, bad int, torn int) {
	n := len(b) / EntrySize
	entries = make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		e, err := DecodeEntry(b[i*EntrySize:])
		if err != nil {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad, len(b) - n*EntrySize
}

// # Checkpoint (timer/checkpoint), 48 bytes, big endian, replaced atomically
//
//	 0    4    8         16        24        32        40   44   48
//	+----+----+---------+---------+---------+---------+----+----+
//	|magic|ver| synced  | written | cursor  |  done   |crc |pad |
//	+----+----+---------+---------+---------+---------+----+----+
//
//	magic    "RQTM"
//	ver      uint32 1
//	synced   int64  rmq_sys_wheel_timer queue offset up to which every record's entry is in
//	                an index file that was fsynced before this checkpoint was written
//	written  int64  queue offset up to which entries were written (maybe not fsynced): from
//	                synced to written a restart looks each entry up in its bucket before
//	                writing it again
//	cursor   int64  slot (ms): every slot before it is delivered
//	done     int64  highest queue offset delivered in the cursor's slot, -1 for none
//	crc      uint32 CRC-32 (IEEE) of bytes 0..39
//	pad      4 zero bytes
const CheckpointSize = 48

var checkpointMagic = [4]byte{'R', 'Q', 'T', 'M'}

// Checkpoint is the timer's persisted progress.
type Checkpoint struct {
	SyncedOffset  int64
	WrittenOffset int64
	Cursor        int64
	Done          int64
}

// AppendCheckpoint appends the 48-byte encoding of c to dst.
func AppendCheckpoint(dst []byte, c Checkpoint) []byte {
	var b [CheckpointSize]byte
	copy(b[0:], checkpointMagic[:])
	binary.BigEndian.PutUint32(b[4:], 1)
	binary.BigEndian.PutUint64(b[8:], uint64(c.SyncedOffset))
	binary.BigEndian.PutUint64(b[16:], uint64(c.WrittenOffset))
	binary.BigEndian.PutUint64(b[24:], uint64(c.Cursor))
	binary.BigEndian.PutUint64(b[32:], uint64(c.Done))
	binary.BigEndian.PutUint32(b[40:], crc32.ChecksumIEEE(b[:40]))
	return append(dst, b[:]...)
}

// DecodeCheckpoint decodes a checkpoint file's bytes.
func DecodeCheckpoint(b []byte) (Checkpoint, error) {
	d := decoder{b: b}
	magic := d.bytes(4)
	ver := d.u32()
	synced := int64(d.u64())
	written := int64(d.u64())
	cur := int64(d.u64())
	done := int64(d.u64())
	sum := d.u32()
	d.bytes(4)
	if d.err != nil {
		return Checkpoint{}, d.err
	}
	if string(magic) != string(checkpointMagic[:]) || ver != 1 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint magic or version", ErrCorrupt)
	}
	if crc32.ChecksumIEEE(b[:40]) != sum {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint CRC mismatch", ErrCorrupt)
	}
	if synced < 0 || written < synced || cur < 0 || done < -1 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint fields out of range", ErrCorrupt)
	}
	return Checkpoint{SyncedOffset: synced, WrittenOffset: written, Cursor: cur, Done: done}, nil
}

// decoder reads big-endian fields with a sticky error: after the first short read every
// further read returns zero and the error stays.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b)-d.off < n {
		d.err = fmt.Errorf("%w: %d bytes, need %d more at %d", ErrCorrupt, len(d.b), n, d.off)
		return nil
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v
}

func (d *decoder) u32() uint32 {
	v := d.bytes(4)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

func (d *decoder) u64() uint64 {
	v := d.bytes(8)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

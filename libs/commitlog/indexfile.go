package commitlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unicode/utf8"
)

// Index files map "topic#key" to the CommitLog offsets of the messages that
// carry the key in KEYS (space separated) or UNIQ_KEY, so that QUERY_MESSAGE can
// find a message without knowing its queue. The layout is RocketMQ's IndexFile
// (header, hash slots, linked entries) followed by a trailer of ours that makes a
// finished file checkable:
//
//	offset 0                    +----------------------------------------+
//	                            | header, 40 bytes (RocketMQ IndexHeader) |
//	                            |  beginTimestamp  int64  ms, first entry |
//	                            |  endTimestamp    int64  ms, last entry  |
//	                            |  beginPhyOffset  int64  first entry     |
//	                            |  endPhyOffset    int64  last entry      |
//	                            |  hashSlotCount   int32  slots in use    |
//	                            |  indexCount      int32  entries + 1     |
//	40                          +----------------------------------------+
//	                            | slots: slotNum × int32                  |
//	                            |  newest entry number of the slot, 0=none|
//	40 + 4·slotNum              +----------------------------------------+
//	                            | entries: (indexCount-1) × 20 bytes      |
//	                            |  keyHash   int32  |javaHash(topic#key)| |
//	                            |  phyOffset int64  CommitLog offset      |
//	                            |  timeDiff  int32  s since beginTimestamp|
//	                            |  prevIndex int32  older entry, same slot|
//	40 + 4·slotNum + 20·(n-1)   +----------------------------------------+
//	                            | trailer, 28 bytes (ours)                |
//	                            |  magic       uint32 "RMIX"              |
//	                            |  version     uint32 1                   |
//	                            |  slotNum     uint32                     |
//	                            |  maxIndexNum uint32                     |
//	                            |  indexedTo   int64  every record below  |
//	                            |                     is in this file or  |
//	                            |                     an older one        |
//	                            |  crc32       uint32 IEEE of all above   |
//	                            +----------------------------------------+
//
// Entry numbers start at 1 (indexCount starts at 1, as in RocketMQ), so slot
// value 0 and prevIndex 0 mean "none". A key's entries form a chain from the slot
// through prevIndex, newest first; every prevIndex is smaller than its own
// entry's number, which bounds every walk.
//
// A file is named by the CommitLog offset (20 digits) from which it indexes
// records; the next file's name is this file's indexedTo. The trailer is written
// (and fsynced) when a file is full, when the CommitLog segment of its records
// ends, and when the store closes cleanly; the file being written has none, so
// after a crash it is rebuilt from the CommitLog from its name on (at most one
// segment's records). Any file that fails verifyIndexFile is reported with the exact
// reason (ErrIndexCorrupt) and rebuilt, together with every newer file.
const (
	indexHeaderSize  = 40
	indexSlotSize    = 4
	indexEntrySize   = 20
	indexTrailerSize = 28
	indexMagic       = 0x524D4958 // "RMIX"
	indexVersion     = 1
)

// indexHeader is the 40-byte RocketMQ IndexHeader.
type indexHeader struct {
	beginTimestamp int64
	endTimestamp   int64
	beginPhyOffset int64
	endPhyOffset   int64
	hashSlotCount  int32
	indexCount     int32
}

// indexTrailer is the 28-byte trailer of a finished file.
type indexTrailer struct {
	slotNum     uint32
	maxIndexNum uint32
	indexedTo   int64
	crc         uint32
}

// appendIndexHeader encodes h.
func appendIndexHeader(dst []byte, h indexHeader) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.beginTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.endTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.beginPhyOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.endPhyOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.hashSlotCount))
	return binary.BigEndian.AppendUint32(dst, uint32(h.indexCount))
}

// appendIndexTrailer encodes t; the crc field is written as given.
func appendIndexTrailer(dst []byte, t indexTrailer) []byte {
	dst = binary.BigEndian.AppendUint32(dst, indexMagic)
	dst = binary.BigEndian.AppendUint32(dst, indexVersion)
	dst = binary.BigEndian.AppendUint32(dst, t.slotNum)
	dst = binary.BigEndian.AppendUint32(dst, t.maxIndexNum)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.indexedTo))
	return binary.BigEndian.AppendUint32(dst, t.crc)
}

// appendIndexEntry encodes one 20-byte entry.
func appendIndexEntry(dst []byte, keyHash int32, phy int64, timeDiff int32, prev int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(keyHash))
	dst = binary.BigEndian.AppendUint64(dst, uint64(phy))
	dst = binary.BigEndian.AppendUint32(dst, uint32(timeDiff))
	return binary.BigEndian.AppendUint32(dst, uint32(prev))
}

// indexDecoder reads big-endian fields with a sticky error.
type indexDecoder struct {
	b   []byte
	pos int
	err error
}

func (d *indexDecoder) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.pos < 4 {
		d.err = fmt.Errorf("%w: short field at %d", ErrIndexCorrupt, d.pos)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *indexDecoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.pos < 8 {
		d.err = fmt.Errorf("%w: short field at %d", ErrIndexCorrupt, d.pos)
		return 0
	}
	v := binary.BigEndian.Uint64(d.b[d.pos:])
	d.pos += 8
	return v
}

func decodeIndexHeader(b []byte) (indexHeader, error) {
	d := indexDecoder{b: b}
	h := indexHeader{
		beginTimestamp: int64(d.u64()),
		endTimestamp:   int64(d.u64()),
		beginPhyOffset: int64(d.u64()),
		endPhyOffset:   int64(d.u64()),
		hashSlotCount:  int32(d.u32()),
		indexCount:     int32(d.u32()),
	}
	return h, d.err
}

func decodeIndexTrailer(b []byte) (indexTrailer, error) {
	d := indexDecoder{b: b}
	magic, version := d.u32(), d.u32()
	t := indexTrailer{slotNum: d.u32(), maxIndexNum: d.u32(), indexedTo: int64(d.u64()), crc: d.u32()}
	if d.err != nil {
		return t, d.err
	}
	if magic != indexMagic {
		return t, fmt.Errorf("%w: no trailer (magic %#x): not closed cleanly", ErrIndexCorrupt, magic)
	}
	if version != indexVersion {
		return t, fmt.Errorf("%w: trailer version %d", ErrIndexCorrupt, version)
	}
	return t, nil
}

// indexEntryAt decodes entry bytes.
func decodeIndexEntry(b []byte) (keyHash int32, phy int64, timeDiff int32, prev int32) {
	be := binary.BigEndian
	return int32(be.Uint32(b)), int64(be.Uint64(b[4:])), int32(be.Uint32(b[12:])), int32(be.Uint32(b[16:]))
}

// indexFileInfo is what verifyIndexFile accepts.
type indexFileInfo struct {
	header  indexHeader
	trailer indexTrailer
}

// indexVerifyChunk is how much of a file verifyIndexFile reads at once: the multiple of the
// entry size (and so of the slot size) just below 64 KiB.
const indexVerifyChunk = (64 << 10) / indexEntrySize * indexEntrySize

// maxIndexSlots and maxIndexEntries bound what a file on disk may claim before
// anything is read for it.
const (
	maxIndexSlots   = 1 << 28
	maxIndexEntries = 1 << 28
)

// checkIndexFileShape is the part of verifyIndexFile that reads only the header and the
// trailer: their fields agree with each other, with the file's size and with its name. A
// store opens its finished files with it and verifies them whole in the background
// (indexverify.go), so that an open does not read every index file.
func checkIndexFileShape(r io.ReaderAt, size int64, start int64) (indexFileInfo, error) {
	info, _, _, err := readIndexShape(r, size, start)
	return info, err
}

// verifyIndexFile checks a finished index file of size bytes named start: the
// trailer's position follows from the header's indexCount and the trailer's
// slot count, the checksum covers everything before it, every slot and
// prevIndex points at an older entry, and every entry's offset lies in
// [start, indexedTo). It reads the file in chunks (bounded memory).
func verifyIndexFile(r io.ReaderAt, size int64, start int64) (indexFileInfo, error) {
	info, hb, tb, err := readIndexShape(r, size, start)
	if err != nil {
		return info, err
	}
	h, t := info.header, info.trailer
	crc := crc32.ChecksumIEEE(hb[:])

	// The chunk is a multiple of both the slot and the entry size (20 bytes: 64 KiB is not),
	// so that no entry straddles two chunks.
	buf := make([]byte, indexVerifyChunk)
	slotsEnd := indexHeaderSize + int64(t.slotNum)*indexSlotSize
	used := int32(0)
	for pos := int64(indexHeaderSize); pos < size-indexTrailerSize; {
		n := int64(len(buf))
		if pos < slotsEnd && pos+n > slotsEnd {
			n = slotsEnd - pos // chunks never straddle the slots' end
		}
		if rest := size - indexTrailerSize - pos; n > rest {
			n = rest
		}
		c := buf[:n]
		if _, err := r.ReadAt(c, pos); err != nil {
			return info, fmt.Errorf("%w: read at %d: %v", ErrIndexCorrupt, pos, err)
		}
		crc = crc32.Update(crc, crc32.IEEETable, c)
		if pos < slotsEnd {
			for i := 0; i+indexSlotSize <= len(c); i += indexSlotSize {
				v := int32(binary.BigEndian.Uint32(c[i:]))
				if v < 0 || v >= h.indexCount {
					return info, fmt.Errorf("%w: slot %d points at entry %d of %d", ErrIndexCorrupt, (pos-indexHeaderSize+int64(i))/indexSlotSize, v, h.indexCount-1)
				}
				if v > 0 {
					used++
				}
			}
		} else {
			first := int32((pos-slotsEnd)/indexEntrySize) + 1
			for i := 0; i+indexEntrySize <= len(c); i += indexEntrySize {
				no := first + int32(i/indexEntrySize)
				_, phy, _, prev := decodeIndexEntry(c[i:])
				if prev < 0 || prev >= no {
					return info, fmt.Errorf("%w: entry %d links to entry %d", ErrIndexCorrupt, no, prev)
				}
				if phy < start || phy >= t.indexedTo {
					return info, fmt.Errorf("%w: entry %d at CommitLog offset %d outside [%d, %d)", ErrIndexCorrupt, no, phy, start, t.indexedTo)
				}
			}
		}
		pos += n
	}
	crc = crc32.Update(crc, crc32.IEEETable, tb[:indexTrailerSize-4])
	if crc != t.crc {
		return info, fmt.Errorf("%w: checksum %#x, trailer says %#x", ErrIndexCorrupt, crc, t.crc)
	}
	if used != h.hashSlotCount {
		return info, fmt.Errorf("%w: %d slots in use, header says %d", ErrIndexCorrupt, used, h.hashSlotCount)
	}
	return info, nil
}

// indexKeyHash is RocketMQ's indexKeyHashMethod over "topic#key": the absolute
// value of Java's String.hashCode, 0 for Integer.MIN_VALUE.
func indexKeyHash(topic, key []byte) int32 { return indexKeyHashFrom(indexTopicHash(topic), key) }

// indexTopicHash is the part of indexKeyHash that depends on the topic alone ("topic#"), so
// that a record's keys hash its topic once.
func indexTopicHash(topic []byte) int32 { return 31*javaHashCont(0, topic) + '#' }

// indexKeyHashFrom is indexKeyHash from the topic's part th.
func indexKeyHashFrom(th int32, key []byte) int32 {
	h := javaHashCont(th, key)
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}

// javaHashCont continues Java's String.hashCode from h over more UTF-8 bytes:
// hash(a+b) = hash(a)·31^len(b) + hash(b), lengths in UTF-16 code units. ASCII (every key
// the index hashes in practice) goes four bytes a step, whose products do not wait on one
// another; anything else is hashed again by runes.
func javaHashCont(h int32, b []byte) int32 {
	h0 := h
	var or byte
	i := 0
	for ; i+4 <= len(b); i += 4 {
		c0, c1, c2, c3 := b[i], b[i+1], b[i+2], b[i+3]
		or |= c0 | c1 | c2 | c3
		h = h*(31*31*31*31) + int32(c0)*(31*31*31) + int32(c1)*(31*31) + int32(c2)*31 + int32(c3)
	}
	for ; i < len(b); i++ {
		or |= b[i]
		h = 31*h + int32(b[i])
	}
	if or < utf8.RuneSelf {
		return h
	}
	h = h0
	for _, r := range string(b) {
		h *= 31
		if r >= 0x10000 {
			h *= 31
		}
	}
	return h + javaHashBytes(b)
}

// readIndexShape reads a finished file's header and trailer and checks them
// (checkIndexFileShape); verifyIndexFile goes on from the bytes it returns.
func readIndexShape(r io.ReaderAt, size int64, start int64) (info indexFileInfo, hb [indexHeaderSize]byte, tb [indexTrailerSize]byte, err error) {
	if size < indexHeaderSize+indexTrailerSize {
		return info, hb, tb, fmt.Errorf("%w: %d bytes, shorter than header and trailer", ErrIndexCorrupt, size)
	}
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return info, hb, tb, fmt.Errorf("%w: read header: %v", ErrIndexCorrupt, err)
	}
	h, err := decodeIndexHeader(hb[:])
	if err != nil {
		return info, hb, tb, err
	}
	if _, err := r.ReadAt(tb[:], size-indexTrailerSize); err != nil {
		return info, hb, tb, fmt.Errorf("%w: read trailer: %v", ErrIndexCorrupt, err)
	}
	t, err := decodeIndexTrailer(tb[:])
	if err != nil {
		return info, hb, tb, err
	}
	info = indexFileInfo{header: h, trailer: t}
	switch {
	case t.slotNum == 0 || t.slotNum > maxIndexSlots:
		return info, hb, tb, fmt.Errorf("%w: slot count %d", ErrIndexCorrupt, t.slotNum)
	case t.maxIndexNum == 0 || t.maxIndexNum > maxIndexEntries:
		return info, hb, tb, fmt.Errorf("%w: max index count %d", ErrIndexCorrupt, t.maxIndexNum)
	case h.indexCount < 1 || int64(h.indexCount) > int64(t.maxIndexNum)+1:
		return info, hb, tb, fmt.Errorf("%w: index count %d outside [1, %d]", ErrIndexCorrupt, h.indexCount, t.maxIndexNum+1)
	case h.hashSlotCount < 0 || int64(h.hashSlotCount) > int64(t.slotNum) || h.hashSlotCount > h.indexCount:
		return info, hb, tb, fmt.Errorf("%w: hash slot count %d", ErrIndexCorrupt, h.hashSlotCount)
	case t.indexedTo < start:
		return info, hb, tb, fmt.Errorf("%w: indexed to %d, before the file's start %d", ErrIndexCorrupt, t.indexedTo, start)
	}
	want := indexHeaderSize + int64(t.slotNum)*indexSlotSize + int64(h.indexCount-1)*indexEntrySize + indexTrailerSize
	if size != want {
		return info, hb, tb, fmt.Errorf("%w: %d bytes, header and trailer say %d", ErrIndexCorrupt, size, want)
	}
	if h.indexCount > 1 && (h.beginPhyOffset < start || h.endPhyOffset >= t.indexedTo || h.beginPhyOffset > h.endPhyOffset || h.beginTimestamp > h.endTimestamp) {
		return info, hb, tb, fmt.Errorf("%w: header ranges [%d, %d] at [%d, %d] outside [%d, %d)", ErrIndexCorrupt,
			h.beginPhyOffset, h.endPhyOffset, h.beginTimestamp, h.endTimestamp, start, t.indexedTo)
	}
	return info, hb, tb, nil
}

package commitlog

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// Magic codes of stored records.
const (
	MagicV1    int32 = -626843481 // 0xDAA320A7, 1-byte topic length
	MagicV2    int32 = -626843477 // 0xDAA320AB, 2-byte topic length (read only)
	MagicBlank int32 = -875286124 // 0xCBD43194, end-of-segment padding
)

// SysFlag bits used by the store.
const (
	SysFlagCompressed           int32 = 0x1
	SysFlagMultiTags            int32 = 0x2
	SysFlagTxPrepared           int32 = 0x4
	SysFlagTxCommit             int32 = 0x8
	SysFlagTxRollback           int32 = 0xC
	SysFlagTxMask               int32 = 0xC
	SysFlagBornHostV6           int32 = 0x10
	SysFlagStoreHostV6          int32 = 0x20
	MaxTopicLength                    = 127
	MaxPropertiesLength               = 32767
	BlankMinLength                    = 8 // a segment always keeps room for a BLANK header
	recordFixedV4                     = 91
	minRecordSize                     = recordFixedV4 // smallest V1 IPv4 record (empty body/topic/props)
	storeTimestampPosV4Born           = 56
	storeTimestampPosV6BornDiff       = 12
)

// Record holds every field of a stored CommitLog record (RocketMQ V1 layout).
type Record struct {
	TotalSize                 int32
	Magic                     int32
	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Topic                     string
	Properties                string
}

// IsBlank reports whether the record is end-of-segment padding.
func (r *Record) IsBlank() bool { return r.Magic == MagicBlank }

func hostLen(ap netip.AddrPort) int {
	if isV6(ap) {
		return 20
	}
	return 8
}

func isV6(ap netip.AddrPort) bool {
	a := ap.Addr()
	return a.IsValid() && a.Is6() && !a.Is4In6()
}

// RecordSize is the stored length of a V1 record with these field lengths and hosts.
func RecordSize(bodyLen, topicLen, propLen int, bornV6, storeV6 bool) int {
	n := recordFixedV4 + bodyLen + topicLen + propLen
	if bornV6 {
		n += 12
	}
	if storeV6 {
		n += 12
	}
	return n
}

// BodyCRC is CRC-32/IEEE of the stored body masked to 31 bits, as RocketMQ stores it.
func BodyCRC(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

func appendHost(dst []byte, ap netip.AddrPort) []byte {
	a := ap.Addr()
	if isV6(ap) {
		b := a.As16()
		dst = append(dst, b[:]...)
	} else {
		var b [4]byte
		if a.IsValid() {
			b = a.Unmap().As4()
		}
		dst = append(dst, b[:]...)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(ap.Port()))
}

// AppendRecord appends r in the V1 stored layout. TotalSize is computed from
// the field lengths, the host-family SysFlag bits are derived from the hosts,
// Magic is always MagicV1 and BodyCRC is written as given. The topic must be
// at most 127 bytes and the properties at most 32767 bytes (the caller checks;
// longer values are cut to fit the length fields).
func AppendRecord(dst []byte, r *Record) []byte {
	topic := r.Topic
	if len(topic) > MaxTopicLength {
		topic = topic[:MaxTopicLength]
	}
	props := r.Properties
	if len(props) > MaxPropertiesLength {
		props = props[:MaxPropertiesLength]
	}
	bornV6, storeV6 := isV6(r.BornHost), isV6(r.StoreHost)
	size := RecordSize(len(r.Body), len(topic), len(props), bornV6, storeV6)
	sys := r.SysFlag &^ (SysFlagBornHostV6 | SysFlagStoreHostV6)
	if bornV6 {
		sys |= SysFlagBornHostV6
	}
	if storeV6 {
		sys |= SysFlagStoreHostV6
	}
	be := binary.BigEndian
	dst = be.AppendUint32(dst, uint32(size))
	magic := MagicV1
	dst = be.AppendUint32(dst, uint32(magic))
	dst = be.AppendUint32(dst, uint32(r.BodyCRC))
	dst = be.AppendUint32(dst, uint32(r.QueueID))
	dst = be.AppendUint32(dst, uint32(r.Flag))
	dst = be.AppendUint64(dst, uint64(r.QueueOffset))
	dst = be.AppendUint64(dst, uint64(r.PhysicalOffset))
	dst = be.AppendUint32(dst, uint32(sys))
	dst = be.AppendUint64(dst, uint64(r.BornTimestamp))
	dst = appendHost(dst, r.BornHost)
	dst = be.AppendUint64(dst, uint64(r.StoreTimestamp))
	dst = appendHost(dst, r.StoreHost)
	dst = be.AppendUint32(dst, uint32(r.ReconsumeTimes))
	dst = be.AppendUint64(dst, uint64(r.PreparedTransactionOffset))
	dst = be.AppendUint32(dst, uint32(len(r.Body)))
	dst = append(dst, r.Body...)
	dst = append(dst, byte(len(topic)))
	dst = append(dst, topic...)
	dst = be.AppendUint16(dst, uint16(len(props)))
	dst = append(dst, props...)
	return dst
}

// AppendBlank appends an end-of-segment padding record of n bytes (n >= 8):
// TOTALSIZE n, MAGICCODE BLANK, zeros.
func AppendBlank(dst []byte, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	blank := MagicBlank
	dst = binary.BigEndian.AppendUint32(dst, uint32(blank))
	for i := 8; i < n; i++ {
		dst = append(dst, 0)
	}
	return dst
}

// decoder reads big-endian fields with a sticky error: after the first
// short read every call returns zero and the error is checked once.
type decoder struct {
	b   []byte
	pos int
	err error
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b)-d.pos < n {
		d.err = corrupt(int64(d.pos), "field overruns record")
		return false
	}
	return true
}

func (d *decoder) u8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.b[d.pos]
	d.pos++
	return v
}

func (d *decoder) u16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b[d.pos:])
	d.pos += 2
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *decoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b[d.pos:])
	d.pos += 8
	return v
}

func (d *decoder) bytes(n int) []byte {
	if !d.need(n) {
		return nil
	}
	v := d.b[d.pos : d.pos+n]
	d.pos += n
	return v
}

func (d *decoder) host(v6 bool) netip.AddrPort {
	var a netip.Addr
	if v6 {
		b := d.bytes(16)
		if b == nil {
			return netip.AddrPort{}
		}
		a = netip.AddrFrom16([16]byte(b))
	} else {
		b := d.bytes(4)
		if b == nil {
			return netip.AddrPort{}
		}
		a = netip.AddrFrom4([4]byte(b))
	}
	port := d.u32()
	return netip.AddrPortFrom(a, uint16(port))
}

// DecodeRecord decodes the record at the start of b and returns it with its
// length. A BLANK record comes back with Magic == MagicBlank and only
// TotalSize set, and the returned length is TotalSize even when b is shorter
// (padding runs to the end of its segment). ErrIncomplete means b holds only a prefix of a plausible
// record; ErrCorrupt (a *CorruptError) means the bytes are not a record: bad
// magic, size out of bounds, field lengths that do not add up, or a body CRC
// mismatch. Body aliases b.
func DecodeRecord(b []byte) (*Record, int, error) {
	if len(b) < 8 {
		return nil, 0, ErrIncomplete
	}
	total := int32(binary.BigEndian.Uint32(b))
	magic := int32(binary.BigEndian.Uint32(b[4:]))
	switch magic {
	case MagicBlank:
		if total < BlankMinLength {
			return nil, 0, corrupt(0, "blank record size %d", total)
		}
		return &Record{TotalSize: total, Magic: MagicBlank}, int(total), nil
	case MagicV1, MagicV2:
	default:
		return nil, 0, corrupt(0, "bad magic code %#x", uint32(magic))
	}
	if total < minRecordSize {
		return nil, 0, corrupt(0, "record size %d below minimum", total)
	}
	if int(total) > len(b) {
		return nil, 0, ErrIncomplete
	}
	d := decoder{b: b[:total]}
	r := &Record{}
	r.TotalSize = int32(d.u32())
	r.Magic = int32(d.u32())
	r.BodyCRC = int32(d.u32())
	r.QueueID = int32(d.u32())
	r.Flag = int32(d.u32())
	r.QueueOffset = int64(d.u64())
	r.PhysicalOffset = int64(d.u64())
	r.SysFlag = int32(d.u32())
	r.BornTimestamp = int64(d.u64())
	r.BornHost = d.host(r.SysFlag&SysFlagBornHostV6 != 0)
	r.StoreTimestamp = int64(d.u64())
	r.StoreHost = d.host(r.SysFlag&SysFlagStoreHostV6 != 0)
	r.ReconsumeTimes = int32(d.u32())
	r.PreparedTransactionOffset = int64(d.u64())
	bodyLen := int32(d.u32())
	if d.err == nil && bodyLen < 0 {
		return nil, 0, corrupt(int64(d.pos), "negative body length %d", bodyLen)
	}
	r.Body = d.bytes(int(bodyLen))
	var topicLen int
	if r.Magic == MagicV2 {
		topicLen = int(d.u16())
	} else {
		topicLen = int(d.u8())
	}
	r.Topic = string(d.bytes(topicLen))
	propLen := int16(d.u16())
	if d.err == nil && propLen < 0 {
		return nil, 0, corrupt(int64(d.pos), "negative properties length %d", propLen)
	}
	r.Properties = string(d.bytes(int(propLen)))
	if d.err != nil {
		return nil, 0, d.err
	}
	if d.pos != int(total) {
		return nil, 0, corrupt(0, "fields end at %d but record size is %d", d.pos, total)
	}
	if got := BodyCRC(r.Body); got != r.BodyCRC {
		return nil, 0, corrupt(0, "body crc %#x, stored %#x", uint32(got), uint32(r.BodyCRC))
	}
	return r, int(total), nil
}

// StoreTimestampOf reads the store timestamp from the start of a stored record.
func storeTimestampOf(b []byte) (int64, bool) {
	if len(b) < 40 {
		return 0, false
	}
	sys := int32(binary.BigEndian.Uint32(b[36:]))
	pos := storeTimestampPosV4Born
	if sys&SysFlagBornHostV6 != 0 {
		pos += storeTimestampPosV6BornDiff
	}
	if len(b) < pos+8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[pos:])), true
}

// recordMeta is what the dispatcher needs from a record, without copying.
type recordMeta struct {
	size           int32
	blank          bool
	queueID        int32
	queueOffset    int64
	physOffset     int64
	sysFlag        int32
	storeTimestamp int64
	topic          []byte
	props          []byte
	body           []byte
	bodyCRC        int32
	// Set by the crash scan where it validated the record (readProps), while its bytes are
	// in that core's cache: the index's properties and the default tags code, so that the
	// goroutine feeding the index and the queues does not look them up again.
	uniq, keys []byte
	tags       int64
	propsRead  bool
}

// parseMeta walks the length fields of a record (no CRC check); b must hold
// the whole record. It runs once per record on every path that walks stored
// bytes (the HA sender's read, the slave's append, dispatch, recovery), so it
// reads the fields at their computed positions with one bounds check per
// variable-length part instead of going through the sticky-error decoder; it
// returns what that decoder would (parseMetaDecoder, parsemeta_test.go), error
// for error, which TestParseMetaMatchesDecoder and FuzzParseMeta check.
func parseMeta(b []byte) (recordMeta, error) {
	var m recordMeta
	if len(b) < 8 {
		return m, ErrIncomplete
	}
	total := int32(binary.BigEndian.Uint32(b))
	magic := int32(binary.BigEndian.Uint32(b[4:]))
	if magic == MagicBlank {
		if total < BlankMinLength {
			return m, corrupt(0, "blank record size %d", total)
		}
		m.size, m.blank = total, true
		return m, nil
	}
	if magic != MagicV1 && magic != MagicV2 {
		return m, corrupt(0, "bad magic code %#x", uint32(magic))
	}
	if total < minRecordSize {
		return m, corrupt(0, "record size %d below minimum", total)
	}
	if int(total) > len(b) {
		return m, ErrIncomplete
	}
	r := b[:total]
	n := len(r)
	// total ≥ minRecordSize covers every fixed field up to the born host.
	m.size = total
	m.bodyCRC = int32(binary.BigEndian.Uint32(r[8:]))
	m.queueID = int32(binary.BigEndian.Uint32(r[12:]))
	m.queueOffset = int64(binary.BigEndian.Uint64(r[20:]))
	m.physOffset = int64(binary.BigEndian.Uint64(r[28:]))
	m.sysFlag = int32(binary.BigEndian.Uint32(r[36:]))
	pos := 48 // after the born timestamp
	if m.sysFlag&SysFlagBornHostV6 != 0 {
		pos += 20
	} else {
		pos += 8
	}
	if n-pos < 8 {
		return m, overrun(pos)
	}
	m.storeTimestamp = int64(binary.BigEndian.Uint64(r[pos:]))
	pos += 8
	storeHost := 8
	if m.sysFlag&SysFlagStoreHostV6 != 0 {
		storeHost = 20
	}
	// The store host, reconsume times, prepared offset and body length, each
	// checked where it starts so that an overrun names the same position.
	for _, k := range [...]int{storeHost, 4, 8, 4} {
		if n-pos < k {
			return m, overrun(pos)
		}
		pos += k
	}
	bodyLen := int32(binary.BigEndian.Uint32(r[pos-4:]))
	if bodyLen < 0 {
		return m, corrupt(int64(pos), "negative body length")
	}
	if n-pos < int(bodyLen) {
		return m, overrun(pos)
	}
	m.body = r[pos : pos+int(bodyLen)]
	pos += int(bodyLen)
	var topicLen int
	if magic == MagicV2 {
		if n-pos < 2 {
			return m, overrun(pos)
		}
		topicLen = int(binary.BigEndian.Uint16(r[pos:]))
		pos += 2
	} else {
		if n-pos < 1 {
			return m, overrun(pos)
		}
		topicLen = int(r[pos])
		pos++
	}
	if n-pos < topicLen {
		return m, overrun(pos)
	}
	m.topic = r[pos : pos+topicLen]
	pos += topicLen
	if n-pos < 2 {
		return m, overrun(pos)
	}
	propLen := int16(binary.BigEndian.Uint16(r[pos:]))
	pos += 2
	if propLen < 0 {
		return m, corrupt(int64(pos), "negative properties length")
	}
	if n-pos < int(propLen) {
		return m, overrun(pos)
	}
	m.props = r[pos : pos+int(propLen)]
	pos += int(propLen)
	if pos != n {
		return m, corrupt(0, "fields end at %d but record size is %d", pos, total)
	}
	return m, nil
}

// overrun is the decoder's error for a field that starts at pos and does not
// fit in the record.
func overrun(pos int) error { return corrupt(int64(pos), "field overruns record") }

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

package commitlog

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

// checkParseMeta fails when parseMeta and parseMetaDecoder disagree on b: the
// same error (type, offset and reason) or, on success, the same fields.
func checkParseMeta(t *testing.T, b []byte) {
	t.Helper()
	got, err := parseMeta(b)
	want, werr := parseMetaDecoder(b)
	if (err == nil) != (werr == nil) {
		t.Fatalf("parseMeta error %v, decoder %v", err, werr)
	}
	if werr != nil {
		var ce, wce *CorruptError
		if errors.As(werr, &wce) {
			if !errors.As(err, &ce) || *ce != *wce {
				t.Fatalf("parseMeta error %#v, decoder %#v", err, werr)
			}
		} else if !errors.Is(err, werr) {
			t.Fatalf("parseMeta error %v, decoder %v", err, werr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseMeta %+v, decoder %+v", got, want)
	}
}

// parseMetaSeeds are records of every layout (V1/V2 magic, IPv4/IPv6 hosts,
// empty parts) and, for each, its length fields bent one at a time.
func parseMetaSeeds() [][]byte {
	var out [][]byte
	for _, born := range []string{"192.0.2.2:40000", "[2001:db8::1]:1234"} {
		for _, store := range []string{"127.0.0.1:30911", "[2001:db8::2]:10911"} {
			for _, empty := range []bool{false, true} {
				r := sampleRecord()
				r.BornHost, r.StoreHost = netip.MustParseAddrPort(born), netip.MustParseAddrPort(store)
				if empty {
					r.Body, r.Properties = nil, ""
				}
				b := AppendRecord(nil, r)
				out = append(out, b, AppendRecord(nil, r)[:len(b)-1])
				// The same record with a V2 (two-byte) topic length.
				v2 := recordV2(b)
				out = append(out, v2)
				for _, rec := range [][]byte{b, v2} {
					for pos := 0; pos+4 <= len(rec); pos++ {
						for _, v := range []uint32{0, 1, 0x7f, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff} {
							c := append([]byte(nil), rec...)
							binary.BigEndian.PutUint32(c[pos:], v)
							out = append(out, c)
						}
					}
				}
			}
		}
	}
	return append(out, AppendBlank(nil, 16), []byte{0, 0, 0, 91, 0xDA, 0xA3, 0x20, 0xA7}, []byte{0, 0, 0, 4, 0xCB, 0xD4, 0x33, 0x20})
}

// recordV2 rewrites a V1 record with MagicV2 and a two-byte topic length.
func recordV2(b []byte) []byte {
	m, err := parseMetaDecoder(b)
	if err != nil {
		panic(err)
	}
	topicAt := len(b) - 2 - len(m.props) - len(m.topic) - 1
	out := append([]byte(nil), b[:topicAt]...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(m.topic)))
	out = append(out, b[topicAt+1:]...)
	binary.BigEndian.PutUint32(out, uint32(len(out)))
	magic := MagicV2
	binary.BigEndian.PutUint32(out[4:], uint32(magic))
	return out
}

func TestParseMetaMatchesDecoder(t *testing.T) {
	for _, b := range parseMetaSeeds() {
		checkParseMeta(t, b)
	}
}

// parseMetaDecoder is parseMeta as written with the sticky-error decoder: the
// reference the faster parseMeta must agree with, error for error. b must hold
// the whole record.
func parseMetaDecoder(b []byte) (recordMeta, error) {
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
	d := decoder{b: b[:total]}
	m.size = int32(d.u32())
	d.u32() // magic
	m.bodyCRC = int32(d.u32())
	m.queueID = int32(d.u32())
	d.u32() // flag
	m.queueOffset = int64(d.u64())
	m.physOffset = int64(d.u64())
	m.sysFlag = int32(d.u32())
	d.u64()
	if m.sysFlag&SysFlagBornHostV6 != 0 {
		d.bytes(20)
	} else {
		d.bytes(8)
	}
	m.storeTimestamp = int64(d.u64())
	if m.sysFlag&SysFlagStoreHostV6 != 0 {
		d.bytes(20)
	} else {
		d.bytes(8)
	}
	d.u32()
	d.u64()
	bodyLen := int32(d.u32())
	if d.err == nil && bodyLen < 0 {
		return m, corrupt(int64(d.pos), "negative body length")
	}
	m.body = d.bytes(int(bodyLen))
	var topicLen int
	if magic == MagicV2 {
		topicLen = int(d.u16())
	} else {
		topicLen = int(d.u8())
	}
	m.topic = d.bytes(topicLen)
	propLen := int16(d.u16())
	if d.err == nil && propLen < 0 {
		return m, corrupt(int64(d.pos), "negative properties length")
	}
	m.props = d.bytes(int(propLen))
	if d.err != nil {
		return m, d.err
	}
	if d.pos != int(total) {
		return m, corrupt(0, "fields end at %d but record size is %d", d.pos, total)
	}
	return m, nil
}

package commitlog

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleRecord() *Record {
	body := []byte("hello-sync")
	return &Record{
		BodyCRC:        BodyCRC(body),
		QueueID:        3,
		Flag:           7,
		QueueOffset:    42,
		PhysicalOffset: 4096,
		SysFlag:        SysFlagCompressed,
		BornTimestamp:  1795936508414,
		BornHost:       netip.MustParseAddrPort("192.0.2.2:40000"),
		StoreTimestamp: 1795936508420,
		StoreHost:      netip.MustParseAddrPort("127.0.0.1:30911"),
		ReconsumeTimes: 2,
		Body:           body,
		Topic:          "TopicTest",
		Properties:     "TAGS\x01TagA\x02KEYS\x01k1 k2\x02",
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		r := sampleRecord()
		if v6 {
			r.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1234")
			r.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:10911")
		}
		b := AppendRecord(nil, r)
		got, n, err := DecodeRecord(append(b, 0xFF, 0xFF))
		if err != nil {
			t.Fatal(err)
		}
		if n != len(b) || int(got.TotalSize) != len(b) {
			t.Fatalf("size %d/%d want %d", n, got.TotalSize, len(b))
		}
		want := *r
		want.TotalSize = int32(len(b))
		want.Magic = MagicV1
		if v6 {
			want.SysFlag |= SysFlagBornHostV6 | SysFlagStoreHostV6
		}
		if !reflect.DeepEqual(&want, got) {
			t.Fatalf("round trip\nwant %+v\n got %+v", &want, got)
		}
		if AppendRecord(nil, got) == nil || !bytes.Equal(AppendRecord(nil, got), b) {
			t.Fatal("re-encode differs")
		}
	}
}

// The layout of §4.1: a 10-byte body, 9-byte topic, 86-byte properties is 196 bytes.
func TestRecordSizeMatchesJava(t *testing.T) {
	if got := RecordSize(10, 9, 86, false, false); got != 196 {
		t.Fatalf("RecordSize = %d, want 196", got)
	}
	r := sampleRecord()
	b := AppendRecord(nil, r)
	if len(b) != RecordSize(len(r.Body), len(r.Topic), len(r.Properties), false, false) {
		t.Fatal("encoded size differs from RecordSize")
	}
	// field positions
	if ts, ok := storeTimestampOf(b); !ok || ts != r.StoreTimestamp {
		t.Fatalf("store timestamp at fixed position: %d", ts)
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	b := AppendRecord(nil, sampleRecord())
	if _, _, err := DecodeRecord(b[:5]); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("short: %v", err)
	}
	if _, _, err := DecodeRecord(b[:len(b)-1]); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("truncated: %v", err)
	}
	flip := append([]byte(nil), b...)
	flip[90] ^= 0x01 // inside the body
	_, _, err := DecodeRecord(flip)
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || !strings.Contains(ce.Reason, "crc") {
		t.Fatalf("bit flip: %v", err)
	}
	bad := append([]byte(nil), b...)
	bad[4] = 0
	if _, _, err := DecodeRecord(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("magic: %v", err)
	}
	zero := make([]byte, 200)
	if _, _, err := DecodeRecord(zero); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("zeros: %v", err)
	}
	blank := AppendBlank(nil, 64)
	r, n, err := DecodeRecord(blank)
	if err != nil || !r.IsBlank() || n != 64 {
		t.Fatalf("blank: %v %v %d", r, err, n)
	}
}

func TestProperties(t *testing.T) {
	m := ParseProperties("TAGS\x01TagA\x02KEYS\x01k1 k2\x02EMPTY\x01\x02\x01v\x02junk\x02")
	want := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("%v", m)
	}
	s := string(AppendProperties(nil, want))
	if s != "KEYS\x01k1 k2\x02TAGS\x01TagA\x02" {
		t.Fatalf("%q", s)
	}
	if !reflect.DeepEqual(ParseProperties(s), want) {
		t.Fatal("round trip")
	}
	if v, ok := lookupProperty([]byte(s), "TAGS"); !ok || v != "TagA" {
		t.Fatal("lookup")
	}
}

func TestJavaStringHash(t *testing.T) {
	cases := map[string]int32{
		"":      0,
		"TagA":  2598919, // value the Go client heartbeats for TagA
		"hello": 99162322,
		"é":     233,
		"😀":     1772899, // surrogate pair: 31*0xD83D + 0xDE00
		"ThisIsALongerStringThatOverflows": func() int32 {
			var h int32
			for _, c := range "ThisIsALongerStringThatOverflows" {
				h = 31*h + int32(c)
			}
			return h
		}(),
	}
	for s, want := range cases {
		if got := JavaStringHash(s); got != want {
			t.Errorf("hash(%q) = %d want %d", s, got, want)
		}
		if got := javaHashBytes([]byte(s)); got != want {
			t.Errorf("bytes hash(%q) = %d want %d", s, got, want)
		}
	}
	if DefaultTagsCode("TAGS\x01TagA\x02") != 2598919 || DefaultTagsCode("") != 0 {
		t.Fatal("tags code")
	}
}

func TestOffsetMsgID(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:30911")
	id := OffsetMsgID(host, 0)
	if id != "7F000001000078BF0000000000000000" {
		t.Fatalf("%s", id)
	}
	h, off, err := ParseOffsetMsgID(OffsetMsgID(host, 123456789))
	if err != nil || h != host || off != 123456789 {
		t.Fatalf("%v %d %v", h, off, err)
	}
	h6 := netip.MustParseAddrPort("[2001:db8::2]:10911")
	id6 := OffsetMsgID(h6, 99)
	if len(id6) != 56 {
		t.Fatal(len(id6))
	}
	if h, off, err := ParseOffsetMsgID(id6); err != nil || h != h6 || off != 99 {
		t.Fatalf("%v %d %v", h, off, err)
	}
	for _, bad := range []string{"", "XYZ", strings.Repeat("G", 32)} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrBadMsgID) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestValidateTopic(t *testing.T) {
	if err := ValidateTopic(""); !errors.Is(err, ErrTopicEmpty) {
		t.Fatal(err)
	}
	if err := ValidateTopic(strings.Repeat("a", 128)); !errors.Is(err, ErrTopicTooLong) {
		t.Fatal(err)
	}
	if err := ValidateTopic(strings.Repeat("a", 127)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a b", "a/b", "a.b", "tópico", "a\x00"} {
		if err := ValidateTopic(bad); !errors.Is(err, ErrTopicInvalid) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if err := ValidateTopic("%RETRY%cg|x-y_z9"); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(AppendRecord(nil, sampleRecord()))
	f.Add(AppendBlank(nil, 16))
	r := sampleRecord()
	r.BornHost = netip.MustParseAddrPort("[::1]:1")
	f.Add(AppendRecord(nil, r))
	f.Add([]byte{0, 0, 0, 91, 0xDA, 0xA3, 0x20, 0xA7})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, n, err := DecodeRecord(b)
		if _, err2 := parseMeta(b); (err == nil) != (err2 == nil) && !(err != nil && errors.Is(err, ErrCorrupt) && strings.Contains(err.Error(), "crc")) {
			t.Fatalf("DecodeRecord %v, parseMeta %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIncomplete) {
				t.Fatalf("unexpected error type %v", err)
			}
			return
		}
		if rec.IsBlank() {
			if n < BlankMinLength {
				t.Fatalf("blank length %d", n)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("bad length %d", n)
		}
		re := AppendRecord(nil, rec)
		rec2, n2, err := DecodeRecord(re)
		if err != nil || n2 != len(re) {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(rec.Body, rec2.Body) && len(rec.Body)+len(rec2.Body) > 0 || rec.Topic != rec2.Topic || rec.Properties != rec2.Properties || rec.QueueOffset != rec2.QueueOffset {
			t.Fatal("re-decode differs")
		}
	})
}

// FuzzParseMeta checks that parseMeta's fixed-offset reading of V1 records says exactly what
// the decoder says, for every input: the same fields, or the same error (checkParseMeta).
func FuzzParseMeta(f *testing.F) {
	f.Add(AppendRecord(nil, sampleRecord()))
	r := sampleRecord()
	r.BornHost = netip.MustParseAddrPort("[::1]:1")
	f.Add(AppendRecord(nil, r))
	r.StoreHost = netip.MustParseAddrPort("[::2]:2")
	f.Add(AppendRecord(nil, r))
	r.Body, r.Topic, r.Properties = nil, "", ""
	f.Add(AppendRecord(nil, r))
	f.Add(AppendBlank(nil, 16))
	for _, b := range parseMetaSeeds()[:64] {
		f.Add(b)
	}
	f.Fuzz(checkParseMeta)
}

// parseMeta reads a V1 record without a check per field: it must not allocate, and it finds
// what the record holds with either host family.
func TestParseMetaV1Fields(t *testing.T) {
	for _, hosts := range [][2]string{{"10.0.0.1:5", "10.0.0.2:6"}, {"[::1]:5", "10.0.0.2:6"}, {"10.0.0.1:5", "[::2]:6"}, {"[::1]:5", "[::2]:6"}} {
		r := sampleRecord()
		r.BornHost, r.StoreHost = netip.MustParseAddrPort(hosts[0]), netip.MustParseAddrPort(hosts[1])
		r.QueueOffset, r.PhysicalOffset, r.StoreTimestamp, r.QueueID = 77, 1<<40, 1700000000123, 5
		b := AppendRecord(nil, r)
		b = append(b, 1, 2, 3) // the next record's bytes follow
		m, err := parseMeta(b[:len(b)-3])
		require.NoError(t, err, hosts)
		require.Equal(t, int32(len(b)-3), m.size)
		require.Equal(t, r.QueueOffset, m.queueOffset)
		require.Equal(t, r.PhysicalOffset, m.physOffset)
		require.Equal(t, r.StoreTimestamp, m.storeTimestamp)
		require.Equal(t, r.QueueID, m.queueID)
		require.Equal(t, r.BodyCRC, m.bodyCRC)
		require.Equal(t, r.Body, m.body)
		require.Equal(t, r.Topic, string(m.topic))
		require.Equal(t, r.Properties, string(m.props))
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = parseMeta(b) }))
	}
}

// FuzzLookupProperty checks that the name search finds what splitting every pair finds, for
// any properties bytes and names with or without separators.
func FuzzLookupProperty(f *testing.F) {
	f.Add([]byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02"), "KEYS")
	f.Add([]byte("XKEYS\x01a\x02KEYS\x01\x02A\x01KEYS\x01b\x02KEYS\x01c"), "KEYS")
	f.Add([]byte("\x01KEYS\x01v\x02KEYS"), "KEYS")
	f.Add([]byte("K\x01\x01v\x02"), "K\x01")
	f.Add([]byte("UNIQ_KEY\x01AC1100\x02"), "UNIQ_KEY")
	f.Fuzz(func(t *testing.T, props []byte, name string) {
		v, ok := lookupPropertyBytes(props, name)
		v2, ok2 := lookupPropertySplit(props, name)
		if ok != ok2 || !bytes.Equal(v, v2) {
			t.Fatalf("search %q %v, split %q %v", v, ok, v2, ok2)
		}
	})
}

func TestLookupPropertyNoAlloc(t *testing.T) {
	props := []byte("UNIQ_KEY\x01AC11000100002A9F0000000000000001\x02WAIT\x01true\x02TAGS\x01TagA\x02")
	long, longer := strings.Repeat("N", 32), strings.Repeat("N", 40)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = lookupPropertyBytes(props, "KEYS")
		_, _ = lookupPropertyBytes(props, "TAGS")
		_, _ = lookupPropertyBytes(props, long)
		_, _ = lookupPropertyBytes(props, longer)
	}))
	v, ok := lookupPropertyBytes(props, "TAGS")
	require.True(t, ok)
	require.Equal(t, "TagA", string(v))
}

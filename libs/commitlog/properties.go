package commitlog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	propNameSep  = '\x01'
	propPairSep  = '\x02'
	PropertyTags = "TAGS"
)

// ParseProperties splits a RocketMQ properties string (name 0x01 value 0x02,
// repeated). Pairs with an empty name or value are dropped, as Java does.
func ParseProperties(s string) map[string]string {
	m := make(map[string]string)
	for len(s) > 0 {
		var pair string
		if i := strings.IndexByte(s, propPairSep); i >= 0 {
			pair, s = s[:i], s[i+1:]
		} else {
			pair, s = s, ""
		}
		k, v, ok := strings.Cut(pair, string(propNameSep))
		if !ok || k == "" || v == "" {
			continue
		}
		m[k] = v
	}
	return m
}

// AppendProperties appends m as a properties string, names sorted, each pair
// followed by 0x02. Empty names and values are skipped.
func AppendProperties(dst []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if k != "" && v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		dst = append(dst, k...)
		dst = append(dst, propNameSep)
		dst = append(dst, m[k]...)
		dst = append(dst, propPairSep)
	}
	return dst
}

// lookupPropertyBytes finds one property's value without allocating: the value of the first
// pair whose name is name and whose value is not empty, as splitting the pairs would find.
// It looks for the name's first byte (vectorised) where a name can start instead of
// splitting every pair: the dispatcher looks up several properties of every record, most of
// them absent.
func lookupPropertyBytes(props []byte, name string) ([]byte, bool) {
	if name == "" || strings.IndexByte(name, propNameSep) >= 0 || strings.IndexByte(name, propPairSep) >= 0 {
		return lookupPropertySplit(props, name) // no pair can match such a name by its bytes alone
	}
	for off := 0; ; {
		i := indexByte(props[off:], name[0])
		if i < 0 {
			return nil, false
		}
		i += off
		v := i + len(name) // the separator, then the value
		off = i + 1
		// A pair's name starts the properties or follows a pair separator, and ends at
		// the pair's first name separator (name holds neither separator).
		if i > 0 && props[i-1] != propPairSep || v >= len(props) || props[v] != propNameSep || string(props[i:v]) != name {
			continue
		}
		val := props[v+1:]
		if e := indexByte(val, propPairSep); e >= 0 {
			val = val[:e]
		}
		if len(val) == 0 {
			continue // an empty value: the pair does not count
		}
		return val, true
	}
}

// lookupPropertySplit is lookupPropertyBytes by splitting every pair.
func lookupPropertySplit(props []byte, name string) ([]byte, bool) {
	for len(props) > 0 {
		var pair []byte
		if i := indexByte(props, propPairSep); i >= 0 {
			pair, props = props[:i], props[i+1:]
		} else {
			pair, props = props, nil
		}
		j := indexByte(pair, propNameSep)
		if j <= 0 || j == len(pair)-1 {
			continue
		}
		if string(pair[:j]) == name {
			return pair[j+1:], true
		}
	}
	return nil, false
}

// javaHashBytes is JavaStringHash over UTF-8 bytes.
func javaHashBytes(b []byte) int32 {
	var h int32
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// lookupProperty finds one property without building a map.
func lookupProperty(props []byte, name string) (string, bool) {
	v, ok := lookupPropertyBytes(props, name)
	return string(v), ok
}

// indexByte is bytes.IndexByte (vectorised: the dispatcher scans every
// record's properties for the keys, tags and delay fields it indexes).
func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }

// JavaStringHash is Java's String.hashCode over the UTF-16 code units of s
// (h = 31*h + c, wrapping int32); invalid UTF-8 counts as U+FFFD.
func JavaStringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// DefaultTagsCode is the consume-queue tags code: Java hashCode of TAGS,
// sign-extended, 0 when the message has no tags.
func DefaultTagsCode(props string) int64 {
	if t, ok := lookupProperty([]byte(props), PropertyTags); ok {
		return int64(JavaStringHash(t))
	}
	return 0
}

// OffsetMsgID builds RocketMQ's offset message id: upper-case hex of the store
// host address (4 or 16 bytes), port (int32) and physical offset (int64).
func OffsetMsgID(storeHost netip.AddrPort, physOffset int64) string {
	var out [56]byte
	return string(AppendOffsetMsgID(out[:0], storeHost, physOffset))
}

// AppendOffsetMsgID appends OffsetMsgID's text to dst (for an answer written straight into
// its frame, without a string per message).
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, physOffset int64) []byte {
	var buf [28]byte
	b := appendHost(buf[:0], storeHost)
	b = binary.BigEndian.AppendUint64(b, uint64(physOffset))
	const digits = "0123456789ABCDEF"
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&0xF])
	}
	return dst
}

// ParseOffsetMsgID is the inverse of OffsetMsgID (32 hex chars for IPv4, 56 for IPv6).
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != 32 && len(id) != 56 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: length %d", ErrBadMsgID, len(id))
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %v", ErrBadMsgID, err)
	}
	d := decoder{b: b}
	host := d.host(len(b) == 28)
	off := int64(d.u64())
	if d.err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %v", ErrBadMsgID, d.err)
	}
	return host, off, nil
}

// validProps reports whether a stored properties string is well formed: empty,
// or ending with 0x02 and free of NUL bytes. This also catches a record whose
// tail was torn to zeros by a crash.
func validProps(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	if p[len(p)-1] != propPairSep {
		return false
	}
	return indexByte(p, 0) < 0
}

// validPropsString is validProps for a message's properties as Append takes them: converting
// the string to bytes would copy it, an allocation per append above 32 bytes.
func validPropsString(p string) bool {
	if len(p) == 0 {
		return true
	}
	if p[len(p)-1] != propPairSep {
		return false
	}
	return strings.IndexByte(p, 0) < 0
}

func validTopicBytes(t []byte) bool {
	if len(t) == 0 || len(t) > MaxTopicLength {
		return false
	}
	for _, c := range t {
		if !topicChar(c) {
			return false
		}
	}
	return true
}

func topicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '%' || c == '|' || c == '-' || c == '_'
}

// ValidateTopic applies RocketMQ's topic rules: non-empty, at most 127
// bytes, only letters, digits, '%', '|', '-' and '_'.
func ValidateTopic(topic string) error {
	if topic == "" {
		return ErrTopicEmpty
	}
	if len(topic) > MaxTopicLength {
		return fmt.Errorf("%w: %d bytes", ErrTopicTooLong, len(topic))
	}
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		if !topicChar(c) {
			return fmt.Errorf("%w: %q at byte %d", ErrTopicInvalid, c, i)
		}
	}
	return nil
}

// Props is a record's properties as stored (name 0x01 value 0x02, repeated),
// read in place: the dispatcher hands it to Config.TagsCode so that a hook
// looks up the one or two properties it needs instead of parsing every record's
// properties into a map. It aliases the record and is valid only during the
// call.
type Props []byte

// Get returns the value of name (copied), as ParseProperties would.
func (p Props) Get(name string) (string, bool) { return lookupProperty(p, name) }

// Has reports whether name has a value, without allocating.
func (p Props) Has(name string) bool {
	_, ok := lookupPropertyBytes(p, name)
	return ok
}

// JavaHash returns Java's String.hashCode of name's value, without allocating.
func (p Props) JavaHash(name string) (int32, bool) {
	v, ok := lookupPropertyBytes(p, name)
	if !ok {
		return 0, false
	}
	return javaHashBytes(v), true
}

// Map parses every property (ParseProperties).
func (p Props) Map() map[string]string { return ParseProperties(string(p)) }

package route

import (
	"sort"
	"strconv"
	"unicode/utf8"
)

// appendString writes s as a JSON string. Unlike encoding/json it does not
// escape <, > and &, matching what Java writes; invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// AppendString writes s as a compact JSON string (without HTML escaping).
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

func appendKey(dst []byte, k string) []byte {
	dst = appendString(dst, k)
	return append(dst, ':')
}

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

func appendBool(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }

// AppendStringMap writes m as a JSON object with sorted keys ({} when empty).
func AppendStringMap(dst []byte, m map[string]string) []byte {
	dst = append(dst, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = appendString(dst, m[k])
	}
	return append(dst, '}')
}

// AppendStringList writes l as a JSON array ([] when empty).
func AppendStringList(dst []byte, l []string) []byte {
	dst = append(dst, '[')
	for i, s := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// AppendIntKeyMap writes m as a JSON object whose keys are the quoted
// decimal integers in ascending numeric order ({} when empty). This is the
// standard-JSON form of fastjson's Map<Integer|Long, Long>.
func AppendIntKeyMap[K ~int32 | ~int64, V ~int32 | ~int64](dst []byte, m map[K]V) []byte {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = appendInt(dst, int64(k))
		dst = append(dst, '"', ':')
		dst = appendInt(dst, int64(m[k]))
	}
	return append(dst, '}')
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

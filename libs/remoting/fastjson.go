package remoting

import (
	"bytes"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// The fast JSON header path.
//
// Every request a broker serves carries a JSON header such as the one rocketmq-client-go
// sends for SEND_MESSAGE_V2 (encoding/json, keys in struct order, the properties separators
// as \u0001 and \u0002):
//
//	{"code":310,"language":"GO","version":317,"opaque":7,"flag":0,"remark":"",
//	 "extFields":{"a":"bench-pg","b":"TopicTest","e":"3","i":"TAGS\u0001a\u0002",...}}
//
// or the one a Java client sends (fastjson, keys sorted, one extra key):
//
//	{"code":310,"extFields":{...},"flag":0,"language":"JAVA","opaque":7,
//	 "serializeTypeCurrentRPC":"JSON","version":453}
//
// decodeJSONHeaderFast takes exactly these shapes, in any key order and with any JSON
// whitespace: integers as plain decimal numbers, language and remark as strings (or null),
// extFields as an object of string (or null) values, unknown top-level keys holding a string,
// number, boolean or null. Anything else (quoted or fractional integers, numbers inside
// extFields, nested values, escapes inside top-level keys, malformed input) makes it give up
// and the generic decoder (json.go), the reference, decides. FuzzJSONHeaderFast checks the two
// agree on every input the fast path accepts.
//
// Its savings: a header of up to sharedHeaderMax bytes is converted to one string and every
// unescaped key and value of the command is a substring of it (one allocation instead of one
// per field); the ext map is sized from the header before the first insert; no closures.

// sharedHeaderMax is the largest header whose strings share one backing string. A handler that
// keeps one value (a topic name in a table) keeps the whole backing alive, so above this size
// each string gets its own copy and a peer cannot pin more than this per retained value.
const sharedHeaderMax = 4 << 10

// maxExtHint caps the ext map's initial size; the count comes from the peer's bytes.
const maxExtHint = 64

// fastScanner walks a JSON header; s is string(b) when the header is shared, else "". A
// shared header's string is made when the first string is read (share), so that a header whose
// code is read first can take it from the connection's arena (arena.go) when its code decodes
// into pairs.
type fastScanner struct {
	b         []byte
	s         string
	i         int
	lazy      bool         // the header is shared and s is not made yet
	arena     *stringArena // where an inline request's header string comes from (nil: its own copy)
	fromArena bool         // the code read so far is one whose header comes from arena
	perValue  bool         // a value of its own comes from arena (the memo's re-read, headermemo.go)
	rec       *headerMemo  // records where each value lies, for the next header (nil: not kept)
}

// share makes s, the one copy of the header every string of it slices.
func (f *fastScanner) share() {
	f.lazy = false
	if f.fromArena {
		f.s = f.arena.string(f.b)
		return
	}
	f.s = string(f.b)
}

func (f *fastScanner) ws() {
	for f.i < len(f.b) {
		switch f.b[f.i] {
		case ' ', '\t', '\n', '\r':
			f.i++
		default:
			return
		}
	}
}

// topInt reads the integer of a top-level field of the given span kind, in that field's
// range (topIntRange), and notes where it lies.
func (f *fastScanner) topInt(kind int32) (int64, bool) {
	f.ws()
	start := f.i
	lo, hi := topIntRange(kind)
	n, ok := f.int(lo, hi)
	if ok {
		f.note(kind, start)
	}
	return n, ok
}

// topIntRange is the range of a top-level integer field: version is a short, the others ints.
func topIntRange(kind int32) (lo, hi int64) {
	if kind == spanVersion {
		return math.MinInt16, math.MaxInt16
	}
	return math.MinInt32, math.MaxInt32
}

// note records, when the decode is being kept (rec), that the top-level value kind just read
// lies at [start, f.i); start -1: it was null, which a later header must repeat byte for byte.
func (f *fastScanner) note(kind int32, start int) {
	if f.rec != nil {
		f.rec.noteTop(kind, start, f.i)
	}
}

// notePair records, when the decode is being kept, that the next string value of extFields
// lies at [start, f.i).
func (f *fastScanner) notePair(start int) {
	if f.rec != nil {
		f.rec.notePair(start, f.i)
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (f *fastScanner) peek() byte {
	f.ws()
	if f.i >= len(f.b) {
		return 0
	}
	return f.b[f.i]
}

// literal consumes word at f.i.
func (f *fastScanner) literal(word string) bool {
	if !bytes.HasPrefix(f.b[f.i:], []byte(word)) {
		return false
	}
	f.i += len(word)
	return true
}

// rawKey returns the bytes of a string without escapes (f.i at the opening quote).
func (f *fastScanner) rawKey() ([]byte, bool) {
	if f.peek() != '"' {
		return nil, false
	}
	start := f.i + 1
	for j := start; j < len(f.b); j++ {
		switch f.b[j] {
		case '"':
			f.i = j + 1
			return f.b[start:j], true
		case '\\':
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value (f.i at the opening quote). Escapes are decoded by the generic
// parser's code, so both paths turn the same bytes into the same string.
func (f *fastScanner) str() (string, bool) {
	if f.peek() != '"' {
		return "", false
	}
	start := f.i + 1
	for j := start; j < len(f.b); j++ {
		switch f.b[j] {
		case '"':
			f.i = j + 1
			if f.lazy {
				f.share()
			}
			if f.s != "" {
				return f.s[start:j], true
			}
			if f.perValue {
				return f.arena.string(f.b[start:j]), true
			}
			return string(f.b[start:j]), true
		case '\\':
			if v, ok := f.strEscaped(start, j); ok {
				return v, true
			}
			// Surrogate pairs and malformed escapes: the generic parser decides.
			p := jsonParser{b: f.b, i: f.i}
			v := p.str()
			if p.err != nil {
				return "", false
			}
			f.i = p.i
			return v, true
		}
	}
	return "", false
}

// strEscaped finishes a string whose first escape is at j (the contents start at start), as
// the generic parser's strEscaped does, for the escapes clients send: a message's properties
// carry their separators as \u0001 and \u0002. It copies the runs between escapes whole,
// and an inline request's value comes from the connection's arena instead of an allocation of
// its own. It gives up (false, f.i unchanged) on a surrogate escape or anything malformed,
// which the generic parser then decides; FuzzJSONHeaderFast checks the two agree.
func (f *fastScanner) strEscaped(start, j int) (string, bool) {
	var stack [256]byte
	out := append(stack[:0], f.b[start:j]...)
	b := f.b
	for i := j; i < len(b); {
		switch c := b[i]; c {
		case '"':
			f.i = i + 1
			if f.fromArena {
				return f.arena.string(out), true
			}
			return string(out), true
		case '\\':
			if i+1 >= len(b) {
				return "", false
			}
			e := b[i+1]
			if c, ok := simpleEscape(e); ok {
				out = append(out, c)
			} else if r, ok := hexVal(b[i+2:]); e == 'u' && ok && !utf16.IsSurrogate(r) {
				out = utf8.AppendRune(out, r)
				i += 4
			} else {
				return "", false
			}
			i += 2
		default:
			k := i + 1
			for k < len(b) && b[k] != '"' && b[k] != '\\' {
				k++
			}
			out = append(out, b[i:k]...)
			i = k
		}
	}
	return "", false
}

// int reads a plain decimal integer in [lo, hi]: an optional '-' and at most 18 digits, not
// followed by a fraction or an exponent.
func (f *fastScanner) int(lo, hi int64) (int64, bool) {
	f.ws()
	j := f.i
	neg := j < len(f.b) && f.b[j] == '-'
	if neg {
		j++
	}
	start := j
	var n int64
	for j < len(f.b) && f.b[j] >= '0' && f.b[j] <= '9' {
		n = n*10 + int64(f.b[j]-'0')
		j++
	}
	if j == start || j-start > 18 {
		return 0, false
	}
	if j < len(f.b) {
		switch f.b[j] {
		case '.', 'e', 'E', '+', '-':
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n < lo || n > hi {
		return 0, false
	}
	f.i = j
	return n, true
}

// skipSimple consumes a string, number, boolean or null.
func (f *fastScanner) skipSimple() bool {
	switch c := f.peek(); {
	case c == '"':
		_, ok := f.str()
		return ok
	case c == 't':
		return f.literal("true")
	case c == 'f':
		return f.literal("false")
	case c == 'n':
		return f.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		p := jsonParser{b: f.b, i: f.i}
		p.numberToken()
		if p.err != nil {
			return false
		}
		f.i = p.i
		return true
	}
	return false
}

// extObject fills ext from an object of string or null values.
func (f *fastScanner) extObject(ext map[string]string) bool {
	return f.extStrings(func(k, v string) { ext[k] = v })
}

// extStrings reads an extFields object (f.i at '{') of string or null values, handing each
// string field to add (keys and values as f.str gives them: slices of the shared header
// string where it has one).
func (f *fastScanner) extStrings(add func(k, v string)) bool {
	f.i++ // '{'
	if f.peek() == '}' {
		f.i++
		return true
	}
	for {
		k, ok := f.str()
		if !ok || f.peek() != ':' {
			return false
		}
		f.i++
		switch f.peek() {
		case '"':
			start := f.i
			v, ok := f.str()
			if !ok {
				return false
			}
			f.notePair(start)
			add(k, v)
		case 'n':
			if !f.literal("null") {
				return false
			}
		default:
			return false
		}
		switch f.peek() {
		case ',':
			f.i++
		case '}':
			f.i++
			return true
		default:
			return false
		}
	}
}

// extHint estimates the ext field count from the quotes in the header: each field has four,
// and the top level holds about four fields' worth (seven keys, the language and the remark),
// so a 14-field SEND_MESSAGE gets a map of 16 slots instead of growing twice or getting 32.
func extHint(h []byte) int {
	return min(max(bytes.Count(h, []byte{'"'})/4-4, 0), maxExtHint)
}

// decodeJSONHeaderFast decodes h, or reports false when the generic decoder must decide.
func decodeJSONHeaderFast(h []byte) (*Command, bool) {
	c := &Command{}
	if !decodeJSONHeaderFastInto(c, h, nil, nil) {
		return nil, false
	}
	return c, true
}

// decodeJSONHeaderFastInto decodes h into c, a zero Command; on false c holds a partial
// decode and must be reset. When pairsFor reports true for the code, read before the
// extFields, those go into c's pairs instead of a map (extpairs.go), and the header's strings
// come from arena when it is not nil and the code was read before any string (arena.go).
func decodeJSONHeaderFastInto(c *Command, h []byte, pairsFor func(code int32) bool, arena *stringArena) bool {
	return decodeJSONHeaderFastRec(c, h, pairsFor, arena, nil)
}

// decodeJSONHeaderFastRec is decodeJSONHeaderFastInto that, when rec is not nil, also records
// where each value of h lies and, on success, keeps the decode in rec for the next header of
// the connection (headermemo.go).
func decodeJSONHeaderFastRec(c *Command, h []byte, pairsFor func(code int32) bool, arena *stringArena, rec *headerMemo) bool {
	codeSeen := false
	f := fastScanner{b: h, lazy: len(h) <= sharedHeaderMax, arena: arena, rec: rec}
	if rec != nil {
		rec.begin()
	}
	var ext map[string]string
	if f.peek() != '{' {
		return false
	}
	f.i++
	if f.peek() == '}' {
		f.i++
	} else {
		for {
			key, ok := f.rawKey()
			if !ok || f.peek() != ':' {
				return false
			}
			f.i++
			switch string(key) {
			case "code":
				n, ok := f.topInt(spanCode)
				if !ok {
					return false
				}
				c.Code = int32(n)
				codeSeen = true
				f.fromArena = arena != nil && f.lazy && pairsFor != nil && pairsFor(c.Code)
			case "version":
				n, ok := f.topInt(spanVersion)
				if !ok {
					return false
				}
				c.Version = int16(n)
			case "opaque":
				n, ok := f.topInt(spanOpaque)
				if !ok {
					return false
				}
				c.Opaque = int32(n)
			case "flag":
				n, ok := f.topInt(spanFlag)
				if !ok {
					return false
				}
				c.Flag = int32(n)
			case "language", "remark":
				kind := spanRemark
				if key[0] == 'l' {
					kind = spanLanguage
				}
				if f.peek() == 'n' {
					if !f.literal("null") {
						return false
					}
					f.note(kind, -1)
					break
				}
				start := f.i
				v, ok := f.str()
				if !ok {
					return false
				}
				f.note(kind, start)
				if kind == spanLanguage {
					c.Language = v
				} else {
					c.Remark = v
				}
			case "extFields":
				switch f.peek() {
				case 'n':
					if !f.literal("null") {
						return false
					}
				case '{':
					if ext == nil && (c.pairs != nil || codeSeen && pairsFor != nil && pairsFor(c.Code)) {
						if !f.extPairs(c) {
							return false
						}
						break
					}
					if ext == nil {
						ext = newExtMap(extHint(h))
					}
					if !f.extObject(ext) {
						return false
					}
				default:
					return false
				}
			default:
				if !f.skipSimple() {
					return false
				}
			}
			switch f.peek() {
			case ',':
				f.i++
				continue
			case '}':
				f.i++
			default:
				return false
			}
			break
		}
	}
	if f.peek() != 0 {
		return false
	}
	if c.pairs != nil { // (a repeated extFields appends to them: the last value wins)
		if rec != nil {
			rec.commit(c, h, arena)
		}
		return true
	}
	if ext == nil {
		ext = make(map[string]string)
	}
	c.ExtFields = ext
	return true
}

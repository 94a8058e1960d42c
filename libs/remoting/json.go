package remoting

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting inside skipped values so hostile input cannot exhaust the stack.
const maxJSONDepth = 64

// jsonParser is a small sticky-error scanner for the remoting JSON header. It is lenient where
// peers differ (unknown keys, null values, numbers or booleans inside extFields, raw control
// characters in strings) and strict about structure.
type jsonParser struct {
	b   []byte
	i   int
	err error
}

func (p *jsonParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: json header at byte %d: %s", ErrMalformed, p.i, fmt.Sprintf(format, args...))
	}
}

func (p *jsonParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *jsonParser) peek() byte {
	p.ws()
	if p.err != nil || p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

func (p *jsonParser) expect(ch byte) {
	if p.peek() != ch {
		p.fail("expected %q", ch)
		return
	}
	p.i++
}

// literal consumes true/false/null.
func (p *jsonParser) literal(word string) {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.fail("bad literal")
		return
	}
	p.i += len(word)
}

// str parses a JSON string starting at the opening quote.
func (p *jsonParser) str() string {
	if p.peek() != '"' {
		p.fail("expected string")
		return ""
	}
	p.i++
	start := p.i
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '"':
			s := string(p.b[start:p.i])
			p.i++
			return s
		case '\\':
			return p.strEscaped(start)
		}
		p.i++
	}
	p.fail("unterminated string")
	return ""
}

func hexVal(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// simpleEscape is the byte a one-character escape \e stands for.
func simpleEscape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// strEscaped finishes a string that contains escapes; p.i is at the first backslash.
func (p *jsonParser) strEscaped(start int) string {
	// Short strings (a message's properties) are unescaped on the stack: one allocation, the
	// returned string.
	var stack [256]byte
	out := append(stack[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			p.i++
			return string(out)
		}
		if c != '\\' {
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			break
		}
		e := p.b[p.i+1]
		p.i += 2
		if c, ok := simpleEscape(e); ok {
			out = append(out, c)
			continue
		}
		switch e {
		case 'u':
			r, ok := hexVal(p.b[p.i:])
			if !ok {
				p.fail("bad \\u escape")
				return ""
			}
			p.i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					if lo, ok := hexVal(p.b[p.i+2:]); ok {
						if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
							p.i += 6
							r2 = dec
						}
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			p.fail("bad escape \\%c", e)
			return ""
		}
	}
	p.fail("unterminated string")
	return ""
}

// numberToken consumes a JSON number and returns its text.
func (p *jsonParser) numberToken() []byte {
	p.ws()
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	tok := p.b[start:p.i]
	if len(tok) == 0 {
		p.fail("expected number")
		return nil
	}
	if _, err := strconv.ParseFloat(string(tok), 64); err != nil {
		p.fail("bad number %q", tok)
		return nil
	}
	return tok
}

// intValue parses an integer field in [lo, hi]; it also accepts a quoted integer and null (0).
func (p *jsonParser) intValue(lo, hi int64) int64 {
	var tok []byte
	switch c := p.peek(); {
	case c == 'n':
		p.literal("null")
		return 0
	case c == '"':
		tok = []byte(p.str())
	default:
		tok = p.numberToken()
	}
	if p.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(tok), 64)
		if ferr != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
			p.fail("bad integer %q", tok)
			return 0
		}
		n = int64(f)
	}
	if n < lo || n > hi {
		p.fail("integer %d out of range", n)
		return 0
	}
	return n
}

// skipValue consumes any JSON value.
func (p *jsonParser) skipValue(depth int) {
	if depth > maxJSONDepth {
		p.fail("nesting too deep")
		return
	}
	switch c := p.peek(); c {
	case '"':
		p.str()
	case '{':
		p.i++
		if p.peek() == '}' {
			p.i++
			return
		}
		for p.err == nil {
			p.str()
			p.expect(':')
			p.skipValue(depth + 1)
			switch p.peek() {
			case ',':
				p.i++
			case '}':
				p.i++
				return
			default:
				p.fail("expected , or }")
			}
		}
	case '[':
		p.i++
		if p.peek() == ']' {
			p.i++
			return
		}
		for p.err == nil {
			p.skipValue(depth + 1)
			switch p.peek() {
			case ',':
				p.i++
			case ']':
				p.i++
				return
			default:
				p.fail("expected , or ]")
			}
		}
	case 't':
		p.literal("true")
	case 'f':
		p.literal("false")
	case 'n':
		p.literal("null")
	default:
		p.numberToken()
	}
}

// object walks the members of an object, calling member for each key with p positioned at
// the value; member must consume the value.
func (p *jsonParser) object(member func(key string)) {
	p.expect('{')
	if p.err != nil {
		return
	}
	if p.peek() == '}' {
		p.i++
		return
	}
	for p.err == nil {
		key := p.str()
		p.expect(':')
		if p.err != nil {
			return
		}
		member(key)
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return
		default:
			p.fail("expected , or }")
		}
	}
}

// extValue reads one extFields value as a string: strings as is, numbers by their text,
// booleans as "true"/"false", nested values by their raw JSON text. ok is false for null.
func (p *jsonParser) extValue() (v string, ok bool) {
	switch c := p.peek(); c {
	case '"':
		return p.str(), true
	case 'n':
		p.literal("null")
		return "", false
	case 't':
		p.literal("true")
		return "true", true
	case 'f':
		p.literal("false")
		return "false", true
	case '{', '[':
		start := p.i
		p.skipValue(1)
		return string(p.b[start:p.i]), true
	default:
		return string(p.numberToken()), true
	}
}

func decodeJSONHeader(h []byte) (*Command, error) {
	p := &jsonParser{b: h}
	c := &Command{ExtFields: make(map[string]string)}
	p.object(func(key string) {
		switch key {
		case "code":
			c.Code = int32(p.intValue(math.MinInt32, math.MaxInt32))
		case "version":
			c.Version = int16(p.intValue(math.MinInt16, math.MaxInt16))
		case "opaque":
			c.Opaque = int32(p.intValue(math.MinInt32, math.MaxInt32))
		case "flag":
			c.Flag = int32(p.intValue(math.MinInt32, math.MaxInt32))
		case "language":
			switch p.peek() {
			case '"':
				c.Language = p.str()
			case 'n':
				p.literal("null")
			default:
				c.Language = LanguageName(byte(p.intValue(0, 255)))
			}
		case "remark":
			if p.peek() == 'n' {
				p.literal("null")
				return
			}
			c.Remark = p.str()
		case "extFields":
			if p.peek() == 'n' {
				p.literal("null")
				return
			}
			p.object(func(k string) {
				if v, ok := p.extValue(); ok && p.err == nil {
					c.ExtFields[k] = v
				}
			})
		default:
			p.skipValue(1)
		}
	})
	if p.err == nil && p.peek() != 0 {
		p.fail("trailing bytes after header")
	}
	if p.err != nil {
		return nil, p.err
	}
	return c, nil
}

// scanJSONInt finds `key` followed by ':' and an integer anywhere in b (best effort, for
// headers that did not parse).
func scanJSONInt(b []byte, key string) (int64, bool) {
	for off := 0; off < len(b); {
		j := bytes.Index(b[off:], []byte(key))
		if j < 0 {
			return 0, false
		}
		i := off + j + len(key)
		off = i
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		if i >= len(b) || b[i] != ':' {
			continue
		}
		i++
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		s := i
		if i < len(b) && b[i] == '-' {
			i++
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if n, err := strconv.ParseInt(string(b[s:i]), 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

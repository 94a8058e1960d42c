package remoting

import (
	"encoding/binary"
	"math"
)

// Custom header fields read without a map
//
// A response's custom header normally becomes ExtFields: a map filled by the connection's
// reader, one hash insert per field, for a caller that often reads one or two of them (a
// send's answer: code, queueOffset, msgId). Client.InvokeExt lets such a caller take the
// fields typed instead. The client's reader decodes every frame's header in place first
// (decodeResponseRawInto: the fixed fields, and a check of the extFields object that notes
// its fields), which also gives the answer's opaque. InvokeExt's answer is a copy of the
// frame (detach; the body shares it) keeping the object's bytes, which the caller's goroutine
// then walks into its ExtDecoder (the decoder runs only in the caller's goroutine, after the
// answer arrived, so a call that timed out never races the reader). A caller that wants a map
// gets DecodeFrame's, which builds it in one pass. An InvokeAsync call's decoder gets the noted
// fields straight away on the reader, before its callback, with no copy and no second walk.
// Any frame this path does not take (a binary
// header, escapes in top-level keys, the shapes the fast JSON path gives up on) is decoded
// into a map as usual and the map's fields are fed to the decoder: the decoder sees the same
// fields either way (FuzzResponseExt checks the walk against the map decode). Fields with a
// null value are skipped, as the map decode skips them; a repeated key is fed each time, in
// order (the map keeps the last).

// ExtDecoder receives a response's custom header fields one by one (Client.InvokeExt). key
// and value are unescaped; both are valid only during the call.
type ExtDecoder interface {
	DecodeExt(key, value []byte)
}

// strBytes reads a string (f.i at the opening quote) as bytes: a slice of f.b when it has no
// escapes, else its decoded copy.
func (f *fastScanner) strBytes() ([]byte, bool) {
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
			p := jsonParser{b: f.b, i: f.i}
			v := p.str()
			if p.err != nil {
				return nil, false
			}
			f.i = p.i
			return []byte(v), true
		}
	}
	return nil, false
}

// walkExt reads an object of string or null values (f.i at '{'), the shape extObject takes,
// handing each string field to fn (nil: only check the shape).
func (f *fastScanner) walkExt(fn func(k, v []byte)) bool {
	f.i++ // '{'
	if f.peek() == '}' {
		f.i++
		return true
	}
	for {
		k, ok := f.strBytes()
		if !ok || f.peek() != ':' {
			return false
		}
		f.i++
		switch f.peek() {
		case '"':
			v, ok := f.strBytes()
			if !ok {
				return false
			}
			if fn != nil {
				fn(k, v)
			}
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

// languageName returns the enum name b spells as a constant (no allocation for the names a
// peer sends), or a copy for any other text.
func languageName(b []byte) string {
	for _, n := range languages {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

// decodeResponseRaw decodes a JSON-header frame into a Command whose ExtFields is nil and
// whose rawExt holds the checked extFields object, or returns nil when the fast path does not
// take the frame (the caller then uses DecodeFrame). Its top-level rules are those of
// decodeJSONHeaderFastInto. The Command holds a copy of the frame.
func decodeResponseRaw(frame []byte) *Command {
	if !jsonHeaderFits(frame) {
		return nil
	}
	c, buf := newRawCommand(frame)
	if !decodeResponseRawInto(c, buf, nil) {
		return nil
	}
	return c
}

// jsonHeaderFits reports whether frame has a JSON header that fits it.
func jsonHeaderFits(frame []byte) bool {
	if len(frame) < headerWordSize {
		return false
	}
	word := binary.BigEndian.Uint32(frame)
	return byte(word>>24) == SerializeJSON && int(word&maxHeaderLen) <= len(frame)-headerWordSize
}

// decodeResponseRawInto is decodeResponseRaw into c, without a copy: c's Body and rawExt
// are slices of frame, so c is valid only as long as frame is (an InvokeAsync answer, handed
// to its callback straight from the connection's read buffer). spans, when not nil, gets the
// fields the check of the extFields object met, so that they reach a decoder without a second
// walk. It reports false when the fast path does not take the frame; c and spans are then
// garbage.
func decodeResponseRawInto(c *Command, buf []byte, spans *extSpans) bool {
	if spans != nil {
		spans.reset()
	}
	*c = Command{}
	if !jsonHeaderFits(buf) {
		return false
	}
	hlen := int(binary.BigEndian.Uint32(buf) & maxHeaderLen)
	f := fastScanner{b: buf[headerWordSize : headerWordSize+hlen]}
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
			case "code", "opaque", "flag":
				n, ok := f.int(math.MinInt32, math.MaxInt32)
				if !ok {
					return false
				}
				switch key[0] {
				case 'c':
					c.Code = int32(n)
				case 'o':
					c.Opaque = int32(n)
				default:
					c.Flag = int32(n)
				}
			case "version":
				n, ok := f.int(math.MinInt16, math.MaxInt16)
				if !ok {
					return false
				}
				c.Version = int16(n)
			case "language", "remark":
				if f.peek() == 'n' {
					if !f.literal("null") {
						return false
					}
					break
				}
				v, ok := f.strBytes()
				if !ok {
					return false
				}
				if key[0] == 'l' {
					c.Language = languageName(v)
				} else {
					c.Remark = string(v)
				}
			case "extFields":
				switch f.peek() {
				case 'n':
					if !f.literal("null") {
						return false
					}
				case '{':
					start := f.i
					var fn func(k, v []byte)
					if spans != nil {
						fn = spans.add
					}
					if c.rawExt != nil || !f.walkExt(fn) {
						return false // a repeated object merges into one map: the map decode's case
					}
					c.rawExt = f.b[start:f.i:f.i]
					if spans != nil {
						spans.extAt = headerWordSize + start
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
	if c.rawExt == nil {
		c.rawExt = emptyRawExt
	}
	if body := buf[headerWordSize+hlen:]; len(body) > 0 {
		c.Body = body
	}
	return true
}

// rawSmallFrame is the largest answer kept in one allocation with its Command (a send's
// answer is about 250 bytes).
const rawSmallFrame = 512

// rawCommand is a Command and the copy of its frame in one allocation.
type rawCommand struct {
	c   Command
	buf [rawSmallFrame]byte
}

// newRawCommand returns a zero Command and a copy of frame: one allocation for a small frame.
// The Command pins the copy, which holds nothing but its own header and body.
func newRawCommand(frame []byte) (*Command, []byte) {
	if len(frame) <= rawSmallFrame {
		rc := &rawCommand{}
		n := copy(rc.buf[:], frame)
		return &rc.c, rc.buf[:n:n]
	}
	return &Command{}, append([]byte(nil), frame...)
}

// emptyRawExt marks a typed-path command without custom header fields.
var emptyRawExt = []byte("{}")

// maxExtSpans is how many fields extSpans keeps: a send's answer has seven to nine.
const maxExtSpans = 16

// extSpans are the custom header fields of an answer decoded in place, as the check of its
// extFields object found them (key and value, unescaped, slices of the frame unless they had
// escapes); over: there were more than maxExtSpans, feed from the object instead.
type extSpans struct {
	n    int
	over bool
	kv   [maxExtSpans][2][]byte
	// extAt is where the extFields object starts in the frame (detach).
	extAt int
}

func (s *extSpans) reset() { s.n, s.over = 0, false }

func (s *extSpans) add(k, v []byte) {
	if s.n == len(s.kv) {
		s.over = true
		return
	}
	s.kv[s.n] = [2][]byte{k, v}
	s.n++
}

// detach returns c, an answer decoded in place from frame (spans: its fields), as
// decodeResponseRaw would have decoded it: holding a copy of the frame, for a caller that
// keeps it (InvokeExt), without decoding the frame again.
func (c *Command) detach(frame []byte, spans *extSpans) *Command {
	cp, buf := newRawCommand(frame)
	*cp = *c
	if c.Body != nil {
		cp.Body = buf[len(frame)-len(c.Body):]
	}
	if c.rawExt != nil && len(c.rawExt) > 0 && &c.rawExt[0] != &emptyRawExt[0] {
		end := spans.extAt + len(c.rawExt)
		cp.rawExt = buf[spans.extAt:end:end]
	}
	return cp
}

// feed hands the fields to dec, in the object's order, and lets go of them.
func (s *extSpans) feed(dec ExtDecoder) {
	for i := range s.n {
		dec.DecodeExt(s.kv[i][0], s.kv[i][1])
		s.kv[i] = [2][]byte{}
	}
	s.n = 0
}

// decodeExt feeds c's custom header fields to dec: the kept object when the typed path
// decoded c, else the map (which it hands back; ExtFields is nil after).
func (c *Command) decodeExt(dec ExtDecoder) {
	if c.rawExt != nil {
		f := fastScanner{b: c.rawExt}
		f.walkExt(dec.DecodeExt) // checked by the reader
		c.rawExt = nil
		return
	}
	for k, v := range c.ExtFields {
		dec.DecodeExt([]byte(k), []byte(v))
	}
	c.ReleaseExt()
}

// extMap turns a typed-path command's kept object into ExtFields (a caller that wanted a map
// got an answer decoded for a typed waiter): one string shared by every key and value.
func (c *Command) extMap() {
	raw := c.rawExt
	c.rawExt = nil
	s := string(raw)
	ext := newExtMap(extHint(raw) + 4)
	f := fastScanner{b: raw, s: s}
	f.extObject(ext) // checked by the reader
	c.ExtFields = ext
}

package remoting

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

const (
	// lengthSize is the 4-byte frame length prefix.
	lengthSize = 4
	// headerWordSize is the serialize-type + 24-bit header length word.
	headerWordSize = 4
	// maxHeaderLen is the largest header the 24-bit length can describe.
	maxHeaderLen = 1<<24 - 1
	// binaryFixedLen is the fixed part of a ROCKETMQ binary header.
	binaryFixedLen = 21
)

// AppendFrame appends c as a complete frame (length prefix, header word, JSON header, body) to
// dst. A header longer than 16 MiB-1 cannot be framed; AppendFrame then returns dst unchanged
// (EncodeFrame reports that case as ErrHeaderTooLarge).
func AppendFrame(dst []byte, c *Command) []byte {
	out, err := EncodeFrame(dst, c)
	if err != nil {
		return dst
	}
	return out
}

// EncodeFrame is AppendFrame with an error for frames that cannot be represented.
func EncodeFrame(dst []byte, c *Command) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	hstart := len(dst)
	dst = appendJSONHeader(dst, c)
	return finishFrame(dst, start, hstart, SerializeJSON, c.Body)
}

// AppendBinaryFrame appends c as a frame with a ROCKETMQ binary header (§1.4), the encoding
// Java peers use when configured with serialize type ROCKETMQ. Ext fields are written in
// sorted key order. Its code field is 16 bits wide: a code outside int16 (RocketMQ 5's POP
// codes) can only travel in a JSON header and is refused with ErrHeaderTooLarge.
func AppendBinaryFrame(dst []byte, c *Command) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 {
		return dst, fmt.Errorf("%w: code %d does not fit the binary header's 16 bits", ErrHeaderTooLarge, c.Code)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	hstart := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, LanguageCode(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	extLenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := appendExtFields(dst, c, true)
	if err != nil {
		return dst[:start], err
	}
	binary.BigEndian.PutUint32(dst[extLenAt:], uint32(len(dst)-extLenAt-4))
	return finishFrame(dst, start, hstart, SerializeRocketMQ, c.Body)
}

func finishFrame(dst []byte, start, hstart int, typ byte, body []byte) ([]byte, error) {
	hlen := len(dst) - hstart
	if hlen > maxHeaderLen {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrHeaderTooLarge, hlen)
	}
	total := uint64(headerWordSize) + uint64(hlen) + uint64(len(body))
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: frame of %d bytes", ErrHeaderTooLarge, total)
	}
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(typ)<<24|uint32(hlen))
	return dst, nil
}

// sortedKeys appends m's keys to buf in sorted order; callers pass a stack array so typical
// headers sort without allocating.
func sortedKeys(buf []string, m map[string]string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// appendJSONHeader writes the header in the key order rocketmq-client-go uses; ext fields are
// sorted so the bytes are deterministic (ExtAppend's follow, in the order it writes them).
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	lang := c.Language
	if lang == "" {
		lang = LanguageGo
	}
	dst = appendJSONString(dst, lang)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	dst, _ = appendExtFields(dst, c, false) // JSON takes any key
	return append(dst, "}}"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string. Control characters use \u00xx (as the Go client's
// encoder does, e.g. the 0x01/0x02 separators of the properties string); invalid UTF-8 becomes
// U+FFFD so the output is always valid JSON.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ReadFrame reads one frame from r and returns the bytes after the 4-byte length prefix
// (header word, header, body). buf is used as storage when it is large enough (otherwise the
// storage grows as the bytes arrive, never sized from the length prefix alone), so the result
// is only valid until the next call with the same buf. A length above maxFrame (when
// maxFrame > 0) returns ErrFrameTooLarge without reading the rest; a length below 4 returns
// ErrMalformed; a stream ending inside a frame returns io.ErrUnexpectedEOF, and a stream ending
// cleanly between frames io.EOF.
func ReadFrame(r io.Reader, buf []byte, maxFrame int) ([]byte, error) {
	frame, _, err := readFrame(r, buf, maxFrame)
	return frame, err
}

// readFrame also returns the announced length, for logging oversize frames.
func readFrame(r io.Reader, buf []byte, maxFrame int) ([]byte, int64, error) {
	var lb [lengthSize]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, 0, err
	}
	n := int64(int32(binary.BigEndian.Uint32(lb[:])))
	if n < headerWordSize {
		return nil, n, fmt.Errorf("%w: frame length %d", ErrMalformed, n)
	}
	if maxFrame > 0 && n > int64(maxFrame) {
		return nil, n, fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, n, maxFrame)
	}
	if int64(cap(buf)) >= n {
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, n, err
		}
		return buf, n, nil
	}
	// The length is the peer's word: the buffer grows as bytes arrive, never ahead of them.
	buf = buf[:0]
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), int(min(max(2*int64(cap(buf)), minReadBuffer), n)))
			copy(nb, buf)
			buf = nb
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil && int64(len(buf)) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, n, err
		}
	}
	return buf, n, nil
}

// DecodeFrame decodes the bytes after the length prefix (as returned by ReadFrame) into a
// Command. Both serialize types are accepted. The Command does not alias frame. Errors wrap
// ErrMalformed.
func DecodeFrame(frame []byte) (*Command, error) {
	c := &Command{}
	if err := decodeFrameInto(c, frame); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeFrameInto is DecodeFrame into c, a zero Command (the server's request, allocated
// with its response writer); c is unspecified on error.
func decodeFrameInto(c *Command, frame []byte) error {
	body, err := decodeFrameHeader(c, frame, nil, nil, nil)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		c.Body = append([]byte(nil), body...)
	}
	return nil
}

// decodeFrameAliased is decodeFrameInto with c.Body a slice of frame instead of a copy (for a
// request its handler is done with before the frame's buffer is reused), and the custom
// header in pairs when pairsFor says so for the code (extpairs.go), its strings then from
// arena when that is not nil (arena.go), read from memo where only values changed since the
// header memo keeps (headermemo.go; nil: none kept).
func decodeFrameAliased(c *Command, frame []byte, pairsFor func(code int32) bool, arena *stringArena, memo *headerMemo) error {
	body, err := decodeFrameHeader(c, frame, pairsFor, arena, memo)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		c.Body = body
	}
	return nil
}

// decodeFrameHeader decodes frame's header into c and returns its body (a slice of frame).
func decodeFrameHeader(c *Command, frame []byte, pairsFor func(code int32) bool, arena *stringArena, memo *headerMemo) ([]byte, error) {
	if len(frame) < headerWordSize {
		return nil, fmt.Errorf("%w: %d bytes, no header word", ErrMalformed, len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	typ := byte(word >> 24)
	hlen := int(word & maxHeaderLen)
	if hlen > len(frame)-headerWordSize {
		return nil, fmt.Errorf("%w: header length %d exceeds frame of %d bytes", ErrMalformed, hlen, len(frame))
	}
	header := frame[headerWordSize : headerWordSize+hlen]
	var (
		slow *Command
		err  error
	)
	switch typ {
	case SerializeJSON:
		if memo != nil && memo.decode(c, header, pairsFor, arena) {
			break
		}
		if !decodeJSONHeaderFastRec(c, header, pairsFor, arena, memo) {
			slow, err = decodeJSONHeader(header)
		}
	case SerializeRocketMQ:
		slow, err = decodeBinaryHeader(header)
	default:
		return nil, fmt.Errorf("%w: unknown serialize type %d", ErrMalformed, typ)
	}
	if err != nil {
		return nil, err
	}
	if slow != nil {
		*c = *slow
	}
	return frame[headerWordSize+hlen:], nil
}

// binReader is a sticky-error big-endian reader over a binary header.
type binReader struct {
	b   []byte
	err error
}

func (r *binReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: binary header truncated (need %d, have %d)", ErrMalformed, n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *binReader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *binReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *binReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// decodeBinaryHeader decodes the ROCKETMQ binary header: code int16, language byte, version
// int16, opaque int32, flag int32, remark (int32 length), ext (int32 length of repeated int16
// key length + key, int32 value length + value). Bytes after the ext block are ignored. As on
// the JSON path, a header of up to sharedHeaderMax bytes becomes one string whose substrings
// are the command's strings.
func decodeBinaryHeader(h []byte) (*Command, error) {
	r := &binReader{b: h}
	var hs string
	if len(h) <= sharedHeaderMax {
		hs = string(h)
	}
	// str turns a subslice of h into a string; a subslice's offset in h is the capacity it lost.
	str := func(b []byte) string {
		if hs == "" {
			return string(b)
		}
		at := cap(h) - cap(b)
		return hs[at : at+len(b)]
	}
	c := &Command{ExtFields: make(map[string]string, min(len(h)/8, maxExtHint))}
	c.Code = int32(int16(r.u16()))
	c.Language = LanguageName(r.u8())
	c.Version = int16(r.u16())
	c.Opaque = int32(r.u32())
	c.Flag = int32(r.u32())
	remarkLen := int32(r.u32())
	if remarkLen > 0 {
		if b := r.take(int(remarkLen)); b != nil {
			c.Remark = str(b)
		}
	} else if remarkLen < 0 && r.err == nil {
		r.err = fmt.Errorf("%w: negative remark length %d", ErrMalformed, remarkLen)
	}
	extLen := int32(r.u32())
	if extLen < 0 && r.err == nil {
		r.err = fmt.Errorf("%w: negative ext length %d", ErrMalformed, extLen)
	}
	if r.err != nil {
		return nil, r.err
	}
	ext := &binReader{b: r.take(int(extLen))}
	if r.err != nil {
		return nil, r.err
	}
	for len(ext.b) > 0 && ext.err == nil {
		kl := int16(ext.u16())
		if kl < 0 {
			return nil, fmt.Errorf("%w: negative ext key length %d", ErrMalformed, kl)
		}
		k := ext.take(int(kl))
		vl := int32(ext.u32())
		if vl < 0 {
			return nil, fmt.Errorf("%w: negative ext value length %d", ErrMalformed, vl)
		}
		v := ext.take(int(vl))
		if ext.err == nil {
			c.ExtFields[str(k)] = str(v)
		}
	}
	if ext.err != nil {
		return nil, ext.err
	}
	return c, nil
}

// recoverOpaque digs the opaque and flag out of a frame whose header did not decode, so that
// the server can still answer SYSTEM_ERROR to the right caller.
func recoverOpaque(frame []byte) (opaque, flag int32, ok bool) {
	if len(frame) < headerWordSize {
		return 0, 0, false
	}
	word := binary.BigEndian.Uint32(frame)
	hlen := int(word & maxHeaderLen)
	header := frame[headerWordSize:]
	if hlen < len(header) {
		header = header[:hlen]
	}
	switch byte(word >> 24) {
	case SerializeJSON:
		o, okO := scanJSONInt(header, `"opaque"`)
		if !okO || o < math.MinInt32 || o > math.MaxInt32 {
			return 0, 0, false
		}
		f, _ := scanJSONInt(header, `"flag"`)
		return int32(o), int32(f), true
	case SerializeRocketMQ:
		if len(header) < 9 {
			return 0, 0, false
		}
		o := int32(binary.BigEndian.Uint32(header[5:9]))
		var f int32
		if len(header) >= 13 {
			f = int32(binary.BigEndian.Uint32(header[9:13]))
		}
		return o, f, true
	}
	return 0, 0, false
}

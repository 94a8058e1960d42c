package remoting

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Command is one RemotingCommand: a request or a response, header plus body.
type Command struct {
	// Code is the request code, or on a response the response code.
	Code int32
	// Language is the sender's language enum name; "GO" when this package sends and it is empty.
	Language string
	// Version is the sender's MQVersion ordinal.
	Version int16
	// Opaque is the request id; a response echoes its request's opaque.
	Opaque int32
	// Flag holds FlagResponse and FlagOneway.
	Flag int32
	// Remark is free text, usually the error description of a failed response.
	Remark string
	// ExtFields is the flattened custom header; always strings on the wire.
	ExtFields map[string]string
	// ExtAppend, when set, writes further custom header fields straight into the encoded
	// header, after ExtFields' (extappend.go). Encoding only: a decoded command has it nil.
	ExtAppend ExtAppender
	// Body is the opaque payload after the header.
	Body []byte

	// rawExt is, on an answer decoded for Client.InvokeExt, the checked extFields object
	// (ExtFields is nil then); see extdecode.go.
	rawExt []byte
	// pairs is, on a request of an InlineHandler, its custom header in order (ExtFields is
	// nil then); see extpairs.go.
	pairs *[]extPair
}

// NewRequest builds a request. The opaque is assigned by the Client or ServerConn on send.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	if ext == nil {
		ext = make(map[string]string)
	}
	return &Command{Code: code, Language: LanguageGo, Version: VersionV4_5_2, ExtFields: ext, Body: body}
}

// NewResponse builds the response to req: it echoes req's opaque and sets the response flag.
// ExtFields starts empty and non-nil so handlers can fill it directly.
func NewResponse(req *Command, code int32, remark string) *Command {
	resp := &Command{
		Code:      code,
		Language:  LanguageGo,
		Version:   VersionV4_9_8,
		Flag:      FlagResponse,
		Remark:    remark,
		ExtFields: make(map[string]string),
	}
	if req != nil {
		resp.Opaque = req.Opaque
	}
	return resp
}

// IsResponse reports whether the response flag bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag bit is set. Note that rocketmq-client-go never sets
// it, so a request without it may still have a caller that ignores the answer.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Ext returns the ext field key, or "" when absent.
func (c *Command) Ext(key string) string {
	v, _ := c.ExtLookup(key)
	return v
}

// SetExt sets an ext field, allocating the map if needed, and returns c.
func (c *Command) SetExt(key, value string) *Command {
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string)
	}
	c.ExtFields[key] = value
	return c
}

func (c *Command) extValue(key string) (string, error) {
	v, ok := c.ExtLookup(key)
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrExtMissing, key)
	}
	return strings.TrimSpace(v), nil
}

// ExtInt64 parses the ext field key as a decimal int64 (Java's Long.parseLong).
func (c *Command) ExtInt64(key string) (int64, error) {
	return c.ExtInt64In(key, math.MinInt64, math.MaxInt64)
}

// ExtInt32 parses the ext field key as a decimal int32 (Java's Integer.parseInt): a value
// beyond 32 bits is ErrExtInvalid, never wrapped.
func (c *Command) ExtInt32(key string) (int32, error) {
	return c.ExtInt32In(key, math.MinInt32, math.MaxInt32)
}

// ExtInt64In parses the ext field key as a decimal int64 and checks it lies in [lo, hi]
// (ErrExtRange otherwise).
func (c *Command) ExtInt64In(key string, lo, hi int64) (int64, error) {
	v, err := c.extValue(key)
	if err != nil {
		return 0, err
	}
	return ParseExtInt(key, v, 64, lo, hi)
}

// ExtInt32In parses the ext field key as a decimal int32 and checks it lies in [lo, hi]
// (ErrExtRange otherwise).
func (c *Command) ExtInt32In(key string, lo, hi int32) (int32, error) {
	v, err := c.extValue(key)
	if err != nil {
		return 0, err
	}
	n, err := ParseExtInt(key, v, 32, int64(lo), int64(hi))
	return int32(n), err
}

// HasExt reports whether the ext field key is present and not empty (Java's header decoder
// treats both the same: the field stays null).
func (c *Command) HasExt(key string) bool { return strings.TrimSpace(c.ExtFields[key]) != "" }

// ParseExtInt parses the value v of ext field key as a decimal integer of bits width (32 for
// Java's int/Integer fields, 64 for long/Long), as RocketMQ's header decoder does, and checks
// it lies in [lo, hi]. Surrounding spaces are ignored. A value that is not a number of that
// width is ErrExtInvalid (Java's NumberFormatException, answered SYSTEM_ERROR), one outside
// [lo, hi] is ErrExtRange; the error names the key, the value and the bound.
func ParseExtInt(key, v string, bits int, lo, hi int64) (int64, error) {
	// A send carries a dozen numeric fields, each a short run of digits: they are read here
	// without the trim and strconv's general parser, which were 6% of a master's CPU.
	// Anything else takes the general path, which is the reference.
	if n, ok := plainDecimal(v, bits); ok {
		if n < lo || n > hi {
			return 0, fmt.Errorf("%w: %s=%d outside [%d, %d]", ErrExtRange, key, n, lo, hi)
		}
		return n, nil
	}
	v = strings.TrimSpace(v)
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		if len(v) > 32 {
			v = v[:32] + "..."
		}
		return 0, fmt.Errorf("%w: %s=%q is not a %d-bit integer", ErrExtInvalid, key, v, bits)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s=%d outside [%d, %d]", ErrExtRange, key, n, lo, hi)
	}
	return n, nil
}

// plainDecimal reads v when it is an optional '-' and 1 to 18 decimal digits whose value fits
// a bits-wide signed integer: then strconv.ParseInt(strings.TrimSpace(v), 10, bits) gives the
// same number (FuzzParseExtInt compares them).
func plainDecimal(v string, bits int) (int64, bool) {
	neg := len(v) > 1 && v[0] == '-'
	d := v
	if neg {
		d = v[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if neg {
		n = -n
	}
	if bits < 64 && (n < -1<<(bits-1) || n > 1<<(bits-1)-1) {
		return 0, false
	}
	return n, true
}

// ExtBool parses the ext field key as a boolean ("true"/"false" in any case, or "1"/"0").
func (c *Command) ExtBool(key string) (bool, error) {
	v, err := c.extValue(key)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(v) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s=%q", ErrExtInvalid, key, v)
}

// String renders the header for logs (the body only by length).
func (c *Command) String() string {
	kind := RequestName(c.Code)
	if c.IsResponse() {
		kind = ResponseName(c.Code)
	}
	ext := fmt.Sprint(c.ExtFields)
	if c.ExtAppend != nil {
		// The typed fields as they go on the wire.
		w := c.ExtAppend.AppendExt(ExtWriter{dst: []byte(ext + "+{")})
		ext = string(append(w.dst, '}'))
	}
	return fmt.Sprintf("%s(code=%d opaque=%d flag=%d remark=%q ext=%s body=%dB)",
		kind, c.Code, c.Opaque, c.Flag, c.Remark, ext, len(c.Body))
}

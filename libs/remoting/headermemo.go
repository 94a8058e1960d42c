package remoting

import (
	"encoding/binary"
	"math/bits"
)

// The last inline header of a connection, and the values that changed since
//
// A producer's sends differ in a few bytes of their JSON header: the opaque, the birth time,
// the queue id, the message's unique key inside its properties. Everything else (keys, the
// topic, the group, the flags, the punctuation) repeats byte for byte, at the same offsets,
// as long as the header keeps its length. Decoding all of it again cost a tenth of the
// broker's CPU per send. So a connection keeps its last inline request's decode (headerMemo):
// the header's bytes, the decoded fields, and where each value lies in it (its span: from the
// opening quote to past the closing one, or the digits of a number):
//
//	{"code":10,"language":"GO","version":317,"opaque":7,"flag":0,"remark":"","extFields":{...
//	        ^^            ^^^^           ^^^          ^        ^          ^^
//	        code          language       version      opaque   flag       remark
//	 ...,"bornTimestamp":"1795936508414","bname":"broker-a",...,"queueId":"3",...}}
//	                     ^^^^^^^^^^^^^^^         ^^^^^^^^^^               ^^^
//	                     pair 2                  pair 1                   pair 9
//
// The next header of the same length is compared with it eight bytes at a time. Every run of
// differing bytes must lie inside one span; that value alone is read again, with the same
// scanner code the full decode uses (fastjson.go), from the span's start, and must end exactly
// where the span ends. Then every other byte, and so every token boundary, is where it was,
// and the full decode of the new header would walk the same path and produce the same command
// but for the values read again. Anything else (a change in a key, in the punctuation or the
// spacing, in a null, in the code, a value that ends elsewhere, a new length) forgets the memo
// and the full decode decides, recording a new one. FuzzHeaderMemo checks that a command from
// the memo equals the full decode of the same bytes.
//
// What is kept is bounded: a header of at most sharedHeaderMax bytes with at most
// maxPooledPairs fields, decoded into pairs (extpairs.go) with no top-level key twice. The
// strings of the memo are immutable like every decoded string; those read again come from the
// connection's arena (arena.go). A memo is kept only while the arena fills the chunk it was
// recorded in, so it keeps at most that chunk and the next alive, as the arena itself does.

// Top-level span kinds; a span of kind k >= 0 is the value of pair k.
const (
	spanCode int32 = -1 - iota
	spanVersion
	spanOpaque
	spanFlag
	spanLanguage
	spanRemark
)

// memoSpan is one value's place in the kept header: [start, end).
type memoSpan struct {
	start, end int32
	kind       int32
}

// headerMemo is a connection's last inline request header and its decode; the zero value
// holds none. One goroutine uses it (the connection's reader).
type headerMemo struct {
	ok     bool
	bad    bool   // the decode being recorded cannot be kept (a top-level key twice, too big)
	seen   uint8  // the top-level kinds met in the decode being recorded
	npairs int32  // string values of extFields met in the decode being recorded
	gen    uint64 // the arena chunk the memo was recorded in
	h      []byte
	spans  []memoSpan // in offset order
	pairs  []extPair
	cmd    Command // Code, Language, Version, Opaque, Flag, Remark of the kept header
	hits   uint64  // headers decoded from the memo (tests)
}

// begin starts recording a full decode.
func (m *headerMemo) begin() {
	m.ok, m.bad, m.seen, m.npairs = false, false, 0, 0
	m.spans = m.spans[:0]
}

// noteTop records the span of a top-level value; start -1 is a null, which has no span (a
// change to it is a change outside every span).
func (m *headerMemo) noteTop(kind int32, start, end int) {
	bit := uint8(1) << uint(-1-kind)
	if m.seen&bit != 0 {
		m.bad = true // the last one wins: a memo would have to know which occurrence
	}
	m.seen |= bit
	if start >= 0 {
		m.spans = append(m.spans, memoSpan{start: int32(start), end: int32(end), kind: kind})
	}
}

// notePair records the span of the next string value of extFields.
func (m *headerMemo) notePair(start, end int) {
	m.spans = append(m.spans, memoSpan{start: int32(start), end: int32(end), kind: m.npairs})
	m.npairs++
}

// commit keeps the full decode of h into c, which succeeded with its ext fields in pairs.
func (m *headerMemo) commit(c *Command, h []byte, arena *stringArena) {
	if m.bad || arena == nil || len(h) > sharedHeaderMax || len(*c.pairs) > maxPooledPairs ||
		int(m.npairs) != len(*c.pairs) {
		return
	}
	m.h = append(m.h[:0], h...)
	m.pairs = append(m.pairs[:0], *c.pairs...)
	m.cmd = Command{Code: c.Code, Language: c.Language, Version: c.Version, Opaque: c.Opaque, Flag: c.Flag, Remark: c.Remark}
	m.gen = arena.gen
	m.ok = true
}

// decode fills c, a zero Command, with the decode of h from the memo, reading again only the
// values that changed, and reports whether it could; on false the memo is forgotten and c is
// untouched. pairsFor is asked again: the code's handler may have changed since the memo was
// kept.
func (m *headerMemo) decode(c *Command, h []byte, pairsFor func(code int32) bool, arena *stringArena) bool {
	if !m.ok || len(h) != len(m.h) || arena == nil || arena.gen != m.gen || pairsFor == nil || !pairsFor(m.cmd.Code) {
		return false
	}
	i, si := 0, 0
	for {
		i += firstDiff(m.h[i:], h[i:])
		if i >= len(h) {
			break
		}
		for si < len(m.spans) && int(m.spans[si].end) <= i {
			si++
		}
		if si == len(m.spans) || i < int(m.spans[si].start) || !m.reread(m.spans[si], h, arena) {
			m.ok = false
			return false
		}
		i = int(m.spans[si].end)
		si++
	}
	copy(m.h, h)
	*c = m.cmd
	c.pairs = newPairs()
	*c.pairs = append(*c.pairs, m.pairs...)
	m.hits++
	return true
}

// reread reads the value at span sp of h into the memo, as the full decode reads it.
func (m *headerMemo) reread(sp memoSpan, h []byte, arena *stringArena) bool {
	f := fastScanner{b: h, i: int(sp.start), arena: arena, fromArena: true, perValue: true}
	switch sp.kind {
	case spanCode:
		return false // the code decides how the rest is decoded
	case spanVersion, spanOpaque, spanFlag:
		n, ok := f.int(topIntRange(sp.kind))
		if !ok || f.i != int(sp.end) {
			return false
		}
		switch sp.kind {
		case spanVersion:
			m.cmd.Version = int16(n)
		case spanOpaque:
			m.cmd.Opaque = int32(n)
		default:
			m.cmd.Flag = int32(n)
		}
	default:
		v, ok := f.str()
		if !ok || f.i != int(sp.end) {
			return false
		}
		switch sp.kind {
		case spanLanguage:
			m.cmd.Language = v
		case spanRemark:
			m.cmd.Remark = v
		default:
			m.pairs[sp.kind].v = v
		}
	}
	return true
}

// firstDiff returns the index of the first byte where a and b (at least as long) differ, or
// len(a).
func firstDiff(a, b []byte) int {
	n := 0
	for ; len(a)-n >= 8; n += 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)/8
		}
	}
	for n < len(a) && a[n] == b[n] {
		n++
	}
	return n
}

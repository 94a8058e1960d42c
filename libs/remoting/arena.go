package remoting

import "unsafe"

// Header strings of inline requests, from a chunk per connection
//
// Every key and value of a decoded JSON header is a substring of one string copy of the
// header (fastjson.go). For a send that copy was one allocation of every message, though the
// handler (an InlineHandler) is done with almost all of it when it returns. So the headers of
// a connection's inline requests are copied one after another into a chunk of
// headerArenaChunk bytes, and their strings are slices of it: one allocation per chunk, about
// fifty sends.
//
// A chunk's bytes are written once and never again (a full chunk is replaced, not reused), so
// a string keeps its bytes however long it lives; the cost of a string kept past its request
// is that it keeps its chunk alive. The handlers of inline requests copy what they store in a
// table (a topic a send creates), so a peer cannot pin more than one chunk per connection.

// headerArenaChunk is the size of a chunk. A header larger than a quarter of it gets its own
// string, so that a large one does not waste most of a chunk.
const headerArenaChunk = 16 << 10

// stringArena hands out immutable strings from the current chunk; one goroutine uses it (the
// connection's reader). The zero value is ready and holds no memory.
type stringArena struct {
	buf []byte // the current chunk: [0, len) handed out, [len, cap) free
	gen uint64 // chunks made so far: which chunk buf is (headermemo.go)
}

// string returns a string holding b's bytes.
func (a *stringArena) string(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > headerArenaChunk/4 {
		return string(b)
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, headerArenaChunk)
		a.gen++
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	// The bytes at [start, len) are never written again: the next append writes beyond them,
	// and a full chunk is dropped, not reset.
	return unsafe.String(&a.buf[start], len(b))
}

package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unsafe"
)

// Custom header fields written without a map
//
// A command's custom header is ExtFields, a map the encoders sort and copy. A hot answer (a
// send's: msgId, queueId, queueOffset...) would fill that map only for it to be sorted and
// copied again, with its numbers formatted into strings first: five or six allocations per
// message. Command.ExtAppend lets such an answer keep its fields typed and write them straight
// into the frame being encoded instead. The fields it writes follow those of ExtFields (both
// may be used; their keys must not overlap). An appender that writes its keys in sorted order
// into a command whose ExtFields is empty produces exactly the bytes the map would
// (FuzzExtAppend checks both header encodings against the map encoding).

// ExtAppender writes a command's custom header fields into an ExtWriter. The writer travels
// by value (returned with the fields added) so that it stays on the encoder's stack: behind
// an interface a pointer to it would make it escape, one allocation per frame.
type ExtAppender interface {
	AppendExt(w ExtWriter) ExtWriter
}

// ExtWriter appends custom header fields to a header being encoded, in JSON or in the
// ROCKETMQ binary encoding.
type ExtWriter struct {
	dst    []byte
	n      int  // fields written so far, ExtFields' included
	binary bool // ROCKETMQ binary header
	err    error
}

// String writes key with value.
func (w *ExtWriter) String(key, value string) {
	if w.binary {
		if !w.binaryKey(key) {
			return
		}
		w.dst = binary.BigEndian.AppendUint32(w.dst, uint32(len(value)))
		w.dst = append(w.dst, value...)
		w.n++
		return
	}
	if w.n > 0 {
		w.dst = append(w.dst, ',')
	}
	w.dst = appendJSONString(w.dst, key)
	w.dst = append(w.dst, ':')
	w.dst = appendJSONString(w.dst, value)
	w.n++
}

// Bytes writes key with value's text, without making it a string first (the encoders copy
// it; value may be reused once Bytes returns).
func (w *ExtWriter) Bytes(key string, value []byte) {
	if len(value) == 0 {
		w.String(key, "")
		return
	}
	w.String(key, unsafe.String(&value[0], len(value)))
}

// Int writes key with the decimal text of v, without formatting it into a string first.
func (w *ExtWriter) Int(key string, v int64) {
	if w.binary {
		if !w.binaryKey(key) {
			return
		}
		at := len(w.dst)
		w.dst = append(w.dst, 0, 0, 0, 0)
		w.dst = strconv.AppendInt(w.dst, v, 10)
		binary.BigEndian.PutUint32(w.dst[at:], uint32(len(w.dst)-at-4))
		w.n++
		return
	}
	if w.n > 0 {
		w.dst = append(w.dst, ',')
	}
	w.dst = appendJSONString(w.dst, key)
	w.dst = append(w.dst, ':', '"')
	w.dst = strconv.AppendInt(w.dst, v, 10)
	w.dst = append(w.dst, '"')
	w.n++
}

// binaryKey writes a binary header's key (int16 length, bytes); a key the length cannot
// describe fails the encoding.
func (w *ExtWriter) binaryKey(key string) bool {
	if len(key) > math.MaxInt16 {
		if w.err == nil {
			w.err = fmt.Errorf("%w: ext key of %d bytes", ErrHeaderTooLarge, len(key))
		}
		return false
	}
	w.dst = binary.BigEndian.AppendUint16(w.dst, uint16(len(key)))
	w.dst = append(w.dst, key...)
	return true
}

// Bool writes key with "true" or "false".
func (w *ExtWriter) Bool(key string, v bool) {
	w.String(key, strconv.FormatBool(v))
}

// appendExtFields writes c's ExtFields in sorted key order, then its ExtAppend fields.
func appendExtFields(dst []byte, c *Command, bin bool) ([]byte, error) {
	w := ExtWriter{dst: dst, binary: bin}
	var keyBuf [24]string
	for _, k := range sortedKeys(keyBuf[:0], c.ExtFields) {
		w.String(k, c.ExtFields[k])
	}
	if c.ExtAppend != nil {
		w = c.ExtAppend.AppendExt(w)
	}
	return w.dst, w.err
}

// Reusing decoded ext maps
//
// A decoded request's ExtFields is a map of up to a few dozen strings: for SEND_MESSAGE_V2's
// fourteen fields, four allocations before the handler runs. A handler that is done with the
// map when it returns (a send's handler reads its header, stores the message and keeps
// nothing of the map) hands it back with ReleaseExt, and the next decoded request's fields go
// into it. The strings themselves are never reused: a value the handler kept stays valid.

// maxPooledExt is the largest map kept for reuse; a peer's header with more fields than
// RocketMQ's longest does not keep a large map in the pool.
const maxPooledExt = 32

var extPool sync.Pool // of map[string]string, cleared

// newExtMap returns a cleared map from the pool, or a new one sized for hint fields.
func newExtMap(hint int) map[string]string {
	if m, ok := extPool.Get().(map[string]string); ok {
		return m
	}
	return make(map[string]string, hint)
}

// ReleaseExt hands c's ExtFields back for reuse by a later decoded command and sets it to nil.
// Only for a command nothing reads or keeps the map of afterwards (a handler calls it as it
// returns, when no goroutine it started uses the request); its strings stay valid.
func (c *Command) ReleaseExt() {
	c.releasePairs()
	m := c.ExtFields
	c.ExtFields = nil
	if m == nil || len(m) > maxPooledExt {
		return
	}
	clear(m)
	extPool.Put(m)
}

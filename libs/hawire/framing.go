package hawire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// FrameReader reads length-prefixed frames from a stream. The body returned
// by Next is valid until the following call.
type FrameReader struct {
	r   *bufio.Reader
	buf []byte
	// hdr holds the frame header being read: a local array passed to io.ReadFull escapes,
	// one allocation per frame.
	hdr [FrameHeaderLen]byte
}

// NewFrameReader wraps r with a read buffer of bufSize bytes (≥ 4 KiB).
func NewFrameReader(r io.Reader, bufSize int) *FrameReader {
	if bufSize < 4<<10 {
		bufSize = 4 << 10
	}
	return &FrameReader{r: bufio.NewReaderSize(r, bufSize)}
}

// Next reads one frame whose length (type + body) is at most max bytes; a
// longer frame fails with ErrFrameTooLarge before anything is allocated.
func (fr *FrameReader) Next(max int) (FrameType, []byte, error) {
	t, body, err := fr.NextInto(max, fr.buf)
	if cap(body) > cap(fr.buf) {
		fr.buf = body[:0]
	}
	return t, body, err
}

// NextInto is Next reading the body into buf (grown when too small), so a
// caller can hand bodies to another goroutine and recycle the buffers.
func (fr *FrameReader) NextInto(max int, buf []byte) (FrameType, []byte, error) {
	hdr := fr.hdr[:]
	if _, err := io.ReadFull(fr.r, hdr); err != nil {
		return 0, buf[:0], err
	}
	n := binary.BigEndian.Uint32(hdr)
	if n < 1 {
		return 0, buf[:0], fmt.Errorf("%w: zero length", ErrBadFrame)
	}
	if uint64(n) > uint64(max) {
		return 0, buf[:0], fmt.Errorf("%w: %d bytes (limit %d) type %d", ErrFrameTooLarge, n, max, hdr[4])
	}
	blen := int(n) - 1
	if cap(buf) < blen {
		buf = make([]byte, blen)
	}
	body := buf[:blen]
	if _, err := io.ReadFull(fr.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, body[:0], err
	}
	return FrameType(hdr[4]), body, nil
}

// Buffered reports how many bytes are buffered but not yet consumed.
func (fr *FrameReader) Buffered() int { return fr.r.Buffered() }

// FrameBuffered reports whether a whole frame is buffered, so that the next Next returns
// it without reading from the stream.
func (fr *FrameReader) FrameBuffered() bool {
	n := fr.r.Buffered()
	if n < FrameHeaderLen {
		return false
	}
	hdr, err := fr.r.Peek(FrameHeaderLen)
	if err != nil {
		return false
	}
	return uint64(binary.BigEndian.Uint32(hdr))+FrameHeaderLen-1 <= uint64(n)
}

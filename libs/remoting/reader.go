package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rmqha/rmqha/libs/quietsock"
)

// Reading frames from a connection
//
// A peer announces a frame's length in its first four bytes; that number is never used to
// allocate. Each connection reads into one buffer that starts at minReadBuffer bytes (a client
// connection's at clientReadBuffer, client.go) and grows (doubling, never past the end of the
// frame being read) only when it is full and the frame is still incomplete, so the buffer is at
// most twice the bytes that actually arrived. Once a
// frame has been handed on and nothing more is buffered, a grown buffer is dropped and the
// connection goes back to its small one: an idle server connection holds minReadBuffer bytes.
// A client connection (no budget) keeps a grown buffer of up to clientKeepBuffer bytes for the
// next frame instead, so a consumer reading pull responses does not regrow it for every one:
// its peer is a server it chose, and the bytes it keeps are bytes that server sent.
//
// Server side, every byte a buffer grows past minReadBuffer is charged to the process-wide
// byte budget (ServerConfig.MaxBytesInFlight). When the budget cannot cover the growth the
// frame is dropped: its header is kept (it fits the buffer already held), the rest of its
// bytes are read and discarded as they arrive, which keeps the stream in sync, and the
// caller answers SYSTEM_BUSY to the opaque in the header. A header that does not fit the
// buffer already held cannot be answered; the connection is then closed (ErrOverloaded).
//
// A server connection hands each buffer it outgrew (a power of two: minReadBuffer doubled) to
// its server's spares, which keep one buffer of each size, and takes its next buffer of that
// size from them. Without them every large frame left about its own size in garbage behind it
// (the sum of the buffers it doubled through), which the collector takes back only at its next
// cycle: 24 held frames of 16 MiB took 100 MiB past the byte budget. The spares hold at most
// one buffer per size below MaxFrameSize (about MaxFrameSize in all), are not charged to the
// budget, and are dropped when the server returns memory after a burst (memory.go). The last
// buffer of a frame is cut to the frame's end and is not kept. A frame's bytes are not used
// after release (the server decodes a copy), so a spare buffer has no other reader.
//
// Once the first byte of a frame has arrived the whole frame must arrive within the frame
// timeout (ServerConfig.FrameTimeout), however slowly the bytes trickle in; between frames the
// idle timeout applies instead.
//
// Burst reads. A read into the small buffer takes at most minReadBuffer bytes: under a
// pipelining producer (64 sends of 1 KiB in flight) that was one read syscall, and often one
// park and wake-up of the reader, for every three sends. So a plain TCP server connection whose
// last read filled all the room it had is marked busy, and its next reads go into a buffer of
// burstReadBuffer bytes taken from a process-wide pool for the read and given back once the
// frames it holds are handed on (the bytes of a partial frame left, when they fit, go back to
// the small buffer). The burst buffer is taken inside the socket's own read (RawConn.Read), so
// it is never held by a reader waiting for bytes: only by one that has bytes to hand on. It is
// charged to the byte budget while held, and a read the budget cannot cover is an ordinary one.
// A read of at most half the small buffer ends the busy state.

const (
	// minReadBuffer is the buffer every connection keeps; frames that fit it (most requests)
	// never cause an allocation. Not charged to the byte budget (bounded by the connection
	// limit instead).
	minReadBuffer = 4 << 10
	// clientKeepBuffer is the largest buffer a client connection keeps between frames.
	clientKeepBuffer = 1 << 20
	// burstReadBuffer is the buffer a busy server connection reads into (see Burst reads).
	burstReadBuffer = 64 << 10
)

// burstBuffers holds the burst read buffers of every server connection not reading now.
var burstBuffers = sync.Pool{New: func() any { b := make([]byte, burstReadBuffer); return &b }}

// spareBuffers keeps, per size class k, one outgrown buffer of minReadBuffer<<k bytes.
type spareBuffers struct {
	mu   sync.Mutex
	bufs [32][]byte
}

// spareClass is the class of a buffer of n bytes, or -1 when n is not a kept size.
func spareClass(n int) int {
	if n <= minReadBuffer || n&(n-1) != 0 {
		return -1
	}
	k := bits.TrailingZeros(uint(n)) - bits.TrailingZeros(uint(minReadBuffer))
	if k >= len(spareBuffers{}.bufs) {
		return -1
	}
	return k
}

// get returns a buffer of n bytes, the spare one when there is one.
func (sp *spareBuffers) get(n int) []byte {
	if k := spareClass(n); k >= 0 {
		sp.mu.Lock()
		b := sp.bufs[k]
		sp.bufs[k] = nil
		sp.mu.Unlock()
		if b != nil {
			return b
		}
	}
	return make([]byte, n)
}

// put keeps b when it is of a kept size and no buffer of its size is kept yet.
func (sp *spareBuffers) put(b []byte) {
	if k := spareClass(len(b)); k >= 0 {
		sp.mu.Lock()
		if sp.bufs[k] == nil {
			sp.bufs[k] = b
		}
		sp.mu.Unlock()
	}
}

// drop lets go of every spare buffer.
func (sp *spareBuffers) drop() {
	sp.mu.Lock()
	clear(sp.bufs[:])
	sp.mu.Unlock()
}

// byteBudget is the process-wide (per Server) allowance of bytes in flight: read buffers grown
// past their minimum plus requests handed to handlers and not yet answered. A nil budget or a
// max of 0 admits everything but still counts.
type byteBudget struct {
	max  int64
	used atomic.Int64
	peak atomic.Int64 // highest use since the memory returner last looked
}

// acquire reserves n bytes; it reports false, reserving nothing, when that would exceed max.
func (b *byteBudget) acquire(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	for {
		u := b.used.Load()
		if b.max > 0 && u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			for p := b.peak.Load(); u+n > p && !b.peak.CompareAndSwap(p, u+n); p = b.peak.Load() {
			}
			return true
		}
	}
}

func (b *byteBudget) release(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// frame is one result of frameReader.read.
type frame struct {
	// data is the frame after its length prefix (header word, header, body); valid until the
	// next read or release. Nil when dropped.
	data []byte
	// header is, for a dropped frame, its header word and header (a copy).
	header []byte
	// size is the announced length.
	size int64
	// dropped: the byte budget could not hold the frame; its body was read and discarded.
	dropped bool
}

// deadlineReader is what a frameReader reads from (a net.Conn).
type deadlineReader interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

// frameReader reads frames from one connection; see the comment at the top of the file.
type frameReader struct {
	src      deadlineReader
	small    []byte // the connection's own minimum buffer
	buf      []byte // small, or a grown buffer while a large frame is read
	r, w     int    // buf[r:w] is buffered and unread
	consumed int    // bytes of buf at r belonging to the frame last returned
	maxFrame int
	keep     int           // the largest grown buffer kept between frames (0: back to small)
	spares   *spareBuffers // outgrown buffers go here (server side); nil: dropped

	budget  *byteBudget // nil: no budget (client side)
	charged int64       // bytes of buf charged to budget

	// raw reads the socket for burst reads (a plain TCP server connection; nil: none); busy:
	// the last read filled its room; burstBuf: the burst buffer buf is, from burstBuffers
	// (nil: none; see Burst reads).
	raw      syscall.RawConn
	busy     bool
	burstBuf *[]byte
	// burstN and burstErr are burstRead's result, set by burstFn, which is made once.
	burstN   int
	burstErr error
	burstFn  func(fd uintptr) bool

	idle         time.Duration // 0: no idle deadline
	frameTimeout time.Duration // 0: no frame deadline
	now          func() time.Time
	started      time.Time // when the first byte of the frame in progress arrived; zero between frames
	lastRead     time.Time // when bytes last arrived (or the reader was made)
	deadline     time.Time // last read deadline set
}

func newFrameReader(src deadlineReader, prefix []byte, maxFrame int, budget *byteBudget, spares *spareBuffers, idle, frameTimeout time.Duration) *frameReader {
	fr := &frameReader{
		src: src, small: make([]byte, minReadBuffer), maxFrame: maxFrame, budget: budget,
		spares: spares, idle: idle, frameTimeout: frameTimeout, now: time.Now,
	}
	if budget == nil {
		fr.keep = clientKeepBuffer
	}
	fr.buf = fr.small
	fr.w = copy(fr.buf, prefix)
	fr.lastRead = fr.now()
	if fr.w > 0 {
		fr.started = fr.lastRead
	}
	return fr
}

// release hands back the frame last returned: its bytes are consumed and a grown buffer is
// dropped (its budget charge with it) when nothing else is buffered. Called by read too; the
// server calls it as soon as the frame is decoded, before charging the request, so a frame is
// never counted twice for long.
func (fr *frameReader) release() {
	fr.r += fr.consumed
	fr.consumed = 0
	if fr.r == fr.w {
		fr.r, fr.w = 0, 0
	}
	if fr.burstBuf != nil && fr.w-fr.r <= minReadBuffer {
		fr.endBurst()
		return
	}
	if len(fr.buf) > minReadBuffer && len(fr.buf) > fr.keep && fr.w-fr.r <= minReadBuffer {
		n := copy(fr.small, fr.buf[fr.r:fr.w])
		fr.discard(fr.buf)
		fr.buf, fr.r, fr.w = fr.small, 0, n
		fr.budget.release(fr.charged)
		fr.charged = 0
	}
}

// close gives back the budget charge; the reader must not be used after.
func (fr *frameReader) close() {
	if fr.burstBuf != nil {
		fr.endBurst()
	}
	fr.budget.release(fr.charged)
	fr.charged = 0
	if len(fr.buf) > minReadBuffer {
		fr.discard(fr.buf)
	}
	fr.buf, fr.small = nil, nil
}

// enableBurst lets a plain TCP server connection read in bursts (see Burst reads).
func (fr *frameReader) enableBurst(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok || fr.budget == nil {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	fr.raw = rc
	fr.burstFn = fr.burstAttempt
}

// burstRead reads into a burst buffer holding the bytes buffered so far, or into buf as usual
// when the budget cannot cover one: it returns how many bytes it added, with buf, r and w
// describing the burst buffer when it used one. It waits for the socket holding neither a
// burst buffer nor its charge.
func (fr *frameReader) burstRead() (int, error) {
	fr.burstN, fr.burstErr = 0, nil
	if rerr := fr.raw.Read(fr.burstFn); rerr != nil && fr.burstErr == nil {
		fr.burstErr = rerr // a deadline, or the connection closed
	}
	return fr.burstN, fr.burstErr
}

// burstAttempt is one attempt of the socket read (RawConn.Read calls it until it reports
// done): it takes a burst buffer and its charge, copies the buffered bytes to its front and
// reads after them; when the socket has nothing yet both go back while the reader waits.
// Without the charge it reads into buf.
func (fr *frameReader) burstAttempt(fd uintptr) bool {
	const charge = burstReadBuffer - minReadBuffer
	for {
		var bp *[]byte
		dst, k := fr.buf[fr.w:], 0
		if fr.budget.acquire(charge) {
			bp = burstBuffers.Get().(*[]byte)
			k = copy(*bp, fr.buf[fr.r:fr.w])
			dst = (*bp)[k:]
		}
		n, errno := quietsock.RawRead(fd, dst) // a quiet read (libs/quietsock)
		if n <= 0 && bp != nil {
			burstBuffers.Put(bp)
			fr.budget.release(charge)
		}
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return false
		case errno != 0:
			fr.burstErr = os.NewSyscallError("read", errno)
			return true
		case n <= 0:
			fr.burstErr = io.EOF
			return true
		}
		if bp != nil {
			fr.buf, fr.r, fr.w = *bp, 0, k+n
			fr.burstBuf, fr.charged = bp, charge
		} else {
			fr.w += n
		}
		fr.burstN = n
		return true
	}
}

// putBurst gives the burst buffer back to the pool (buf must be replaced by the caller).
func (fr *frameReader) putBurst() {
	burstBuffers.Put(fr.burstBuf)
	fr.burstBuf = nil
}

// endBurst gives the burst buffer back, keeping what is buffered (at most minReadBuffer bytes)
// in the small one.
func (fr *frameReader) endBurst() {
	n := copy(fr.small, fr.buf[fr.r:fr.w])
	fr.putBurst()
	fr.buf, fr.r, fr.w = fr.small, 0, n
	fr.budget.release(fr.charged)
	fr.charged = 0
}

// discard lets go of a grown buffer, into the spares on the server side.
func (fr *frameReader) discard(b []byte) {
	if fr.spares != nil {
		fr.spares.put(b)
	}
}

// due is the read deadline the rules give now: the frame deadline while a frame is in
// progress, the idle deadline (idle after the last bytes arrived) otherwise and at the latest;
// zero for none.
func (fr *frameReader) due() time.Time {
	var d time.Time
	if fr.idle > 0 {
		d = fr.lastRead.Add(fr.idle)
	}
	if !fr.started.IsZero() && fr.frameTimeout > 0 {
		f := fr.started.Add(fr.frameTimeout)
		if d.IsZero() || f.Before(d) {
			d = f
		}
	}
	return d
}

// setDeadline arms the read deadline for the next read. Both deadlines move with the traffic
// (the idle one with every read, the frame one with every frame), and re-arming the socket's
// each time (a timer change in the runtime) cost about 2% of a busy broker's CPU. So a
// deadline already set that is earlier than due is kept: when it fires early, readMore sees
// the real deadline has not passed, arms it and reads on. A connection is never timed out
// early nor late.
func (fr *frameReader) setDeadline() {
	d := fr.due()
	if !fr.deadline.IsZero() && !d.IsZero() && !fr.deadline.After(d) {
		return
	}
	if !d.Equal(fr.deadline) {
		_ = fr.src.SetReadDeadline(d)
		fr.deadline = d
	}
}

// readMore reads at least one byte into buf[w:], which must have room.
func (fr *frameReader) readMore() error {
	for {
		fr.setDeadline()
		var (
			n   int
			err error
		)
		room := len(fr.buf) - fr.w
		if fr.busy && fr.raw != nil && fr.burstBuf == nil && len(fr.buf) == minReadBuffer && fr.w-fr.r < minReadBuffer {
			n, err = fr.burstRead()
			if fr.burstBuf != nil {
				room = burstReadBuffer - (fr.w - n) // buf is the burst buffer now
			}
		} else {
			n, err = fr.src.Read(fr.buf[fr.w:])
			if n > 0 {
				fr.w += n
			}
		}
		if n > 0 {
			// Busy while reads fill the room they had; a small read ends it.
			if n == room {
				fr.busy = true
			} else if n <= minReadBuffer/2 {
				fr.busy = false
			}
			fr.lastRead = fr.now()
			if fr.started.IsZero() {
				fr.started = fr.lastRead
			}
			return nil
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !fr.deadline.IsZero() {
			if due := fr.due(); !due.IsZero() && fr.now().Before(due) {
				fr.deadline = time.Time{} // a kept, earlier deadline fired: arm the real one
				continue
			}
		}
		return fr.readErr(err)
	}
}

// readErr classifies a failed read: a timeout inside a frame is ErrFrameTimeout, a stream that
// ends inside a frame io.ErrUnexpectedEOF, between frames io.EOF.
func (fr *frameReader) readErr(err error) error {
	inFrame := fr.w > fr.r || !fr.started.IsZero()
	var ne net.Error
	switch {
	case inFrame && errors.As(err, &ne) && ne.Timeout() && fr.frameTimeout > 0 &&
		!fr.now().Before(fr.started.Add(fr.frameTimeout)):
		return fmt.Errorf("%w: %d bytes of a frame in %v: %w", ErrFrameTimeout, fr.w-fr.r, fr.frameTimeout, err)
	case inFrame && errors.Is(err, io.EOF):
		return io.ErrUnexpectedEOF
	}
	return err
}

// compact moves the buffered bytes to the front of buf.
func (fr *frameReader) compact() {
	if fr.r > 0 {
		fr.w = copy(fr.buf, fr.buf[fr.r:fr.w])
		fr.r = 0
	}
}

// fill reads until k bytes are buffered; k must fit buf.
func (fr *frameReader) fill(k int) error {
	for fr.w-fr.r < k {
		if len(fr.buf)-fr.r < k {
			fr.compact()
		}
		if err := fr.readMore(); err != nil {
			return err
		}
	}
	return nil
}

// grow replaces buf by one of size n (> len(buf)), charging the budget; false when the
// budget cannot cover it.
func (fr *frameReader) grow(n int) bool {
	charge := int64(n - minReadBuffer)
	if !fr.budget.acquire(charge - fr.charged) {
		return false
	}
	var nb []byte
	if fr.spares != nil {
		nb = fr.spares.get(n)
	} else {
		nb = make([]byte, n)
	}
	fr.w = copy(nb, fr.buf[fr.r:fr.w])
	fr.r = 0
	switch {
	case fr.burstBuf != nil:
		fr.putBurst()
	case len(fr.buf) > minReadBuffer:
		fr.discard(fr.buf)
	}
	fr.buf = nb
	fr.charged = charge
	return true
}

// hasFrame reports whether a whole frame (or a length read would refuse at once) is buffered
// beyond the frame last returned, so read will not wait for the socket.
func (fr *frameReader) hasFrame() bool {
	start := fr.r + fr.consumed
	avail := fr.w - start
	if avail < lengthSize {
		return false
	}
	n := int64(int32(binary.BigEndian.Uint32(fr.buf[start:])))
	if n < headerWordSize || (fr.maxFrame > 0 && n > int64(fr.maxFrame)) {
		return true
	}
	return int64(avail) >= lengthSize+n
}

// read returns the next frame. Errors: io.EOF between frames, io.ErrUnexpectedEOF inside
// one, ErrMalformed for a length below 4 or a header running past its frame, ErrFrameTooLarge
// above maxFrame (the announced length is in the frame's size), ErrFrameTimeout, ErrOverloaded
// (a frame over budget whose header does not fit the buffer held), or the read error.
func (fr *frameReader) read() (frame, error) {
	fr.release()
	if fr.w == fr.r {
		fr.started = time.Time{}
	} else if fr.started.IsZero() {
		fr.started = fr.lastRead // pipelined: the next frame's first bytes came with the last read
	}
	if err := fr.fill(lengthSize); err != nil {
		return frame{}, err
	}
	n := int64(int32(binary.BigEndian.Uint32(fr.buf[fr.r:])))
	if n < headerWordSize {
		return frame{size: n}, fmt.Errorf("%w: frame length %d", ErrMalformed, n)
	}
	if fr.maxFrame > 0 && n > int64(fr.maxFrame) {
		return frame{size: n}, fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, n, fr.maxFrame)
	}
	need := lengthSize + int(n)
	for fr.w-fr.r < need {
		if fr.w == len(fr.buf) {
			fr.compact()
		}
		if fr.w == len(fr.buf) {
			if !fr.grow(min(max(2*len(fr.buf), minReadBuffer), need)) {
				return fr.drop(n, need)
			}
		}
		if err := fr.readMore(); err != nil {
			return frame{size: n}, err
		}
	}
	fr.consumed = need
	fr.started = time.Time{}
	return frame{data: fr.buf[fr.r+lengthSize : fr.r+need], size: n}, nil
}

// frameBuffered reports whether the frame after the one last returned is complete in the
// buffer already, so that the next read makes no syscall.
func (fr *frameReader) frameBuffered() bool {
	r := fr.r + fr.consumed
	if fr.w-r < lengthSize {
		return false
	}
	n := int64(int32(binary.BigEndian.Uint32(fr.buf[r:])))
	return n >= headerWordSize && int64(fr.w-r) >= lengthSize+n
}

// drop handles a frame the budget cannot hold: it keeps the header, discards the rest of the
// frame as it arrives and returns the frame marked dropped (or the frame itself when it
// turns out to be complete within the buffer already held).
func (fr *frameReader) drop(n int64, need int) (frame, error) {
	if err := fr.fill(lengthSize + headerWordSize); err != nil {
		return frame{size: n}, err
	}
	hlen := int(binary.BigEndian.Uint32(fr.buf[fr.r+lengthSize:]) & maxHeaderLen)
	hdrEnd := lengthSize + headerWordSize + hlen
	if hdrEnd > need {
		return frame{size: n}, fmt.Errorf("%w: header length %d exceeds frame of %d bytes", ErrMalformed, hlen, n)
	}
	if hdrEnd > len(fr.buf) {
		return frame{size: n}, fmt.Errorf("%w: frame of %d bytes with a %d-byte header", ErrOverloaded, n, hlen)
	}
	if err := fr.fill(hdrEnd); err != nil {
		return frame{size: n}, err
	}
	if fr.w-fr.r >= need { // arrived meanwhile, within the buffer held
		fr.consumed = need
		fr.started = time.Time{}
		return frame{data: fr.buf[fr.r+lengthSize : fr.r+need], size: n}, nil
	}
	header := append([]byte(nil), fr.buf[fr.r+lengthSize:fr.r+hdrEnd]...)
	if _, _, ok := recoverOpaque(header); !ok {
		// Nobody to answer: no point reading the rest.
		return frame{size: n}, fmt.Errorf("%w: frame of %d bytes without a recoverable opaque", ErrOverloaded, n)
	}
	remaining := need - (fr.w - fr.r)
	fr.r, fr.w = 0, 0
	for remaining > 0 {
		if err := fr.readMore(); err != nil {
			return frame{size: n}, err
		}
		if fr.w <= remaining {
			remaining -= fr.w
			fr.w = 0
			continue
		}
		fr.r = remaining // the rest belongs to the next frame
		remaining = 0
	}
	fr.started = time.Time{}
	return frame{header: header, size: n, dropped: true}, nil
}

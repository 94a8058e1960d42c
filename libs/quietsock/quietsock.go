// Package quietsock reads and writes plain TCP sockets with raw system calls.
//
// A read or write made through the syscall package tells the Go scheduler it enters a system
// call (entersyscall), so that the monitor thread can hand the caller's P to other work if the
// call blocks. When the process was idle the monitor sleeps, and that first call wakes it; it
// then polls every 20µs for as long as any goroutine runs. A process that goes idle between
// batches — a client's asynchronous window waiting for its server, a broker waiting for the
// next burst of sends, a slave waiting for the next replicated frame — wakes it once per batch:
// the monitor thread took about a quarter of such a client's CPU, more than its reader.
//
// A non-blocking socket's read and write return at once (EAGAIN when they cannot proceed), so
// they need no P hand-off. Reader and Writer make them as raw system calls through the
// socket's RawConn, which still waits in the network poller (and honours the deadlines) when
// there is nothing to read or no room to write. Only a socket's own connection has a RawConn:
// over TLS the constructors return nil and the caller uses the connection as before.
package quietsock

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Reader reads a plain TCP socket with raw read calls; deadlines are the socket's. One
// goroutine reads at a time.
type Reader struct {
	net.Conn
	rc  syscall.RawConn
	dst []byte
	n   int
	err error
	fn  func(fd uintptr) bool // attempt, made once
}

// NewReader returns a Reader over nc, or nil when nc is not a socket that has one.
func NewReader(nc net.Conn) *Reader {
	rc := rawConn(nc)
	if rc == nil {
		return nil
	}
	q := &Reader{Conn: nc, rc: rc}
	q.fn = q.attempt
	return q
}

// Read reads what the socket holds into p, waiting in the poller while it holds nothing.
func (q *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	q.dst, q.n, q.err = p, 0, nil
	if err := q.rc.Read(q.fn); err != nil && q.err == nil {
		q.err = err // a deadline, or the socket closed
	}
	q.dst = nil
	return q.n, q.err
}

// attempt is one try of Read (RawConn.Read calls it until it reports done).
func (q *Reader) attempt(fd uintptr) bool {
	for {
		n, errno := RawRead(fd, q.dst)
		switch errno {
		case 0:
			if n == 0 {
				q.err = io.EOF
			}
			q.n = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		q.err = os.NewSyscallError("read", errno)
		return true
	}
}

// Writer writes a plain TCP socket with raw write calls, waiting in the poller while the
// socket is full; deadlines are the socket's. One goroutine writes at a time.
type Writer struct {
	rc   syscall.RawConn
	bufs [][]byte  // what is left to write
	one  [1][]byte // Write's buffer list, so a single write allocates nothing
	iov  []syscall.Iovec
	err  error
	fn   func(fd uintptr) bool // attempt, made once
	try  func(fd uintptr) bool // attempt made once, never waiting
}

// NewWriter returns a Writer over nc, or nil when nc is not a socket that has one.
func NewWriter(nc net.Conn) *Writer {
	rc := rawConn(nc)
	if rc == nil {
		return nil
	}
	w := &Writer{rc: rc}
	w.fn = w.attempt
	w.try = func(fd uintptr) bool {
		w.attempt(fd)
		return true
	}
	return w
}

// Write writes all of b, or fails.
func (w *Writer) Write(b []byte) (int, error) {
	w.one[0] = b
	err := w.WriteBuffers(w.one[:]...)
	w.one[0] = nil
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// WriteBuffers writes all of bufs in order, with one writev for as many as the socket takes.
func (w *Writer) WriteBuffers(bufs ...[]byte) error {
	_, err := w.run(w.fn, bufs)
	return err
}

// run writes bufs with fn inside the socket's RawConn and returns what is left of them.
func (w *Writer) run(fn func(fd uintptr) bool, bufs [][]byte) ([][]byte, error) {
	w.bufs, w.err = bufs, nil
	err := w.rc.Write(fn)
	if err == nil {
		err = w.err
	}
	rest := w.bufs
	clear(w.iov)
	w.bufs, w.iov, w.err = nil, w.iov[:0], nil
	return rest, err
}

// TryWriteBuffers writes what of bufs the socket takes now, with no wait in the poller, and
// returns what is left: nil when all of it went out, else the unwritten tail of bufs (the
// first of them cut where the socket stopped taking bytes; the slices alias bufs). An expired
// write deadline is an error, as for WriteBuffers.
func (w *Writer) TryWriteBuffers(bufs ...[]byte) ([][]byte, error) {
	rest, err := w.run(w.try, bufs)
	if err != nil || len(rest) == 0 {
		return nil, err
	}
	return rest, nil
}

// attempt is one try of WriteBuffers (RawConn.Write calls it until it reports done).
func (w *Writer) attempt(fd uintptr) bool {
	for {
		for len(w.bufs) > 0 && len(w.bufs[0]) == 0 {
			w.bufs = w.bufs[1:]
		}
		if len(w.bufs) == 0 {
			return true
		}
		var n int
		var errno syscall.Errno
		if len(w.bufs) == 1 {
			n, errno = rawIO(syscall.SYS_WRITE, fd, w.bufs[0])
		} else {
			w.iov = w.iov[:0]
			for _, b := range w.bufs {
				if len(b) > 0 {
					v := syscall.Iovec{Base: &b[0]}
					v.SetLen(len(b))
					w.iov = append(w.iov, v)
				}
			}
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
			n, errno = int(r), e
		}
		switch {
		case errno == 0 && n <= 0:
			w.err = io.ErrShortWrite
			return true
		case errno == 0:
			for n > 0 {
				k := min(n, len(w.bufs[0]))
				w.bufs[0] = w.bufs[0][k:]
				n -= k
				if len(w.bufs[0]) == 0 {
					w.bufs = w.bufs[1:]
				}
			}
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			return false
		default:
			w.err = os.NewSyscallError("write", errno)
			return true
		}
	}
}

// TryWrite is one non-blocking write of b to fd: what syscall.Write returns, without entering
// the scheduler's system call state (n is -1 with an error, as there).
func TryWrite(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, errno := rawIO(syscall.SYS_WRITE, fd, b)
	if errno != 0 {
		return -1, errno
	}
	return n, nil
}

// RawRead is one read of fd into b, without entering the scheduler's system call
// state: for a non-blocking socket inside RawConn.Read.
func RawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	return rawIO(syscall.SYS_READ, fd, b)
}

// rawIO makes the read or write call trap on fd with b. An empty b makes no call and reports
// 0 bytes, as read(2) and write(2) of zero bytes do.
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), errno
}

func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

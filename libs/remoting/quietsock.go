package remoting

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Quiet socket calls on plain TCP connections
//
// A read or write made through the syscall package tells the Go scheduler it enters a system
// call (entersyscall), so that the monitor thread can hand the caller's P to other work if the
// call blocks. When the process was idle the monitor sleeps, and that first call wakes it; it
// then polls every 20µs for as long as any goroutine runs. A process that goes idle between
// batches — a client's asynchronous window waiting for its server, a broker waiting for the
// next burst of sends — wakes it once per batch: the monitor thread took about a quarter of
// such a client's CPU, more than its reader.
//
// A non-blocking socket's read and write return at once (EAGAIN when they cannot proceed), so
// they need no P hand-off: plain TCP connections, client and server, read and write with raw
// system calls instead, through the socket's RawConn, which still waits in the network poller
// (and honours the deadlines) when there is nothing to read or no room to write. A TLS
// connection reads and writes through its record layer as before.

// quietReader reads a plain TCP socket with raw read calls; deadlines are the socket's.
type quietReader struct {
	net.Conn
	rc  syscall.RawConn
	dst []byte
	n   int
	err error
	fn  func(fd uintptr) bool // attempt, made once
}

// newQuietReader returns a quietReader over nc, or nil when nc is not a socket that has one.
func newQuietReader(nc net.Conn) *quietReader {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	q := &quietReader{Conn: nc, rc: rc}
	q.fn = q.attempt
	return q
}

// Read reads what the socket holds into p, waiting in the poller while it holds nothing.
func (q *quietReader) Read(p []byte) (int, error) {
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
func (q *quietReader) attempt(fd uintptr) bool {
	for {
		n, errno := rawIO(syscall.SYS_READ, fd, q.dst)
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

// quietWrite is one non-blocking write of b to fd: what syscall.Write returns, without
// entering the scheduler's system call state (n is -1 with an error, as there).
func quietWrite(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, errno := rawIO(syscall.SYS_WRITE, fd, b)
	if errno != 0 {
		return -1, errno
	}
	return n, nil
}

// rawIO makes the read or write call trap on fd with b (not empty).
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	r, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), errno
}

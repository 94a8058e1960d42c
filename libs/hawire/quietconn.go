package hawire

import (
	"net"

	"github.com/rmqha/rmqha/libs/quietsock"
)

// quietConn reads and writes a plain TCP connection with quiet system calls (libs/quietsock):
// a slave waiting for the next frame, and a master waiting for the next append, go idle
// between them, and an ordinary socket call would wake the runtime's monitor thread each
// time. Reads come from one goroutine, and writes are serialised by the caller's write lock,
// as on the connection it wraps.
type quietConn struct {
	net.Conn
	r *quietsock.Reader
	w *quietsock.Writer
}

// withQuietIO wraps a plain TCP connection; any other (TLS) is returned as it is.
func withQuietIO(c net.Conn) net.Conn {
	r, w := quietsock.NewReader(c), quietsock.NewWriter(c)
	if r == nil || w == nil {
		return c
	}
	return &quietConn{Conn: c, r: r, w: w}
}

func (c *quietConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *quietConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// writeBuffers writes bufs in order with one writev where the connection is quiet, else as
// net.Buffers does.
func writeBuffers(c net.Conn, bufs [][]byte) error {
	if qc, ok := c.(*quietConn); ok {
		return qc.w.WriteBuffers(bufs...)
	}
	nb := net.Buffers(bufs)
	_, err := nb.WriteTo(c)
	return err
}

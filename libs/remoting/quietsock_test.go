package remoting

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A quiet reader reads what the socket holds, waits in the poller for more until the read
// deadline (a timeout error), and reports the peer's close as io.EOF.
func TestQuietReader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	peer := <-accepted
	require.NotNil(t, peer)

	q := newQuietReader(nc)
	require.NotNil(t, q)
	buf := make([]byte, 64)

	_, err = peer.Write([]byte("hello"))
	require.NoError(t, err)
	n, err := q.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))

	// Nothing buffered: the read waits in the poller until the deadline.
	require.NoError(t, q.SetReadDeadline(time.Now().Add(30*time.Millisecond)))
	_, err = q.Read(buf)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a passed deadline is a timeout: %v", err)

	// Reads go on once the deadline is lifted.
	require.NoError(t, q.SetReadDeadline(time.Time{}))
	_, err = peer.Write([]byte("later"))
	require.NoError(t, err)
	n, err = q.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "later", string(buf[:n]))

	require.NoError(t, peer.Close())
	_, err = q.Read(buf)
	require.ErrorIs(t, err, io.EOF)
}

// quietWrite writes what the socket takes and reports a closed socket's error.
func TestQuietWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(got)
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	rc, err := nc.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	var n int
	var werr error
	require.NoError(t, rc.Write(func(fd uintptr) bool {
		n, werr = quietWrite(fd, []byte("frame bytes"))
		return true
	}))
	require.NoError(t, werr)
	require.Equal(t, len("frame bytes"), n)
	require.NoError(t, nc.Close())
	require.Equal(t, "frame bytes", string(<-got))
}

// A client's idle timeout still closes its connection when it reads through a quiet reader
// (long enough that a loaded machine answers the first call well within it).
func TestClientIdleTimeoutWithQuietReads(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	cl := newTestClient(t, func(c *ClientConfig) { c.IdleTimeout = time.Second })
	_, err := cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(s.Conns()) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the idle client connection is closed")
	_, err = cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, nil, nil))
	require.NoError(t, err, "the next call redials")
}

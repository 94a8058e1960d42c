package quietsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pair returns the two ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
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
	peer := <-accepted
	require.NotNil(t, peer)
	t.Cleanup(func() { nc.Close(); peer.Close() })
	return nc, peer
}

// readN reads n bytes from c on a goroutine of its own and sends them, or what came before
// the connection failed.
func readN(c net.Conn, n int) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		all := make([]byte, 0, n)
		buf := make([]byte, 1<<20)
		for len(all) < n {
			k, err := c.Read(buf)
			if err != nil {
				break
			}
			all = append(all, buf[:k]...)
		}
		got <- all
	}()
	return got
}

// A quiet reader reads what the socket holds, waits in the poller for more until the read
// deadline (a timeout error), and reports the peer's close as io.EOF.
func TestReader(t *testing.T) {
	nc, peer := pair(t)
	q := NewReader(nc)
	require.NotNil(t, q)
	buf := make([]byte, 64)

	_, err := peer.Write([]byte("hello"))
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

// TryWrite writes what the socket takes and reports a closed socket's error.
func TestTryWrite(t *testing.T) {
	nc, peer := pair(t)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	var n int
	var werr error
	require.NoError(t, rc.Write(func(fd uintptr) bool {
		n, werr = TryWrite(fd, []byte("frame bytes"))
		return true
	}))
	require.NoError(t, werr)
	require.Equal(t, len("frame bytes"), n)
	require.NoError(t, nc.Close())
	require.Equal(t, "frame bytes", string(<-got))
	err = rc.Write(func(fd uintptr) bool {
		n, werr = TryWrite(fd, []byte("late"))
		return true
	})
	require.Error(t, err, "a closed socket's RawConn refuses the write")
}

// A Writer writes several buffers, far more than the socket holds, in order: it waits in the
// poller while the peer is slow to read.
func TestWriterWritesBuffersInOrder(t *testing.T) {
	nc, peer := pair(t)
	w := NewWriter(nc)
	require.NotNil(t, w)
	bufs := [][]byte{[]byte("head:"), {}, bytes.Repeat([]byte("a"), 3<<20), []byte(":mid:"), bytes.Repeat([]byte("b"), 5<<20), []byte(":end")}
	var want []byte
	for _, b := range bufs {
		want = append(want, b...)
	}
	want = append(want, '!') // the Write after them
	got := readN(peer, len(want))
	require.NoError(t, w.WriteBuffers(bufs...))
	n, err := w.Write([]byte("!"))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	all := <-got
	require.True(t, bytes.Equal(want, all), "bytes arrive whole and in order")
}

// A Writer's write to a peer that never reads ends at the socket's write deadline, with a
// timeout; one to a closed peer fails.
func TestWriterDeadlineAndClosedPeer(t *testing.T) {
	nc, peer := pair(t)
	w := NewWriter(nc)
	require.NotNil(t, w)
	require.NoError(t, nc.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
	err := w.WriteBuffers(bytes.Repeat([]byte("x"), 64<<20))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "a passed deadline is a timeout: %v", err)

	require.NoError(t, nc.SetWriteDeadline(time.Time{}))
	require.NoError(t, peer.Close())
	deadline := time.Now().Add(10 * time.Second)
	for err == nil || errors.As(err, &ne) && ne.Timeout() {
		require.True(t, time.Now().Before(deadline), "writes to a closed peer keep succeeding")
		_, err = w.Write(bytes.Repeat([]byte("y"), 1<<20))
	}
	require.NotErrorIs(t, err, io.ErrShortWrite)
}

// An empty buffer reads and writes nothing, without a call and without a fault.
func TestEmptyBuffers(t *testing.T) {
	n, errno := RawRead(^uintptr(0), nil)
	require.Zero(t, n)
	require.Zero(t, errno)
	n, err := TryWrite(^uintptr(0), nil)
	require.Zero(t, n)
	require.NoError(t, err)
}

// Over a connection without a socket of its own (TLS, a pipe) there is no quiet reader or
// writer.
func TestNoRawConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.Nil(t, NewReader(a))
	require.Nil(t, NewWriter(a))
}

// A Writer's Write of one buffer allocates nothing: the master's HA link and the slave's acks
// make one per frame.
func TestWriterWriteAllocatesNothing(t *testing.T) {
	nc, peer := pair(t)
	w := NewWriter(nc)
	require.NotNil(t, w)
	go func() { _, _ = io.Copy(io.Discard, peer) }()
	b := []byte("frame")
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// TryWriteBuffers writes what the socket takes without waiting: everything when there is
// room, else the rest comes back, and writing that rest later delivers every byte once, in
// order.
func TestTryWriteBuffers(t *testing.T) {
	nc, peer := pair(t)
	w := NewWriter(nc)
	require.NotNil(t, w)
	rest, err := w.TryWriteBuffers([]byte("head:"), []byte("small"))
	require.NoError(t, err)
	require.Nil(t, rest, "a small frame goes out whole")
	big := make([]byte, 64<<20) // far more than a socket buffer holds
	for i := range big {
		big[i] = byte(i % 251)
	}
	rest, err = w.TryWriteBuffers([]byte(":big:"), big)
	require.NoError(t, err)
	require.NotEmpty(t, rest, "a peer that does not read leaves a rest")
	left := 0
	for _, b := range rest {
		left += len(b)
	}
	require.Less(t, left, len(big), "part of the frame went out")
	want := append(append([]byte("head:small:big:"), big...), '!')
	got := readN(peer, len(want))
	require.NoError(t, w.WriteBuffers(append(rest, []byte("!"))...))
	require.True(t, bytes.Equal(want, <-got), "bytes arrive whole, once and in order")

	require.NoError(t, nc.SetWriteDeadline(time.Now().Add(-time.Second)))
	_, err = w.TryWriteBuffers([]byte("late"))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

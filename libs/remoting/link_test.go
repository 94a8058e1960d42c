package remoting

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeCounter is a net.Conn that keeps every Write apart.
type writeCounter struct {
	net.Conn // nil: only Write, SetWriteDeadline and Close are used
	mu       sync.Mutex
	writes   [][]byte
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, append([]byte(nil), b...))
	w.mu.Unlock()
	return len(b), nil
}

func (w *writeCounter) SetWriteDeadline(time.Time) error { return nil }
func (w *writeCounter) Close() error                     { return nil }

func (w *writeCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// TestLinkCorkHoldsTheWriter: while corked the writer writes nothing, however long; at uncork
// everything queued meanwhile leaves in one write, in order.
func TestLinkCorkHoldsTheWriter(t *testing.T) {
	wc := &writeCounter{}
	l := newLink(wc, time.Second)
	done := make(chan struct{})
	go func() { l.writeLoop(); close(done) }()
	defer func() { l.close(nil); <-done }()

	l.cork()
	var want []byte
	for i := int32(1); i <= 10; i++ {
		c := &Command{Code: testCode, Opaque: i}
		want = AppendFrame(want, c)
		require.NoError(t, l.send(c, false))
		if i == 1 {
			time.Sleep(50 * time.Millisecond) // an uncorked writer writes the first frame alone by now
			require.Zero(t, wc.count(), "corked writer wrote")
		}
	}
	l.uncork()
	require.Eventually(t, func() bool { return wc.count() > 0 }, 10*time.Second, time.Millisecond)
	require.Equal(t, 1, wc.count())
	require.Equal(t, want, wc.writes[0])

	// Uncorked, a frame leaves without waiting for more.
	require.NoError(t, l.send(&Command{Code: testCode, Opaque: 11}, false))
	require.Eventually(t, func() bool { return wc.count() == 2 }, 10*time.Second, time.Millisecond)
}

// TestFrameBuffered: the reader tells whether the next frame is complete in its buffer.
func TestFrameBuffered(t *testing.T) {
	one := AppendFrame(nil, &Command{Code: testCode, Opaque: 1, Body: []byte("abc")})
	stream := append(append(append([]byte(nil), one...), one...), one[:len(one)-1]...)
	fr := newFrameReader(&chunkReader{data: stream}, nil, 1<<20, nil, nil, 0, 0)
	_, err := fr.read()
	require.NoError(t, err)
	require.True(t, fr.frameBuffered(), "second frame arrived with the first")
	_, err = fr.read()
	require.NoError(t, err)
	require.False(t, fr.frameBuffered(), "third frame is one byte short")
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		accepted <- nc
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// readOpaques reads n frames from nc and returns their opaques.
func readOpaques(t *testing.T, nc net.Conn, n int) []int32 {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var got []int32
	for i := 0; i < n; i++ {
		frame, err := ReadFrame(nc, nil, 64<<20)
		require.NoError(t, err, "frame %d", i)
		c, err := DecodeFrame(frame)
		require.NoError(t, err)
		got = append(got, c.Opaque)
	}
	return got
}

// TestLinkUncorkWritesDirect: on a plain TCP client socket uncork writes the corked batch
// itself: it arrives with no writer running.
func TestLinkUncorkWritesDirect(t *testing.T) {
	cn, sn := tcpPair(t)
	l := newLink(cn, time.Second)
	l.enableDirect()
	require.NotNil(t, l.direct)
	defer l.close(nil)
	l.cork()
	var want []int32
	for i := int32(1); i <= 10; i++ {
		require.NoError(t, l.send(&Command{Code: testCode, Opaque: i}, false))
		want = append(want, i)
	}
	l.uncork()
	require.Equal(t, want, readOpaques(t, sn, len(want)))
}

// TestLinkUncorkHandsRestToWriter: what the socket does not take at once (a peer that is not
// reading yet) goes to the writer ahead of what is queued after, and every frame arrives once,
// in order.
func TestLinkUncorkHandsRestToWriter(t *testing.T) {
	cn, sn := tcpPair(t)
	l := newLink(cn, 10*time.Second)
	l.enableDirect()
	done := make(chan struct{})
	go func() { l.writeLoop(); close(done) }()
	defer func() { l.close(nil); <-done }()

	body := make([]byte, 256<<10)
	var want []int32
	op := int32(0)
	l.cork()
	for i := 0; i < 64; i++ { // 16 MiB: more than the socket buffers hold
		op++
		require.NoError(t, l.send(&Command{Code: testCode, Opaque: op, Body: body}, false))
		want = append(want, op)
	}
	l.uncork()
	for i := 0; i < 8; i++ {
		op++
		require.NoError(t, l.send(&Command{Code: testCode, Opaque: op, Body: body}, false))
		want = append(want, op)
	}
	require.Equal(t, want, readOpaques(t, sn, len(want)))
}

// TestLinkSendDirect: a lone frame on a plain socket is written by the caller, with no writer
// running; with a frame queued (or no direct writes) it is left to the queue, so frames never
// pass one another; a frame larger than the socket takes at once has its rest written by the
// writer before anything queued after it.
func TestLinkSendDirect(t *testing.T) {
	cn, sn := tcpPair(t)
	l := newLink(cn, 10*time.Second)
	done, err := l.sendDirect(&Command{Code: testCode, Opaque: 1})
	require.NoError(t, err)
	require.False(t, done, "no direct writes enabled")
	l.enableDirect()
	done, err = l.sendDirect(&Command{Code: testCode, Opaque: 2})
	require.NoError(t, err)
	require.True(t, done)
	require.Equal(t, []int32{2}, readOpaques(t, sn, 1), "written with no writer running")

	require.NoError(t, l.send(&Command{Code: testCode, Opaque: 3}, false))
	done, err = l.sendDirect(&Command{Code: testCode, Opaque: 4})
	require.NoError(t, err)
	require.False(t, done, "a frame is queued: this one must not pass it")

	writer := make(chan struct{})
	go func() { l.writeLoop(); close(writer) }()
	defer func() { l.close(nil); <-writer }()
	require.NoError(t, l.send(&Command{Code: testCode, Opaque: 4}, false))
	require.Equal(t, []int32{3, 4}, readOpaques(t, sn, 2))

	body := make([]byte, 16<<20) // more than the socket buffers hold
	want := []int32{5}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if done, err = l.sendDirect(&Command{Code: testCode, Opaque: 5, Body: body}); done {
			break
		}
		require.NoError(t, err)
		require.True(t, time.Now().Before(deadline), "the writer never finished its last write")
		time.Sleep(time.Millisecond) // the writer is still finishing its last write
	}
	require.NoError(t, err)
	for op := int32(6); op <= 8; op++ {
		require.NoError(t, l.send(&Command{Code: testCode, Opaque: op}, false))
		want = append(want, op)
	}
	require.Equal(t, want, readOpaques(t, sn, len(want)))
}

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

package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Held frames: N connections each announce an almost complete 16 MiB frame and trickle a
// little of it. The server's memory follows the bytes that arrived, not the lengths announced
// (budget: 2 x sent + 64 KiB per connection, plus 8 MiB), and returns after they close
// (within 8 MiB of where it started).
func TestHeldFramesMemoryFollowsBytesNotLengths(t *testing.T) {
	const (
		conns = 24
		sent  = 64 << 10 // bytes of each frame actually sent
		slack = 8 << 20
	)
	s, _ := startServer(t, func(c *ServerConfig) {
		c.IdleTimeout = time.Minute
		c.FrameTimeout = time.Minute
	}, func(s *Server) { s.HandleFunc(testCode, echo) })
	addr := s.Addr().String()
	before := heapInUse()

	prefix := binary.BigEndian.AppendUint32(nil, 16<<20-16)
	payload := append(prefix, make([]byte, sent)...)
	raws := make([]*rawConn, conns)
	for i := range raws {
		raws[i] = dialRaw(t, addr)
		raws[i].write(payload)
	}
	// Every connection's buffer has grown to hold what it sent (charged to the budget).
	require.Eventually(t, func() bool {
		return s.Stats().BytesInFlight >= int64(conns)*(sent-minReadBuffer)
	}, 10*time.Second, 5*time.Millisecond)
	during := heapInUse()
	budget := int64(conns)*(2*sent+64<<10) + slack
	t.Logf("heap: before %d KiB, holding %d x 16 MiB announced (%d KiB sent each): %d KiB (budget +%d KiB)",
		before>>10, conns, sent>>10, during>>10, budget>>10)
	require.Less(t, during-before, budget, "heap grew with the announced lengths")

	for _, rc := range raws {
		_ = rc.nc.Close()
	}
	require.Eventually(t, func() bool { return s.Stats().OpenConnections == 0 }, 10*time.Second, 5*time.Millisecond)
	require.Zero(t, s.Stats().BytesInFlight)
	after := heapInUse()
	t.Logf("heap after close: %d KiB", after>>10)
	require.Less(t, after-before, int64(slack), "memory not returned after the connections closed")

	// Still serving.
	rc := dialRaw(t, addr)
	rc.send(req(testCode, 1, nil))
	require.EqualValues(t, 1, rc.read().Opaque)
}

// A peer that dribbles a frame is closed at the frame timeout, although it never goes idle;
// a frame sent slowly but within the timeout is served.
func TestFrameTimeoutClosesDribbler(t *testing.T) {
	s, hook := startServer(t, func(c *ServerConfig) {
		c.IdleTimeout = time.Hour
		c.FrameTimeout = 500 * time.Millisecond
	}, func(s *Server) { s.HandleFunc(testCode, echo) })
	addr := s.Addr().String()

	frame := AppendFrame(nil, req(testCode, 7, map[string]string{"k": "v"}))
	rc := dialRaw(t, addr)
	rc.write(frame[:6])
	rc.write(frame[6:]) // slow but in time
	require.EqualValues(t, 7, rc.read().Opaque)

	rc = dialRaw(t, addr)
	rc.write(binary.BigEndian.AppendUint32(nil, 1<<20))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one byte every 20 ms for at most 20 s
		defer wg.Done()
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for i := 0; i < 1000; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			if _, err := rc.nc.Write([]byte{0}); err != nil {
				return
			}
		}
	}()
	rc.expectClosed()
	close(stop)
	wg.Wait()
	require.Eventually(t, func() bool { return s.Stats().FrameTimeouts == 1 }, 5*time.Second, 5*time.Millisecond)
	require.True(t, hasLog(hook, "frame not completed within the frame timeout", "peer"))
}

// Connections beyond the listener's limit are closed at accept and counted; a slot freed by a
// close is usable again.
func TestConnectionLimit(t *testing.T) {
	const limit = 3
	s, hook := startServer(t, func(c *ServerConfig) { c.MaxConnections = limit }, func(s *Server) {
		s.HandleFunc(testCode, echo)
	})
	addr := s.Addr().String()
	held := make([]*rawConn, limit)
	for i := range held {
		held[i] = dialRaw(t, addr)
		held[i].send(req(testCode, int32(i), nil))
		require.EqualValues(t, i, held[i].read().Opaque)
	}
	extra := dialRaw(t, addr)
	extra.expectClosed()
	require.EqualValues(t, 1, s.Stats().RefusedLimit)
	require.True(t, hasLog(hook, "connection limit", "peer", "max"))
	require.EqualValues(t, limit, s.Stats().OpenConnections)

	_ = held[0].nc.Close()
	require.Eventually(t, func() bool { return s.Stats().OpenConnections == limit-1 }, 5*time.Second, 5*time.Millisecond)
	again := dialRaw(t, addr)
	again.send(req(testCode, 9, nil))
	require.EqualValues(t, 9, again.read().Opaque)
}

// Past the byte budget a request is answered SYSTEM_BUSY without its body being buffered; the
// stream stays in sync (the next pipelined request is served) and the budget is whole again
// once the held requests are answered.
func TestByteBudgetSystemBusyKeepsConnection(t *testing.T) {
	const budget = 64 << 10
	release := make(chan struct{})
	held := make(chan struct{}, 4)
	s, hook := startServer(t, func(c *ServerConfig) {
		c.MaxFrameSize = budget
		c.MaxBytesInFlight = budget
	}, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) { // holds its request
			held <- struct{}{}
			<-release
			echo(w, r)
		})
		s.HandleFunc(testCode+1, echo)
	})
	rc := dialRaw(t, s.Addr().String())
	big := func(opaque int32) *Command {
		c := req(testCode, opaque, nil)
		c.Body = bytes.Repeat([]byte{'x'}, 40<<10)
		return c
	}
	rc.send(big(1))
	<-held
	require.GreaterOrEqual(t, s.Stats().BytesInFlight, int64(40<<10))

	// Request 2 does not fit what is left; request 3, pipelined right behind it, does.
	rc.write(append(AppendFrame(nil, big(2)), AppendFrame(nil, req(testCode+1, 3, nil))...))
	resp := rc.read()
	require.EqualValues(t, 2, resp.Opaque)
	require.Equal(t, SystemBusy, resp.Code)
	require.True(t, strings.HasPrefix(resp.Remark, "[OVERLOAD]"), resp.Remark)
	resp = rc.read()
	require.EqualValues(t, 3, resp.Opaque)
	require.Equal(t, Success, resp.Code)
	require.EqualValues(t, 1, s.Stats().BusyBytes)
	require.True(t, hasLog(hook, "bytes in flight over budget", "peer"))

	close(release)
	resp = rc.read()
	require.EqualValues(t, 1, resp.Opaque)
	require.Len(t, resp.Body, 40<<10)
	require.Eventually(t, func() bool { return s.Stats().BytesInFlight == 0 }, 5*time.Second, 5*time.Millisecond)

	// Now it fits.
	rc.send(big(4))
	resp = rc.read()
	require.EqualValues(t, 4, resp.Opaque)
	require.Equal(t, Success, resp.Code)
	require.Eventually(t, func() bool { return s.Stats().BytesInFlight == 0 }, 5*time.Second, 5*time.Millisecond)
}

// Over budget, a frame whose header does not fit the buffer held cannot be answered: the
// connection is closed and counted, others are unaffected.
func TestByteBudgetHugeHeaderCloses(t *testing.T) {
	const budget = 64 << 10
	release := make(chan struct{})
	defer close(release)
	s, _ := startServer(t, func(c *ServerConfig) {
		c.MaxFrameSize = budget
		c.MaxBytesInFlight = budget
	}, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) { <-release })
		s.HandleFunc(testCode+1, echo)
	})
	rc := dialRaw(t, s.Addr().String())
	hold := req(testCode, 1, nil)
	hold.Body = make([]byte, 60<<10)
	rc.send(hold)
	require.Eventually(t, func() bool { return s.Stats().BytesInFlight >= 60<<10 }, 5*time.Second, 5*time.Millisecond)

	other := dialRaw(t, s.Addr().String())
	other.send(req(testCode+1, 5, map[string]string{"pad": strings.Repeat("p", 8<<10)}))
	other.expectClosed()
	require.Eventually(t, func() bool { return s.Stats().OverloadCloses == 1 }, 5*time.Second, 5*time.Millisecond)
	third := dialRaw(t, s.Addr().String())
	third.send(req(testCode+1, 6, nil))
	require.EqualValues(t, 6, third.read().Opaque)

	// Over budget with no opaque to answer (an attacker's zeros): closed at once, without
	// waiting for the rest of the frame.
	zeros := dialRaw(t, s.Addr().String())
	zeros.write(append(binary.BigEndian.AppendUint32(nil, 60<<10), make([]byte, 8<<10)...))
	zeros.expectClosed()
	require.Eventually(t, func() bool { return s.Stats().OverloadCloses == 2 }, 5*time.Second, 5*time.Millisecond)
}

// The client reads large responses incrementally too, and still gets them whole.
func TestClientReadsLargeResponse(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			resp := NewResponse(r, Success, "")
			resp.Body = body
			_ = w.Write(resp)
		})
	})
	cl := newTestClient(t, nil)
	resp, err := cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	require.Equal(t, body, resp.Body)
}

// A server can still take frames up to its maximum.
func TestBoundsStillAcceptLargeFrames(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	rc := dialRaw(t, s.Addr().String())
	c := req(testCode, 1, nil)
	c.Body = make([]byte, 16<<20-4096)
	rc.send(c)
	resp := rc.read()
	require.Len(t, resp.Body, len(c.Body))
	require.Eventually(t, func() bool { return s.Stats().BytesInFlight == 0 }, 5*time.Second, 5*time.Millisecond)
}

var _ net.Conn = (*prefixConn)(nil)

func TestServerKeysApplyAndValidate(t *testing.T) {
	k := DefaultServerKeys()
	require.NoError(t, k.Validate(16<<20))
	cfg, def := DefaultServerConfig(), DefaultServerConfig()
	k.Apply(&cfg)
	cfg.Logger, def.Logger = nil, nil
	require.Equal(t, def, cfg, "the keys' defaults are the server's")
	cfg.Logger = discardLogger()

	k = ServerKeys{ServerTLSHandshakeTimeout: time.Second} // every bound off
	k.Apply(&cfg)
	require.NoError(t, cfg.Validate())
	s, err := NewServer(cfg)
	require.NoError(t, err)
	st := s.Stats()
	require.Zero(t, st.MaxBytesInFlight)
	require.Equal(t, -1, st.MaxConnections)

	for key, bad := range map[string]ServerKeys{
		"serverMaxConnections":            {ServerMaxConnections: -1, ServerTLSHandshakeTimeout: time.Second},
		"serverMaxBytesInFlight":          {ServerMaxBytesInFlight: 1 << 20, ServerTLSHandshakeTimeout: time.Second},
		"serverFrameTimeoutMillis":        {ServerFrameTimeout: -1, ServerTLSHandshakeTimeout: time.Second},
		"serverTlsHandshakeTimeoutMillis": {},
	} {
		err := bad.Validate(16 << 20)
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.ErrorContains(t, err, key)
	}
}

// A client connection keeps the buffer a large frame grew for the next one (a consumer reads
// pull responses of similar size back to back); a server connection drops it (an idle server
// connection holds minReadBuffer bytes whatever it was sent before).
func TestClientReaderKeepsGrownBuffer(t *testing.T) {
	var stream []byte
	for i := 0; i < 50; i++ {
		stream = append(stream, zeroFrame(48<<10)...)
	}
	for _, tc := range []struct {
		name   string
		budget *byteBudget
	}{{"client", nil}, {"server", &byteBudget{}}} {
		fr := newFrameReader(&chunkReader{data: append([]byte(nil), stream...)}, nil, 1<<20, tc.budget, &spareBuffers{}, 0, 0)
		_, err := fr.read() // the first frame grows the buffer
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(40, func() {
			_, err := fr.read()
			require.NoError(t, err)
		})
		fr.release()
		if tc.budget == nil {
			require.Zero(t, allocs, "client: allocations per frame")
			require.Greater(t, len(fr.buf), minReadBuffer, "client: grown buffer kept")
		} else {
			require.Greater(t, allocs, float64(0), "server: grown buffer dropped after each frame")
			require.Equal(t, minReadBuffer, len(fr.buf), "server: back to the small buffer")
		}
	}
}

// Server connections take the buffers a large frame doubles through from their server's
// spares: after the first frame, reading another 48 KiB frame (on the same connection or on
// another) allocates only the buffer cut to that frame's end, where without spares it
// allocates 8, 16 and 32 KiB on the way. The spares keep one buffer per size.
func TestServerReadersShareOutgrownBuffers(t *testing.T) {
	var stream []byte
	for i := 0; i < 50; i++ {
		stream = append(stream, zeroFrame(48<<10)...)
	}
	sp := &spareBuffers{}
	budget := &byteBudget{max: 1 << 20}
	first := newFrameReader(&chunkReader{data: append([]byte(nil), stream...)}, nil, 1<<20, budget, sp, 0, 0)
	_, err := first.read()
	require.NoError(t, err)
	first.release()
	for k, size := 1, 2*minReadBuffer; size < 48<<10; k, size = k+1, size*2 {
		require.Len(t, sp.bufs[spareClass(size)], size, "spare of %d bytes (class %d)", size, k)
	}
	second := newFrameReader(&chunkReader{data: append([]byte(nil), stream...)}, nil, 1<<20, budget, sp, 0, 0)
	allocs := testing.AllocsPerRun(40, func() {
		_, err := second.read()
		require.NoError(t, err)
	})
	require.Equal(t, float64(1), allocs, "allocations per 48 KiB frame with spares")
	second.release()
	first.close()
	second.close()
	require.Zero(t, budget.used.Load(), "budget charge given back")

	none := newFrameReader(&chunkReader{data: append([]byte(nil), stream...)}, nil, 1<<20, budget, nil, 0, 0)
	allocs = testing.AllocsPerRun(40, func() {
		_, err := none.read()
		require.NoError(t, err)
	})
	require.Equal(t, float64(4), allocs, "allocations per 48 KiB frame without spares")
	sp.drop()
	require.Equal(t, [32][]byte{}, sp.bufs, "drop empties the spares")
}

// zeroFrame is a length prefix and size zero bytes.
func zeroFrame(size int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(b, make([]byte, size)...)
}

// deadlineCounter is a chunkReader that records the read deadlines set on it.
type deadlineCounter struct {
	chunkReader
	sets []time.Time
}

func (d *deadlineCounter) SetReadDeadline(t time.Time) error {
	d.sets = append(d.sets, t)
	return nil
}

// A reader arms the socket's deadline only when the one set is later than due: 100 frames
// read in 100 ms set it twice (the idle deadline, then the first frame's earlier one), never
// later than due.
func TestReaderKeepsAnEarlierDeadline(t *testing.T) {
	var stream []byte
	for i := 0; i < 100; i++ {
		stream = append(stream, zeroFrame(64)...)
	}
	now := time.Unix(1000, 0)
	src := &deadlineCounter{chunkReader: chunkReader{data: stream, chunks: []byte{1}}}
	fr := newFrameReader(src, nil, 1<<20, &byteBudget{}, &spareBuffers{}, 120*time.Second, 30*time.Second)
	fr.now = func() time.Time { return now }
	fr.lastRead = now
	for i := 0; i < 100; i++ {
		now = now.Add(time.Millisecond)
		_, err := fr.read()
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(src.sets), 2, "deadlines set for 100 frames read within 100 ms: %v", src.sets)
	for _, d := range src.sets {
		require.False(t, d.After(now.Add(120*time.Second)), "no deadline later than due")
	}
}

// slowConn delivers 38 bytes every step on a fake clock, and times out a Read whose deadline
// comes before the next bytes, at the deadline, as a socket does.
type slowConn struct {
	data     []byte
	now      *time.Time
	step     time.Duration
	next     time.Time // when the next bytes arrive
	deadline time.Time
	sets     int
}

type fakeTimeout struct{}

func (fakeTimeout) Error() string   { return "i/o timeout" }
func (fakeTimeout) Timeout() bool   { return true }
func (fakeTimeout) Temporary() bool { return true }

func (c *slowConn) Read(b []byte) (int, error) {
	if c.next.IsZero() {
		c.next = c.now.Add(c.step)
	}
	if !c.deadline.IsZero() && !c.next.Before(c.deadline) {
		*c.now = c.deadline // the read waits until its deadline; the bytes still come at next
		return 0, fakeTimeout{}
	}
	*c.now, c.next = c.next, c.next.Add(c.step)
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), 38)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *slowConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	c.sets++
	return nil
}

// A kept deadline that fires before the real one is due is re-armed and the read goes on:
// frames arriving every 10 s with a 30 s frame timeout all come through; a frame stalled past
// its timeout still fails with ErrFrameTimeout.
func TestReaderRearmsAnEarlyDeadline(t *testing.T) {
	var stream []byte
	for i := 0; i < 20; i++ {
		stream = append(stream, zeroFrame(64)...)
	}
	now := time.Unix(1000, 0)
	src := &slowConn{data: stream, now: &now, step: 10 * time.Second}
	fr := newFrameReader(src, nil, 1<<20, &byteBudget{}, &spareBuffers{}, 120*time.Second, 30*time.Second)
	fr.now = func() time.Time { return now }
	fr.lastRead = now
	for i := 0; i < 20; i++ {
		_, err := fr.read()
		require.NoError(t, err, "frame %d", i)
	}
	require.Less(t, src.sets, 40, "fewer deadline changes than reads")

	// Half a frame, then nothing for longer than the frame timeout.
	src.data = zeroFrame(64)[:20]
	src.step, src.next = 40*time.Second, time.Time{}
	_, err := fr.read()
	require.ErrorIs(t, err, ErrFrameTimeout)
}

package remoting

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

const testCode int32 = 1000

func startServer(t testing.TB, mod func(*ServerConfig), setup func(*Server)) (*Server, *logtest.Hook) {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	cfg := DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = logger
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewServer(cfg)
	require.NoError(t, err)
	if setup != nil {
		setup(s)
	}
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Close() })
	return s, hook
}

// rawConn is a test peer speaking frames by hand.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	_, err := r.nc.Write(b)
	require.NoError(r.t, err)
}

func (r *rawConn) send(c *Command) { r.write(AppendFrame(nil, c)) }

func (r *rawConn) read() *Command {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := ReadFrame(r.br, nil, 1<<24)
	require.NoError(r.t, err)
	c, err := DecodeFrame(frame)
	require.NoError(r.t, err)
	return c
}

// expectClosed waits for the server to close the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadAll(r.br)
	var ne net.Error
	require.False(r.t, errors.As(err, &ne) && ne.Timeout(), "connection not closed by server")
}

// expectSilence checks that nothing arrives within d.
func (r *rawConn) expectSilence(d time.Duration) {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(d))
	_, err := r.br.Peek(1)
	var ne net.Error
	require.True(r.t, errors.As(err, &ne) && ne.Timeout(), "unexpected bytes or close: %v", err)
}

func req(code int32, opaque int32, ext map[string]string) *Command {
	c := NewRequest(code, ext, nil)
	c.Opaque = opaque
	return c
}

func echo(w ResponseWriter, r *Command) {
	resp := NewResponse(r, Success, "")
	resp.ExtFields = r.ExtFields
	resp.Body = r.Body
	_ = w.Write(resp)
}

func hasLog(hook *logtest.Hook, msg string, fields ...string) bool {
	for _, e := range hook.AllEntries() {
		if !strings.Contains(e.Message, msg) {
			continue
		}
		ok := true
		for _, f := range fields {
			if _, present := e.Data[f]; !present {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestServerPipelinesOutOfOrder(t *testing.T) {
	const n = 5
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	started := make(chan int, n)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			i, _ := r.ExtInt32("i")
			started <- int(i)
			<-release[i]
			echo(w, r)
		})
	})
	rc := dialRaw(t, s.Addr().String())
	var batch []byte
	for i := 0; i < n; i++ {
		batch = AppendFrame(batch, req(testCode, int32(100+i), map[string]string{"i": strconv.Itoa(i)}))
	}
	rc.write(batch) // all pipelined in one write
	for i := 0; i < n; i++ {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("handlers do not run concurrently")
		}
	}
	for i := n - 1; i >= 0; i-- {
		close(release[i])
		resp := rc.read()
		require.True(t, resp.IsResponse())
		require.EqualValues(t, 100+i, resp.Opaque)
		require.Equal(t, strconv.Itoa(i), resp.Ext("i"))
	}
}

func TestServerOneway(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {}) // never writes
		s.HandleFunc(testCode+1, echo)
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 1, nil))
	oneway := req(testCode+1, 2, nil) // handler writes, but the oneway flag suppresses it
	oneway.Flag = FlagOneway
	rc.send(oneway)
	rc.send(req(testCode+1, 3, nil))
	resp := rc.read()
	require.EqualValues(t, 3, resp.Opaque)
	rc.expectSilence(100 * time.Millisecond)
}

func TestServerOversizeFrame(t *testing.T) {
	s, hook := startServer(t, func(c *ServerConfig) { c.MaxFrameSize = 1024 }, func(s *Server) {
		s.HandleFunc(testCode, echo)
	})
	rc := dialRaw(t, s.Addr().String())
	rc.write(binary.BigEndian.AppendUint32(nil, 1025))
	rc.expectClosed()
	require.Eventually(t, func() bool { return hasLog(hook, "frame too large", "peer", "size") }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return s.Stats().FramesTooLarge == 1 }, 5*time.Second, 5*time.Millisecond)
	rc = dialRaw(t, s.Addr().String())
	rc.write(binary.BigEndian.AppendUint32(nil, 0xffffffff)) // negative
	rc.expectClosed()
	require.Eventually(t, func() bool { return s.Stats().FramesMalformed == 1 }, 5*time.Second, 5*time.Millisecond)
	// Exactly at the limit is fine.
	rc = dialRaw(t, s.Addr().String())
	c := req(testCode, 1, nil)
	hdr := len(AppendFrame(nil, c)) - 4
	c.Body = make([]byte, 1024-hdr)
	rc.send(c)
	require.Len(t, rc.read().Body, 1024-hdr)
}

func TestServerGarbage(t *testing.T) {
	s, hook := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	for name, junk := range map[string][]byte{
		"http":           []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"tiny length":    {0, 0, 0, 2, 1, 2},
		"negative":       {0x80, 0, 0, 0},
		"unknown type":   {0, 0, 0, 6, 7, 0, 0, 2, '{', '}'},
		"no opaque":      rawJSONFrame(`{"code":10,`, nil),
		"header overrun": {0, 0, 0, 4, 0, 0, 0, 9},
	} {
		t.Run(name, func(t *testing.T) {
			rc := dialRaw(t, s.Addr().String())
			rc.write(junk)
			rc.expectClosed()
		})
	}
	require.True(t, hasLog(hook, "", "peer"))
	// The server still serves.
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 9, nil))
	require.EqualValues(t, 9, rc.read().Opaque)
}

func TestServerMalformedHeaderWithOpaque(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	rc := dialRaw(t, s.Addr().String())
	rc.write(rawJSONFrame(`{"code":1000,"opaque":77,"flag":0,"extFields":{"a":[}`, nil))
	resp := rc.read()
	require.EqualValues(t, 77, resp.Opaque)
	require.Equal(t, SystemError, resp.Code)
	require.True(t, resp.IsResponse())
	require.Contains(t, resp.Remark, "malformed")
	// The connection survives.
	rc.send(req(testCode, 78, nil))
	require.EqualValues(t, 78, rc.read().Opaque)
}

func TestServerTruncatedFrames(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	frame := AppendFrame(nil, req(testCode, 5, map[string]string{"k": "v"}))

	// Byte-by-byte delivery still yields one answer.
	rc := dialRaw(t, s.Addr().String())
	for i := range frame {
		rc.write(frame[i : i+1])
	}
	require.EqualValues(t, 5, rc.read().Opaque)

	// A frame cut short and the write side closed: the server closes without answering.
	for _, cut := range []int{2, 6, len(frame) - 1} {
		rc := dialRaw(t, s.Addr().String())
		rc.write(frame[:cut])
		require.NoError(t, rc.nc.(*net.TCPConn).CloseWrite())
		rc.expectClosed()
	}
}

func TestServerUnknownCode(t *testing.T) {
	s, _ := startServer(t, nil, nil)
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(4321, 11, nil))
	resp := rc.read()
	require.Equal(t, RequestCodeNotSupported, resp.Code)
	require.EqualValues(t, 11, resp.Opaque)
	require.Contains(t, resp.Remark, "4321")
	// A code beyond 16 bits (RocketMQ 5's POP codes) is a request like any other.
	rc.send(req(200050, 12, nil))
	resp = rc.read()
	require.Equal(t, RequestCodeNotSupported, resp.Code)
	require.EqualValues(t, 12, resp.Opaque)
}

func TestServerHandlerPanic(t *testing.T) {
	s, hook := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) { panic("boom") })
		s.HandleFunc(testCode+1, echo)
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 1, nil))
	resp := rc.read()
	require.Equal(t, SystemError, resp.Code)
	require.EqualValues(t, 1, resp.Opaque)
	require.Contains(t, resp.Remark, "boom")
	require.True(t, hasLog(hook, "handler panicked", "peer", "stack"))
	rc.send(req(testCode+1, 2, nil))
	require.EqualValues(t, 2, rc.read().Opaque)
}

func TestServerSystemBusy(t *testing.T) {
	const limit, total = 4, 40
	release := make(chan struct{})
	var running atomic.Int32
	s, _ := startServer(t, func(c *ServerConfig) { c.MaxInflightPerConn = limit }, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			running.Add(1)
			<-release
			echo(w, r)
		})
	})
	rc := dialRaw(t, s.Addr().String())
	var batch []byte
	for i := 0; i < total; i++ {
		batch = AppendFrame(batch, req(testCode, int32(i), nil))
	}
	rc.write(batch)
	busy := 0
	for i := 0; i < total-limit; i++ {
		resp := rc.read()
		require.Equal(t, SystemBusy, resp.Code, "response %d: %v", i, resp)
		require.GreaterOrEqual(t, resp.Opaque, int32(limit))
		busy++
	}
	require.EqualValues(t, limit, running.Load())
	close(release)
	seen := map[int32]bool{}
	for i := 0; i < limit; i++ {
		resp := rc.read()
		require.Equal(t, Success, resp.Code)
		seen[resp.Opaque] = true
	}
	require.Len(t, seen, limit)
	require.Equal(t, total-limit, busy)
}

func TestServerBinaryRequestGetsJSONAnswer(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	rc := dialRaw(t, s.Addr().String())
	frame, err := AppendBinaryFrame(nil, &Command{Code: testCode, Language: "JAVA", Opaque: 42, ExtFields: map[string]string{"a": "b"}, Body: []byte("x")})
	require.NoError(t, err)
	rc.write(frame)
	resp := rc.read()
	require.EqualValues(t, 42, resp.Opaque)
	require.Equal(t, "b", resp.Ext("a"))
	require.Equal(t, "x", string(resp.Body))
}

func TestServerIdleTimeoutAndCloseHook(t *testing.T) {
	closed := make(chan *ServerConn, 1)
	s, _ := startServer(t, func(c *ServerConfig) { c.IdleTimeout = 200 * time.Millisecond }, func(s *Server) {
		s.HandleFunc(testCode, echo)
		s.OnConnClose(func(c *ServerConn) { closed <- c })
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 1, nil))
	rc.read()
	rc.expectClosed()
	select {
	case c := <-closed:
		require.Equal(t, rc.nc.LocalAddr().String(), c.RemoteAddr())
		require.NotZero(t, c.ID())
		require.Error(t, c.Context().Err())
	case <-time.After(10 * time.Second):
		t.Fatal("close hook not called")
	}
	require.Empty(t, s.Conns())
}

func TestServerWriteAfterCloseAndLateWrite(t *testing.T) {
	writers := make(chan ResponseWriter, 2)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) { writers <- w })
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 1, nil))
	rc.send(req(testCode, 2, nil))
	w1, w2 := <-writers, <-writers
	// Written long after the handler returned, from another goroutine (long polling).
	go func() { _ = w1.Write(NewResponse(nil, Success, "late")) }()
	resp := rc.read()
	require.Equal(t, "late", resp.Remark)
	require.ErrorIs(t, w1.Write(NewResponse(nil, Success, "")), ErrAlreadyWritten)
	require.NoError(t, w2.Conn().Close())
	require.ErrorIs(t, w2.Write(NewResponse(nil, Success, "")), ErrClosed)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}

func TestServerConfigValidate(t *testing.T) {
	require.NoError(t, DefaultServerConfig().Validate())
	cfg := DefaultServerConfig()
	cfg.MaxInflightPerConn = -1
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "MaxInflightPerConn")
	_, err = NewServer(cfg)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.NoError(t, DefaultClientConfig().Validate())
}

func TestServerCloseWaitsForHandlers(t *testing.T) {
	var done atomic.Bool
	entered := make(chan struct{})
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			close(entered)
			<-w.Conn().Context().Done()
			time.Sleep(20 * time.Millisecond)
			done.Store(true)
		})
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 1, nil))
	<-entered
	require.NoError(t, s.Close())
	require.True(t, done.Load())
	_, err := net.DialTimeout("tcp", s.Addr().String(), time.Second)
	require.Error(t, err)
}

func TestServerManyConcurrentCallers(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	cl := NewClient(ClientConfig{})
	defer cl.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				v := strconv.Itoa(g*1000 + i)
				resp, err := cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, map[string]string{"v": v}, []byte(v)))
				if err != nil {
					errs <- err
					return
				}
				if resp.Ext("v") != v || string(resp.Body) != v {
					errs <- errors.New("mismatched response " + resp.String())
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestServerFloodEveryRequestAnsweredOnce(t *testing.T) {
	const limit, total = 64, 20000
	release := make(chan struct{})
	s, _ := startServer(t, func(c *ServerConfig) { c.MaxInflightPerConn = limit }, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			<-release
			echo(w, r)
		})
	})
	rc := dialRaw(t, s.Addr().String())
	go func() {
		var batch []byte
		for i := 0; i < total; i++ {
			batch = AppendFrame(batch, req(testCode, int32(i), nil))
			if len(batch) > 64<<10 || i == total-1 {
				if _, err := rc.nc.Write(batch); err != nil {
					return
				}
				batch = batch[:0]
			}
		}
	}()
	seen := make([]bool, total)
	busy := 0
	for i := 0; i < total; i++ {
		if i == total-limit {
			close(release) // every other request has been refused by now
		}
		resp := rc.read()
		require.False(t, seen[resp.Opaque], "opaque %d answered twice", resp.Opaque)
		seen[resp.Opaque] = true
		if resp.Code == SystemBusy {
			busy++
		} else {
			require.Equal(t, Success, resp.Code)
		}
	}
	require.Equal(t, total-limit, busy)
}

// Workers are reused across requests of a connection; a reused one that serves a slow request
// must not hold up the next: with idle workers already waiting, more slow requests than there
// are idle workers all run at once and are answered in the order they are released.
func TestServerReusedWorkersStillPipeline(t *testing.T) {
	const n = 3 * maxIdleWorkers
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	started := make(chan int, n)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			if i, err := r.ExtInt32("i"); err == nil {
				started <- int(i)
				<-release[i]
			}
			echo(w, r)
		})
	})
	rc := dialRaw(t, s.Addr().String())
	// Fast requests in one write leave idle workers behind.
	var warm []byte
	for i := 0; i < 2*maxIdleWorkers; i++ {
		warm = AppendFrame(warm, req(testCode, int32(i), nil))
	}
	rc.write(warm)
	for i := 0; i < 2*maxIdleWorkers; i++ {
		require.EqualValues(t, FlagResponse, rc.read().Flag&FlagResponse)
	}
	var batch []byte
	for i := 0; i < n; i++ {
		batch = AppendFrame(batch, req(testCode, int32(100+i), map[string]string{"i": strconv.Itoa(i)}))
	}
	rc.write(batch)
	for i := 0; i < n; i++ {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d slow handlers run concurrently", i, n)
		}
	}
	for i := n - 1; i >= 0; i-- {
		close(release[i])
		resp := rc.read()
		require.EqualValues(t, 100+i, resp.Opaque)
	}
	// Still serving after the burst.
	rc.write(AppendFrame(nil, req(testCode, 7, nil)))
	require.EqualValues(t, 7, rc.read().Opaque)
	// The burst's workers beyond maxIdleWorkers linger, then leave.
	conns := s.Conns()
	require.Len(t, conns, 1)
	require.Greater(t, conns[0].idle.Load(), int32(maxIdleWorkers))
	require.Eventually(t, func() bool { return conns[0].idle.Load() <= maxIdleWorkers },
		10*workerLinger, 10*time.Millisecond)
}

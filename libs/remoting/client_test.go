package remoting

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newTestClient(t testing.TB, mod func(*ClientConfig)) *Client {
	cfg := DefaultClientConfig()
	if mod != nil {
		mod(&cfg)
	}
	c := NewClient(cfg)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestClientInvokeAndOneway(t *testing.T) {
	got := make(chan *Command, 1)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, echo)
		s.HandleFunc(testCode+1, func(w ResponseWriter, r *Command) {
			got <- r
			_ = w.Write(NewResponse(r, Success, "ignored")) // dropped: request is oneway
		})
	})
	cl := newTestClient(t, nil)
	addr := s.Addr().String()
	r := NewRequest(testCode, map[string]string{"k": "v"}, []byte("body"))
	resp, err := cl.Invoke(context.Background(), addr, r)
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
	require.Equal(t, "v", resp.Ext("k"))
	require.Equal(t, "body", string(resp.Body))
	require.Zero(t, r.Opaque, "caller's command is not mutated")

	require.NoError(t, cl.InvokeOneway(context.Background(), addr, NewRequest(testCode+1, nil, nil)))
	select {
	case c := <-got:
		require.True(t, c.IsOneway())
	case <-time.After(10 * time.Second):
		t.Fatal("oneway request not received")
	}
	// Still one connection, still working.
	_, err = cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	require.Len(t, s.Conns(), 1)
}

func TestClientTimeouts(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {}) // never answers
		s.HandleFunc(testCode+1, echo)
	})
	addr := s.Addr().String()

	// Deadline from ctx.
	cl := newTestClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cl.Invoke(ctx, addr, NewRequest(testCode, nil, nil))
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 3*time.Second)

	// RequestTimeout when ctx has no deadline.
	cl2 := newTestClient(t, func(c *ClientConfig) { c.RequestTimeout = 100 * time.Millisecond })
	_, err = cl2.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.ErrorIs(t, err, ErrTimeout)

	// Cancellation is not a timeout.
	ctx, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel2() }()
	_, err = cl.Invoke(ctx, addr, NewRequest(testCode, nil, nil))
	require.ErrorIs(t, err, context.Canceled)

	// The connection is still usable after timeouts.
	_, err = cl.Invoke(context.Background(), addr, NewRequest(testCode+1, nil, nil))
	require.NoError(t, err)
}

func TestClientFailsPendingOnConnLoss(t *testing.T) {
	conns := make(chan *ServerConn, 16)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) { conns <- w.Conn() })
		s.HandleFunc(testCode+1, echo)
	})
	addr := s.Addr().String()
	cl := newTestClient(t, nil)
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := cl.Invoke(ctx, addr, NewRequest(testCode, nil, nil))
			errs <- err
		}()
	}
	var sc *ServerConn
	for i := 0; i < n; i++ {
		sc = <-conns
	}
	start := time.Now()
	require.NoError(t, sc.Close())
	for i := 0; i < n; i++ {
		err := <-errs
		require.ErrorIs(t, err, ErrConnFailed)
		require.NotErrorIs(t, err, ErrTimeout)
	}
	require.Less(t, time.Since(start), 10*time.Second)
	// Next call redials.
	_, err := cl.Invoke(context.Background(), addr, NewRequest(testCode+1, nil, nil))
	require.NoError(t, err)
}

func TestClientReconnectAfterServerRestart(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	addr := s.Addr().String()
	cl := newTestClient(t, nil)
	_, err := cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.Error(t, err)

	s2, err := NewServer(ServerConfig{Addr: addr})
	require.NoError(t, err)
	s2.HandleFunc(testCode, echo)
	require.Eventually(t, func() bool { return s2.Start() == nil }, 10*time.Second, 20*time.Millisecond)
	defer s2.Close()
	require.Eventually(t, func() bool {
		_, err := cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
}

func TestClientDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cl := newTestClient(t, nil)
	_, err = cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.ErrorIs(t, err, ErrConnFailed)
	require.ErrorIs(t, cl.InvokeOneway(context.Background(), addr, NewRequest(testCode, nil, nil)), ErrConnFailed)
}

func TestServerPushToClient(t *testing.T) {
	conns := make(chan *ServerConn, 1)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(HeartBeat, func(w ResponseWriter, r *Command) {
			select {
			case conns <- w.Conn():
			default:
			}
			_ = w.Write(NewResponse(r, Success, ""))
		})
	})
	cl := newTestClient(t, nil)
	notified := make(chan *Command, 4)
	cl.HandleRequest(NotifyConsumerIdsChanged, func(r *Command) *Command {
		notified <- r
		return nil
	})
	cl.HandleRequest(GetConsumerRunningInfo, func(r *Command) *Command {
		resp := NewResponse(r, Success, "")
		resp.Body = []byte("info:" + r.Ext("consumerGroup"))
		return resp
	})
	cl.HandleRequest(CheckTransactionState, func(r *Command) *Command { panic("bad") })
	_, err := cl.Invoke(context.Background(), s.Addr().String(), NewRequest(HeartBeat, nil, nil))
	require.NoError(t, err)
	sc := <-conns

	require.NoError(t, sc.SendOneway(NewRequest(NotifyConsumerIdsChanged, map[string]string{"consumerGroup": "cg"}, nil)))
	select {
	case r := <-notified:
		require.Equal(t, "cg", r.Ext("consumerGroup"))
		require.True(t, r.IsOneway())
	case <-time.After(10 * time.Second):
		t.Fatal("push not delivered")
	}

	resp, err := sc.SendRequest(context.Background(), NewRequest(GetConsumerRunningInfo, map[string]string{"consumerGroup": "cg"}, nil))
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
	require.Equal(t, "info:cg", string(resp.Body))

	resp, err = sc.SendRequest(context.Background(), NewRequest(ResetConsumerClientOffset, nil, nil))
	require.NoError(t, err)
	require.Equal(t, RequestCodeNotSupported, resp.Code)

	resp, err = sc.SendRequest(context.Background(), NewRequest(CheckTransactionState, nil, nil))
	require.NoError(t, err)
	require.Equal(t, SystemError, resp.Code)

	// A push to a handler that does not answer times out on the server side.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = sc.SendRequest(ctx, NewRequest(NotifyConsumerIdsChanged, nil, nil))
	require.ErrorIs(t, err, ErrTimeout)
}

func TestClientCloseAddrAndClose(t *testing.T) {
	closed := make(chan struct{}, 4)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, echo)
		s.OnConnClose(func(*ServerConn) { closed <- struct{}{} })
	})
	addr := s.Addr().String()
	cl := NewClient(ClientConfig{})
	_, err := cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	cl.CloseAddr(addr)
	<-closed
	_, err = cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	<-closed
	_, err = cl.Invoke(context.Background(), addr, NewRequest(testCode, nil, nil))
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, cl.Close())
}

func TestClientConcurrentFirstUseDialsOnce(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	cl := newTestClient(t, nil)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, nil, nil))
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, s.Conns(), 1)
}

// A call that timed out on the default timeout leaves nothing behind: its late answer is
// dropped, and the calls after it (reusing pooled reply channels and timers) each get their
// own answer.
func TestClientLateAnswerAfterDefaultTimeout(t *testing.T) {
	release := make(chan struct{})
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			<-release
			echo(w, r)
		})
		s.HandleFunc(testCode+1, echo)
	})
	addr := s.Addr().String()
	cl := newTestClient(t, func(c *ClientConfig) { c.RequestTimeout = 50 * time.Millisecond })
	for i := 0; i < 3; i++ {
		_, err := cl.Invoke(context.Background(), addr, NewRequest(testCode, map[string]string{"i": "late"}, nil))
		require.ErrorIs(t, err, ErrTimeout)
	}
	close(release) // the three late answers arrive while the next calls run
	cl.cfg.RequestTimeout = 10 * time.Second
	for i := 0; i < 200; i++ {
		v := strconv.Itoa(i)
		resp, err := cl.Invoke(context.Background(), addr, NewRequest(testCode+1, map[string]string{"i": v}, nil))
		require.NoError(t, err)
		require.Equal(t, v, resp.Ext("i"))
	}
}

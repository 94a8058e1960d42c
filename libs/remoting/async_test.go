package remoting

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// asyncResult is what one callback was handed (resp copied: it is valid only during the call).
type asyncResult struct {
	code   int32
	remark string
	body   string
	ext    map[string]string
	err    error
}

// recorder is a Callback that keeps every call it gets, by the request's tag, and counts them.
type recorder struct {
	mu    sync.Mutex
	got   map[string][]asyncResult
	order []string
	calls atomic.Int64
	dec   collectExt // fed before each callback when the call was typed
	tags  chan string
}

func newRecorder() *recorder {
	return &recorder{got: map[string][]asyncResult{}, tags: make(chan string, 1024)}
}

// call returns the Callback for the call tagged tag.
func (r *recorder) call(tag string) Callback {
	return CallbackFunc(func(resp *Command, err error) {
		res := asyncResult{err: err}
		if resp != nil {
			res.code, res.remark, res.body, res.ext = resp.Code, resp.Remark, string(resp.Body), resp.ExtFields
		}
		r.mu.Lock()
		if r.dec != nil {
			res.ext = map[string]string{}
			for k, v := range r.dec {
				res.ext[k] = v
			}
			clear(r.dec)
		}
		r.got[tag] = append(r.got[tag], res)
		r.order = append(r.order, tag)
		r.mu.Unlock()
		r.calls.Add(1)
		r.tags <- tag
	})
}

func (r *recorder) wait(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-r.tags:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d callbacks after 10s", i, n)
		}
	}
}

func (r *recorder) only(t *testing.T, tag string) asyncResult {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.got[tag], 1, "callbacks of %s", tag)
	return r.got[tag][0]
}

// TestInvokeAsyncAnswers: an answer reaches the callback, decoded into the decoder (typed) or
// into ExtFields (untyped); a remote error code is an answer, not an error.
func TestInvokeAsyncAnswers(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(SendMessage, func(w ResponseWriter, req *Command) {
			n := req.Ext("n")
			if n == "busy" {
				_ = w.Write(NewResponse(req, SystemBusy, "too busy"))
				return
			}
			resp := NewResponse(req, Success, "")
			resp.ExtFields = map[string]string{"msgId": "ID-" + n, "queueOffset": n}
			resp.Body = []byte("body-" + n)
			_ = w.Write(resp)
		})
	})
	addr := s.Addr().String()
	cl := newTestClient(t, nil)

	untyped := newRecorder()
	req := NewRequest(SendMessage, map[string]string{"n": "1"}, nil)
	require.NoError(t, cl.InvokeAsync(addr, req, nil, time.Time{}, untyped.call("1")))
	require.Zero(t, req.Opaque, "caller's command is not mutated")
	untyped.wait(t, 1)
	got := untyped.only(t, "1")
	require.NoError(t, got.err)
	require.Equal(t, asyncResult{code: Success, body: "body-1", ext: map[string]string{"msgId": "ID-1", "queueOffset": "1"}}, got)

	typed := newRecorder()
	typed.dec = collectExt{}
	for _, n := range []string{"22", "333"} {
		req := NewRequest(SendMessage, map[string]string{"n": n}, nil)
		require.NoError(t, cl.InvokeAsync(addr, req, typed.dec, time.Now().Add(10*time.Second), typed.call(n)))
	}
	typed.wait(t, 2)
	for _, n := range []string{"22", "333"} {
		require.Equal(t, asyncResult{code: Success, body: "body-" + n, ext: map[string]string{"msgId": "ID-" + n, "queueOffset": n}}, typed.only(t, n))
	}

	// More fields than the reader keeps spans for, and escapes: the decoder still gets each.
	many := map[string]string{"q\"uote": "v\u00e9\n"}
	for i := 0; i < maxExtSpans+4; i++ {
		many["k"+strconv.Itoa(i)] = strconv.Itoa(i)
	}
	s.HandleFunc(testCode, func(w ResponseWriter, req *Command) {
		resp := NewResponse(req, Success, "")
		resp.ExtFields = many
		_ = w.Write(resp)
	})
	wide := newRecorder()
	wide.dec = collectExt{}
	require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, nil, nil), wide.dec, time.Time{}, wide.call("wide")))
	wide.wait(t, 1)
	require.Equal(t, many, wide.only(t, "wide").ext)

	busy := newRecorder()
	require.NoError(t, cl.InvokeAsync(addr, NewRequest(SendMessage, map[string]string{"n": "busy"}, nil), nil, time.Time{}, busy.call("busy")))
	busy.wait(t, 1)
	got = busy.only(t, "busy")
	require.NoError(t, got.err)
	require.Equal(t, SystemBusy, got.code)
	require.Equal(t, "too busy", got.remark)

	// A closed client refuses the call: no callback.
	require.NoError(t, cl.Close())
	refused := newRecorder()
	require.ErrorIs(t, cl.InvokeAsync(addr, req, nil, time.Time{}, refused.call("x")), ErrClosed)
	time.Sleep(2 * asyncSweepEvery)
	require.Zero(t, refused.calls.Load())
}

// TestInvokeAsyncTimeoutSweep: calls the server never answers fail with ErrTimeout once their
// deadline passed (swept, at most a sweep late), each once; a call with a later deadline waits
// for it, and a late answer is dropped.
func TestInvokeAsyncTimeoutSweep(t *testing.T) {
	release := make(chan struct{})
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			go func() { <-release; _ = w.Write(NewResponse(r, Success, "late")) }()
		})
		s.HandleFunc(testCode+1, echo)
	})
	addr := s.Addr().String()
	cl := newTestClient(t, func(c *ClientConfig) { c.RequestTimeout = 200 * time.Millisecond })
	rec := newRecorder()
	start := time.Now()
	const n = 5
	for i := 0; i < n; i++ {
		require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, nil, nil), nil, start.Add(150*time.Millisecond), rec.call(strconv.Itoa(i))))
	}
	require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, nil, nil), nil, time.Time{}, rec.call("default")))
	require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, nil, nil), nil, start.Add(time.Hour), rec.call("later")))
	rec.wait(t, n+1)
	elapsed := time.Since(start)
	require.GreaterOrEqual(t, elapsed, 150*time.Millisecond)
	for i := 0; i < n; i++ {
		err := rec.only(t, strconv.Itoa(i)).err
		require.ErrorIs(t, err, ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	require.ErrorIs(t, rec.only(t, "default").err, ErrTimeout)
	rec.mu.Lock()
	require.Empty(t, rec.got["later"], "a call before its deadline was failed")
	rec.mu.Unlock()

	// The answers arrive now: the timed-out calls are not called again, "later" gets its own.
	close(release)
	rec.wait(t, 1)
	require.NoError(t, rec.only(t, "later").err)
	require.Equal(t, "late", rec.only(t, "later").remark)
	// The connection still works.
	_, err := cl.Invoke(context.Background(), addr, NewRequest(testCode+1, nil, nil))
	require.NoError(t, err)
	time.Sleep(2 * asyncSweepEvery)
	require.EqualValues(t, n+2, rec.calls.Load())
}

// TestInvokeAsyncConnLossFailsEachOnce: when the connection breaks every pending call's
// callback gets ErrConnFailed exactly once (none later from the sweeper or a late answer);
// the next call redials. Close fails what is pending with ErrClosed.
func TestInvokeAsyncConnLossFailsEachOnce(t *testing.T) {
	conns := make(chan *ServerConn, 64)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) { conns <- w.Conn() })
		s.HandleFunc(testCode+1, echo)
	})
	addr := s.Addr().String()
	cl := newTestClient(t, nil)
	rec := newRecorder()
	const n = 32
	deadline := time.Now().Add(500 * time.Millisecond) // past by the end: the sweeper must not call again
	for i := 0; i < n; i++ {
		require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, nil, nil), nil, deadline, rec.call(strconv.Itoa(i))))
	}
	var sc *ServerConn
	for i := 0; i < n; i++ {
		sc = <-conns
	}
	require.NoError(t, sc.Close())
	rec.wait(t, n)
	for i := 0; i < n; i++ {
		err := rec.only(t, strconv.Itoa(i)).err
		require.ErrorIs(t, err, ErrConnFailed)
		require.NotErrorIs(t, err, ErrTimeout)
	}
	rec.mu.Lock()
	for i, tag := range rec.order { // in opaque order, which is the order sent
		require.Equal(t, strconv.Itoa(i), tag)
	}
	rec.mu.Unlock()

	// Redial; then Close fails what is pending there.
	ok := newRecorder()
	require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode+1, nil, nil), nil, time.Time{}, ok.call("echo")))
	ok.wait(t, 1)
	require.NoError(t, ok.only(t, "echo").err)
	closing := newRecorder()
	for i := 0; i < n; i++ {
		require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, nil, nil), nil, time.Time{}, closing.call(strconv.Itoa(i))))
	}
	for i := 0; i < n; i++ {
		<-conns
	}
	require.NoError(t, cl.Close())
	closing.wait(t, n)
	for i := 0; i < n; i++ {
		err := closing.only(t, strconv.Itoa(i)).err
		require.ErrorIs(t, err, ErrConnFailed)
		require.ErrorIs(t, err, ErrClosed)
	}
	time.Sleep(time.Until(deadline) + 2*asyncSweepEvery)
	require.EqualValues(t, n, rec.calls.Load())
	require.EqualValues(t, n, closing.calls.Load())
}

// TestInvokeAsyncOrderPerConnection: callbacks run in the order the server wrote the answers
// (here the reverse of the requests'), one at a time.
func TestInvokeAsyncOrderPerConnection(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	var held []struct {
		w ResponseWriter
		r *Command
	}
	all := make(chan struct{})
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			mu.Lock()
			defer mu.Unlock()
			held = append(held, struct {
				w ResponseWriter
				r *Command
			}{w, r})
			if len(held) == n {
				close(all)
			}
		})
	})
	addr := s.Addr().String()
	cl := newTestClient(t, nil)
	rec := newRecorder()
	var running atomic.Int32
	for i := 0; i < n; i++ {
		tag := strconv.Itoa(i)
		inner := rec.call(tag)
		require.NoError(t, cl.InvokeAsync(addr, NewRequest(testCode, map[string]string{"i": tag}, nil), nil, time.Time{},
			CallbackFunc(func(resp *Command, err error) {
				if running.Add(1) != 1 {
					t.Errorf("callbacks overlap")
				}
				if err != nil || resp.Ext("i") != tag {
					t.Errorf("call %s: %v, answer of %q", tag, err, resp.Ext("i"))
				}
				inner.InvokeDone(resp, err)
				running.Add(-1)
			})))
	}
	<-all
	// The server writes the answers in reverse, from one goroutine: that is their order on
	// the wire.
	mu.Lock()
	var wantOrder []string
	for i := len(held) - 1; i >= 0; i-- {
		h := held[i]
		resp := NewResponse(h.r, Success, "")
		resp.ExtFields["i"] = h.r.Ext("i")
		wantOrder = append(wantOrder, h.r.Ext("i"))
		require.NoError(t, h.w.Write(resp))
	}
	mu.Unlock()
	rec.wait(t, n)
	rec.mu.Lock()
	require.Equal(t, wantOrder, rec.order)
	rec.mu.Unlock()
}

// windowSlot keeps a window of calls in flight by sending the next one from its callback.
type windowSlot struct {
	cl   *Client
	addr string
	req  *Command
	left *atomic.Int64
	errs *atomic.Int64
	wg   *sync.WaitGroup
	ans  collectExt
}

func (s *windowSlot) next() {
	if s.left.Add(-1) < 0 {
		s.wg.Done()
		return
	}
	if err := s.cl.InvokeAsync(s.addr, s.req, s.ans, time.Time{}, s); err != nil {
		s.errs.Add(1)
		s.wg.Done()
	}
}

func (s *windowSlot) InvokeDone(resp *Command, err error) {
	if err != nil || resp.Code != Success || s.ans["k"] != "v" {
		s.errs.Add(1)
	}
	s.next()
}

// TestInvokeAsyncWindowRefilledFromCallback: a callback may send the next call (a window of 8
// slots, 2000 calls): every call is answered, none fails.
func TestInvokeAsyncWindowRefilledFromCallback(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	cl := newTestClient(t, nil)
	var left, errs atomic.Int64
	left.Store(2000)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		slot := &windowSlot{cl: cl, addr: s.Addr().String(), req: NewRequest(testCode, map[string]string{"k": "v"}, []byte("b")),
			left: &left, errs: &errs, wg: &wg, ans: collectExt{}}
		slot.next()
	}
	wg.Wait()
	require.Zero(t, errs.Load())
	require.Negative(t, left.Load())
	cl.mu.Lock()
	for _, cc := range cl.conns {
		require.NotNil(t, cc.link.direct, "a plain TCP connection writes corked batches from its reader")
	}
	cl.mu.Unlock()
}

// TestInvokeAsyncBinaryAnswer: an answer the in-place path does not take (a ROCKETMQ binary
// header) is decoded into a map and still reaches the decoder and the callback.
func TestInvokeAsyncBinaryAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		for {
			frame, err := ReadFrame(nc, nil, 1<<20)
			if err != nil {
				return
			}
			req, err := DecodeFrame(frame)
			if err != nil {
				return
			}
			resp := NewResponse(req, Success, "")
			resp.ExtFields["queueOffset"] = "42"
			out, err := AppendBinaryFrame(nil, resp)
			if err != nil {
				return
			}
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}()
	cl := newTestClient(t, nil)
	rec := newRecorder()
	rec.dec = collectExt{}
	require.NoError(t, cl.InvokeAsync(ln.Addr().String(), NewRequest(testCode, nil, nil), rec.dec, time.Time{}, rec.call("bin")))
	rec.wait(t, 1)
	got := rec.only(t, "bin")
	require.NoError(t, got.err)
	require.Equal(t, map[string]string{"queueOffset": "42"}, got.ext)
}

// TestInvokeAsyncWindowOverTLS: over TLS (no direct writes: the reader corks and wakes the
// writer) a window refilled from its callbacks is answered in full.
func TestInvokeAsyncWindowOverTLS(t *testing.T) {
	ca := newTestCA(t)
	s, _ := startTLSServer(t, ca, TLSEnforcing, nil)
	cl := newTestClient(t, func(c *ClientConfig) { c.TLS = clientTLS(ca) })
	var left, errs atomic.Int64
	left.Store(500)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		slot := &windowSlot{cl: cl, addr: s.Addr().String(), req: NewRequest(testCode, nil, nil),
			left: &left, errs: &errs, wg: &wg, ans: collectExt{"k": "v"}}
		slot.next()
	}
	wg.Wait()
	require.Zero(t, errs.Load())
	cl.mu.Lock()
	for _, cc := range cl.conns {
		require.Nil(t, cc.link.direct, "direct writes on a TLS connection")
	}
	cl.mu.Unlock()
}

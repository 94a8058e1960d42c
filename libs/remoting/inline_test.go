package remoting

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queueingHandler queues its requests' writers and answers them all in EndBatch, the way the
// broker's send handler leaves its answers to the store's write at the end of a burst.
type queueingHandler struct {
	mu      sync.Mutex
	queued  []ResponseWriter
	opaques []int32
	running atomic.Int32
	overlap atomic.Bool // ServeRemoting ran twice at once
	served  atomic.Int32
	ends    atomic.Int32
	// endedRequests sums what EndBatch was told: every served request once.
	endedRequests atomic.Int32
}

func (h *queueingHandler) ServeRemoting(w ResponseWriter, req *Command) {
	if h.running.Add(1) > 1 {
		h.overlap.Store(true)
	}
	defer h.running.Add(-1)
	h.served.Add(1)
	h.mu.Lock()
	h.queued = append(h.queued, w)
	h.opaques = append(h.opaques, req.Opaque)
	h.mu.Unlock()
}

func (h *queueingHandler) EndBatch(requests int) {
	h.ends.Add(1)
	h.endedRequests.Add(int32(requests))
	h.mu.Lock()
	q, ops := h.queued, h.opaques
	h.queued, h.opaques = nil, nil
	h.mu.Unlock()
	for i, w := range q {
		_ = w.Write(NewResponse(nil, Success, strconv.Itoa(int(ops[i]))))
	}
}

// An inline handler runs on the connection's reader, one request at a time, and its EndBatch
// runs once the reader has no complete request buffered: answers it leaves to EndBatch reach
// the client. Requests that arrive in one write are served before one EndBatch.
func TestInlineHandlerEndBatchAnswersTheBurst(t *testing.T) {
	h := &queueingHandler{}
	srv, _ := startServer(t, nil, func(s *Server) { s.Handle(testCode, h) })
	rc := dialRaw(t, srv.Addr().String())

	rc.send(NewRequest(testCode, nil, nil)) // a lone request: its own burst
	resp := rc.read()
	require.Equal(t, Success, resp.Code)
	require.EqualValues(t, 1, h.ends.Load())

	const burst = 32
	var frames []byte
	for i := 0; i < burst; i++ {
		req := NewRequest(testCode, nil, nil)
		req.Opaque = int32(1000 + i)
		frames = AppendFrame(frames, req)
	}
	rc.write(frames)
	seen := map[int32]bool{}
	for i := 0; i < burst; i++ {
		resp := rc.read()
		require.Equal(t, Success, resp.Code)
		require.Equal(t, strconv.Itoa(int(resp.Opaque)), resp.Remark, "answer matches its request")
		require.False(t, seen[resp.Opaque])
		seen[resp.Opaque] = true
	}
	require.False(t, h.overlap.Load(), "inline requests of a connection run one at a time")
	require.EqualValues(t, 1+burst, h.served.Load())
	require.Less(t, h.ends.Load(), int32(1+burst), "the burst ended in fewer EndBatch calls than requests")
	require.EqualValues(t, 1+burst, h.endedRequests.Load(), "EndBatch counts each request once")
}

// A connection that fails with inline requests served and their burst not yet ended (a request
// followed, in the same read, by a frame length the reader refuses) still gets EndBatch: the
// handler's queued work is finished, not left behind. A partial frame after a request ends the
// burst at once: the reader would wait for the socket.
func TestInlineHandlerEndBatchOnFailure(t *testing.T) {
	h := &queueingHandler{}
	srv, _ := startServer(t, nil, func(s *Server) { s.Handle(testCode, h) })

	rc := dialRaw(t, srv.Addr().String())
	frame := AppendFrame(nil, NewRequest(testCode, nil, nil))
	rc.write(append(frame, frame[:6]...))
	require.Equal(t, Success, rc.read().Code, "answered though the next frame is still arriving")
	require.EqualValues(t, 1, h.ends.Load())

	rc2 := dialRaw(t, srv.Addr().String())
	rc2.write(append(append([]byte(nil), frame...), 0xff, 0xff, 0xff, 0xff)) // length -1: malformed
	deadline := time.Now().Add(10 * time.Second)
	for h.ends.Load() < 2 {
		require.True(t, time.Now().Before(deadline), "EndBatch not called when the connection failed")
		time.Sleep(time.Millisecond)
	}
	require.EqualValues(t, 2, h.served.Load())
}

// bodyEcho is an inline handler answering each request with a copy of its body, made before
// ServeRemoting returns (the body is the connection's read buffer until then).
type bodyEcho struct{}

func (bodyEcho) EndBatch(int) {}

func (*bodyEcho) ServeRemoting(w ResponseWriter, req *Command) {
	resp := NewResponse(nil, Success, "")
	resp.Body = append([]byte(nil), req.Body...)
	_ = w.Write(resp)
}

// An inline handler's request body is exactly its frame's, for every request of a burst in
// one read buffer (sizes that make the buffer grow and be reused between frames).
func TestInlineHandlerBodies(t *testing.T) {
	srv, _ := startServer(t, nil, func(s *Server) { s.Handle(testCode, &bodyEcho{}) })
	rc := dialRaw(t, srv.Addr().String())
	var frames []byte
	var want [][]byte
	for i := 0; i < 40; i++ {
		body := make([]byte, (i*997)%20000)
		for j := range body {
			body[j] = byte(i + j)
		}
		req := NewRequest(testCode, nil, body)
		req.Opaque = int32(i)
		frames = AppendFrame(frames, req)
		want = append(want, body)
	}
	rc.write(frames)
	for i := 0; i < len(want); i++ {
		resp := rc.read()
		require.Equal(t, len(want[resp.Opaque]), len(resp.Body), "request %d", resp.Opaque)
		require.True(t, string(want[resp.Opaque]) == string(resp.Body), "request %d body", resp.Opaque)
	}
}

// A peer's answer to a request the server sent (SendRequest) keeps its ext fields in
// ExtFields even when its code equals an inline handler's request code: a response is never
// left in pairs.
func TestInlineCodeResponseKeepsExtFields(t *testing.T) {
	h := &queueingHandler{}
	var conn atomic.Pointer[ServerConn]
	srv, _ := startServer(t, nil, func(s *Server) {
		s.Handle(testCode, h)
		s.HandleFunc(testCode+1, func(w ResponseWriter, req *Command) {
			conn.Store(w.(interface{ Conn() *ServerConn }).Conn())
			_ = w.Write(NewResponse(nil, Success, ""))
		})
	})
	rc := dialRaw(t, srv.Addr().String())
	rc.send(NewRequest(testCode+1, nil, nil))
	require.Equal(t, Success, rc.read().Code)
	got := make(chan *Command, 1)
	go func() {
		resp, err := conn.Load().SendRequest(context.Background(), NewRequest(77, nil, nil))
		require.NoError(t, err)
		got <- resp
	}()
	req := rc.read()
	resp := NewResponse(req, testCode, "") // a response code equal to the inline request code
	resp.ExtFields["answer"] = "42"
	rc.send(resp)
	r := <-got
	require.Equal(t, testCode, r.Code)
	require.Equal(t, "42", r.ExtFields["answer"])
}

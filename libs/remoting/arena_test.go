package remoting

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A string from the arena keeps its bytes while later strings fill its chunk and the chunks
// after it; a large one gets a copy of its own; small ones cost one allocation per chunk.
func TestStringArenaKeepsItsStrings(t *testing.T) {
	var a stringArena
	var got []string
	var want []string
	src := make([]byte, 0, 512)
	for i := 0; i < 2000; i++ {
		src = fmt.Appendf(src[:0], "header-%d-%s", i, strings.Repeat("x", i%300))
		got = append(got, a.string(src))
		want = append(want, string(src))
		clear(src[:cap(src)]) // the source buffer is reused, as a connection's read buffer is
	}
	require.Equal(t, want, got)

	big := []byte(strings.Repeat("b", headerArenaChunk/4+1))
	before := cap(a.buf) - len(a.buf)
	s := a.string(big)
	big[0] = 'c'
	require.Equal(t, strings.Repeat("b", headerArenaChunk/4+1), s)
	require.Equal(t, before, cap(a.buf)-len(a.buf), "a large string is not taken from the chunk")
	require.Equal(t, "", a.string(nil))

	small := []byte(strings.Repeat("s", 300))
	allocs := testing.AllocsPerRun(1000, func() { _ = a.string(small) })
	require.Less(t, allocs, 0.05, "300-byte strings: one chunk allocation per %d", headerArenaChunk/300)
}

// The strings of an inline request outlive it unchanged (a handler may keep one, an answer
// quotes one), though the connection's next requests fill the buffers they were read from;
// a request of another code gets its strings as before.
func TestInlineRequestStringsOutliveTheRequest(t *testing.T) {
	kept := &keepingHandler{}
	srv, _ := startServer(t, nil, func(s *Server) { s.Handle(testCode, kept) })
	rc := dialRaw(t, srv.Addr().String())
	const n = 600 // several chunks' worth
	var frames []byte
	for i := 0; i < n; i++ {
		req := NewRequest(testCode, nil, nil)
		req.Opaque = int32(i)
		req.ExtFields = map[string]string{"topic": fmt.Sprintf("topic-%d-%s", i, strings.Repeat("t", i%97))}
		frames = AppendFrame(frames, req)
		if len(frames) > 8<<10 || i == n-1 {
			rc.write(frames)
			frames = frames[:0]
		}
	}
	for i := 0; i < n; i++ {
		require.Equal(t, Success, rc.read().Code)
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	require.Len(t, kept.topics, n)
	for i, topic := range kept.topics {
		require.Equal(t, fmt.Sprintf("topic-%d-%s", i, strings.Repeat("t", i%97)), topic)
	}
}

// keepingHandler is an inline handler keeping each request's topic past its return.
type keepingHandler struct {
	mu     sync.Mutex
	topics []string
}

func (*keepingHandler) EndBatch(int) {}

func (h *keepingHandler) ServeRemoting(w ResponseWriter, req *Command) {
	topic, _ := req.ExtLookup("topic")
	h.mu.Lock()
	h.topics = append(h.topics, topic)
	h.mu.Unlock()
	_ = w.Write(NewResponse(nil, Success, ""))
}

// Requests are taken from slabs that double up to maxRequestSlab; an element another request
// moved out of is free again, and one taken is never handed out twice.
func TestRequestSlab(t *testing.T) {
	var s requestSlab
	seen := map[*serverRequest]bool{}
	for i := 0; i < 200; i++ {
		r := s.peek()
		r.cmd.Code = int32(i)
		if i%3 == 0 {
			o := s.own()
			require.EqualValues(t, i, o.cmd.Code)
			require.NotSame(t, r, o)
			require.Zero(t, s.peek().cmd.Code, "the element moved out of is clear again")
			continue
		}
		s.take()
		require.False(t, seen[r], "element %d handed out twice", i)
		seen[r] = true
	}
	require.Equal(t, maxRequestSlab, s.last)
	allocs := testing.AllocsPerRun(1000, func() { s.peek(); s.take() })
	require.LessOrEqual(t, allocs, 1.0/maxRequestSlab+0.01)
}

package remoting

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A peer that does not read: once its connection's write queue is over the soft cap,
// WriteNoWait queues nothing, reports false and leaves the writer unanswered (Write would wait
// for the writer); when the peer reads again it is queued, answered once, and Write after it
// is ErrAlreadyWritten.
func TestWriteNoWaitDoesNotWaitForASlowPeer(t *testing.T) {
	const bigCode, holdCode = testCode, testCode + 1
	held := make(chan ResponseWriter, 1)
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(bigCode, func(w ResponseWriter, r *Command) {
			_ = w.Write(&Command{Code: Success, Body: make([]byte, 1<<20)}) // waits once the queue is full
		})
		s.HandleFunc(holdCode, func(w ResponseWriter, r *Command) { held <- w })
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(holdCode, 1, nil))
	w := <-held
	nw, ok := w.(NoWaitWriter)
	require.True(t, ok, "the server's ResponseWriter implements NoWaitWriter")
	// 1 MiB answers the peer does not read, until the connection's queue is over its soft cap
	// (the writer holds what it took when it blocked; what comes after waits in the queue).
	opaque := int32(100)
	require.Eventually(t, func() bool {
		c := w.Conn()
		c.link.wmu.Lock()
		full := len(c.link.queue) > maxQueuedBytes
		c.link.wmu.Unlock()
		if !full {
			opaque++
			_, err := rc.nc.Write(AppendFrame(nil, req(bigCode, opaque, nil)))
			return err != nil
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, "the peer's write queue never filled")
	start := time.Now()
	queued, err := nw.WriteNoWait(NewResponse(nil, Success, "held answer"))
	require.NoError(t, err)
	require.False(t, queued)
	require.Less(t, time.Since(start), time.Second, "WriteNoWait waited")

	// The peer reads again: the answer goes out, once.
	go func() { _, _ = io.Copy(io.Discard, rc.br) }()
	require.Eventually(t, func() bool {
		queued, err := nw.WriteNoWait(NewResponse(nil, Success, "held answer"))
		require.NoError(t, err)
		return queued
	}, 20*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, w.Write(NewResponse(nil, Success, "")), ErrAlreadyWritten)
	_, err = nw.WriteNoWait(NewResponse(nil, Success, ""))
	require.ErrorIs(t, err, ErrAlreadyWritten)
}

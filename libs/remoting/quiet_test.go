package remoting

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A client's idle timeout still closes its connection when it reads through a quiet reader
// (long enough that a loaded machine answers the first call well within it).
func TestClientIdleTimeoutWithQuietReads(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) { s.HandleFunc(testCode, echo) })
	cl := newTestClient(t, func(c *ClientConfig) { c.IdleTimeout = time.Second })
	_, err := cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, nil, nil))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(s.Conns()) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the idle client connection is closed")
	_, err = cl.Invoke(context.Background(), s.Addr().String(), NewRequest(testCode, nil, nil))
	require.NoError(t, err, "the next call redials")
}

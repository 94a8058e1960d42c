package remoting

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// An answer's remark is cut at maxRemarkLen bytes, at a rune boundary, saying how much was
// left out; short remarks pass unchanged.
func TestAnswerRemarkCapped(t *testing.T) {
	require.Equal(t, "short", capRemark("short"))
	exact := strings.Repeat("a", maxRemarkLen)
	require.Equal(t, exact, capRemark(exact))
	long := strings.Repeat("é", maxRemarkLen) // 2 bytes each
	got := capRemark(long)
	require.True(t, utf8.ValidString(got))
	require.True(t, strings.HasPrefix(got, strings.Repeat("é", maxRemarkLen/2)))
	require.Contains(t, got, "... (4096 more bytes)")
	odd := "x" + long
	got = capRemark(odd)
	require.True(t, utf8.ValidString(got), "cut inside a rune")
	require.Contains(t, got, "... (4098 more bytes)")

	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			_ = w.Write(NewResponse(r, SystemError, "topic "+r.ExtFields["topic"]+" is refused: "+r.ExtFields["topic"]))
		})
	})
	rc := dialRaw(t, s.Addr().String())
	rc.send(req(testCode, 9, map[string]string{"topic": strings.Repeat("T", 64<<10)}))
	resp := rc.read()
	require.Equal(t, int32(9), resp.Opaque)
	require.Equal(t, SystemError, resp.Code)
	require.Less(t, len(resp.Remark), maxRemarkLen+64)
	require.Contains(t, resp.Remark, "more bytes)")
}

package remoting

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Guard refuses before the handler runs; a Signer signs a copy, never the caller's fields.
func TestGuardAndSigner(t *testing.T) {
	ran := make(chan struct{}, 4)
	s, _ := startServer(t, func(c *ServerConfig) {
		c.Guard = GuardFunc(func(_ *ServerConn, r *Command) *Command {
			if r.Ext("Signature") != "ok:"+r.Ext("k") {
				return NewResponse(nil, NoPermission, "not signed")
			}
			return nil
		})
	}, func(s *Server) {
		s.HandleFunc(testCode, func(w ResponseWriter, r *Command) {
			ran <- struct{}{}
			echo(w, r)
		})
	})
	addr := s.Addr().String()

	plain := newTestClient(t, nil)
	resp, err := plain.Invoke(context.Background(), addr, NewRequest(testCode, map[string]string{"k": "v"}, nil))
	require.NoError(t, err)
	require.Equal(t, NoPermission, resp.Code)
	require.Equal(t, "not signed", resp.Remark)
	require.Empty(t, ran, "refused request reached its handler")

	signed := newTestClient(t, func(c *ClientConfig) {
		c.Signer = func(r *Command) { r.ExtFields["Signature"] = "ok:" + r.ExtFields["k"] }
	})
	req := NewRequest(testCode, map[string]string{"k": "v"}, nil)
	resp, err = signed.Invoke(context.Background(), addr, req)
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
	require.Len(t, ran, 1)
	require.NotContains(t, req.ExtFields, "Signature", "caller's ext fields are not mutated")
}

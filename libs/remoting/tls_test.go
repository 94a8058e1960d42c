package remoting

import (
	"context"
	"crypto/tls"
	"strconv"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

// tlsEcho answers with whether the request came over TLS.
func tlsEcho(w ResponseWriter, r *Command) {
	resp := NewResponse(r, Success, "")
	resp.SetExt("tls", strconv.FormatBool(w.Conn().TLS()))
	_ = w.Write(resp)
}

func startTLSServer(t *testing.T, ca *testCA, mode TLSMode, mod func(*ServerConfig)) (*Server, *logtest.Hook) {
	return startServer(t, func(c *ServerConfig) {
		c.TLSMode = mode
		if ca != nil {
			c.TLS = serverTLS(t, ca)
		}
		if mod != nil {
			mod(c)
		}
	}, func(s *Server) { s.HandleFunc(testCode, tlsEcho) })
}

func invokeTLS(t *testing.T, cl *Client, addr string) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, NewRequest(testCode, nil, nil))
	if err != nil {
		return false, err
	}
	require.Equal(t, Success, resp.Code)
	return resp.Ext("tls") == "true", nil
}

// Permissive serves plain and TLS clients on one port at the same time, each on its transport.
func TestTLSPermissiveServesPlainAndTLSOnOnePort(t *testing.T) {
	ca := newTestCA(t)
	s, _ := startTLSServer(t, ca, TLSPermissive, nil)
	addr := s.Addr().String()
	plain := newTestClient(t, nil)
	secure := newTestClient(t, func(c *ClientConfig) { c.TLS = clientTLS(ca) })
	for i := 0; i < 3; i++ { // interleaved, both connections stay up
		isTLS, err := invokeTLS(t, plain, addr)
		require.NoError(t, err)
		require.False(t, isTLS)
		isTLS, err = invokeTLS(t, secure, addr)
		require.NoError(t, err)
		require.True(t, isTLS)
	}
	st := s.Stats()
	require.EqualValues(t, 1, st.AcceptedPlain)
	require.EqualValues(t, 1, st.AcceptedTLS)
	require.EqualValues(t, 1, st.HandshakesOK)
	require.EqualValues(t, 2, st.OpenConnections)
	require.Equal(t, TLSPermissive, st.TLSMode)
	require.EqualValues(t, 1, secure.Stats().HandshakesOK)
}

// Enforcing refuses plain clients with a log line and a count, and serves TLS clients.
func TestTLSEnforcingRefusesPlain(t *testing.T) {
	ca := newTestCA(t)
	s, hook := startTLSServer(t, ca, TLSEnforcing, nil)
	addr := s.Addr().String()
	_, err := invokeTLS(t, newTestClient(t, nil), addr)
	require.ErrorIs(t, err, ErrConnFailed)
	require.Eventually(t, func() bool { return s.Stats().RefusedPlain == 1 }, 5*time.Second, 5*time.Millisecond)
	require.True(t, hasLog(hook, "plain client refused", "peer", "mode"))

	rc := dialRaw(t, addr) // a raw plain frame is closed too, unanswered
	rc.send(req(testCode, 1, nil))
	rc.expectClosed()

	isTLS, err := invokeTLS(t, newTestClient(t, func(c *ClientConfig) { c.TLS = clientTLS(ca) }), addr)
	require.NoError(t, err)
	require.True(t, isTLS)
	require.EqualValues(t, 0, s.Stats().AcceptedPlain)
}

// Disabled closes a TLS client at its ClientHello, saying so, instead of reading the
// ClientHello as a 369 MB frame length; plain clients are served.
func TestTLSDisabledRefusesClientHello(t *testing.T) {
	ca := newTestCA(t)
	s, hook := startTLSServer(t, nil, TLSDisabled, func(c *ServerConfig) {
		c.IdleTimeout = time.Hour
		c.FrameTimeout = time.Hour
	})
	addr := s.Addr().String()

	// A real TLS client: its handshake fails because the server closes.
	rc := dialRaw(t, addr)
	tc := tls.Client(rc.nc, &tls.Config{InsecureSkipVerify: true})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	err := tc.Handshake()
	require.Error(t, err)
	require.False(t, isTimeout(err), "server did not close the TLS client: %v", err)
	require.Eventually(t, func() bool { return hasLog(hook, "TLS client refused", "peer", "mode") }, 5*time.Second, 5*time.Millisecond)
	require.False(t, hasLog(hook, "frame too large"), "ClientHello parsed as a frame length")
	require.EqualValues(t, 1, s.Stats().RefusedTLS)

	_, err = invokeTLS(t, newTestClient(t, func(c *ClientConfig) { c.TLS = clientTLS(ca) }), addr)
	require.Error(t, err)
	isTLS, err := invokeTLS(t, newTestClient(t, nil), addr)
	require.NoError(t, err)
	require.False(t, isTLS)
}

// Mutual TLS: with client certificates required and verified, only clients holding one from
// the trusted CA get served.
func TestTLSMutualRequiredClientAuth(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	s, _ := startTLSServer(t, ca, TLSEnforcing, func(c *ServerConfig) {
		c.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		c.TLS.ClientCAs = ca.pool
	})
	addr := s.Addr().String()

	_, err := invokeTLS(t, newTestClient(t, func(c *ClientConfig) { c.TLS = clientTLS(ca) }), addr)
	require.Error(t, err, "no client certificate")

	foreign := clientTLS(ca)
	foreign.Certificates = []tls.Certificate{other.issue(t, "stranger")}
	_, err = invokeTLS(t, newTestClient(t, func(c *ClientConfig) { c.TLS = foreign }), addr)
	require.Error(t, err, "certificate from an untrusted CA")

	good := clientTLS(ca)
	good.Certificates = []tls.Certificate{ca.issue(t, "client")}
	isTLS, err := invokeTLS(t, newTestClient(t, func(c *ClientConfig) { c.TLS = good }), addr)
	require.NoError(t, err)
	require.True(t, isTLS)
	// TLS 1.3 clients learn of the refusal after their handshake and may redial once.
	require.Eventually(t, func() bool { return s.Stats().HandshakesFailed >= 2 }, 5*time.Second, 5*time.Millisecond, "%+v", s.Stats())
	require.EqualValues(t, 1, s.Stats().HandshakesOK)
}

// A client that sends the TLS record byte and then nothing is closed at the handshake timeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	ca := newTestCA(t)
	s, hook := startTLSServer(t, ca, TLSPermissive, func(c *ServerConfig) {
		c.HandshakeTimeout = 200 * time.Millisecond
		c.IdleTimeout = time.Hour
	})
	rc := dialRaw(t, s.Addr().String())
	rc.write([]byte{0x16, 0x03})
	rc.expectClosed()
	require.Eventually(t, func() bool { return s.Stats().HandshakesTimeout == 1 }, 5*time.Second, 5*time.Millisecond)
	require.True(t, hasLog(hook, "TLS handshake failed", "peer", "result"))
}

// A client whose server does not verify fails its handshake and says so.
func TestTLSClientRefusesUnknownServer(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	s, _ := startTLSServer(t, ca, TLSEnforcing, nil)
	cl := newTestClient(t, func(c *ClientConfig) { c.TLS = clientTLS(other) })
	_, err := invokeTLS(t, cl, s.Addr().String())
	require.ErrorIs(t, err, ErrConnFailed)
	require.Contains(t, err.Error(), "TLS handshake")
	require.EqualValues(t, 1, cl.Stats().HandshakesFailed)
}

func TestTLSServerConfigValidate(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.TLSMode = TLSPermissive
	require.ErrorContains(t, cfg.Validate(), "TLSMode permissive needs a TLS configuration")
	cfg.TLSMode = "strict"
	cfg.TLS = &tls.Config{}
	require.ErrorContains(t, cfg.Validate(), `TLSMode "strict"`)
	cfg = DefaultServerConfig()
	cfg.MaxFrameSize = 0x16000000 // a length starting with 0x16 would look like TLS
	require.ErrorContains(t, cfg.Validate(), "MaxFrameSize")
}

package nameserver

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/stretchr/testify/require"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// An enforcing name server: plain clients refused and counted, TLS clients served, bounds and
// TLS counters on its HTTPS status port.
func TestNameServerEnforcingTLSAndBounds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RegistrationSecret = testSecret
	cfg.BindAddress, cfg.ListenPort, cfg.HTTPPort = "127.0.0.1", freePort(t), freePort(t)
	cfg.TLSServerMode = tlsconf.ModeEnforcing
	cfg.HTTPTLSEnable = true
	cfg.ServerMaxConnections = 2
	s, err := New(cfg, registry.NewMemory())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Close() })
	addr := s.Addr().String()
	ctx := context.Background()
	route := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)

	plain := remoting.NewClient(remoting.DefaultClientConfig())
	defer plain.Close()
	_, err = plain.Invoke(ctx, addr, route)
	require.Error(t, err)
	// The refused connection counts against the limit of 2 until the server has closed it.
	require.Eventually(t, func() bool { return s.rpc.Stats().OpenConnections == 0 }, 10*time.Second, time.Millisecond,
		"the refused plain connection is still open")

	cc := remoting.DefaultClientConfig()
	cc.TLS = &tls.Config{InsecureSkipVerify: true}
	secure := remoting.NewClient(cc)
	defer secure.Close()
	resp, err := secure.Invoke(ctx, addr, route)
	require.NoError(t, err)
	require.Equal(t, remoting.TopicNotExist, resp.Code)

	// Two connections fill the listener; a third is refused at accept.
	second := remoting.NewClient(cc)
	defer second.Close()
	_, err = second.Invoke(ctx, addr, route)
	require.NoError(t, err)
	third := remoting.NewClient(cc)
	defer third.Close()
	_, err = third.Invoke(ctx, addr, route)
	require.Error(t, err)

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	r, err := hc.Get("https://" + net.JoinHostPort("127.0.0.1", itoa(cfg.HTTPPort)) + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	text := string(body)
	require.Contains(t, text, `rmqha_namesrv_remoting_connections_refused_total{reason="plain_in_enforcing"} 1`)
	require.Contains(t, text, `rmqha_namesrv_remoting_connections_refused_total{reason="connection_limit"}`)
	require.NotContains(t, text, `rmqha_namesrv_remoting_connections_refused_total{reason="connection_limit"} 0`)
	require.Contains(t, text, `rmqha_namesrv_remoting_tls_handshakes_total{mode="enforcing",result="ok"} 2`)
	require.Regexp(t, `(?m)^rmqha_namesrv_remoting_connections_max\ 2$`, text)
}

func TestNameServerTLSConfigRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RegistrationSecret = testSecret
	cfg.TLSServerMode, cfg.TLSTestModeEnable = tlsconf.ModePermissive, false
	_, err := New(cfg, registry.NewMemory())
	require.ErrorContains(t, err, "tls.server.certPath")
	cfg = DefaultConfig()
	cfg.RegistrationSecret = testSecret
	cfg.ServerMaxBytesInFlight = 1024
	require.ErrorContains(t, cfg.Validate(), "serverMaxBytesInFlight")
}

func itoa(n int) string { return strconv.Itoa(n) }

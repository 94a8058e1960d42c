package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rprops "github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/stretchr/testify/require"
)

// The transport keys load from a broker.conf under RocketMQ's names (and RMQ_* variables).
func TestTransportKeysLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join([]string{
		"tls.server.mode=enforcing",
		"tls.server.need.client.auth=require",
		"tls.server.authClient=true",
		"tls.test.mode.enable=false",
		"tls.config.file=",
		"serverMaxConnections=500",
		"serverMaxBytesInFlight=67108864",
		"serverFrameTimeoutMillis=5000",
		"serverTlsHandshakeTimeoutMillis=3000",
		"serverChannelMaxIdleTimeSeconds=60",
		"httpTlsEnable=true",
	}, "\n")), 0o600))
	cfg := DefaultConfig()
	_, err := rprops.Load(&cfg, "broker", []string{"-c", p}, []string{"RMQ_TLS_ENABLE=true", "RMQ_TLS_CLIENT_AUTH_SERVER=true"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "enforcing", cfg.TLSServerMode)
	require.Equal(t, "require", cfg.TLSServerNeedClientAuth)
	require.True(t, cfg.TLSServerAuthClient)
	require.False(t, cfg.TLSTestModeEnable)
	require.True(t, cfg.TLSEnable)
	require.True(t, cfg.TLSClientAuthServer)
	require.Equal(t, 500, cfg.ServerMaxConnections)
	require.EqualValues(t, 64<<20, cfg.ServerMaxBytesInFlight)
	require.Equal(t, 5*time.Second, cfg.ServerFrameTimeout)
	require.Equal(t, 3*time.Second, cfg.ServerTLSHandshakeTimeout)
	require.Equal(t, 60*time.Second, cfg.ServerChannelMaxIdleTime)
	require.True(t, cfg.HTTPTLSEnable)

	cfg.StorePathRootDir = t.TempDir()
	cfg.HASecret = testHASecret
	_, err = New(cfg, testLogger()) // enforcing without a certificate and without test mode
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "tls.server.certPath")

	bad := DefaultConfig()
	bad.TLSServerMode = "on"
	require.ErrorContains(t, bad.Validate(), "tls.server.mode")
	bad = DefaultConfig()
	bad.ServerMaxBytesInFlight = 1 << 20
	require.ErrorContains(t, bad.Validate(), "serverMaxBytesInFlight")
}

// tlsNSStub is a name server that only speaks TLS and counts registrations that came over it.
func tlsNSStub(t *testing.T) (*remoting.Server, *atomic.Int32) {
	t.Helper()
	srvTLS, err := tlsconf.DefaultConfig().ServerTLS() // test mode: self-signed
	require.NoError(t, err)
	cfg := remoting.DefaultServerConfig()
	cfg.Addr, cfg.TLSMode, cfg.TLS = "127.0.0.1:0", remoting.TLSEnforcing, srvTLS.Config
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	var regs atomic.Int32
	srv.HandleFunc(remoting.RegisterBroker, func(w remoting.ResponseWriter, req *remoting.Command) {
		if w.Conn().TLS() {
			regs.Add(1)
		}
		_ = w.Write(remoting.NewResponse(req, remoting.Success, ""))
	})
	srv.HandleFunc(remoting.UnregisterBroker, func(w remoting.ResponseWriter, req *remoting.Command) {
		_ = w.Write(remoting.NewResponse(req, remoting.Success, ""))
	})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	return srv, &regs
}

// An enforcing broker: plain clients are refused and counted, TLS clients served, the broker
// registers with a TLS-only name server (tls.enable), and the status port speaks HTTPS.
func TestBrokerEnforcingTLS(t *testing.T) {
	ns, regs := tlsNSStub(t)
	cfg := testConfig(t)
	cfg.TLSServerMode = tlsconf.ModeEnforcing
	cfg.TLSEnable = true
	cfg.NamesrvAddr = ns.Addr().String()
	cfg.HTTPPort = freePort(t)
	cfg.HTTPTLSEnable = true
	b := startBroker(t, cfg)
	require.Eventually(t, func() bool { return regs.Load() > 0 }, 20*time.Second, 10*time.Millisecond,
		"broker did not register over TLS")

	_, err := newTestClient(t).Invoke(context.Background(), b.Addr(), remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	require.Error(t, err, "plain client served by an enforcing broker")

	cc := remoting.DefaultClientConfig()
	cc.TLS = &tls.Config{InsecureSkipVerify: true}
	cl := remoting.NewClient(cc)
	defer cl.Close()
	resp, err := cl.Invoke(context.Background(), b.Addr(), remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	r, err := hc.Get("https://" + b.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	text := string(body)
	require.Contains(t, text, `rmqha_broker_remoting_connections_refused_total{reason="plain_in_enforcing"} 1`)
	require.Contains(t, text, `rmqha_broker_remoting_tls_handshakes_total{mode="enforcing",result="ok"} 1`)
	require.Regexp(t, `(?m)^rmqha_broker_remoting_connections_max\ 10000$`, text)
	require.Regexp(t, `(?m)^rmqha_broker_remoting_bytes_in_flight_max\ 2\.68435456e\+08$`, text)
	require.Contains(t, text, `rmqha_broker_namesrv_client_tls_handshakes_total{result="ok"} 1`)
}

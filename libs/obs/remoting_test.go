package obs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func TestRemotingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	st := remoting.ServerStats{TLSMode: remoting.TLSPermissive, OpenConnections: 3, MaxConnections: 10, AcceptedPlain: 5,
		AcceptedTLS: 2, RefusedLimit: 1, RefusedPlain: 4, HandshakesOK: 2, HandshakesFailed: 1,
		BytesInFlight: 4096, MaxBytesInFlight: 1 << 20, BusyBytes: 7, FrameTimeouts: 9,
		FramesTooLarge: 3, FramesMalformed: 2}
	reg.MustRegister(RemotingCollector("rmqha_test_remoting_", func() remoting.ServerStats { return st }))
	want := `
# HELP rmqha_test_remoting_connections Open remoting connections.
# TYPE rmqha_test_remoting_connections gauge
rmqha_test_remoting_connections 3
# HELP rmqha_test_remoting_connections_refused_total Connections closed before being served, by reason.
# TYPE rmqha_test_remoting_connections_refused_total counter
rmqha_test_remoting_connections_refused_total{reason="connection_limit"} 1
rmqha_test_remoting_connections_refused_total{reason="plain_in_enforcing"} 4
rmqha_test_remoting_connections_refused_total{reason="tls_in_disabled"} 0
# HELP rmqha_test_remoting_tls_handshakes_total TLS handshakes by server mode and result.
# TYPE rmqha_test_remoting_tls_handshakes_total counter
rmqha_test_remoting_tls_handshakes_total{mode="permissive",result="failed"} 1
rmqha_test_remoting_tls_handshakes_total{mode="permissive",result="ok"} 2
rmqha_test_remoting_tls_handshakes_total{mode="permissive",result="timeout"} 0
# HELP rmqha_test_remoting_bytes_in_flight Bytes held by grown read buffers and requests not yet answered.
# TYPE rmqha_test_remoting_bytes_in_flight gauge
rmqha_test_remoting_bytes_in_flight 4096
# HELP rmqha_test_remoting_busy_total Requests answered SYSTEM_BUSY, by reason.
# TYPE rmqha_test_remoting_busy_total counter
rmqha_test_remoting_busy_total{reason="bytes_in_flight"} 7
rmqha_test_remoting_busy_total{reason="requests_per_connection"} 0
# HELP rmqha_test_remoting_frame_timeouts_total Connections closed for a frame not completed within the frame timeout.
# TYPE rmqha_test_remoting_frame_timeouts_total counter
rmqha_test_remoting_frame_timeouts_total 9
# HELP rmqha_test_remoting_frames_refused_total Connections closed at a frame's length prefix or header length, by reason (too_large, malformed).
# TYPE rmqha_test_remoting_frames_refused_total counter
rmqha_test_remoting_frames_refused_total{reason="malformed"} 2
rmqha_test_remoting_frames_refused_total{reason="too_large"} 3
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"rmqha_test_remoting_connections", "rmqha_test_remoting_connections_refused_total",
		"rmqha_test_remoting_tls_handshakes_total", "rmqha_test_remoting_bytes_in_flight",
		"rmqha_test_remoting_busy_total", "rmqha_test_remoting_frame_timeouts_total",
		"rmqha_test_remoting_frames_refused_total"))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 18, n)
}

func selfSignedForTest(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "status"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// With a TLS configuration the status port speaks HTTPS only.
func TestListenTLS(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{selfSignedForTest(t)}})
	require.NoError(t, err)
	srv := &http.Server{Handler: Mux(Endpoints{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	addr := ln.Addr().String()

	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := cl.Get("https://" + addr + "/health")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "ok\n", string(body))

	resp, err = (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/health")
	if err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP gets no status")
	}

	plain, err := Listen("127.0.0.1:0", nil)
	require.NoError(t, err)
	_, isTLS := plain.(interface{ ConnectionState() tls.ConnectionState })
	require.False(t, isTLS)
	plain.Close()
}

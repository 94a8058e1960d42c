package nameserver

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

// The name server's status port: no profiling endpoints by default; with httpPprofEnable
// (and httpTlsEnable) net/http/pprof over HTTPS, and a warning at start.
func TestNameServerPprof(t *testing.T) {
	require.False(t, DefaultConfig().HTTPPprofEnable)
	start := func(pprof bool) (string, *logtest.Hook) {
		cfg := DefaultConfig()
		cfg.RegistrationSecret = testSecret
		cfg.BindAddress, cfg.ListenPort, cfg.HTTPPort = "127.0.0.1", freePort(t), freePort(t)
		cfg.HTTPTLSEnable = true
		cfg.HTTPPprofEnable = pprof
		l, hook := logtest.NewNullLogger()
		cfg.Logger = l
		s, err := New(cfg, registry.NewMemory())
		require.NoError(t, err)
		require.NoError(t, s.Start())
		t.Cleanup(func() { s.Close() })
		return "https://" + net.JoinHostPort("127.0.0.1", itoa(cfg.HTTPPort)), hook
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url string) (int, []byte) {
		r, err := hc.Get(url)
		require.NoError(t, err)
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		return r.StatusCode, b
	}
	warned := func(h *logtest.Hook) bool {
		for _, e := range h.AllEntries() {
			if e.Level == logrus.WarnLevel && e.Data["key"] == "httpPprofEnable" {
				return true
			}
		}
		return false
	}

	off, hook := start(false)
	code, _ := get(off + "/debug/pprof/profile?seconds=1")
	require.Equal(t, http.StatusNotFound, code)
	require.False(t, warned(hook))

	on, hook := start(true)
	require.True(t, warned(hook))
	code, body := get(on + "/debug/pprof/profile?seconds=1")
	require.Equal(t, http.StatusOK, code, string(body))
	require.GreaterOrEqual(t, len(body), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a CPU profile is gzipped protobuf")
}

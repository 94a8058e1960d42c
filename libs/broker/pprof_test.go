package broker

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

// get fetches url and returns the status code and body.
func get(t *testing.T, hc *http.Client, url string) (int, []byte) {
	t.Helper()
	r, err := hc.Get(url)
	require.NoError(t, err)
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return r.StatusCode, body
}

// The status port serves no profiling endpoints unless httpPprofEnable is set.
func TestPprofOffByDefault(t *testing.T) {
	require.False(t, DefaultConfig().HTTPPprofEnable)
	cfg := testConfig(t)
	cfg.HTTPPort = freePort(t)
	b := startBroker(t, cfg)
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/heap"} {
		code, _ := get(t, hc, "http://"+b.HTTPAddr()+p)
		require.Equal(t, http.StatusNotFound, code, p)
	}
	code, _ := get(t, hc, "http://"+b.HTTPAddr()+"/health")
	require.Equal(t, http.StatusOK, code)
}

// httpPprofEnable serves net/http/pprof on the status port, over the same TLS as /metrics
// with httpTlsEnable, and warns at start that it does.
func TestPprofOnOverTLS(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTPPort = freePort(t)
	cfg.HTTPTLSEnable = true
	cfg.HTTPPprofEnable = true
	l, hook := logtest.NewNullLogger()
	b, err := New(cfg, l)
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Shutdown(t.Context()) })

	var warned bool
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel && e.Data["key"] == "httpPprofEnable" {
			warned = true
		}
	}
	require.True(t, warned, "no start-up warning that profiling is exposed")

	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	code, body := get(t, hc, "https://"+b.HTTPAddr()+"/debug/pprof/profile?seconds=1")
	require.Equal(t, http.StatusOK, code, string(body))
	require.GreaterOrEqual(t, len(body), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a CPU profile is gzipped protobuf")
	code, body = get(t, hc, "https://"+b.HTTPAddr()+"/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), "goroutine")
	// Plain HTTP is not served next to it.
	_, err = (&http.Client{Timeout: 5 * time.Second}).Get("http://" + b.HTTPAddr() + "/debug/pprof/")
	if err == nil {
		code, _ = get(t, &http.Client{Timeout: 5 * time.Second}, "http://"+b.HTTPAddr()+"/debug/pprof/")
		require.NotEqual(t, http.StatusOK, code)
	}
}

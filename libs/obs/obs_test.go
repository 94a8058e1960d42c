package obs

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestEndpoints(t *testing.T) {
	healthy := errors.New("no slave connected")
	reg := NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "rmqha_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	srv := httptest.NewServer(Mux(Endpoints{
		Health:  func() error { return healthy },
		Status:  func() any { return map[string]int{"x": 1} },
		Metrics: reg,
	}))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/health")
	require.Equal(t, 503, code)
	require.Contains(t, body, "no slave connected")
	healthy = nil
	code, _ = get("/health")
	require.Equal(t, 200, code)
	_, body = get("/status")
	require.JSONEq(t, `{"x":1}`, body)
	_, body = get("/metrics")
	require.Regexp(t, `(?m)^rmqha_test_total 3$`, body)
	require.True(t, strings.Contains(body, "go_goroutines"))
}

func TestNewLogger(t *testing.T) {
	_, err := NewLogger("debug", "json")
	require.NoError(t, err)
	_, err = NewLogger("loud", "text")
	require.ErrorContains(t, err, "logLevel")
	_, err = NewLogger("info", "xml")
	require.ErrorContains(t, err, "logFormat")
}

func TestExitCode(t *testing.T) {
	var buf strings.Builder
	require.Equal(t, 0, ExitCode("svc", nil, &buf))
	require.Equal(t, 0, ExitCode("svc", fmt.Errorf("load: %w", flag.ErrHelp), &buf))
	require.Empty(t, buf.String())
	require.Equal(t, 2, ExitCode("svc", errors.New(`unknown key "x"`), &buf))
	require.Equal(t, "svc: unknown key \"x\"\n", buf.String())
}

// net/http/pprof is on the mux only when Endpoints.Pprof says so.
func TestPprofEndpoints(t *testing.T) {
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(Mux(Endpoints{Pprof: on}))
		for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap", "/debug/pprof/symbol"} {
			resp, err := srv.Client().Get(srv.URL + p)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			want := 404
			if on {
				want = 200
			}
			require.Equal(t, want, resp.StatusCode, "%s pprof=%v", p, on)
		}
		srv.Close()
	}
}

// Package obs is what every service serves over HTTP for operators: /health
// (200 only when the service can do its job, the reason otherwise), /status
// (JSON) and /metrics (Prometheus text format, with Go runtime and process
// metrics), on demand net/http/pprof under /debug/pprof/, plus the logger set-up every binary
// shares.
package obs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
)

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors registered.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Endpoints are the functions behind /health and /status.
type Endpoints struct {
	// Health returns nil when the service can do its job, else the reason.
	Health func() error
	// Status returns a JSON-encodable snapshot.
	Status func() any
	// Metrics is the registry served on /metrics; nil serves none.
	Metrics *prometheus.Registry
	// Pprof serves net/http/pprof under /debug/pprof/ (CPU, heap, goroutine, ... profiles).
	// Off unless a service's httpPprofEnable key turns it on: profiles show code paths and
	// a CPU profile costs CPU while it runs, so they are not for anyone who reaches the port.
	Pprof bool
}

// Mux builds the HTTP handler for e.
func Mux(e Endpoints) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		if e.Health != nil {
			if err := e.Health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "unhealthy: %v\n", err)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var v any = struct{}{}
		if e.Status != nil {
			v = e.Status()
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	})
	if e.Metrics != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(e.Metrics, promhttp.HandlerOpts{}))
	}
	if e.Pprof {
		// The handlers of net/http/pprof, on this mux rather than http.DefaultServeMux (which
		// importing the package also fills, and which no service serves).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// NewLogger returns a logrus logger with the level ("info", "debug", ...)
// and format ("text" or "json") a service's configuration names.
func NewLogger(level, format string) (*logrus.Logger, error) {
	l := logrus.New()
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("logLevel: %w", err)
	}
	l.SetLevel(lvl)
	switch format {
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{})
	case "text", "":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	default:
		return nil, fmt.Errorf("logFormat: %q is not text or json", format)
	}
	return l, nil
}

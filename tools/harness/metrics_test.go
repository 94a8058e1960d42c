package harness

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// page is shaped like client_golang's text output, with the cases a naive prefix match gets
// wrong: a series that is a prefix of another, labels with spaces, braces and escaped quotes,
// a histogram, special values and a timestamp.
const page = `# HELP rmqha_broker_store_fsync_seconds Time spent in fsync.
# TYPE rmqha_broker_store_fsync_seconds histogram
rmqha_broker_store_fsync_seconds_bucket{le="0.005"} 3
rmqha_broker_store_fsync_seconds_bucket{le="+Inf"} 7
rmqha_broker_store_fsync_seconds_sum 0.125
rmqha_broker_store_fsync_seconds_count 7
# HELP rmqha_broker_queue_locks Locks held.
# TYPE rmqha_broker_queue_locks gauge
rmqha_broker_queue_locks 2
rmqha_broker_queue_locks_max 64
# TYPE rmqha_broker_acl_requests_total counter
rmqha_broker_acl_requests_total{reason="no_permission",result="denied"} 5
rmqha_broker_acl_requests_total{reason="bad_signature",result="denied"} 1.5e+06
rmqha_broker_admin_refused_total{request="a } b \"c\" {d"} 4
rmqha_broker_remoting_bytes_in_flight 0
rmqha_broker_nan NaN
rmqha_broker_inf{side="low"} -Inf
rmqha_broker_stamped 9 1700000000000

`

func serve(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestMetricsParsesExposition(t *testing.T) {
	m, err := Metrics(serve(t, http.StatusOK, page))
	require.NoError(t, err)

	for series, want := range map[string]float64{
		`rmqha_broker_store_fsync_seconds_bucket{le="0.005"}`:                     3,
		`rmqha_broker_store_fsync_seconds_bucket{le="+Inf"}`:                      7,
		"rmqha_broker_store_fsync_seconds_sum":                                    0.125,
		"rmqha_broker_store_fsync_seconds_count":                                  7,
		"rmqha_broker_queue_locks":                                                2,
		"rmqha_broker_queue_locks_max":                                            64,
		`rmqha_broker_acl_requests_total{reason="no_permission",result="denied"}`: 5,
		`rmqha_broker_acl_requests_total{reason="bad_signature",result="denied"}`: 1.5e6,
		`rmqha_broker_admin_refused_total{request="a } b \"c\" {d"}`:              4,
		"rmqha_broker_remoting_bytes_in_flight":                                   0,
		`rmqha_broker_inf{side="low"}`:                                            math.Inf(-1),
		"rmqha_broker_stamped":                                                    9,
	} {
		got, ok := m[series]
		require.True(t, ok, "series %s not read", series)
		require.Equal(t, want, got, series)
	}
	require.True(t, math.IsNaN(m["rmqha_broker_nan"]))
	require.Len(t, m, 13, "comments or blank lines taken for samples: %v", m)

	// Absent: a metric the page never had, a name without its labels, labels in another order.
	for _, series := range []string{
		"rmqha_broker_transaction_discarded_total",
		"rmqha_broker_acl_requests_total",
		`rmqha_broker_acl_requests_total{result="denied",reason="no_permission"}`,
		"rmqha_broker_store_fsync_seconds",
	} {
		_, ok := m[series]
		require.False(t, ok, series)
	}
}

func TestMetricsRefusesBrokenPages(t *testing.T) {
	for name, body := range map[string]string{
		"value not a number":   "rmqha_x 12abc\n",
		"no value":             "rmqha_x\n",
		"extra field":          "rmqha_x 1 2 3\n",
		"bad timestamp":        "rmqha_x 1 soon\n",
		"unterminated labels":  `rmqha_x{a="b} 1` + "\n",
		"labels run into text": `rmqha_x{a="b"}1` + "\n",
		"repeated series":      "rmqha_x 1\nrmqha_x 2\n",
	} {
		_, err := Metrics(serve(t, http.StatusOK, body))
		require.Error(t, err, name)
	}

	_, err := Metrics(serve(t, http.StatusInternalServerError, "rmqha_x 1\n"))
	require.ErrorContains(t, err, "500")

	_, err = Metrics(serve(t, http.StatusOK, strings.Repeat("#", maxMetricsPage+1)))
	require.ErrorContains(t, err, "larger than")

	// A full-size page is still read, so the bound is not off by one.
	full := "rmqha_x 1\n"
	full += strings.Repeat("#", maxMetricsPage-len(full))
	m, err := Metrics(serve(t, http.StatusOK, full))
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"rmqha_x": 1}, m)
}

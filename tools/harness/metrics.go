package harness

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxMetricsPage bounds one /metrics read. A page is read whole or refused: a cut-off page
// could end inside a sample and yield a plausible but wrong value.
const maxMetricsPage = 8 << 20

// metricsClient has a timeout so that a stopped (SIGSTOP) or wedged process fails a poll
// instead of hanging the test.
var metricsClient = &http.Client{Timeout: 5 * time.Second}

// Metrics reads the Prometheus text page http://hostport/metrics and returns every sample's
// value keyed by its series exactly as the page prints it: "name", or `name{label="value",...}`
// with the labels in the page's order (client_golang sorts them by name). A series the page
// does not hold is absent from the map; what absence means is left to the caller.
//
// A page that is not 200, too large, or not parseable is an error rather than a partial map,
// so a broken exporter cannot pass for a missing series.
func Metrics(hostport string) (map[string]float64, error) {
	url := "http://" + hostport + "/metrics"
	resp, err := metricsClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsPage+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	if len(body) > maxMetricsPage {
		return nil, fmt.Errorf("%s: page larger than %d bytes", url, maxMetricsPage)
	}
	m, err := parseMetrics(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return m, nil
}

// parseMetrics parses the Prometheus text exposition format (version 0.0.4).
func parseMetrics(page []byte) (map[string]float64, error) {
	m := map[string]float64{}
	for i, line := range strings.Split(string(page), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		series, rest, err := splitSeries(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		// The value may be followed by a timestamp in milliseconds.
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			return nil, fmt.Errorf("line %d %q: want a value and an optional timestamp", n, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		if len(f) == 2 {
			if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
				return nil, fmt.Errorf("line %d %q: timestamp: %w", n, line, err)
			}
		}
		// A repeated series would make the answer depend on which copy is read.
		if _, dup := m[series]; dup {
			return nil, fmt.Errorf("line %d: series %s repeated", n, series)
		}
		m[series] = v
	}
	return m, nil
}

// splitSeries cuts a sample line into its series and the rest. The label block is scanned
// quote by quote because a label value may hold spaces, braces and escaped quotes.
func splitSeries(line string) (series, rest string, err error) {
	end := strings.IndexAny(line, "{ \t")
	if end <= 0 {
		return "", "", fmt.Errorf("no metric name or no value")
	}
	if line[end] != '{' {
		return line[:end], line[end:], nil
	}
	inQuote := false
	for i := end + 1; i < len(line); i++ {
		switch c := line[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
				return "", "", fmt.Errorf("no space after the labels")
			}
			return line[:i+1], line[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("unterminated labels")
}

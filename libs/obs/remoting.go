package obs

import (
	"crypto/tls"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/remoting"
)

// RemotingCollector exposes a remoting server's connection and resource counters under
// prefix (for example "rmqha_broker_remoting_"), read at scrape time:
//
//	<prefix>connections                      open connections (all listeners)
//	<prefix>connections_max                  the per-listener limit (0: none)
//	<prefix>connections_accepted_total       by transport (plain, tls)
//	<prefix>connections_refused_total        by reason (connection_limit, plain_in_enforcing, tls_in_disabled)
//	<prefix>tls_handshakes_total             by mode and result (ok, failed, timeout)
//	<prefix>bytes_in_flight                  grown read buffers plus requests not yet answered
//	<prefix>bytes_in_flight_max              the budget (0: none)
//	<prefix>busy_total                       SYSTEM_BUSY refusals by reason (bytes_in_flight, requests_per_connection)
//	<prefix>overload_closes_total            connections closed for a frame over budget that could not be answered
//	<prefix>frame_timeouts_total             connections closed for a frame not completed in time
//	<prefix>frames_refused_total             connections closed at a frame's length, by reason (too_large, malformed)
func RemotingCollector(prefix string, stats func() remoting.ServerStats) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prefix+name, help, labels, nil)
	}
	return &remotingCollector{
		stats:     stats,
		conns:     d("connections", "Open remoting connections."),
		connsMax:  d("connections_max", "Connection limit per listener (0: none)."),
		accepted:  d("connections_accepted_total", "Connections served, by transport.", "transport"),
		refused:   d("connections_refused_total", "Connections closed before being served, by reason.", "reason"),
		handshake: d("tls_handshakes_total", "TLS handshakes by server mode and result.", "mode", "result"),
		inFlight:  d("bytes_in_flight", "Bytes held by grown read buffers and requests not yet answered."),
		inMax:     d("bytes_in_flight_max", "Budget of bytes in flight (0: none)."),
		busy:      d("busy_total", "Requests answered SYSTEM_BUSY, by reason.", "reason"),
		overload:  d("overload_closes_total", "Connections closed for a frame over budget that could not be answered."),
		timeouts:  d("frame_timeouts_total", "Connections closed for a frame not completed within the frame timeout."),
		frames:    d("frames_refused_total", "Connections closed at a frame's length prefix or header length, by reason (too_large, malformed).", "reason"),
	}
}

type remotingCollector struct {
	stats                                                   func() remoting.ServerStats
	conns, connsMax, accepted, refused, handshake, inFlight *prometheus.Desc
	inMax, busy, overload, timeouts, frames                 *prometheus.Desc
}

func (c *remotingCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.connsMax, c.accepted, c.refused, c.handshake, c.inFlight, c.inMax, c.busy, c.overload, c.timeouts, c.frames} {
		ch <- d
	}
}

func (c *remotingCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	g := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	n := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	g(c.conns, s.OpenConnections)
	g(c.connsMax, int64(max(s.MaxConnections, 0)))
	n(c.accepted, s.AcceptedPlain, "plain")
	n(c.accepted, s.AcceptedTLS, "tls")
	n(c.refused, s.RefusedLimit, "connection_limit")
	n(c.refused, s.RefusedPlain, "plain_in_enforcing")
	n(c.refused, s.RefusedTLS, "tls_in_disabled")
	mode := string(s.TLSMode)
	n(c.handshake, s.HandshakesOK, mode, "ok")
	n(c.handshake, s.HandshakesFailed, mode, "failed")
	n(c.handshake, s.HandshakesTimeout, mode, "timeout")
	g(c.inFlight, s.BytesInFlight)
	g(c.inMax, s.MaxBytesInFlight)
	n(c.busy, s.BusyBytes, "bytes_in_flight")
	n(c.busy, s.BusyPerConn, "requests_per_connection")
	n(c.overload, s.OverloadCloses)
	n(c.timeouts, s.FrameTimeouts)
	n(c.frames, s.FramesTooLarge, "too_large")
	n(c.frames, s.FramesMalformed, "malformed")
}

// Listen listens on addr for a status HTTP port, serving TLS when cfg is set (httpTlsEnable).
func Listen(addr string, cfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || cfg == nil {
		return ln, err
	}
	return tls.NewListener(ln, cfg), nil
}

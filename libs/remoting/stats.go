package remoting

import "sync/atomic"

// ServerStats is a snapshot of a Server's connection and resource counters, read by the
// services' /metrics. Totals count since the server was built.
type ServerStats struct {
	// TLSMode is the configured mode.
	TLSMode TLSMode
	// OpenConnections are the connections accepted and not yet closed (all listeners).
	OpenConnections int64
	// MaxConnections is the per-listener limit (0: none).
	MaxConnections int
	// AcceptedPlain and AcceptedTLS count connections served, by transport.
	AcceptedPlain, AcceptedTLS int64
	// RefusedLimit counts connections closed at accept because their listener was full.
	RefusedLimit int64
	// RefusedPlain counts plain connections closed by an enforcing server.
	RefusedPlain int64
	// RefusedTLS counts TLS connections closed by a disabled server.
	RefusedTLS int64
	// HandshakesOK, HandshakesFailed and HandshakesTimeout count TLS handshakes by result.
	HandshakesOK, HandshakesFailed, HandshakesTimeout int64
	// BytesInFlight is what the byte budget holds now: grown read buffers plus requests
	// not yet answered. MaxBytesInFlight is the budget (0: none).
	BytesInFlight, MaxBytesInFlight int64
	// BusyBytes counts requests answered SYSTEM_BUSY (or, oneway, dropped) because the byte
	// budget was exhausted; BusyPerConn those refused by MaxInflightPerConn.
	BusyBytes, BusyPerConn int64
	// OverloadCloses counts connections closed because a frame over budget could not be
	// answered (its header did not fit the buffer held).
	OverloadCloses int64
	// FrameTimeouts counts connections closed because a frame was not complete in time.
	FrameTimeouts int64
	// FramesTooLarge counts connections closed at a length prefix above MaxFrameSize;
	// FramesMalformed those closed at a length below the header word or a header running past
	// its frame. Nothing is allocated for either.
	FramesTooLarge, FramesMalformed int64
}

type serverCounters struct {
	open                            atomic.Int64
	acceptedPlain, acceptedTLS      atomic.Int64
	refusedLimit                    atomic.Int64
	refusedPlain, refusedTLS        atomic.Int64
	hsOK, hsFailed, hsTimeout       atomic.Int64
	busyBytes, busyPerConn          atomic.Int64
	overloadCloses, frameTimeouts   atomic.Int64
	framesTooLarge, framesMalformed atomic.Int64
}

// Stats returns the current counters.
func (s *Server) Stats() ServerStats {
	c := &s.stats
	return ServerStats{
		TLSMode:           s.cfg.TLSMode,
		OpenConnections:   c.open.Load(),
		MaxConnections:    s.cfg.MaxConnections,
		AcceptedPlain:     c.acceptedPlain.Load(),
		AcceptedTLS:       c.acceptedTLS.Load(),
		RefusedLimit:      c.refusedLimit.Load(),
		RefusedPlain:      c.refusedPlain.Load(),
		RefusedTLS:        c.refusedTLS.Load(),
		HandshakesOK:      c.hsOK.Load(),
		HandshakesFailed:  c.hsFailed.Load(),
		HandshakesTimeout: c.hsTimeout.Load(),
		BytesInFlight:     s.budget.used.Load(),
		MaxBytesInFlight:  s.budget.max,
		BusyBytes:         c.busyBytes.Load(),
		BusyPerConn:       c.busyPerConn.Load(),
		OverloadCloses:    c.overloadCloses.Load(),
		FrameTimeouts:     c.frameTimeouts.Load(),
		FramesTooLarge:    c.framesTooLarge.Load(),
		FramesMalformed:   c.framesMalformed.Load(),
	}
}

// ClientStats counts a Client's TLS handshakes by result.
type ClientStats struct {
	HandshakesOK, HandshakesFailed int64
}

// Stats returns the client's counters.
func (c *Client) Stats() ClientStats {
	return ClientStats{HandshakesOK: c.hsOK.Load(), HandshakesFailed: c.hsFailed.Load()}
}

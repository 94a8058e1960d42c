package remoting

import (
	"fmt"
	"time"
)

// ServerKeys are the operator's keys for a remoting server's bounds; the broker and the name
// server embed them in their configuration, so the `prop` tags are property names. RocketMQ has
// serverChannelMaxIdleTimeSeconds; it has no connection limit, byte budget, frame deadline or
// handshake deadline, so those names are ours, in the style of its NettyServerConfig. A value of
// 0 turns a bound off.
type ServerKeys struct {
	// ServerMaxConnections bounds the open connections of the remoting port; more are closed
	// at accept, counted and logged (rate-limited). 0: no limit. Default 10000.
	ServerMaxConnections int `prop:"serverMaxConnections"`
	// ServerMaxBytesInFlight is the budget in bytes for frames being read (past a 4 KiB buffer
	// per connection) plus requests not yet answered; beyond it requests are answered
	// SYSTEM_BUSY and their bodies discarded unread into memory. 0: no budget. Default 256 MiB.
	ServerMaxBytesInFlight int64 `prop:"serverMaxBytesInFlight"`
	// ServerFrameTimeout is how long one frame may take from its first byte to its last.
	// 0: no deadline. Default 30s.
	ServerFrameTimeout time.Duration `prop:"serverFrameTimeoutMillis,ms"`
	// ServerTLSHandshakeTimeout bounds a TLS handshake. Default 10s.
	ServerTLSHandshakeTimeout time.Duration `prop:"serverTlsHandshakeTimeoutMillis,ms"`
	// ServerChannelMaxIdleTime closes a connection silent for this long (RocketMQ's
	// serverChannelMaxIdleTimeSeconds, in seconds). 0: never. Default 120s.
	ServerChannelMaxIdleTime time.Duration `prop:"serverChannelMaxIdleTimeSeconds"`
}

// DefaultServerKeys returns the defaults documented on ServerKeys.
func DefaultServerKeys() ServerKeys {
	d := DefaultServerConfig()
	return ServerKeys{
		ServerMaxConnections:      d.MaxConnections,
		ServerMaxBytesInFlight:    d.MaxBytesInFlight,
		ServerFrameTimeout:        d.FrameTimeout,
		ServerTLSHandshakeTimeout: d.HandshakeTimeout,
		ServerChannelMaxIdleTime:  d.IdleTimeout,
	}
}

// Validate names the first offending key; maxFrame is the server's MaxFrameSize.
func (k ServerKeys) Validate(maxFrame int) error {
	switch {
	case k.ServerMaxConnections < 0:
		return fmt.Errorf("%w: serverMaxConnections %d < 0", ErrInvalidConfig, k.ServerMaxConnections)
	case k.ServerMaxBytesInFlight < 0:
		return fmt.Errorf("%w: serverMaxBytesInFlight %d < 0", ErrInvalidConfig, k.ServerMaxBytesInFlight)
	case k.ServerMaxBytesInFlight > 0 && k.ServerMaxBytesInFlight < int64(maxFrame):
		return fmt.Errorf("%w: serverMaxBytesInFlight %d is below the largest frame (%d bytes)", ErrInvalidConfig, k.ServerMaxBytesInFlight, maxFrame)
	case k.ServerFrameTimeout < 0:
		return fmt.Errorf("%w: serverFrameTimeoutMillis must not be negative", ErrInvalidConfig)
	case k.ServerTLSHandshakeTimeout <= 0:
		return fmt.Errorf("%w: serverTlsHandshakeTimeoutMillis must be positive", ErrInvalidConfig)
	case k.ServerChannelMaxIdleTime < 0:
		return fmt.Errorf("%w: serverChannelMaxIdleTimeSeconds must not be negative", ErrInvalidConfig)
	}
	return nil
}

// Apply sets c's bounds from k (0 in a key becomes "off" in c).
func (k ServerKeys) Apply(c *ServerConfig) {
	off := func(v int64) int64 {
		if v == 0 {
			return -1
		}
		return v
	}
	c.MaxConnections = int(off(int64(k.ServerMaxConnections)))
	c.MaxBytesInFlight = off(k.ServerMaxBytesInFlight)
	c.FrameTimeout = time.Duration(off(int64(k.ServerFrameTimeout)))
	c.HandshakeTimeout = k.ServerTLSHandshakeTimeout
	c.IdleTimeout = time.Duration(off(int64(k.ServerChannelMaxIdleTime)))
}

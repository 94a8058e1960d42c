package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// TLS on the remoting port
//
// A server runs in one of RocketMQ's three modes (tls.server.mode) and tells a TLS client from
// a plain one by the first byte it sends, as RocketMQ's Netty server does:
//
//	first byte 0x16 (a TLS handshake record)  -> TLS client
//	anything else (a frame length's high byte)  -> plain client
//
// A plain frame cannot start with 0x16: that would announce at least 0x16000000 bytes (352
// MiB), above the largest MaxFrameSize a server accepts.
//
//	mode        plain client              TLS client
//	disabled    served                    closed, logged, counted (tls_in_disabled)
//	permissive  served                    handshake, then served
//	enforcing   closed, logged, counted   handshake, then served
//	            (plain_in_enforcing)
//
// The first byte must arrive within the idle timeout, the handshake must finish within
// ServerConfig.HandshakeTimeout. Refusal and handshake-failure logs are rate-limited (one line
// per reason per logEvery, with the number suppressed since).

// TLSMode is RocketMQ's tls.server.mode.
type TLSMode string

// The modes; their text is RocketMQ's.
const (
	TLSDisabled   TLSMode = "disabled"
	TLSPermissive TLSMode = "permissive"
	TLSEnforcing  TLSMode = "enforcing"
)

// tlsRecordHandshake is the content type byte that starts every TLS ClientHello.
const tlsRecordHandshake = 0x16

// maxServerFrame keeps every valid frame length's first byte below 0x16.
const maxServerFrame = 0x16000000 - 1

// prefixConn replays bytes already read from a connection before reading it further.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// handshake runs a server-side TLS handshake over nc (whose first byte was already read)
// within timeout.
func serverHandshake(nc net.Conn, first []byte, cfg *tls.Config, timeout time.Duration) (*tls.Conn, error) {
	tc := tls.Server(&prefixConn{Conn: nc, prefix: first}, cfg)
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		_ = nc.SetDeadline(time.Now().Add(timeout))
	}
	err := tc.HandshakeContext(ctx)
	_ = nc.SetDeadline(time.Time{})
	return tc, err
}

// clientHandshake wraps a dialled connection in TLS for addr within the dial's context.
func clientHandshake(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(d)
	}
	err := tc.HandshakeContext(ctx)
	_ = nc.SetDeadline(time.Time{})
	return tc, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// logEvery is the rate limit of repetitive connection-level warnings.
const logEvery = 10 * time.Second

// logLimiter lets one line per key through every logEvery and counts the rest.
type logLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

// allow reports whether a line for key may be logged now, and how many were suppressed
// since the last one that was.
func (l *logLimiter) allow(key string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.held = map[string]time.Time{}, map[string]int{}
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < logEvery {
		l.held[key]++
		return false, 0
	}
	n := l.held[key]
	l.last[key], l.held[key] = now, 0
	return true, n
}

func validTLSMode(m TLSMode) error {
	switch m {
	case TLSDisabled, TLSPermissive, TLSEnforcing:
		return nil
	}
	return fmt.Errorf("%w: TLSMode %q is not disabled, permissive or enforcing", ErrInvalidConfig, m)
}

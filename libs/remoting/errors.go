package remoting

import "errors"

var (
	// ErrFrameTooLarge is returned by ReadFrame when a frame's length prefix exceeds the
	// configured maximum; the connection cannot be resynchronised and is closed.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrMalformed is returned by ReadFrame and DecodeFrame when the bytes do not form a valid
	// frame or header (bad length, unknown serialize type, broken JSON or binary header).
	ErrMalformed = errors.New("remoting: malformed frame")
	// ErrHeaderTooLarge is returned by EncodeFrame when the encoded header does not fit the
	// 24-bit header length of the frame.
	ErrHeaderTooLarge = errors.New("remoting: header too large")
	// ErrClosed is returned by operations on a Server, Client or connection that has been closed.
	ErrClosed = errors.New("remoting: closed")
	// ErrConnFailed is returned to calls pending on a connection that broke (read/write error,
	// peer close); the cause is wrapped alongside it.
	ErrConnFailed = errors.New("remoting: connection failed")
	// ErrTimeout is returned when no response arrived before the request's deadline.
	ErrTimeout = errors.New("remoting: request timed out")
	// ErrAlreadyWritten is returned by ResponseWriter.Write on the second call.
	ErrAlreadyWritten = errors.New("remoting: response already written")
	// ErrExtMissing is returned by the Command.ExtX accessors when the key is absent.
	ErrExtMissing = errors.New("remoting: ext field missing")
	// ErrExtInvalid is returned by the Command.ExtX accessors when the value does not parse
	// (for integers: not a decimal number of the field's width).
	ErrExtInvalid = errors.New("remoting: ext field invalid")
	// ErrFrameTimeout is returned by a connection's reader when a frame whose first byte arrived
	// was not complete within the frame timeout (a peer dribbling bytes); the connection closes.
	ErrFrameTimeout = errors.New("remoting: frame not completed in time")
	// ErrOverloaded is returned by a server connection's reader when a frame exceeds the byte
	// budget and its header is too large to be kept for a SYSTEM_BUSY answer; the connection
	// closes.
	ErrOverloaded = errors.New("remoting: bytes in flight over budget")
	// ErrTLSRefused is the cause recorded for a connection refused by the TLS mode: a plain
	// client on an enforcing server, a TLS client on a disabled one.
	ErrTLSRefused = errors.New("remoting: refused by TLS mode")
	// ErrHandshake is the cause recorded for a connection whose TLS handshake failed or did not
	// finish within the handshake timeout.
	ErrHandshake = errors.New("remoting: TLS handshake failed")
	// ErrExtRange is returned by the ranged Command.ExtX accessors and ParseExtInt when the
	// value parses but lies outside the range the field allows.
	ErrExtRange = errors.New("remoting: ext field out of range")
	// ErrInvalidConfig is returned by Validate (wrapped with the offending field's name).
	ErrInvalidConfig = errors.New("remoting: invalid config")
)

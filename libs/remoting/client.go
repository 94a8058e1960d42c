package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/quietsock"
	"github.com/sirupsen/logrus"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// DialTimeout bounds one TCP connect. Default 3s.
	DialTimeout time.Duration
	// RequestTimeout bounds Invoke (dial included) when its context has no deadline. Default 3s.
	RequestTimeout time.Duration
	// MaxFrameSize is the largest accepted frame from a server; a bigger one fails the
	// connection. Default 64 MiB (pull responses can carry many large messages).
	MaxFrameSize int
	// IdleTimeout closes a connection from which nothing was read for this long; the next call
	// redials. 0 disables. Default 120s, like rocketmq-client-go.
	IdleTimeout time.Duration
	// WriteTimeout fails a connection whose server does not accept bytes for this long.
	// Default 30s.
	WriteTimeout time.Duration
	// MaxInflightPushes bounds concurrently running server-initiated request handlers per
	// connection; past it the server gets SYSTEM_BUSY. Default 256.
	MaxInflightPushes int
	// Logger receives connection-level events. Default: discards everything.
	Logger logrus.FieldLogger
	// Signer, when set, is applied to every request this client sends, after the request was
	// copied and its ext fields cloned (so it may add fields such as an ACL signature without
	// touching the caller's Command). Default nil.
	Signer func(req *Command)
	// TLS, when set, makes every connection a TLS client connection (RocketMQ's tls.enable);
	// the handshake counts towards DialTimeout. ServerName defaults to the dialled host.
	// Default nil: plain TCP.
	TLS *tls.Config
}

// DefaultClientConfig returns the production defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		DialTimeout:       3 * time.Second,
		RequestTimeout:    3 * time.Second,
		MaxFrameSize:      64 << 20,
		IdleTimeout:       120 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxInflightPushes: 256,
		Logger:            discardLogger(),
	}
}

// Validate reports the first invalid field.
func (c ClientConfig) Validate() error {
	switch {
	case c.DialTimeout <= 0:
		return fmt.Errorf("%w: DialTimeout %v <= 0", ErrInvalidConfig, c.DialTimeout)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("%w: RequestTimeout %v <= 0", ErrInvalidConfig, c.RequestTimeout)
	case c.MaxFrameSize < 64 || c.MaxFrameSize > 1<<30:
		return fmt.Errorf("%w: MaxFrameSize %d not in [64, 1 GiB]", ErrInvalidConfig, c.MaxFrameSize)
	case c.IdleTimeout < 0:
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrInvalidConfig, c.IdleTimeout)
	case c.WriteTimeout < 0:
		return fmt.Errorf("%w: WriteTimeout %v < 0", ErrInvalidConfig, c.WriteTimeout)
	case c.MaxInflightPushes < 1:
		return fmt.Errorf("%w: MaxInflightPushes %d < 1", ErrInvalidConfig, c.MaxInflightPushes)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrInvalidConfig)
	}
	return nil
}

// Client keeps one pipelined connection per address, dialled lazily on first use. Calls on
// a connection are matched to responses by opaque; when the connection fails every call
// pending on it fails at once and the next call redials.
type Client struct {
	cfg ClientConfig
	log logrus.FieldLogger

	mu     sync.Mutex
	closed bool
	conns  map[string]*clientConn

	hmu      sync.RWMutex
	handlers map[int32]func(req *Command) *Command

	opaque    atomic.Int32
	sweepOnce sync.Once // starts the sweeper of asynchronous calls (async.go)
	hsOK      atomic.Int64
	hsFailed  atomic.Int64
	wg        sync.WaitGroup
	ctx       context.Context // cancelled by Close; aborts dials
	cancelAll context.CancelFunc
}

type clientConn struct {
	addr    string
	ready   chan struct{} // closed when the dial finished
	link    *link         // set before ready closes, nil on dial failure
	dialErr error
	sem     chan struct{}
	log     logrus.FieldLogger
}

// NewClient builds a client. Zero or invalid fields of cfg take their DefaultClientConfig
// values (so NewClient cannot fail).
func NewClient(cfg ClientConfig) *Client {
	def := DefaultClientConfig()
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = def.DialTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.MaxFrameSize < 64 || cfg.MaxFrameSize > 1<<30 {
		cfg.MaxFrameSize = def.MaxFrameSize
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = def.IdleTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.MaxInflightPushes < 1 {
		cfg.MaxInflightPushes = def.MaxInflightPushes
	}
	if cfg.Logger == nil {
		cfg.Logger = def.Logger
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg:       cfg,
		log:       cfg.Logger,
		conns:     make(map[string]*clientConn),
		handlers:  make(map[int32]func(*Command) *Command),
		ctx:       ctx,
		cancelAll: cancel,
	}
}

// HandleRequest registers a handler for server-initiated requests with the given code. A
// non-nil result is sent back as the response (opaque and response flag set here) unless the
// request was oneway.
func (c *Client) HandleRequest(code int32, h func(req *Command) *Command) {
	c.hmu.Lock()
	c.handlers[code] = h
	c.hmu.Unlock()
}

// Invoke sends req to addr and waits for its response. req is copied and the copy gets a
// fresh opaque, so one Command may be sent concurrently. The deadline is ctx's, or
// RequestTimeout when ctx has none; it covers dialling too.
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	resp, err := c.invoke(ctx, addr, req, false)
	if err == nil && resp.rawExt != nil {
		resp.extMap() // an answer the reader decoded in place (extdecode.go)
	}
	return resp, err
}

// InvokeExt is Invoke whose answer's custom header fields go to dec, one by one in this
// goroutine before it returns, instead of into a map: the returned Command's ExtFields is nil.
// For callers that read a few fields of a hot answer (extdecode.go).
func (c *Client) InvokeExt(ctx context.Context, addr string, req *Command, dec ExtDecoder) (*Command, error) {
	resp, err := c.invoke(ctx, addr, req, true)
	if err != nil {
		return nil, err
	}
	resp.decodeExt(dec)
	return resp, nil
}

func (c *Client) invoke(ctx context.Context, addr string, req *Command, typed bool) (*Command, error) {
	// Without a ctx deadline the call waits RequestTimeout less what the dial took: a timer
	// from a pool instead of a context and its timer per call.
	timeout := time.Duration(0)
	if _, ok := ctx.Deadline(); !ok {
		timeout = c.cfg.RequestTimeout
	}
	cc, ok := c.ready(addr)
	if !ok {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
			timeout = 0
		}
		var err error
		if cc, err = c.conn(ctx, addr); err != nil {
			return nil, err
		}
	}
	// Unsigned, the copy stays on this stack: the link encodes it before call waits and keeps
	// no pointer to it. A Signer is an opaque function, so a signed copy goes to the heap.
	var cp Command
	out := &cp
	if c.cfg.Signer != nil {
		out = c.prepare(req)
	} else {
		cp = *req
		cp.Opaque = c.opaque.Add(1)
	}
	out.Flag &^= FlagResponse | FlagOneway
	resp, err := cc.link.call(ctx, out, timeout, typed)
	if err != nil {
		return nil, fmt.Errorf("%w (addr %s)", err, addr)
	}
	return resp, nil
}

// InvokeOneway sends req to addr with the oneway flag and returns once it is queued for
// writing. Servers do not answer oneway requests.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	cp := c.prepare(req)
	cp.Flag = (cp.Flag | FlagOneway) &^ FlagResponse
	return cc.link.send(cp, false)
}

// prepare copies req for sending with a fresh opaque, signed when a Signer is configured.
func (c *Client) prepare(req *Command) *Command {
	cp := *req
	cp.Opaque = c.opaque.Add(1)
	if c.cfg.Signer != nil {
		ext := make(map[string]string, len(req.ExtFields)+3)
		for k, v := range req.ExtFields {
			ext[k] = v
		}
		cp.ExtFields = ext
		c.cfg.Signer(&cp)
	}
	return &cp
}

// conn returns a live connection to addr, dialling when there is none (one dial per address
// at a time; concurrent callers wait for it). A connection found dead is replaced once; a
// freshly dialled one that is already dead is reported rather than redialled in a loop.
func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		cc := c.conns[addr]
		if cc == nil {
			cc = &clientConn{
				addr:  addr,
				ready: make(chan struct{}),
				sem:   make(chan struct{}, c.cfg.MaxInflightPushes),
				log:   c.log.WithField("peer", addr),
			}
			c.conns[addr] = cc
			c.wg.Add(1)
			go c.dial(cc)
		}
		c.mu.Unlock()
		select {
		case <-cc.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: connecting to %s: %w", ErrTimeout, addr, ctx.Err())
		}
		if cc.dialErr != nil {
			return nil, cc.dialErr
		}
		if !cc.link.isClosed() {
			return cc, nil
		}
		c.forget(cc) // failed since; redial
		if attempt > 0 {
			return nil, fmt.Errorf("%w: %s: %w", ErrConnFailed, addr, cc.link.err())
		}
	}
}

// ready returns the live connection to addr when there is one, without waiting.
func (c *Client) ready(addr string) (*clientConn, bool) {
	c.mu.Lock()
	cc := c.conns[addr]
	closed := c.closed
	c.mu.Unlock()
	if closed || cc == nil {
		return nil, false
	}
	select {
	case <-cc.ready:
	default:
		return nil, false
	}
	if cc.dialErr != nil || cc.link.isClosed() {
		return nil, false
	}
	return cc, true
}

// forget removes cc from the table if it is still the entry for its address.
func (c *Client) forget(cc *clientConn) {
	c.mu.Lock()
	if c.conns[cc.addr] == cc {
		delete(c.conns, cc.addr)
	}
	c.mu.Unlock()
}

func (c *Client) dial(cc *clientConn) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", cc.addr)
	if err != nil {
		cc.dialErr = fmt.Errorf("%w: dial %s: %w", ErrConnFailed, cc.addr, err)
		c.forget(cc)
		close(cc.ready)
		return
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	nc := raw
	if c.cfg.TLS != nil {
		tc, err := clientHandshake(ctx, raw, cc.addr, c.cfg.TLS)
		if err != nil {
			c.hsFailed.Add(1)
			_ = raw.Close()
			cc.dialErr = fmt.Errorf("%w: TLS handshake with %s: %w", ErrConnFailed, cc.addr, err)
			cc.log.WithError(err).Warn("remoting: TLS handshake with server failed")
			c.forget(cc)
			close(cc.ready)
			return
		}
		c.hsOK.Add(1)
		nc = tc
	}
	cc.link = newLink(nc, c.cfg.WriteTimeout)
	cc.link.raw = raw
	cc.link.enableDirect()
	if l := cc.link; l.direct != nil {
		l.directCalls = true
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cc.link.close(ErrClosed)
		close(cc.ready)
		return
	}
	c.wg.Add(2)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		cc.link.writeLoop()
	}()
	go func() {
		defer c.wg.Done()
		c.readLoop(cc)
	}()
	close(cc.ready)
}

// clientReadBuffer is what a client connection reads into, instead of the server side's
// minReadBuffer: the answers to a window of 64 sends (about 250 bytes each) are 16 KiB, which
// a 4 KiB buffer took in four reads, each followed by the corked write of the requests its
// callbacks sent. One buffer per connection a client chose to open, so its size costs little.
const clientReadBuffer = 64 << 10

func (c *Client) readLoop(cc *clientConn) {
	defer c.forget(cc)
	var src deadlineReader = cc.link.nc
	if cc.link.nc == cc.link.raw { // plain TCP: quiet reads (libs/quietsock)
		if q := quietsock.NewReader(cc.link.raw); q != nil {
			src = q
		}
	}
	fr := newFrameReader(src, nil, c.cfg.MaxFrameSize, nil, nil, c.cfg.IdleTimeout, 0)
	fr.small = make([]byte, clientReadBuffer)
	fr.buf = fr.small
	defer fr.close()
	// inPlace is the last answer decoded without a copy of its frame (spans: its custom header
	// fields): valid until the next read, which is after an asynchronous call's callback that
	// was handed it returned.
	var inPlace Command
	var spans extSpans
	// From the first asynchronous callback it runs until it has handled the frames at hand,
	// what is sent (by those callbacks, mostly) waits for the last of them and then leaves in
	// one write, the reader's own when it can (link.cork). A reader that only hands answers to
	// waiting goroutines never corks: their next requests go out as soon as they are made.
	corked := false
	for {
		if corked && !fr.frameBuffered() {
			cc.link.uncork()
			corked = false
		}
		f, err := fr.read()
		if err != nil {
			var ne net.Error
			switch {
			case cc.link.isClosed():
			case errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrMalformed):
				cc.log.WithError(err).WithField("size", f.size).Warn("remoting: bad frame from server, closing connection")
			case errors.Is(err, io.EOF):
				cc.log.Debug("remoting: server closed connection")
			case errors.As(err, &ne) && ne.Timeout():
				cc.log.Debug("remoting: idle connection closed")
			default:
				cc.log.WithError(err).Debug("remoting: read failed")
			}
			cc.link.close(fmt.Errorf("%w: read: %w", ErrConnFailed, err))
			return
		}
		frame := f.data
		// An answer is first decoded in place (the fast path's shapes), which gives its opaque
		// and, to an asynchronous typed call, everything it needs; a typed Invoke gets a copy.
		// Any other frame, and any answer for a caller that wants a map, is decoded by
		// DecodeFrame.
		var cmd *Command
		var w waiter
		taken := false
		if decodeResponseRawInto(&inPlace, frame, &spans) && inPlace.IsResponse() {
			if w, taken = cc.link.take(inPlace.Opaque); !taken {
				cc.log.WithField("opaque", inPlace.Opaque).Debug("remoting: late or unknown response dropped")
				continue
			}
			if w.typed && w.done != nil {
				if !corked {
					cc.link.cork()
					corked = true
				}
				w.answerInPlace(&inPlace, &spans)
				continue
			}
			if w.typed {
				cmd = inPlace.detach(frame, &spans) // InvokeExt keeps its answer: a copy
			}
			// A caller that wants a map gets DecodeFrame's, which builds it in one pass.
		}
		if cmd == nil {
			cmd, err = DecodeFrame(frame)
		}
		if err != nil {
			// A server that sends undecodable frames cannot be trusted to match answers.
			cc.log.WithError(err).Warn("remoting: undecodable frame from server, closing connection")
			cause := fmt.Errorf("%w: %w", ErrConnFailed, err)
			cc.link.close(cause)
			if taken {
				w.fail(cause) // no longer in the table the close failed
			}
			return
		}
		if cmd.IsResponse() {
			if !taken {
				if w, taken = cc.link.take(cmd.Opaque); !taken {
					cc.log.WithField("opaque", cmd.Opaque).Debug("remoting: late or unknown response dropped")
					continue
				}
			}
			if w.done != nil && !corked {
				cc.link.cork()
				corked = true
			}
			w.answer(cmd)
			continue
		}
		c.dispatchPush(cc, cmd)
	}
}

func (c *Client) dispatchPush(cc *clientConn, req *Command) {
	c.hmu.RLock()
	h := c.handlers[req.Code]
	c.hmu.RUnlock()
	if h == nil {
		if !req.IsOneway() {
			_ = cc.link.send(NewResponse(req, RequestCodeNotSupported,
				fmt.Sprintf("request code %d (%s) not supported", req.Code, RequestName(req.Code))), false)
		}
		return
	}
	select {
	case cc.sem <- struct{}{}:
	default:
		if !req.IsOneway() {
			_ = cc.link.send(NewResponse(req, SystemBusy, "[OVERLOAD] too many server requests in flight"), false)
		}
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-cc.sem }()
		var resp *Command
		func() {
			defer func() {
				if r := recover(); r != nil {
					cc.log.WithFields(logrus.Fields{"code": req.Code, "panic": fmt.Sprint(r), "stack": string(debug.Stack())}).
						Error("remoting: request handler panicked")
					resp = NewResponse(req, SystemError, fmt.Sprintf("handler panic: %v", r))
				}
			}()
			resp = h(req)
		}()
		if resp == nil || req.IsOneway() {
			return
		}
		resp.Opaque = req.Opaque
		resp.Flag |= FlagResponse
		_ = cc.link.send(resp, false)
	}()
}

// CloseAddr closes the connection to addr, failing its pending calls; the next call redials.
func (c *Client) CloseAddr(addr string) {
	c.mu.Lock()
	cc := c.conns[addr]
	delete(c.conns, addr)
	c.mu.Unlock()
	if cc != nil {
		<-cc.ready // at most DialTimeout
		if cc.link != nil {
			cc.link.close(ErrClosed)
		}
	}
}

// Close closes every connection, fails pending calls and waits for the client's goroutines.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	conns := c.conns
	c.conns = make(map[string]*clientConn)
	c.mu.Unlock()
	c.cancelAll()
	for _, cc := range conns {
		<-cc.ready
		if cc.link != nil {
			cc.link.close(ErrClosed)
		}
	}
	c.wg.Wait()
	return nil
}

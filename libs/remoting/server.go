package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Addr is the listen address used by Start, e.g. "127.0.0.1:10911". Unused by Serve.
	Addr string
	// MaxFrameSize is the largest accepted frame length in bytes (the length prefix value); a
	// bigger frame closes the connection. Default 16 MiB, as the Java broker.
	MaxFrameSize int
	// MaxInflightPerConn bounds the requests of one connection whose handler has not returned;
	// requests past it are answered SYSTEM_BUSY at once. Default 4096.
	MaxInflightPerConn int
	// IdleTimeout closes a connection from which nothing was read for this long; 0 disables.
	// Default 120s (clients heartbeat every 30s).
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose peer does not accept queued bytes for this long;
	// 0 disables. Default 30s.
	WriteTimeout time.Duration
	// RequestTimeout bounds ServerConn.SendRequest when its context has no deadline. Default 3s.
	RequestTimeout time.Duration
	// Logger receives connection-level events. Default: discards everything.
	Logger logrus.FieldLogger
	// Guard, when set, admits or refuses every request of a served code before its handler
	// runs (access control, authenticated registration). Default nil: everything is admitted.
	Guard Guard
}

// Guard decides, on the connection's reader goroutine and before the handler, whether a request
// may be served. Admit returns nil to let it through, or the response to answer instead (its
// opaque and response flag are set by the server; nothing is sent for a oneway request). It must
// be cheap and must not block: it runs once per request, in arrival order.
type Guard interface {
	Admit(c *ServerConn, req *Command) *Command
}

// GuardFunc adapts a function to Guard.
type GuardFunc func(c *ServerConn, req *Command) *Command

// Admit calls f.
func (f GuardFunc) Admit(c *ServerConn, req *Command) *Command { return f(c, req) }

// DefaultServerConfig returns the production defaults (Addr is left empty).
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		MaxFrameSize:       16 << 20,
		MaxInflightPerConn: 4096,
		IdleTimeout:        120 * time.Second,
		WriteTimeout:       30 * time.Second,
		RequestTimeout:     3 * time.Second,
		Logger:             discardLogger(),
	}
}

// Validate reports the first invalid field.
func (c ServerConfig) Validate() error {
	switch {
	case c.MaxFrameSize < 64 || c.MaxFrameSize > 1<<30:
		return fmt.Errorf("%w: MaxFrameSize %d not in [64, 1 GiB]", ErrInvalidConfig, c.MaxFrameSize)
	case c.MaxInflightPerConn < 1:
		return fmt.Errorf("%w: MaxInflightPerConn %d < 1", ErrInvalidConfig, c.MaxInflightPerConn)
	case c.IdleTimeout < 0:
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrInvalidConfig, c.IdleTimeout)
	case c.WriteTimeout < 0:
		return fmt.Errorf("%w: WriteTimeout %v < 0", ErrInvalidConfig, c.WriteTimeout)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("%w: RequestTimeout %v <= 0", ErrInvalidConfig, c.RequestTimeout)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrInvalidConfig)
	}
	return nil
}

func discardLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.PanicLevel)
	return l
}

// ResponseWriter answers one request.
type ResponseWriter interface {
	// Write queues resp as the answer: it sets resp's opaque to the request's and sets the
	// response flag. At most once (ErrAlreadyWritten after); may be called after the handler
	// returned and from any goroutine. For a request carrying the oneway flag it does nothing.
	// It returns an error (never panics) when the connection is closed.
	Write(resp *Command) error
	// Conn is the connection the request arrived on.
	Conn() *ServerConn
}

// Handler serves one request code.
type Handler interface {
	ServeRemoting(w ResponseWriter, req *Command)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w ResponseWriter, req *Command)

// ServeRemoting calls f.
func (f HandlerFunc) ServeRemoting(w ResponseWriter, req *Command) { f(w, req) }

// Server accepts remoting connections and dispatches requests to handlers by code. Each
// request runs on its own goroutine; answers are written as they complete, in any order.
type Server struct {
	cfg ServerConfig
	log logrus.FieldLogger

	hmu      sync.Mutex
	handlers atomic.Pointer[map[int32]Handler]

	mu         sync.Mutex
	closed     bool
	listeners  map[net.Listener]struct{}
	conns      map[uint64]*ServerConn
	closeHooks []func(*ServerConn)

	wg     sync.WaitGroup
	nextID atomic.Uint64
	opaque atomic.Int32
}

// NewServer builds a server. Zero fields of cfg take their DefaultServerConfig values; the
// result must then pass Validate.
func NewServer(cfg ServerConfig) (*Server, error) {
	def := DefaultServerConfig()
	if cfg.MaxFrameSize == 0 {
		cfg.MaxFrameSize = def.MaxFrameSize
	}
	if cfg.MaxInflightPerConn == 0 {
		cfg.MaxInflightPerConn = def.MaxInflightPerConn
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = def.IdleTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = def.Logger
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[uint64]*ServerConn),
	}
	empty := map[int32]Handler{}
	s.handlers.Store(&empty)
	return s, nil
}

// Handle registers h for a request code, replacing any earlier one. Safe while serving.
func (s *Server) Handle(code int32, h Handler) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	old := *s.handlers.Load()
	next := make(map[int32]Handler, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[code] = h
	s.handlers.Store(&next)
}

// HandleFunc registers a function for a request code.
func (s *Server) HandleFunc(code int32, f func(w ResponseWriter, req *Command)) {
	s.Handle(code, HandlerFunc(f))
}

// OnConnClose registers fn to run once for every connection after it closed (for example to
// unregister the clients that used it). Hooks run on the connection's reader goroutine.
func (s *Server) OnConnClose(fn func(c *ServerConn)) {
	s.mu.Lock()
	s.closeHooks = append(s.closeHooks, fn)
	s.mu.Unlock()
}

// Start listens on cfg.Addr and serves in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("remoting: listen %s: %w", s.cfg.Addr, err)
	}
	if err := s.addListener(ln); err != nil {
		_ = ln.Close()
		return err
	}
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ln)
	}()
	return nil
}

// Serve accepts connections on ln until Close (or until ln is closed); it then returns nil.
// Transient accept errors are retried with backoff.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.addListener(ln); err != nil {
		return err
	}
	defer s.wg.Done()
	return s.acceptLoop(ln)
}

func (s *Server) addListener(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	return nil
}

// Addr returns the address of the first listener, or nil before Start/Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		return ln.Addr()
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) acceptLoop(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Anything else (EMFILE, ECONNABORTED...) is retried with backoff, as a
			// listener that stops accepting would silently take the service down.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.WithError(err).WithField("backoff", backoff).Warn("remoting: accept failed, retrying")
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.startConn(nc)
	}
}

// ServerConn is one accepted connection.
type ServerConn struct {
	srv    *Server
	id     uint64
	remote string
	link   *link
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	log    logrus.FieldLogger
}

func (s *Server) startConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &ServerConn{
		srv:    s,
		id:     s.nextID.Add(1),
		remote: nc.RemoteAddr().String(),
		link:   newLink(nc, s.cfg.WriteTimeout),
		sem:    make(chan struct{}, s.cfg.MaxInflightPerConn),
		ctx:    ctx,
		cancel: cancel,
	}
	c.log = s.log.WithFields(logrus.Fields{"peer": c.remote, "conn": c.id})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		_ = nc.Close()
		return
	}
	s.conns[c.id] = c
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.link.writeLoop()
	}()
	go func() {
		defer s.wg.Done()
		c.readLoop()
	}()
}

// RemoteAddr is the peer's "ip:port".
func (c *ServerConn) RemoteAddr() string { return c.remote }

// ID is unique per Server for the life of the process.
func (c *ServerConn) ID() uint64 { return c.id }

// Context is cancelled when the connection closes; handlers holding a request (long polling)
// can watch it.
func (c *ServerConn) Context() context.Context { return c.ctx }

// Close closes the connection; pending SendRequest calls fail and later writes return errors.
func (c *ServerConn) Close() error {
	c.link.close(ErrClosed)
	return nil
}

// SendRequest sends a server-initiated request and waits for the client's answer. req is
// copied; the copy gets a fresh opaque. Without a ctx deadline, RequestTimeout applies.
func (c *ServerConn) SendRequest(ctx context.Context, req *Command) (*Command, error) {
	cp := *req
	cp.Opaque = c.srv.opaque.Add(1)
	cp.Flag &^= FlagResponse | FlagOneway
	return c.link.call(ctx, &cp, c.srv.cfg.RequestTimeout)
}

// SendOneway sends a server-initiated request with the oneway flag (as Java brokers send
// NOTIFY_CONSUMER_IDS_CHANGED) and does not wait.
func (c *ServerConn) SendOneway(req *Command) error {
	cp := *req
	cp.Opaque = c.srv.opaque.Add(1)
	cp.Flag = (cp.Flag | FlagOneway) &^ FlagResponse
	return c.link.send(&cp, false)
}

const readBufferSize = 64 << 10

func (c *ServerConn) readLoop() {
	s := c.srv
	defer func() {
		c.cancel()
		s.mu.Lock()
		delete(s.conns, c.id)
		hooks := s.closeHooks
		s.mu.Unlock()
		for _, fn := range hooks {
			c.runHook(fn)
		}
	}()
	br := bufio.NewReaderSize(c.link.nc, readBufferSize)
	var buf []byte
	for {
		if s.cfg.IdleTimeout > 0 {
			_ = c.link.nc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		}
		frame, size, err := readFrame(br, buf, s.cfg.MaxFrameSize)
		if err != nil {
			c.readFailed(err, size)
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame[:0]
		} else {
			buf = nil
		}
		cmd, err := DecodeFrame(frame)
		if err != nil {
			if !c.malformed(frame, err) {
				c.link.close(fmt.Errorf("%w: %w", ErrConnFailed, err))
				return
			}
			continue
		}
		if cmd.IsResponse() {
			if !c.link.complete(cmd) {
				c.log.WithFields(logrus.Fields{"opaque": cmd.Opaque, "code": cmd.Code}).
					Debug("remoting: response for unknown opaque dropped")
			}
			continue
		}
		c.dispatch(cmd)
	}
}

func (c *ServerConn) readFailed(err error, size int64) {
	var ne net.Error
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		c.log.WithFields(logrus.Fields{"size": size, "max": c.srv.cfg.MaxFrameSize}).
			Warn("remoting: frame too large, closing connection")
	case errors.Is(err, ErrMalformed):
		c.log.WithFields(logrus.Fields{"size": size}).WithError(err).
			Warn("remoting: bad frame length, closing connection")
	case c.link.isClosed() || c.srv.isClosed():
	case errors.Is(err, io.EOF):
		c.log.Debug("remoting: peer closed connection")
	case errors.As(err, &ne) && ne.Timeout():
		c.log.WithField("idle", c.srv.cfg.IdleTimeout).Info("remoting: idle connection closed")
	default:
		c.log.WithError(err).Debug("remoting: read failed, closing connection")
	}
	c.link.close(fmt.Errorf("%w: read: %w", ErrConnFailed, err))
}

// malformed handles a frame whose header did not decode; it reports whether the connection
// can continue (the opaque was recovered, so the caller gets SYSTEM_ERROR instead of a hang).
func (c *ServerConn) malformed(frame []byte, err error) bool {
	opaque, flag, ok := recoverOpaque(frame)
	lg := c.log.WithError(err).WithField("size", len(frame))
	if !ok {
		lg.Warn("remoting: undecodable header, closing connection")
		return false
	}
	lg = lg.WithField("opaque", opaque)
	if flag&FlagResponse != 0 {
		lg.Warn("remoting: undecodable response header dropped")
		return true
	}
	lg.Warn("remoting: undecodable request header, answering SYSTEM_ERROR")
	if flag&FlagOneway == 0 {
		resp := NewResponse(nil, SystemError, "malformed request header: "+err.Error())
		resp.Opaque = opaque
		_ = c.link.send(resp, true)
	}
	return true
}

func (c *ServerConn) dispatch(req *Command) {
	s := c.srv
	h := (*s.handlers.Load())[req.Code]
	if h == nil {
		if !req.IsOneway() {
			_ = c.link.send(NewResponse(req, RequestCodeNotSupported,
				fmt.Sprintf("request code %d (%s) not supported", req.Code, RequestName(req.Code))), true)
		}
		return
	}
	if g := s.cfg.Guard; g != nil {
		if refusal := g.Admit(c, req); refusal != nil {
			if !req.IsOneway() {
				refusal.Opaque = req.Opaque
				refusal.Flag |= FlagResponse
				_ = c.link.send(refusal, true)
			}
			return
		}
	}
	select {
	case c.sem <- struct{}{}:
	default:
		c.log.WithFields(logrus.Fields{"code": req.Code, "opaque": req.Opaque}).
			Debug("remoting: too many requests in flight, answering SYSTEM_BUSY")
		if !req.IsOneway() {
			_ = c.link.send(NewResponse(req, SystemBusy, fmt.Sprintf(
				"[OVERLOAD] too many requests in flight on this connection (max %d)", s.cfg.MaxInflightPerConn)), true)
		}
		return
	}
	s.wg.Add(1)
	go c.serve(h, req)
}

func (c *ServerConn) serve(h Handler, req *Command) {
	defer c.srv.wg.Done()
	defer func() { <-c.sem }()
	w := &responseWriter{conn: c, opaque: req.Opaque, oneway: req.IsOneway()}
	defer func() {
		if r := recover(); r != nil {
			c.log.WithFields(logrus.Fields{
				"code": req.Code, "opaque": req.Opaque, "panic": fmt.Sprint(r), "stack": string(debug.Stack()),
			}).Error("remoting: handler panicked")
			_ = w.Write(NewResponse(req, SystemError, fmt.Sprintf("handler panic: %v", r)))
		}
	}()
	h.ServeRemoting(w, req)
}

func (c *ServerConn) runHook(fn func(*ServerConn)) {
	defer func() {
		if r := recover(); r != nil {
			c.log.WithField("panic", fmt.Sprint(r)).Error("remoting: OnConnClose hook panicked")
		}
	}()
	fn(c)
}

type responseWriter struct {
	conn    *ServerConn
	opaque  int32
	oneway  bool
	written atomic.Bool
}

func (w *responseWriter) Conn() *ServerConn { return w.conn }

func (w *responseWriter) Write(resp *Command) error {
	if resp == nil {
		return fmt.Errorf("remoting: nil response")
	}
	if !w.written.CompareAndSwap(false, true) {
		return ErrAlreadyWritten
	}
	if w.oneway {
		return nil
	}
	resp.Opaque = w.opaque
	resp.Flag |= FlagResponse
	return w.conn.link.send(resp, true)
}

// Close stops accepting, closes every connection and waits for all goroutines of the server
// (accept loops, readers, writers, running handlers and close hooks) to finish. Handlers must
// return; those that hold requests should watch ServerConn.Context.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	lns := make([]net.Listener, 0, len(s.listeners))
	for ln := range s.listeners {
		lns = append(lns, ln)
	}
	conns := make([]*ServerConn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	for _, c := range conns {
		c.link.close(ErrClosed)
	}
	s.wg.Wait()
	return nil
}

// Conns returns a snapshot of the open connections.
func (s *Server) Conns() []*ServerConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*ServerConn, 0, len(s.conns))
	for _, c := range s.conns {
		out = append(out, c)
	}
	return out
}

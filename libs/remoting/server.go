package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rmqha/rmqha/libs/quietsock"
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
	// IdleTimeout closes a connection from which nothing was read for this long; negative
	// disables. Default 120s (clients heartbeat every 30s).
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

	// MaxConnections bounds the open connections of each listener; a connection beyond it is
	// closed at accept (counted, logged rate-limited). Negative: no limit. Default 10000.
	MaxConnections int
	// MaxBytesInFlight is the server-wide budget in bytes for read buffers grown past their
	// 4 KiB minimum plus requests handed to handlers and not yet answered. A request beyond it
	// is answered SYSTEM_BUSY ("[OVERLOAD]...") and its body read and discarded, not buffered.
	// Negative: no budget (still counted). Default 256 MiB; at least MaxFrameSize.
	MaxBytesInFlight int64
	// FrameTimeout is how long a frame may take from its first byte to its last; a connection
	// that dribbles a frame slower is closed. Negative: no limit. Default 30s.
	FrameTimeout time.Duration
	// TLSMode is disabled, permissive or enforcing (RocketMQ's tls.server.mode; see tls.go).
	// Default disabled (services default to permissive through libs/tlsconf).
	TLSMode TLSMode
	// TLS is the server's TLS configuration; required unless TLSMode is disabled.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake from the first byte. Default 10s.
	HandshakeTimeout time.Duration
}

// Guard decides, on the connection's reader goroutine and before the handler, whether a request
// may be served. Admit returns nil to let it through, or the response to answer instead (its
// opaque and response flag are set by the server; nothing is sent for a oneway request). It must
// be cheap and must not block: it runs once per request, in arrival order.
type Guard interface {
	Admit(c *ServerConn, req *Command) *Command
}

// ExtFreeGuard is a Guard that says which requests it admits without reading their custom
// header: for those the server does not build the ExtFields map of a request decoded into
// pairs (extpairs.go). A Guard that is not one gets the map for every request.
type ExtFreeGuard interface {
	Guard
	AdmitsWithoutExt(code int32) bool
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
		MaxConnections:     10000,
		MaxBytesInFlight:   256 << 20,
		FrameTimeout:       30 * time.Second,
		TLSMode:            TLSDisabled,
		HandshakeTimeout:   10 * time.Second,
	}
}

// Validate reports the first invalid field.
func (c ServerConfig) Validate() error {
	switch {
	case c.MaxFrameSize < 64 || c.MaxFrameSize > maxServerFrame:
		// Above 352 MiB a length's first byte could be 0x16, a TLS handshake's (tls.go).
		return fmt.Errorf("%w: MaxFrameSize %d not in [64, %d]", ErrInvalidConfig, c.MaxFrameSize, maxServerFrame)
	case c.MaxBytesInFlight >= 0 && c.MaxBytesInFlight < int64(c.MaxFrameSize):
		return fmt.Errorf("%w: MaxBytesInFlight %d below MaxFrameSize %d (no such frame could be read)",
			ErrInvalidConfig, c.MaxBytesInFlight, c.MaxFrameSize)
	case c.HandshakeTimeout < 0:
		return fmt.Errorf("%w: HandshakeTimeout %v < 0", ErrInvalidConfig, c.HandshakeTimeout)
	case c.TLSMode != TLSDisabled && c.TLS == nil:
		return fmt.Errorf("%w: TLSMode %s needs a TLS configuration", ErrInvalidConfig, c.TLSMode)
	case c.MaxInflightPerConn < 1:
		return fmt.Errorf("%w: MaxInflightPerConn %d < 1", ErrInvalidConfig, c.MaxInflightPerConn)
	case c.WriteTimeout < 0:
		return fmt.Errorf("%w: WriteTimeout %v < 0", ErrInvalidConfig, c.WriteTimeout)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("%w: RequestTimeout %v <= 0", ErrInvalidConfig, c.RequestTimeout)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrInvalidConfig)
	}
	return validTLSMode(c.TLSMode)
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

// NoWaitWriter is a ResponseWriter that can also queue an answer without waiting for the
// connection's writer. WriteNoWait queues resp as Write does and reports true, or, while the
// connection's write queue is over its soft cap (the peer reads slowly or not at all), queues
// nothing, leaves the writer unwritten and reports false: the caller then answers from a
// goroutine that may wait. The server's ResponseWriters implement it.
type NoWaitWriter interface {
	WriteNoWait(resp *Command) (bool, error)
}

// Handler serves one request code.
type Handler interface {
	ServeRemoting(w ResponseWriter, req *Command)
}

// InlineHandler is a Handler that never blocks: it answers at once or hands its work on and
// answers later (a send queued for the store's next write). The connection's reader runs it
// itself instead of handing the request to a worker goroutine, so a burst of pipelined
// requests costs no goroutine hand-off per request; once the reader has no complete frame
// buffered (it would wait for the socket), it calls EndBatch of the inline handler it ran
// since the last call, so the handler can finish the burst's work in one go (one write for all
// its sends); requests is how many of its requests the burst held. A request's Body is a
// slice of the connection's read buffer, valid only until ServeRemoting returns (copy what
// must outlive it). EndBatch also runs before
// the reader runs another inline handler, and when the connection closes. Implementations are
// pointers (the reader compares them).
type InlineHandler interface {
	Handler
	EndBatch(requests int)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w ResponseWriter, req *Command)

// ServeRemoting calls f.
func (f HandlerFunc) ServeRemoting(w ResponseWriter, req *Command) { f(w, req) }

// Server accepts remoting connections and dispatches requests to handlers by code. Each
// request runs on its own goroutine (a connection's finished ones are reused for its next
// requests), except those of an InlineHandler, which the connection's reader runs; answers
// are written as they complete, in any order.
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

	budget *byteBudget
	spares spareBuffers // outgrown read buffers kept for the next connection that grows one
	stats  serverCounters
	logLim logLimiter
	done   chan struct{} // closed by Close; stops the memory returner
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
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = def.MaxConnections
	}
	if cfg.MaxBytesInFlight == 0 {
		cfg.MaxBytesInFlight = max(def.MaxBytesInFlight, int64(cfg.MaxFrameSize))
	}
	if cfg.FrameTimeout == 0 {
		cfg.FrameTimeout = def.FrameTimeout
	}
	if cfg.TLSMode == "" {
		cfg.TLSMode = def.TLSMode
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = def.HandshakeTimeout
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[uint64]*ServerConn),
		budget:    &byteBudget{max: max(cfg.MaxBytesInFlight, 0)},
		done:      make(chan struct{}),
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
	if len(s.listeners) == 1 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.memoryReturner(s.done)
		}()
	}
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
	var open atomic.Int64 // this listener's connections
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
		if limit := s.cfg.MaxConnections; limit > 0 && open.Load() >= int64(limit) {
			// Counted and logged before the close, so a peer that sees the close finds both.
			s.stats.refusedLimit.Add(1)
			s.warnLimited("limit", logrus.Fields{"peer": nc.RemoteAddr().String(), "listener": ln.Addr().String(), "max": limit},
				"remoting: connection refused: listener at its connection limit")
			_ = nc.Close()
			continue
		}
		open.Add(1)
		s.startConn(nc, &open)
	}
}

// warnLimited logs a warning at most once per logEvery for key, noting how many were held back.
func (s *Server) warnLimited(key string, f logrus.Fields, msg string) {
	ok, held := s.logLim.allow(key, time.Now())
	if !ok {
		return
	}
	if held > 0 {
		f["suppressed"] = held
	}
	s.log.WithFields(f).Warn(msg)
}

// ServerConn is one accepted connection.
type ServerConn struct {
	srv    *Server
	id     uint64
	remote string
	// remoteAP is remote parsed once (IPv4-mapped addresses unmapped), for handlers that
	// need it per request (a message's born host).
	remoteAP netip.AddrPort
	link     *link
	sem      chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
	log      logrus.FieldLogger
	open     *atomic.Int64 // the listener's connection count
	tls      atomic.Bool
	// work hands requests to idle workers (unbuffered: a send succeeds only when one waits);
	// idle counts them.
	work chan job
	idle atomic.Int32
	// batch is the inline handler the reader ran since it last called EndBatch, batchN how
	// many requests it ran (reader only).
	batch  InlineHandler
	batchN int

	// unanswered counts the requests served and not yet answered (oneway ones aside): an
	// answer that leaves it at zero is the connection's only one, and is written directly.
	unanswered atomic.Int32

	// Budget held by this connection's requests not yet answered; given back at close.
	bmu      sync.Mutex
	reqBytes int64
	bclosed  bool
}

func (s *Server) startConn(nc net.Conn, open *atomic.Int64) {
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
		work:   make(chan job),
		ctx:    ctx,
		cancel: cancel,
		open:   open,
	}
	if ap, err := netip.ParseAddrPort(c.remote); err == nil {
		c.remoteAP = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	c.log = s.log.WithFields(logrus.Fields{"peer": c.remote, "conn": c.id})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		open.Add(-1)
		_ = nc.Close()
		return
	}
	s.conns[c.id] = c
	s.stats.open.Add(1)
	s.wg.Add(1)
	s.mu.Unlock()
	// The writer starts once the transport is known (after a TLS handshake), from the reader.
	go func() {
		defer s.wg.Done()
		c.readLoop()
	}()
}

// TLS reports whether the connection speaks TLS.
func (c *ServerConn) TLS() bool { return c.tls.Load() }

// chargeRequest reserves n bytes of the budget for a request until it is answered.
func (c *ServerConn) chargeRequest(n int64) bool {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.bclosed {
		return true // closing: nothing will be held past the close
	}
	if !c.srv.budget.acquire(n) {
		return false
	}
	c.reqBytes += n
	return true
}

// releaseRequest gives back a request's reservation (once it is answered).
func (c *ServerConn) releaseRequest(n int64) {
	c.bmu.Lock()
	if !c.bclosed {
		c.reqBytes -= n
		c.srv.budget.release(n)
	}
	c.bmu.Unlock()
}

// releaseAll gives back what the connection's requests still hold; later releases are no-ops.
func (c *ServerConn) releaseAll() {
	c.bmu.Lock()
	c.bclosed = true
	c.srv.budget.release(c.reqBytes)
	c.reqBytes = 0
	c.bmu.Unlock()
}

// RemoteAddr is the peer's "ip:port".
func (c *ServerConn) RemoteAddr() string { return c.remote }

// RemoteAddrPort is the peer's address with an IPv4-mapped IPv6 address unmapped; zero when
// the peer's address is not an IP and port.
func (c *ServerConn) RemoteAddrPort() netip.AddrPort { return c.remoteAP }

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
	return c.link.call(ctx, &cp, c.srv.cfg.RequestTimeout, false)
}

// SendOneway sends a server-initiated request with the oneway flag (as Java brokers send
// NOTIFY_CONSUMER_IDS_CHANGED) and does not wait.
func (c *ServerConn) SendOneway(req *Command) error {
	cp := *req
	cp.Opaque = c.srv.opaque.Add(1)
	cp.Flag = (cp.Flag | FlagOneway) &^ FlagResponse
	return c.link.send(&cp, false)
}

func (c *ServerConn) readLoop() {
	s := c.srv
	defer func() {
		c.link.close(ErrClosed)
		c.cancel()
		c.releaseAll()
		s.mu.Lock()
		delete(s.conns, c.id)
		hooks := s.closeHooks
		s.mu.Unlock()
		s.stats.open.Add(-1)
		c.open.Add(-1)
		for _, fn := range hooks {
			c.runHook(fn)
		}
	}()
	first, ok := c.establish()
	if !ok {
		return
	}
	c.link.enableDirect() // (a plain socket only)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.link.writeLoop()
	}()
	var src deadlineReader = c.link.nc
	if c.link.nc == c.link.raw { // plain TCP: quiet reads (libs/quietsock)
		if q := quietsock.NewReader(c.link.raw); q != nil {
			src = q
		}
	}
	fr := newFrameReader(src, first, s.cfg.MaxFrameSize, s.budget, &s.spares, s.cfg.IdleTimeout, max(s.cfg.FrameTimeout, 0))
	if c.link.nc == c.link.raw {
		fr.enableBurst(c.link.raw) // (not through TLS: the record layer reads the socket)
	}
	defer fr.close()
	defer c.endBatch()
	var (
		arena stringArena // the header strings of inline requests (arena.go)
		memo  headerMemo  // the last inline request's header (headermemo.go)
		reqs  requestSlab // the requests' storage
	)
	for {
		if c.batch != nil && !fr.hasFrame() {
			c.endBatch() // the next read waits for the socket: the burst is over
		}
		f, err := fr.read()
		if err != nil {
			c.readFailed(err, f.size)
			return
		}
		if f.dropped {
			if !c.overloaded(f.header) {
				return
			}
			continue
		}
		r := reqs.peek()
		cmd := &r.cmd
		err = decodeFrameAliased(cmd, f.data, s.inlineCode, &arena, &memo)
		if err != nil {
			reqs.clear()
			if !c.malformed(f.data, err) {
				c.link.close(fmt.Errorf("%w: %w", ErrConnFailed, err))
				return
			}
			continue
		}
		size := int64(len(f.data))
		if _, inline := (*s.handlers.Load())[cmd.Code].(InlineHandler); inline && !cmd.IsResponse() {
			// Its handler is done with the body when it returns: no copy.
			reqs.take()
			c.dispatch(r, size)
			cmd.Body = nil
			fr.release()
			continue
		}
		r = reqs.own()
		cmd = &r.cmd
		if len(cmd.Body) > 0 {
			cmd.Body = append([]byte(nil), cmd.Body...)
		}
		fr.release() // the command holds its own copy now
		if cmd.IsResponse() {
			cmd.MaterializeExt() // a response code can equal an inline request code
			if !c.link.complete(cmd) {
				c.log.WithFields(logrus.Fields{"opaque": cmd.Opaque, "code": cmd.Code}).
					Debug("remoting: response for unknown opaque dropped")
			}
			continue
		}
		c.dispatch(r, size)
	}
}

// serverRequest is a request read by a connection and the writer of its answer.
type serverRequest struct {
	cmd Command
	w   responseWriter
}

// maxRequestSlab is the most requests a requestSlab allocates at once.
const maxRequestSlab = 32

// requestSlab allocates the inline requests of a connection (sends) in slabs: one allocation
// per 32 sends of a busy connection, not one per send. The reader decodes each request into
// the next free element (peek); an inline request takes it (take), any other moves into an
// allocation of its own (own), as a request a handler may hold for long (a long-polling pull)
// must not keep a slab alive. An element taken is never reused, so a send lives as long as its
// answer needs it, and a slab is freed once none of its sends is held. Slabs double from one
// request up to maxRequestSlab, so that a connection sending now and then holds no more than it
// used. One goroutine uses it (the connection's reader).
type requestSlab struct {
	free []serverRequest
	last int // the size of the last slab
}

// peek returns the next free element, to decode a request into.
func (s *requestSlab) peek() *serverRequest {
	if len(s.free) == 0 {
		s.last = min(max(2*s.last, 1), maxRequestSlab)
		s.free = make([]serverRequest, s.last)
	}
	return &s.free[0]
}

// take hands out the element peek returned.
func (s *requestSlab) take() { s.free = s.free[1:] }

// own moves the request peek's element holds into an allocation of its own and frees the
// element again.
func (s *requestSlab) own() *serverRequest {
	r := new(serverRequest)
	r.cmd = s.free[0].cmd // (the writer is still zero: serve fills it)
	s.free[0].cmd = Command{}
	return r
}

// clear frees the element peek returned again (its request was malformed).
func (s *requestSlab) clear() { s.free[0].cmd = Command{} }

// establish reads the first byte and applies the TLS mode: it returns the bytes already read
// that belong to the plain frame stream (none for TLS), or false when the connection is to be
// closed (refused, failed handshake, or nothing sent within the idle timeout).
func (c *ServerConn) establish() ([]byte, bool) {
	s := c.srv
	raw := c.link.raw
	if s.cfg.IdleTimeout > 0 {
		_ = raw.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
	}
	var b [1]byte
	if _, err := io.ReadFull(raw, b[:]); err != nil {
		c.readFailed(err, 0)
		return nil, false
	}
	isTLS := b[0] == tlsRecordHandshake
	switch {
	case isTLS && s.cfg.TLSMode == TLSDisabled:
		s.stats.refusedTLS.Add(1)
		s.warnLimited("tls_in_disabled", logrus.Fields{"peer": c.remote, "mode": s.cfg.TLSMode},
			"remoting: TLS client refused: this server runs with tls.server.mode=disabled")
		c.link.close(fmt.Errorf("%w: TLS client on a disabled server", ErrTLSRefused))
		return nil, false
	case !isTLS && s.cfg.TLSMode == TLSEnforcing:
		s.stats.refusedPlain.Add(1)
		s.warnLimited("plain_in_enforcing", logrus.Fields{"peer": c.remote, "mode": s.cfg.TLSMode},
			"remoting: plain client refused: this server runs with tls.server.mode=enforcing")
		c.link.close(fmt.Errorf("%w: plain client on an enforcing server", ErrTLSRefused))
		return nil, false
	case !isTLS:
		s.stats.acceptedPlain.Add(1)
		return b[:], true
	}
	tc, err := serverHandshake(raw, b[:], s.cfg.TLS, s.cfg.HandshakeTimeout)
	if err != nil {
		key, result := "handshake_failed", "failed"
		if isTimeout(err) {
			s.stats.hsTimeout.Add(1)
			key, result = "handshake_timeout", "timeout"
		} else {
			s.stats.hsFailed.Add(1)
		}
		if !c.link.isClosed() && !s.isClosed() {
			s.warnLimited(key, logrus.Fields{"peer": c.remote, "mode": s.cfg.TLSMode, "result": result, "error": err.Error()},
				"remoting: TLS handshake failed, closing connection")
		}
		c.link.close(fmt.Errorf("%w: %w", ErrHandshake, err))
		return nil, false
	}
	s.stats.hsOK.Add(1)
	s.stats.acceptedTLS.Add(1)
	c.link.nc = tc // before the writer starts
	c.tls.Store(true)
	return nil, true
}

func (c *ServerConn) readFailed(err error, size int64) {
	var ne net.Error
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		c.srv.stats.framesTooLarge.Add(1)
		c.log.WithFields(logrus.Fields{"size": size, "max": c.srv.cfg.MaxFrameSize}).
			Warn("remoting: frame too large, closing connection")
	case errors.Is(err, ErrMalformed):
		c.srv.stats.framesMalformed.Add(1)
		c.log.WithFields(logrus.Fields{"size": size}).WithError(err).
			Warn("remoting: bad frame length, closing connection")
	case c.link.isClosed() || c.srv.isClosed():
	case errors.Is(err, ErrFrameTimeout):
		c.srv.stats.frameTimeouts.Add(1)
		c.srv.warnLimited("frame_timeout", logrus.Fields{"peer": c.remote, "size": size, "timeout": c.srv.cfg.FrameTimeout},
			"remoting: frame not completed within the frame timeout, closing connection")
	case errors.Is(err, ErrOverloaded):
		c.srv.stats.overloadCloses.Add(1)
		c.srv.warnLimited("overload_close", logrus.Fields{"peer": c.remote, "size": size, "error": err.Error()},
			"remoting: frame over the bytes-in-flight budget cannot be answered, closing connection")
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
		resp := NewResponse(nil, SystemError, capRemark("malformed request header: "+err.Error()))
		resp.Opaque = opaque
		_ = c.link.send(resp, true)
	}
	return true
}

// overloaded answers SYSTEM_BUSY to a frame dropped for the byte budget (its header is all that
// was kept); it reports false when the opaque cannot be recovered, closing the connection.
func (c *ServerConn) overloaded(header []byte) bool {
	s := c.srv
	opaque, flag, ok := recoverOpaque(header)
	if !ok {
		s.stats.overloadCloses.Add(1)
		c.link.close(fmt.Errorf("%w: %w", ErrConnFailed, ErrOverloaded))
		return false
	}
	if flag&FlagResponse != 0 {
		c.log.WithField("opaque", opaque).Warn("remoting: response over the bytes-in-flight budget dropped")
		return true
	}
	s.stats.busyBytes.Add(1)
	c.busy(opaque, flag&FlagOneway != 0)
	return true
}

// busy answers SYSTEM_BUSY for the byte budget, in RocketMQ's words.
func (c *ServerConn) busy(opaque int32, oneway bool) {
	s := c.srv
	s.warnLimited("busy_bytes", logrus.Fields{"peer": c.remote, "inFlight": s.budget.used.Load(), "max": s.budget.max},
		"remoting: bytes in flight over budget, answering SYSTEM_BUSY")
	if oneway {
		return
	}
	resp := NewResponse(nil, SystemBusy, fmt.Sprintf(
		"[OVERLOAD]system busy, start flow control for a while (remoting bytes in flight at the limit of %d)", s.budget.max))
	resp.Opaque = opaque
	_ = c.link.send(resp, true)
}

func (c *ServerConn) dispatch(r *serverRequest, size int64) {
	s := c.srv
	req := &r.cmd
	h := (*s.handlers.Load())[req.Code]
	if h == nil {
		if !req.IsOneway() {
			_ = c.link.send(NewResponse(req, RequestCodeNotSupported,
				fmt.Sprintf("request code %d (%s) not supported", req.Code, RequestName(req.Code))), true)
		}
		return
	}
	if g := s.cfg.Guard; g != nil {
		if eg, ok := g.(ExtFreeGuard); req.pairs != nil && (!ok || !eg.AdmitsWithoutExt(req.Code)) {
			req.MaterializeExt()
		}
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
		s.stats.busyPerConn.Add(1)
		c.log.WithFields(logrus.Fields{"code": req.Code, "opaque": req.Opaque}).
			Debug("remoting: too many requests in flight, answering SYSTEM_BUSY")
		if !req.IsOneway() {
			_ = c.link.send(NewResponse(req, SystemBusy, fmt.Sprintf(
				"[OVERLOAD] too many requests in flight on this connection (max %d)", s.cfg.MaxInflightPerConn)), true)
		}
		return
	}
	if !c.chargeRequest(size) {
		<-c.sem
		s.stats.busyBytes.Add(1)
		c.busy(req.Opaque, req.IsOneway())
		return
	}
	if ih, ok := h.(InlineHandler); ok {
		if c.batch != nil && c.batch != ih {
			c.endBatch()
		}
		c.batch = ih
		c.batchN++
		r.w.direct = true
		c.serve(h, r, size)
		return
	}
	j := job{h: h, req: r, size: size}
	select {
	case c.work <- j: // an idle worker of this connection takes it
	default:
		s.wg.Add(1)
		go c.worker(j)
	}
}

// inlineCode reports whether requests of code go to an InlineHandler (their custom header is
// then decoded into pairs: extpairs.go).
func (s *Server) inlineCode(code int32) bool {
	_, ok := (*s.handlers.Load())[code].(InlineHandler)
	return ok
}

// endBatch calls EndBatch of the inline handler run since the last call (reader goroutine).
func (c *ServerConn) endBatch() {
	ih := c.batch
	if ih == nil {
		return
	}
	n := c.batchN
	c.batch, c.batchN = nil, 0
	defer func() {
		if r := recover(); r != nil {
			c.log.WithFields(logrus.Fields{"panic": fmt.Sprint(r), "stack": string(debug.Stack())}).
				Error("remoting: EndBatch panicked")
		}
	}()
	ih.EndBatch(n)
}

// job is one admitted request waiting for a worker.
type job struct {
	h    Handler
	req  *serverRequest
	size int64
}

// maxIdleWorkers is how many finished workers a connection keeps waiting for its next request
// for as long as it is open. A request never waits for a busy one (a handler that blocks, a
// forwarded call waiting for a consumer, must not hold up the next request): when none is idle
// the reader starts another, up to MaxInflightPerConn running.
const maxIdleWorkers = 8

// workerLinger is how long a finished worker beyond maxIdleWorkers waits for another request
// before it exits. A pipelining client (64 sends in flight) keeps a few dozen requests in the
// server at once; its workers finish in bursts, and workers that left at once meant a new
// goroutine for nearly every request. Lingering ones are taken by the next burst instead.
const workerLinger = time.Second

// worker serves j, then further requests of the connection while it stays open: the first
// maxIdleWorkers idle ones wait as long as it does, more wait workerLinger. A goroutine per
// request without starting one each time.
func (c *ServerConn) worker(j job) {
	defer c.srv.wg.Done()
	var linger *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	for {
		c.serve(j.h, j.req, j.size)
		var expire <-chan time.Time
		if c.idle.Add(1) > maxIdleWorkers {
			if linger == nil {
				linger = time.NewTimer(workerLinger)
			} else {
				linger.Reset(workerLinger)
			}
			expire = linger.C
		}
		select {
		case j = <-c.work:
			c.idle.Add(-1)
		case <-expire:
			c.idle.Add(-1)
			return
		case <-c.ctx.Done():
			c.idle.Add(-1)
			return
		}
	}
}

func (c *ServerConn) serve(h Handler, r *serverRequest, size int64) {
	defer func() { <-c.sem }()
	req := &r.cmd
	w := &r.w
	w.conn, w.opaque, w.oneway, w.charge = c, req.Opaque, req.IsOneway(), size
	if w.oneway {
		defer c.releaseRequest(size) // nothing will be written
	} else {
		c.unanswered.Add(1)
	}
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

// maxRemarkLen bounds the remark of an answer. Remarks quote what a request named (a topic, a
// key, a selector): a 64 KiB topic name refused in a remark that quotes it twice made each
// answer twice the request the byte budget had charged, and the answers a peer does not read
// are held by their handlers until the write queue has room, so memory grew to several times
// the budget. RocketMQ's remarks are a sentence; the cut one says how much was left out.
const maxRemarkLen = 4 << 10

// capRemark returns s cut to maxRemarkLen bytes (at a UTF-8 boundary) with a note of the rest;
// the result never shares memory with a longer s.
func capRemark(s string) string {
	if len(s) <= maxRemarkLen {
		return s
	}
	cut := maxRemarkLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d more bytes)", len(s)-cut)
}

type responseWriter struct {
	conn    *ServerConn
	opaque  int32
	oneway  bool
	charge  int64 // budget held until the answer is queued
	written atomic.Bool
	// direct: the request is an InlineHandler's (a send), whose answer, when it is the
	// connection's only one, is written by the goroutine that answers (link.sendDirect). Other
	// answers leave through the writer, so that whatever a handler does after writing its
	// answer (counting it) comes before the client reads it, as it did.
	direct bool
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
	defer w.conn.releaseRequest(w.charge)
	resp.Remark = capRemark(resp.Remark)
	resp.Opaque = w.opaque
	resp.Flag |= FlagResponse
	if w.conn.unanswered.Add(-1) == 0 && w.direct {
		if done, err := w.conn.link.sendDirect(resp); done {
			return err
		}
	}
	return w.conn.link.send(resp, true)
}

// WriteNoWait implements NoWaitWriter.
func (w *responseWriter) WriteNoWait(resp *Command) (bool, error) {
	if resp == nil {
		return false, fmt.Errorf("remoting: nil response")
	}
	if !w.written.CompareAndSwap(false, true) {
		return false, ErrAlreadyWritten
	}
	if w.oneway {
		return true, nil
	}
	resp.Remark = capRemark(resp.Remark)
	resp.Opaque = w.opaque
	resp.Flag |= FlagResponse
	if w.conn.unanswered.Add(-1) == 0 && w.direct {
		if done, err := w.conn.link.sendDirect(resp); done {
			w.conn.releaseRequest(w.charge)
			return true, err
		}
	}
	queued, err := w.conn.link.trySend(resp)
	if !queued && err == nil {
		w.conn.unanswered.Add(1)
		w.written.Store(false) // not answered yet: the caller writes again
		return false, nil
	}
	w.conn.releaseRequest(w.charge)
	return queued, err
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
	close(s.done)
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

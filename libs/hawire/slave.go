package hawire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Slave is the TCP driver around SlaveState: it dials the master found by
// Discovery, appends what it receives with AppendRaw, acknowledges after
// every append and every HeartbeatInterval, follows the documented
// recovery on Error frames the master proved, and waits the state's
// jittered, capped backoff before every reconnect.
type Slave struct {
	cfg        SlaveConfig
	log        Log
	d          Discovery
	lg         logrus.FieldLogger
	now        func() time.Time
	mu         sync.Mutex // guards st, addr, conn, reconnects
	st         *SlaveState
	addr       string
	conn       net.Conn
	reconnects uint64
	// truncations and truncatedBytes: divergent tails cut (see SlaveStatus).
	truncations    uint64
	truncatedBytes int64
	addrCh         chan struct{}
	ctx            context.Context
	cancel         context.CancelFunc
	wg             sync.WaitGroup
	started        bool
}

// NewSlave validates cfg and loads the slave's epoch file, dropping entries
// beyond the log's end (left by a crash during truncation).
func NewSlave(cfg SlaveConfig, log Log, d Discovery) (*Slave, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = defaultRand
	}
	entries, err := LoadEpochFile(cfg.EpochDir)
	if err != nil {
		return nil, fmt.Errorf("hawire: slave epoch file: %w", err)
	}
	hist, err := NewEpochHistory(entries)
	if err != nil {
		return nil, err
	}
	if log.MinOffset() == log.MaxOffset() {
		hist.entries = nil
	} else {
		hist.TruncateTo(log.MaxOffset() + 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Slave{cfg: cfg, log: log, d: d, lg: cfg.Logger.WithField("component", "ha-slave"), now: cfg.Now,
		st: NewSlaveState(cfg, hist), addrCh: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
	if cfg.Secret == "" {
		s.lg.Warn("HA slave runs without a secret (AllowUnauthenticated): any peer at the master's address is taken for the master")
	}
	if cfg.AllowWipe {
		s.lg.Warn("HA slave may wipe its whole log when a master that proved itself shares nothing with it (AllowWipe)")
	}
	return s, nil
}

// Start begins replicating in the background.
func (s *Slave) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	if s.started {
		return nil
	}
	s.started = true
	s.wg.Add(2)
	go s.watch()
	go s.run()
	return nil
}

// Close stops replication and waits for the goroutines.
func (s *Slave) Close() error {
	s.cancel()
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Status reports the slave's replication state.
func (s *Slave) Status() SlaveStatus {
	lv := s.view()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st.Status(lv, s.now())
	st.MasterAddr = s.addr
	st.Reconnects = s.reconnects
	st.Truncations, st.TruncatedBytes = s.truncations, s.truncatedBytes
	return st
}

func (s *Slave) view() LogView {
	return LogView{Min: s.log.MinOffset(), Max: s.log.MaxOffset(), Flushed: s.log.FlushedOffset(), SegmentSize: s.log.SegmentSize()}
}

// watch follows Discovery; an address change closes the current connection.
func (s *Slave) watch() {
	defer s.wg.Done()
	ch := s.d.Watch(s.ctx)
	for {
		select {
		case <-s.ctx.Done():
			return
		case a, ok := <-ch:
			if !ok {
				return
			}
			s.mu.Lock()
			changed := a != s.addr
			s.addr = a
			if changed && s.conn != nil {
				s.lg.WithField("peer", a).Info("HA master address changed; reconnecting")
				_ = s.conn.Close()
			}
			s.mu.Unlock()
			if changed {
				select {
				case s.addrCh <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (s *Slave) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.addrCh:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func (s *Slave) run() {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		s.mu.Lock()
		addr := s.addr
		s.mu.Unlock()
		if addr == "" {
			select {
			case <-s.addrCh:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		lg := s.lg.WithField("peer", addr)
		conn, err := s.dial(addr)
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			wait := s.st.Disconnected(fmt.Errorf("dial %s: %w", addr, err), s.now())
			s.mu.Unlock()
			lg.WithError(err).WithField("retryIn", wait.Round(time.Millisecond).String()).Warn("HA slave cannot reach master")
			if !s.sleep(wait) {
				return
			}
			continue
		}
		rec, err := s.session(withQuietIO(conn), addr)
		_ = conn.Close()
		if rec != nil && (rec.Kind == RecoverTruncate || rec.Kind == RecoverReset) {
			if rerr := s.recover(*rec); rerr != nil {
				lg.WithError(rerr).Error("HA recovery failed; replication stopped")
				s.mu.Lock()
				s.conn = nil
				s.reconnects++
				s.st.Fail(fmt.Errorf("%w: recovery: %v", ErrFailed, rerr))
				s.mu.Unlock()
				return
			}
		}
		s.mu.Lock()
		s.conn = nil
		s.reconnects++
		wait := s.st.Disconnected(err, s.now())
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			return
		}
		retry := wait.Round(time.Millisecond).String()
		switch {
		case rec != nil && rec.Kind == RecoverStop:
			lg.WithError(rec.Err).Error("HA replication stopped; manual action needed (see OnTooOld / OnDiverged)")
			return
		case rec != nil && rec.Kind != RecoverReconnect:
			lg.WithField("retryIn", retry).Info("HA log recovered as the master asked; reconnecting")
		case err != nil && isRefusal(err):
			lg.WithError(err).WithField("retryIn", retry).Warn("HA slave refused the peer at the master's address")
		case rec != nil:
			lg.WithError(rec.Err).WithField("retryIn", retry).Warn("HA master refused the connection; retrying")
		case err != nil && !errors.Is(err, net.ErrClosed):
			lg.WithError(err).WithField("retryIn", retry).Warn("HA connection to master lost")
		}
		if !s.sleep(wait) {
			return
		}
	}
}

// isRefusal tells a verdict the slave refused from a connection that failed.
func isRefusal(err error) bool {
	return errors.Is(err, ErrMasterUnproven) || errors.Is(err, ErrStaleMaster) || errors.Is(err, ErrWipeRefused) ||
		errors.Is(err, ErrBadVerdict) || errors.Is(err, ErrUnsupportedVersion)
}

// dial connects to addr, through TLS when configured (the TLS handshake is
// bounded by DialTimeout too).
func (s *Slave) dial(addr string) (net.Conn, error) {
	dialer := net.Dialer{Timeout: s.cfg.DialTimeout}
	conn, err := dialer.DialContext(s.ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if s.cfg.TLS == nil {
		return conn, nil
	}
	cfg := s.cfg.TLS
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(conn, cfg)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return tc, nil
}

// recover truncates or wipes the log as the master asked: the log first,
// then the epoch file (an epoch entry beyond the log end is dropped on load).
func (s *Slave) recover(rec Recovery) error {
	lg := s.lg.WithField("offset", rec.Offset)
	before, beforeMin := s.log.MaxOffset(), s.log.MinOffset()
	switch rec.Kind {
	case RecoverTruncate:
		lg.WithField("oldMax", before).Warn("HA log diverged from the master; truncating to the common point")
		if err := s.log.Truncate(rec.Offset); err != nil {
			return err
		}
	case RecoverReset:
		lg.WithFields(logrus.Fields{"oldMin": beforeMin, "oldMax": before, "code": rec.Code.String()}).
			Warn("HA wiping the whole log as the master asked (AllowWipe) and copying everything again")
		if err := s.log.Reset(rec.Offset); err != nil {
			return err
		}
	}
	if rec.Code == CodeDiverged {
		s.mu.Lock()
		s.truncations++
		if rec.Kind == RecoverTruncate {
			s.truncatedBytes += max(0, before-s.log.MaxOffset())
		} else {
			s.truncatedBytes += max(0, before-beforeMin)
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	h := s.st.Epochs()
	if s.log.MinOffset() == s.log.MaxOffset() {
		h.entries = nil
	} else {
		h.TruncateTo(s.log.MaxOffset())
	}
	entries := h.Entries()
	s.mu.Unlock()
	return SaveEpochFile(s.cfg.EpochDir, entries)
}

func (s *Slave) writeFrame(conn net.Conn, wmu *sync.Mutex, b []byte) error {
	wmu.Lock()
	defer wmu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.HousekeepingInterval))
	_, err := conn.Write(b)
	return err
}

// session runs one connection. It returns the recovery an Error frame
// asked for (nil when none came) and the error that ended it.
func (s *Slave) session(conn net.Conn, addr string) (rec *Recovery, err error) {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.conn = conn
	s.st.Connected(s.now())
	s.mu.Unlock()
	lg := s.lg.WithField("peer", addr)
	var wmu sync.Mutex
	ar := &activityReader{r: conn, now: s.now}
	// A small buffer: the body of a large Data frame is then read straight
	// into the frame buffer instead of being copied out of the bufio buffer.
	fr := NewFrameReader(ar, 64<<10)
	_ = conn.SetReadDeadline(time.Now().Add(s.cfg.HousekeepingInterval))

	// onError applies the state's decision about an Error frame.
	onError := func(body []byte) (*Recovery, error) {
		e, err := DecodeError(body)
		if err != nil {
			return nil, err
		}
		lv := s.view()
		s.mu.Lock()
		r := s.st.OnError(e, lv)
		s.mu.Unlock()
		return &r, r.Err
	}
	// next reads a frame; an Error frame becomes a Recovery.
	next := func(limit int) (FrameType, []byte, *Recovery, error) {
		typ, body, err := fr.Next(limit)
		if err != nil {
			return 0, nil, nil, err
		}
		if typ == FrameError {
			r, err := onError(body)
			return typ, nil, r, err
		}
		return typ, body, nil, nil
	}
	protocol := func(err error) (*Recovery, error) {
		code := codeFor(err)
		if errors.Is(err, ErrMasterUnproven) {
			code = CodeNotAuthorised
		}
		_ = s.writeFrame(conn, &wmu, AppendError(nil, ErrorFrame{Code: code, Message: err.Error()}))
		return nil, err
	}

	typ, body, r, err := next(MaxHandshakeFrame)
	if r != nil || err != nil {
		return r, err
	}
	if typ != FrameHello {
		return protocol(fmt.Errorf("%w: %s instead of HELLO", ErrUnexpectedFrame, typ))
	}
	hello, err := DecodeHello(body)
	if err != nil {
		return protocol(err)
	}
	var nonce [NonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("no randomness for the handshake nonce: %w", err)
	}
	s.mu.Lock()
	hs, err := s.st.OnHello(hello, s.view(), nonce, s.now())
	s.mu.Unlock()
	if err != nil {
		return protocol(err)
	}
	if err := s.writeFrame(conn, &wmu, AppendHandshake(nil, hs)); err != nil {
		return nil, err
	}
	typ, body, r, err = next(MaxControlFrame)
	if r != nil || err != nil {
		return r, err
	}
	if typ != FrameAccept {
		return protocol(fmt.Errorf("%w: %s instead of ACCEPT", ErrUnexpectedFrame, typ))
	}
	acc, err := DecodeAccept(body)
	if err != nil {
		return protocol(err)
	}
	s.mu.Lock()
	ack, err := s.st.OnAccept(acc, s.view(), s.now())
	s.mu.Unlock()
	if err != nil {
		return protocol(err)
	}
	lg.WithFields(logrus.Fields{"start": acc.StartOffset, "masterMax": acc.MasterMax, "epoch": acc.Epoch}).Info("HA slave connected to master")
	if err := s.writeFrame(conn, &wmu, AppendAck(nil, ack)); err != nil {
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Time{})

	stop := make(chan struct{})
	defer close(stop)
	s.wg.Add(1)
	go s.heartbeat(conn, ar, &wmu, stop)

	// Receiving and appending overlap: this goroutine reads and validates
	// frames, an appender writes them to the log and acknowledges them, in
	// order. A few recycled buffers bound the memory and apply backpressure.
	// A small frame that arrives while the appender is idle (live traffic,
	// as opposed to a catch-up) is appended and acknowledged right here:
	// handing it over would cost a wake-up and nothing would overlap. Live
	// frames at 64 sends in flight averaged 50 KiB, half of them above 64 KiB,
	// so "small" reaches 256 KiB; a catch-up's frames (TransferBatchSize,
	// 1 MiB by default) still overlap.
	const inFlight = 3
	const inlineMax = 256 << 10
	var queued atomic.Int32 // frames handed to the appender and not yet acknowledged
	// ackOwed says the last frame appended here was not acknowledged because a whole frame
	// was already buffered behind it: the ack after that one covers both (acks are
	// cumulative), and a frame that acks nothing pays the debt.
	ackOwed := false
	inlineAck := make([]byte, 0, 32)
	jobs := make(chan dataJob, inFlight)
	free := make(chan []byte, inFlight+1)
	for i := 0; i < inFlight+1; i++ {
		free <- nil
	}
	appendErr := make(chan error, 1)
	appenderDone := make(chan struct{})
	go func() {
		defer close(appenderDone)
		ackBuf := make([]byte, 0, 32)
		for j := range jobs {
			// With more frames already received, one ack after the last of them
			// says the same for fewer writes (and fewer wake-ups on the master).
			err := s.apply(j, len(jobs) == 0, conn, &wmu, &ackBuf)
			queued.Add(-1)
			free <- j.buf
			if err != nil {
				lg.WithError(err).WithField("offset", j.d.StartOffset).Error("HA append to the local log failed")
				appendErr <- err
				_ = conn.Close()
				for j := range jobs {
					free <- j.buf
				}
				return
			}
		}
	}()
	finish := func(r *Recovery, err error) (*Recovery, error) {
		close(jobs)
		<-appenderDone
		select {
		case aerr := <-appendErr:
			return nil, aerr
		default:
		}
		return r, err
	}
	for {
		buf := <-free
		typ, body, err := fr.NextInto(MaxDataFrame, buf)
		if err != nil {
			return finish(nil, err)
		}
		switch typ {
		case FrameData:
			d, err := DecodeData(body)
			if err != nil {
				return finish(protocol(err))
			}
			s.mu.Lock()
			plan, err := s.st.OnData(d, s.view(), s.now())
			s.mu.Unlock()
			if err != nil {
				lg.WithError(err).WithField("offset", d.StartOffset).Error("HA bad data frame from master")
				return finish(protocol(err))
			}
			j := dataJob{d: d, plan: plan, buf: body}
			if len(body) <= inlineMax && queued.Load() == 0 {
				// The appender has acknowledged everything before this frame. A whole
				// frame buffered behind it is read at once, without waiting on the
				// master: one ack after it says the same for one write fewer.
				later := fr.FrameBuffered()
				if err := s.apply(j, !later, conn, &wmu, &inlineAck); err != nil {
					lg.WithError(err).WithField("offset", d.StartOffset).Error("HA append to the local log failed")
					_ = conn.Close()
					return finish(nil, err)
				}
				ackOwed = later
				break
			}
			queued.Add(1)
			ackOwed = false // the appender acknowledges once its queue is empty
			jobs <- j
			continue
		case FrameHeartbeat:
			h, err := DecodeHeartbeat(body)
			if err == nil {
				s.mu.Lock()
				err = s.st.OnHeartbeat(h, s.view(), s.now())
				s.mu.Unlock()
			}
			if err != nil {
				return finish(protocol(err))
			}
			if ackOwed {
				ackOwed = false
				if err := s.heartbeatAck(conn, &wmu); err != nil {
					return finish(nil, err)
				}
			}
		case FrameError:
			// The appender finishes first: the recovery sees the log as it is.
			close(jobs)
			<-appenderDone
			select {
			case aerr := <-appendErr:
				return nil, aerr
			default:
			}
			r, err := onError(body)
			if err != nil && r == nil {
				return protocol(err)
			}
			return r, err
		default:
			return finish(protocol(fmt.Errorf("%w: %s from master", ErrUnexpectedFrame, typ)))
		}
		free <- body
	}
}

// dataJob is a validated Data frame waiting to be appended.
type dataJob struct {
	d    Data
	plan DataPlan
	buf  []byte
}

// apply appends one frame: epoch file first (a new epoch), then the records,
// then, with ack, the acknowledgement.
func (s *Slave) apply(j dataJob, ack bool, conn net.Conn, wmu *sync.Mutex, ackBuf *[]byte) error {
	if j.plan.NewEpoch != nil {
		s.mu.Lock()
		last, ok := s.st.Epochs().Last()
		need := !ok || last.Epoch < j.plan.NewEpoch.Epoch
		entries := append(s.st.Epochs().Entries(), *j.plan.NewEpoch)
		s.mu.Unlock()
		if need {
			if err := SaveEpochFile(s.cfg.EpochDir, entries); err != nil {
				return fmt.Errorf("saving epoch file: %w", err)
			}
		}
	}
	va, verified := s.log.(VerifiedAppender)
	var err error
	if verified {
		err = va.AppendRawVerified(j.d.StartOffset, j.d.Records) // OnData checked the frame's CRC
	} else {
		err = s.log.AppendRaw(j.d.StartOffset, j.d.Records)
	}
	if err != nil {
		return fmt.Errorf("append at %d: %w", j.d.StartOffset, err)
	}
	s.mu.Lock()
	a := s.st.Appended(j.plan.NewEpoch, s.view(), s.now())
	s.mu.Unlock()
	if ack {
		*ackBuf = AppendAck((*ackBuf)[:0], a)
		err = s.writeFrame(conn, wmu, *ackBuf)
	}
	if verified {
		// After the ack: a SYNC send on the master waits for the ack, not for the slave's indexes.
		va.DispatchRaw(j.d.StartOffset, j.d.Records)
	}
	return err
}

// heartbeat sends acks every HeartbeatInterval and closes a connection the
// master has been silent on for HousekeepingInterval.
func (s *Slave) heartbeat(conn net.Conn, ar *activityReader, wmu *sync.Mutex, stop <-chan struct{}) {
	defer s.wg.Done()
	t := time.NewTicker(max(min(s.cfg.HeartbeatInterval/4, time.Second), time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		now := s.now()
		s.mu.Lock()
		if t := ar.last.Load(); t != 0 {
			s.st.Touch(time.Unix(0, t))
		}
		expired := s.st.Expired(now)
		due := s.st.AckDue(now)
		if due {
			s.st.AckSent(now)
		}
		s.mu.Unlock()
		if expired {
			s.lg.Warn("HA master silent for longer than the housekeeping interval; reconnecting")
			_ = conn.Close()
			return
		}
		if due {
			if err := s.heartbeatAck(conn, wmu); err != nil {
				if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
					s.lg.WithError(err).Debug("HA heartbeat ack failed")
				}
				return
			}
		}
	}
}

// heartbeatAck reads the offsets while holding the write lock, so it never
// sends a smaller written offset after the receive loop sent a larger one.
func (s *Slave) heartbeatAck(conn net.Conn, wmu *sync.Mutex) error {
	wmu.Lock()
	defer wmu.Unlock()
	flushed := s.log.FlushedOffset()
	s.mu.Lock()
	w := s.st.Written()
	s.mu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.HousekeepingInterval))
	_, err := conn.Write(AppendAck(nil, Ack{Written: w, Flushed: min(flushed, w)}))
	return err
}

// activityReader remembers when bytes last arrived.
type activityReader struct {
	r    io.Reader
	now  func() time.Time
	last atomic.Int64
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(a.now().UnixNano())
	}
	return n, err
}

package hawire

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Master is the TCP driver around MasterState: it accepts slave
// connections on the HA port and runs, per connection, one goroutine that
// reads acks and one that sends data as soon as the log grows. With
// InlineSend an append whose connection's sender is idle sends what the
// socket takes at once itself (sendInline).
type Master struct {
	cfg    MasterConfig
	log    Log
	rd     RawReaderInto // log's reader into a buffer, nil when it has none
	lg     logrus.FieldLogger
	now    func() time.Time
	mu     sync.Mutex // guards st
	st     *MasterState
	ln     net.Listener
	nextID ConnID
	conns  map[ConnID]*masterConn
	// wakers is a copy-on-write snapshot of every connection, so the append
	// path sends or wakes senders without taking mu.
	wakers     atomic.Pointer[[]*masterConn]
	lastSample atomic.Int64
	sweepWake  chan struct{}
	sweepAt    time.Time // when the sweeper's timer fires next, by now (mu); zero before it ran
	closing    chan struct{}
	closed     atomic.Bool
	wg         sync.WaitGroup
}

type masterConn struct {
	id      ConnID
	c       net.Conn
	wake    chan struct{}
	wmu     sync.Mutex // serialises frame writes
	closeMu sync.Once

	// sendMu is held by whoever sends data on the connection: its send loop, or an appender
	// sending inline (sendInline). The fields after it belong to the holder.
	sendMu sync.Mutex
	// inline is set once the Accept went out and the link is a plain socket (quietConn):
	// appenders may then send a batch themselves.
	inline atomic.Bool
	hdr    []byte
	rbuf   []byte
	// rest is what of a frame an inline send could not write without waiting; the send loop
	// writes it before anything else. It aliases hdr and the batch read into rbuf.
	rest    [][]byte
	restArr [2][]byte
}

func (mc *masterConn) close() { mc.closeMu.Do(func() { _ = mc.c.Close() }) }

// NewMaster validates cfg and prepares a master around log. It loads the
// epoch file and starts a new epoch at the log's MaxOffset (see the package
// doc, "Epochs and divergence").
func NewMaster(cfg MasterConfig, log Log) (*Master, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	entries, err := LoadEpochFile(cfg.EpochDir)
	if err != nil {
		return nil, fmt.Errorf("hawire: master epoch file: %w", err)
	}
	hist, err := NewEpochHistory(entries)
	if err != nil {
		return nil, err
	}
	max := log.MaxOffset()
	next := EpochEntry{Epoch: 1, StartOffset: max}
	if l, ok := hist.Last(); ok {
		next.Epoch = l.Epoch + 1 // never reuse a number, even one truncated away below
	}
	hist.TruncateTo(max + 1) // entries beyond the log (crash during truncation) hold nothing
	if l, ok := hist.Last(); ok {
		if l.StartOffset == max {
			hist.entries = hist.entries[:len(hist.entries)-1] // empty epoch: replace it
		}
	}
	if hist.Len() == 0 {
		next.StartOffset = min(max, log.MinOffset())
	}
	if err := hist.Append(next); err != nil {
		return nil, err
	}
	if err := SaveEpochFile(cfg.EpochDir, hist.Entries()); err != nil {
		return nil, fmt.Errorf("hawire: saving master epoch file: %w", err)
	}
	m := &Master{cfg: cfg, log: log, lg: cfg.Logger.WithField("component", "ha-master"), now: cfg.Now,
		st: NewMasterState(cfg, log.SegmentSize(), hist), conns: map[ConnID]*masterConn{},
		sweepWake: make(chan struct{}, 1), closing: make(chan struct{})}
	m.rd, _ = log.(RawReaderInto)
	m.wakers.Store(&[]*masterConn{})
	return m, nil
}

// Start listens on ListenAddr and serves slaves until Close.
func (m *Master) Start() error {
	ln, err := net.Listen("tcp", m.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("hawire: HA listen on %s: %w", m.cfg.ListenAddr, err)
	}
	m.ln = ln
	m.log.OnAppend(m.onAppend)
	m.lg.WithFields(logrus.Fields{"addr": ln.Addr().String(), "epoch": m.Epoch(), "inSyncReplicas": m.cfg.InSyncReplicas}).
		Info("HA master listening; 0 slaves connected")
	m.wg.Add(2)
	go m.acceptLoop()
	go m.sweeper()
	return nil
}

// Addr is the bound HA address (nil before Start).
func (m *Master) Addr() net.Addr {
	if m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

// Close stops listening, drops every slave and completes pending waiters
// with ReplTimeout.
func (m *Master) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	close(m.closing)
	if m.ln != nil {
		_ = m.ln.Close()
	}
	m.mu.Lock()
	for _, c := range m.conns {
		c.close()
	}
	m.st.Close()
	done := m.st.TakeCompleted(nil)
	m.mu.Unlock()
	fire(done)
	m.wg.Wait()
	return nil
}

// Demote stops serving as a master: every slave connection is closed and
// new handshakes are answered NOT_MASTER, so slaves go back to discovery.
// Pending waiters finish at their deadlines.
func (m *Master) Demote() {
	m.mu.Lock()
	m.st.SetNotMaster()
	conns := make([]*masterConn, 0, len(m.conns))
	for _, c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		m.drop(c)
	}
	m.lg.Warn("HA master demoted; refusing slaves")
}

// Epoch is the master's current epoch.
func (m *Master) Epoch() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Epoch()
}

// Deadline is now + SlaveTimeout, the default SYNC deadline for a send arriving now.
func (m *Master) Deadline() time.Time { return m.now().Add(m.cfg.SlaveTimeout) }

// WaitReplicated returns a channel that receives one ReplStatus for a
// message whose last byte ends at endOffset: ReplOK once InSyncReplicas
// copies hold it, ReplTimeout at the deadline, ReplSlaveNotAvailable at once
// when too few slaves are in sync. No goroutine is started per call.
func (m *Master) WaitReplicated(endOffset int64, deadline time.Time) <-chan ReplStatus {
	if m.closed.Load() {
		ch := make(chan ReplStatus, 1)
		ch <- ReplSlaveNotAvailable
		return ch
	}
	logMax := m.log.MaxOffset()
	m.mu.Lock()
	if m.closed.Load() {
		// Close may have completed every waiter already: this one would wait forever (a
		// SYNC send blocked past its own deadline, as WaitReplicatedFunc guards against too).
		m.mu.Unlock()
		ch := make(chan ReplStatus, 1)
		ch <- ReplSlaveNotAvailable
		return ch
	}
	ch := m.st.Wait(endOffset, deadline, logMax, m.now())
	m.wakeSweeperLocked()
	m.mu.Unlock()
	return ch
}

// WaitReplicatedFunc is WaitReplicatedTo with a function.
func (m *Master) WaitReplicatedFunc(endOffset int64, deadline time.Time, fn func(ReplStatus)) {
	m.WaitReplicatedTo(endOffset, deadline, ReplFunc(fn))
}

// WaitReplicatedTo is WaitReplicated calling cb with the status instead
// of sending it on a channel: once, either before it returns (the status is
// known at once) or from the goroutine that completes the wait: the one that
// read the slave's ack, the deadline sweeper or Close. cb must not block for
// long (it holds up that slave's acks) and must not call back into the Master
// synchronously.
func (m *Master) WaitReplicatedTo(endOffset int64, deadline time.Time, cb ReplCallback) {
	if m.closed.Load() {
		cb.Replicated(ReplSlaveNotAvailable)
		return
	}
	logMax := m.log.MaxOffset()
	m.mu.Lock()
	if m.closed.Load() {
		// Close may have completed every waiter already: this one would wait forever.
		m.mu.Unlock()
		cb.Replicated(ReplSlaveNotAvailable)
		return
	}
	st, now := m.st.WaitCallback(endOffset, deadline, logMax, m.now(), cb)
	if !now {
		m.wakeSweeperLocked()
	}
	m.mu.Unlock()
	if now {
		cb.Replicated(st)
	}
}

// wakeSweeperLocked wakes the sweeper when the earliest deadline comes before the time its
// timer is armed for (mu held). A later one waits for that timer, which re-arms for it: waking
// the sweeper only to re-arm cost a thread wake-up per send at one SYNC send at a time, where
// every send's deadline is the only one.
func (m *Master) wakeSweeperLocked() {
	n, ok := m.st.NextDeadline()
	if !ok || (!m.sweepAt.IsZero() && !n.Before(m.sweepAt)) {
		return
	}
	select {
	case m.sweepWake <- struct{}{}:
	default:
	}
}

// fire calls the callback waiters the state completed (mu not held).
func fire(done []Completion) {
	for i, c := range done {
		c.Cb.Replicated(c.Status)
		done[i] = Completion{}
	}
}

// InSyncCount is the number of copies in sync, the master included.
func (m *Master) InSyncCount() int {
	logMax := m.log.MaxOffset()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.InSyncCount(logMax)
}

// CanAccept is the strict-mode check (MinInSyncReplicas) to make before
// storing a message; it returns ErrNotEnoughInSync when too few copies are in sync.
func (m *Master) CanAccept() error {
	logMax := m.log.MaxOffset()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.CanAccept(logMax)
}

// Status reports the master and every connected slave.
func (m *Master) Status() MasterStatus {
	logMin, logMax := m.log.MinOffset(), m.log.MaxOffset()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Status(logMin, logMax, m.now())
}

func (m *Master) onAppend(max int64) {
	if m.closed.Load() {
		return
	}
	for _, mc := range *m.wakers.Load() {
		if m.sendInline(mc) {
			continue
		}
		select {
		case mc.wake <- struct{}{}:
		default:
		}
	}
	now := m.now()
	if last := m.lastSample.Load(); now.UnixNano()-last >= int64(time.Millisecond) && m.lastSample.CompareAndSwap(last, now.UnixNano()) {
		m.mu.Lock()
		m.st.Appended(max, now)
		m.mu.Unlock()
	}
}

func (m *Master) publishWakers() {
	ws := make([]*masterConn, 0, len(m.conns))
	for _, c := range m.conns {
		ws = append(ws, c)
	}
	m.wakers.Store(&ws)
}

func (m *Master) acceptLoop() {
	defer m.wg.Done()
	var backoff time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if m.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			m.lg.WithError(err).Warn("HA accept failed")
			select {
			case <-time.After(backoff):
			case <-m.closing:
				return
			}
			continue
		}
		backoff = 0
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if m.cfg.TLS != nil {
			c = tls.Server(c, m.cfg.TLS) // handshake on the first read or write, under serve's deadlines
		}
		var nonce [NonceLen]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			m.lg.WithError(err).Error("no randomness for handshake nonce")
			_ = c.Close()
			continue
		}
		m.mu.Lock()
		if m.closed.Load() {
			m.mu.Unlock()
			_ = c.Close()
			return
		}
		m.nextID++
		mc := &masterConn{id: m.nextID, c: withQuietIO(c), wake: make(chan struct{}, 1)}
		m.conns[mc.id] = mc
		hello := m.st.Connect(mc.id, c.RemoteAddr().String(), nonce, m.now())
		m.mu.Unlock()
		m.wg.Add(1)
		go m.serve(mc, hello)
	}
}

// drop forgets a connection and closes it.
func (m *Master) drop(mc *masterConn) {
	m.mu.Lock()
	if _, ok := m.conns[mc.id]; ok {
		delete(m.conns, mc.id)
		m.st.Disconnect(mc.id)
		m.publishWakers()
	}
	m.mu.Unlock()
	mc.close()
}

// writeChunk is how much may go out under one write deadline: a slow but
// moving link (≥ writeChunk per HousekeepingInterval) is never cut for
// being slow, a stuck one is.
const writeChunk = 256 << 10

func (m *Master) write(mc *masterConn, bufs ...[]byte) error {
	mc.wmu.Lock()
	defer mc.wmu.Unlock()
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	if total <= writeChunk {
		_ = mc.c.SetWriteDeadline(time.Now().Add(m.cfg.HousekeepingInterval))
		return writeBuffers(mc.c, bufs)
	}
	for _, b := range bufs {
		for len(b) > 0 {
			n := min(len(b), writeChunk)
			_ = mc.c.SetWriteDeadline(time.Now().Add(m.cfg.HousekeepingInterval))
			if _, err := mc.c.Write(b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
	}
	return nil
}

// refuse writes the proven Error frame for code (best effort) before the connection is closed.
func (m *Master) refuse(mc *masterConn, code ErrorCode, off int64, msg string) {
	logMin, logMax := m.log.MinOffset(), m.log.MaxOffset()
	m.mu.Lock()
	ef := m.st.Refusal(mc.id, code, off, msg, logMin, logMax)
	m.mu.Unlock()
	m.sendError(mc, ef)
}

// sendError writes an Error frame (best effort) before the connection is closed.
func (m *Master) sendError(mc *masterConn, ef ErrorFrame) {
	mc.wmu.Lock()
	defer mc.wmu.Unlock()
	_ = mc.c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = mc.c.Write(AppendError(nil, ef))
}

func (m *Master) serve(mc *masterConn, hello Hello) {
	defer m.wg.Done()
	defer m.drop(mc)
	lg := m.lg.WithField("peer", mc.c.RemoteAddr().String())
	// The read deadline first: with TLS, writing the Hello runs the TLS
	// handshake, which reads from the peer.
	_ = mc.c.SetReadDeadline(time.Now().Add(m.cfg.HousekeepingInterval))
	if err := m.write(mc, AppendHello(nil, hello)); err != nil {
		lg.WithError(err).Debug("HA hello write failed")
		return
	}
	fr := NewFrameReader(mc.c, 64<<10)
	typ, body, err := fr.Next(MaxHandshakeFrame)
	if err != nil {
		if isFramingError(err) {
			m.protocolError(mc, lg, fmt.Errorf("reading handshake: %w", err))
		} else {
			lg.WithError(err).Debug("HA connection closed before its handshake")
		}
		return
	}
	if typ != FrameHandshake {
		m.protocolError(mc, lg, fmt.Errorf("%w: %s before handshake", ErrUnexpectedFrame, typ))
		return
	}
	hs, err := DecodeHandshake(body)
	if err != nil {
		m.protocolError(mc, lg, err)
		return
	}
	lg = lg.WithField("brokerId", hs.BrokerID)
	logMin, logMax := m.log.MinOffset(), m.log.MaxOffset()
	m.mu.Lock()
	acc, replaced, ef := m.st.Handshake(mc.id, hs, logMin, logMax, m.now())
	var old *masterConn
	if ef == nil {
		old = m.conns[replaced]
		m.publishWakers()
	}
	fired := m.st.TakeCompleted(nil)
	m.mu.Unlock()
	fire(fired)
	if ef != nil {
		lg.WithFields(logrus.Fields{"code": ef.Code.String(), "offset": ef.Offset, "slaveMax": hs.MaxOffset}).
			Warn("HA handshake rejected: " + ef.Message)
		m.sendError(mc, *ef)
		return
	}
	if old != nil {
		lg.Info("HA slave reconnected; closing its previous connection")
		m.drop(old)
	}
	if err := m.write(mc, AppendAccept(nil, acc)); err != nil {
		return
	}
	lg.WithFields(logrus.Fields{"start": acc.StartOffset, "masterMax": acc.MasterMax}).Info("HA slave connected")
	_ = mc.c.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	if _, ok := mc.c.(*quietConn); ok && m.cfg.InlineSend {
		mc.inline.Store(true)
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.sendLoop(mc, lg, done)
	}()
	m.readLoop(mc, lg, fr)
	close(done)
}

func (m *Master) protocolError(mc *masterConn, lg logrus.FieldLogger, err error) {
	m.mu.Lock()
	m.st.ProtocolError(mc.id)
	m.mu.Unlock()
	if !errors.Is(err, io.EOF) && !m.closed.Load() {
		lg.WithError(err).Warn("HA connection closed: protocol error")
	}
	m.refuse(mc, CodeProtocol, 0, err.Error())
}

func (m *Master) readLoop(mc *masterConn, lg logrus.FieldLogger, fr *FrameReader) {
	var done []Completion
	for {
		typ, body, err := fr.Next(MaxControlFrame)
		if err != nil {
			switch {
			case m.closed.Load():
			case isFramingError(err):
				m.protocolError(mc, lg, err)
			default:
				lg.WithError(err).Info("HA slave disconnected")
			}
			return
		}
		switch typ {
		case FrameAck:
			a, err := DecodeAck(body)
			if err != nil {
				m.protocolError(mc, lg, err)
				return
			}
			logMax := m.log.MaxOffset()
			m.mu.Lock()
			err = m.st.Ack(mc.id, a, logMax, m.now())
			done = m.st.TakeCompleted(done[:0])
			m.mu.Unlock()
			// The sends this ack covers are answered from here, with no
			// goroutine in between.
			fire(done)
			if err != nil {
				lg.WithError(err).WithFields(logrus.Fields{"written": a.Written, "flushed": a.Flushed, "masterMax": logMax}).
					Error("HA invalid acknowledgement; closing connection")
				m.refuse(mc, CodeProtocol, a.Written, err.Error())
				return
			}
		case FrameError:
			e, _ := DecodeError(body)
			lg.WithFields(logrus.Fields{"code": e.Code.String(), "offset": e.Offset}).Warn("HA slave reported an error: " + e.Message)
			return
		default:
			m.protocolError(mc, lg, fmt.Errorf("%w: %s from slave", ErrUnexpectedFrame, typ))
			return
		}
	}
}

func (m *Master) sendLoop(mc *masterConn, lg logrus.FieldLogger, done <-chan struct{}) {
	defer mc.close()
	timer := time.NewTimer(m.cfg.HeartbeatInterval)
	defer timer.Stop()
	for {
		mc.sendMu.Lock()
		sent, wait, ok := m.sendStep(mc, lg)
		mc.sendMu.Unlock()
		if !ok {
			return
		}
		if sent {
			continue
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-mc.wake:
			// Let the appends woken with this one (a group commit, a burst of
			// sends) land first, so they leave in one frame: one slave append
			// and one ack instead of several. With nothing else runnable this
			// returns at once.
			runtime.Gosched()
		case <-timer.C:
		case <-done:
			return
		case <-m.closing:
			return
		}
	}
}

// sendStep writes what an inline send left, else the next batch or a due heartbeat, waiting
// for room on the socket (mc.sendMu held). It reports whether it wrote a frame, how long the
// sender may sleep otherwise, and false when the connection must end.
func (m *Master) sendStep(mc *masterConn, lg logrus.FieldLogger) (sent bool, wait time.Duration, ok bool) {
	if len(mc.rest) > 0 {
		err := m.write(mc, mc.rest...)
		mc.rest, mc.restArr = nil, [2][]byte{}
		return true, 0, err == nil
	}
	logMax := m.log.MaxOffset()
	now := m.now()
	m.mu.Lock()
	plan := m.st.Plan(mc.id, logMax, now)
	wait = m.st.HeartbeatWait(mc.id, now)
	var hb Heartbeat
	if plan.Heartbeat {
		hb = m.st.HeartbeatFrame(mc.id, logMax)
	}
	m.mu.Unlock()
	switch {
	case plan.Data:
		if min := m.log.MinOffset(); plan.Offset < min {
			// Retention removed what this slave still needs.
			lg.WithFields(logrus.Fields{"offset": plan.Offset, "masterMin": min}).Warn("HA slave fell behind the master's oldest segment")
			m.refuse(mc, CodeOffsetTooOld, min, "offset deleted while streaming")
			return false, 0, false
		}
		hdr, data, err := m.frameBatch(mc, plan, logMax)
		if err != nil {
			if !errors.Is(err, errNotSent) {
				lg.WithError(err).WithField("offset", plan.Offset).Error("HA cannot read the log for a slave; closing connection")
			}
			return false, 0, false
		}
		return true, 0, m.write(mc, hdr, data) == nil
	case plan.Heartbeat:
		if err := m.write(mc, AppendHeartbeat(mc.hdr[:0], hb)); err != nil {
			return false, 0, false
		}
		m.mu.Lock()
		err := m.st.Sent(mc.id, 0, 0, m.now())
		m.mu.Unlock()
		return true, 0, err == nil
	}
	return false, wait, true
}

// frameBatch reads the batch plan names into the connection's buffer, checks its records,
// records it as sent and returns the Data frame's header and body (mc.sendMu held).
func (m *Master) frameBatch(mc *masterConn, plan SendPlan, logMax int64) (hdr, data []byte, err error) {
	data, err = m.readBatch(mc, plan.Offset, plan.MaxBytes)
	if err == nil && len(data) == 0 {
		// A record larger than the batch: read it whole.
		data, err = m.readBatch(mc, plan.Offset, MaxDataFrame-DataHeaderLen)
	}
	if err == nil && len(data) == 0 {
		err = fmt.Errorf("%w: no record readable at %d below max %d", ErrPartialRecord, plan.Offset, logMax)
	}
	if err == nil {
		err = CheckRecords(plan.Offset, data, m.log.SegmentSize())
	}
	if err != nil {
		return nil, nil, err
	}
	// The batch's CRC is computed before taking mu: a full batch of a
	// backlog takes tens of µs to checksum, which acks and SYNC waits
	// would otherwise queue behind.
	crc := BatchCRC(data)
	// Record the send before writing: the slave may acknowledge these
	// bytes before Write returns, and an ack beyond what was sent is
	// rejected. A failed write ends the connection anyway.
	m.mu.Lock()
	d := m.st.DataHeaderCRC(plan, crc, logMax)
	err = m.st.Sent(mc.id, plan.Offset, len(data), m.now())
	m.mu.Unlock()
	if err != nil {
		return nil, nil, errNotSent
	}
	mc.hdr = AppendDataHeader(mc.hdr[:0], d, len(data))
	return mc.hdr, data, nil
}

// readBatch reads log bytes into the connection's buffer, reused for every batch: it is free
// again once the frame is written.
func (m *Master) readBatch(mc *masterConn, off int64, n int) ([]byte, error) {
	if m.rd == nil {
		return m.log.ReadRaw(off, n)
	}
	b, err := m.rd.ReadRawInto(mc.rbuf[:0], off, n)
	if cap(b) > cap(mc.rbuf) && cap(b) <= 2*m.cfg.TransferBatchSize {
		mc.rbuf = b[:0] // a single record larger than that is read into a buffer of its own
	}
	return b, err
}

// sendInline sends what the log gained on an appender's goroutine, when the connection's
// sender is idle, so that a send does not wait for the send loop's goroutine to be woken (a
// thread wake-up in another process's schedule on a machine this size: 7 µs of CPU and more
// of latency per send at one send at a time). It writes only what the socket takes without
// waiting: an appender never waits for a slave. It reports false when the send loop must be
// woken: the sender was busy, a heartbeat is due, the batch needs the loop's checks, or the
// socket left part of a frame, which the loop then writes first.
func (m *Master) sendInline(mc *masterConn) bool {
	if !mc.inline.Load() || !mc.sendMu.TryLock() {
		return false
	}
	defer mc.sendMu.Unlock()
	if len(mc.rest) > 0 {
		return false
	}
	// A few batches at most: past that the log grows faster than one appender should serve.
	for range 4 {
		logMax := m.log.MaxOffset()
		m.mu.Lock()
		plan := m.st.Plan(mc.id, logMax, m.now())
		m.mu.Unlock()
		switch {
		case plan.Heartbeat:
			return false
		case !plan.Data:
			return true // the slave has all of it (or is not streaming)
		case plan.Offset < m.log.MinOffset():
			return false // the loop refuses the slave, with its log line
		}
		hdr, data, err := m.frameBatch(mc, plan, logMax)
		switch {
		case errors.Is(err, errNotSent):
			mc.close()
			return false
		case err != nil:
			return false // nothing was recorded: the loop reads again and reports
		}
		mc.restArr = [2][]byte{hdr, data}
		if !mc.wmu.TryLock() {
			mc.rest = mc.restArr[:] // a refusal is being written: the loop sends this after it
			return false
		}
		_ = mc.c.SetWriteDeadline(time.Now().Add(m.cfg.HousekeepingInterval))
		rest, err := mc.c.(*quietConn).w.TryWriteBuffers(mc.restArr[:]...)
		mc.wmu.Unlock()
		if err != nil {
			mc.close()
			return false
		}
		if len(rest) > 0 {
			mc.rest = rest
			return false
		}
		mc.restArr = [2][]byte{}
	}
	return false
}

// sweeper completes expired waiters at their deadlines and drops silent slaves.
func (m *Master) sweeper() {
	defer m.wg.Done()
	check := min(m.cfg.HousekeepingInterval/4, time.Second)
	timer := time.NewTimer(check)
	defer timer.Stop()
	for {
		select {
		case <-m.closing:
			return
		case <-timer.C:
		case <-m.sweepWake:
		}
		now := m.now()
		m.mu.Lock()
		dead := m.st.Expire(now)
		done := m.st.TakeCompleted(nil)
		var conns []*masterConn
		for _, id := range dead {
			if c := m.conns[id]; c != nil {
				conns = append(conns, c)
				delete(m.conns, id)
			}
		}
		if len(dead) > 0 {
			m.publishWakers()
		}
		next := check
		if d, ok := m.st.NextDeadline(); ok {
			next = min(next, max(d.Sub(now), 0))
		}
		m.sweepAt = now.Add(next)
		m.mu.Unlock()
		fire(done)
		for _, c := range conns {
			m.lg.WithField("peer", c.c.RemoteAddr().String()).Warn("HA slave silent for longer than the housekeeping interval; dropping it")
			c.close()
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// isFramingError tells bytes that break the protocol from a peer that went away.
func isFramingError(err error) bool {
	return errors.Is(err, ErrBadFrame) || errors.Is(err, ErrFrameTooLarge)
}

package hawire

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// ConnID names one slave connection inside MasterState.
type ConnID uint64

type connPhase int

const (
	phaseAwaitHandshake connPhase = iota
	phaseStreaming
)

// peer is the master's view of one slave connection.
type peer struct {
	id             ConnID
	addr           string
	phase          connPhase
	nonce          [NonceLen]byte
	hs             Handshake // the handshake as received (its nonce and proof bind the master's later proofs)
	authed         bool      // the handshake proved the secret (or none is required)
	brokerID       int64
	connectedSince time.Time
	lastRead       time.Time // last frame received
	lastSent       time.Time // last frame sent
	next           int64     // next offset to send
	ackWritten     int64
	ackFlushed     int64
	lastAck        time.Time
}

// appendSample records when the log reached an offset, so lag in bytes can
// be turned into lag in seconds.
type appendSample struct {
	off int64
	t   time.Time
}

// maxSamples bounds the append-time ring; samples are at least 1 ms apart,
// so it covers several seconds at full write rate and more when idle.
const maxSamples = 8192

// MasterCounters count events worth an alarm.
type MasterCounters struct {
	AckViolations   uint64 // written backwards, beyond max, beyond sent, flushed > written
	AuthFailures    uint64 // missing or wrong slave proof
	HandshakeErrors uint64 // any other rejected handshake
	ProtocolErrors  uint64 // unexpected frames, garbage
	Expired         uint64 // slaves dropped for silence
}

// MasterState is the master's replication logic, free of sockets and clocks:
// every event carries the current time and the log's offsets. The caller
// serialises calls.
type MasterState struct {
	cfg     MasterConfig
	segSize int64
	epochs  *EpochHistory
	peers   map[ConnID]*peer
	// streaming holds the peers in phaseStreaming, the ones every
	// SYNC wait and ack counts (quorumAck, InSyncCount): a slice walk there
	// instead of a map iteration, whose random start cost more than the rest
	// of a wait.
	streaming []*peer
	waiters   waitQueue
	counters  MasterCounters
	samples   []appendSample
	demoted   bool
}

// SetNotMaster makes every later handshake fail with NOT_MASTER.
func (s *MasterState) SetNotMaster() { s.demoted = true }

// NewMasterState builds the state for a log with the given segment size and
// epoch history (the current epoch is the last entry).
func NewMasterState(cfg MasterConfig, segmentSize int64, epochs *EpochHistory) *MasterState {
	return &MasterState{cfg: cfg, segSize: segmentSize, epochs: epochs, peers: map[ConnID]*peer{}}
}

// Epoch is the current epoch (0 before any).
func (s *MasterState) Epoch() int64 {
	l, _ := s.epochs.Last()
	return l.Epoch
}

// Counters returns a copy of the counters.
func (s *MasterState) Counters() MasterCounters { return s.counters }

// Connect registers a new connection and returns the Hello to send.
func (s *MasterState) Connect(id ConnID, addr string, nonce [NonceLen]byte, now time.Time) Hello {
	s.forget(id) // a reused id starts over
	s.peers[id] = &peer{id: id, addr: addr, nonce: nonce, connectedSince: now, lastRead: now, lastSent: now}
	return Hello{MinVersion: MinVersion, MaxVersion: MaxVersion, Nonce: nonce}
}

// Disconnect forgets a connection. Pending waiters keep waiting for other
// slaves (or a reconnect) until their deadline.
func (s *MasterState) Disconnect(id ConnID) { s.forget(id) }

// forget removes id from peers and, once streaming, from streaming.
func (s *MasterState) forget(id ConnID) {
	p := s.peers[id]
	if p == nil {
		return
	}
	delete(s.peers, id)
	if i := slices.Index(s.streaming, p); i >= 0 {
		s.streaming = slices.Delete(s.streaming, i, i+1)
	}
}

// ProtocolError counts a malformed or unexpected frame on id.
func (s *MasterState) ProtocolError(id ConnID) { s.counters.ProtocolErrors++ }

// Handshake validates a slave's handshake. On success it returns the Accept
// to send and, when another connection from the same broker id exists, that
// connection's id (the caller closes it: a restarted slave replaces its
// stale connection). On failure it returns the Error frame to send before
// closing. With a Secret, both carry the master's proof over both nonces,
// the slave's identity and the verdict (see the package doc).
func (s *MasterState) Handshake(id ConnID, h Handshake, logMin, logMax int64, now time.Time) (Accept, ConnID, *ErrorFrame) {
	p := s.peers[id]
	if p == nil || p.phase != phaseAwaitHandshake {
		s.counters.ProtocolErrors++
		return Accept{}, 0, &ErrorFrame{Code: CodeProtocol, Message: "unexpected handshake"}
	}
	p.lastRead = now
	if h.Version < MinVersion || h.Version > MaxVersion {
		// A version-1 handshake has no slave nonce to bind a proof to: the
		// refusal goes out unproven, and a v1 slave stops on it.
		s.counters.HandshakeErrors++
		return Accept{}, 0, &ErrorFrame{Code: CodeUnsupportedVersion,
			Message: fmt.Sprintf("version %d not in [%d,%d]", h.Version, MinVersion, MaxVersion)}
	}
	p.hs = h
	p.authed = s.cfg.Secret == "" || VerifySlaveProof(s.cfg.Secret, p.nonce, h)
	fail := func(code ErrorCode, off int64, format string, args ...any) (Accept, ConnID, *ErrorFrame) {
		if code == CodeNotAuthorised {
			s.counters.AuthFailures++
		} else {
			s.counters.HandshakeErrors++
		}
		ef := s.refusal(p, code, off, fmt.Sprintf(format, args...), logMin, logMax)
		return Accept{}, 0, &ef
	}
	if !p.authed {
		return fail(CodeNotAuthorised, 0, "bad or missing proof")
	}
	if s.demoted {
		return fail(CodeNotMaster, 0, "this broker is not a master any more")
	}
	if h.Cluster != s.cfg.ClusterName || h.BrokerName != s.cfg.BrokerName || h.BrokerID < 1 {
		return fail(CodeWrongGroup, 0, "slave %s/%s/%d does not belong to %s/%s", h.Cluster, h.BrokerName, h.BrokerID, s.cfg.ClusterName, s.cfg.BrokerName)
	}
	if h.SegmentSize != s.segSize {
		return fail(CodeConfigMismatch, s.segSize, "segment size %d, master uses %d", h.SegmentSize, s.segSize)
	}
	start := h.MaxOffset
	if h.MinOffset == h.MaxOffset {
		// Empty slave log: send everything the master holds.
		start = logMin
	} else {
		common := CommonPoint(s.epochs.entries, logMax, h.LastEpoch, h.LastEpochStart, h.MaxOffset)
		if common < 0 {
			return fail(CodeDiverged, h.MinOffset, "no common epoch (slave last epoch %d)", h.LastEpoch)
		}
		if common < h.MaxOffset {
			return fail(CodeDiverged, common, "slave log differs after %d (slave max %d, epoch %d)", common, h.MaxOffset, h.LastEpoch)
		}
		if h.MaxOffset < logMin {
			return fail(CodeOffsetTooOld, logMin, "slave max %d is below master min %d", h.MaxOffset, logMin)
		}
	}
	var replaced ConnID
	for _, o := range slices.Clone(s.streaming) {
		if o.id != id && o.brokerID == h.BrokerID {
			replaced = o.id
			s.forget(o.id)
		}
	}
	p.phase = phaseStreaming
	s.streaming = append(s.streaming, p)
	p.brokerID = h.BrokerID
	p.next = start
	// The slave holds everything below start (its epochs agree with ours).
	p.ackWritten = start
	p.ackFlushed = min(start, h.MaxOffset)
	p.lastAck = now
	s.completeWaiters()
	acc := Accept{Epoch: s.Epoch(), StartOffset: start, MasterMin: logMin, MasterMax: logMax,
		Confirmed: s.Confirmed(logMax), Epochs: s.epochs.Entries()}
	if s.cfg.Secret != "" {
		acc.Proof = AcceptProof(s.cfg.Secret, p.nonce, h, acc)
	}
	return acc, replaced, nil
}

// refusal builds a proven Error frame for p: the trailer carries the
// master's epoch and log bounds when the peer proved itself (a stranger
// learns nothing about the log), and the proof when a Secret is set.
func (s *MasterState) refusal(p *peer, code ErrorCode, off int64, msg string, logMin, logMax int64) ErrorFrame {
	ef := ErrorFrame{Code: code, Offset: off, Message: msg, Extended: true}
	if p.authed {
		ef.MasterEpoch, ef.MasterMin, ef.MasterMax = s.Epoch(), logMin, logMax
	}
	if s.cfg.Secret != "" {
		ef.Proof = ErrorProof(s.cfg.Secret, p.nonce, p.hs, ef)
	}
	return ef
}

// Refusal builds the Error frame to send on id before closing it (an
// invalid ack, a protocol error, a slave that fell behind retention while
// streaming). After a version-2 handshake it is proven like the handshake's
// verdict; before one it is a bare Error frame, which a slave never obeys.
func (s *MasterState) Refusal(id ConnID, code ErrorCode, off int64, msg string, logMin, logMax int64) ErrorFrame {
	p := s.peers[id]
	if p == nil || p.hs.Version < MinVersion {
		return ErrorFrame{Code: code, Offset: off, Message: msg}
	}
	return s.refusal(p, code, off, msg, logMin, logMax)
}

// Ack applies a slave acknowledgement. An invalid ack returns ErrBadAck
// (wrapped with the reason), is counted, and changes nothing: the caller
// closes the connection.
func (s *MasterState) Ack(id ConnID, a Ack, logMax int64, now time.Time) error {
	p := s.peers[id]
	if p == nil || p.phase != phaseStreaming {
		s.counters.ProtocolErrors++
		return fmt.Errorf("%w: ack before handshake", ErrUnexpectedFrame)
	}
	var reason string
	switch {
	case a.Written < p.ackWritten:
		reason = fmt.Sprintf("written %d goes backwards from %d", a.Written, p.ackWritten)
	case a.Written > logMax:
		reason = fmt.Sprintf("written %d beyond master max %d", a.Written, logMax)
	case a.Written > p.next:
		reason = fmt.Sprintf("written %d beyond what was sent (%d)", a.Written, p.next)
	case a.Flushed > a.Written:
		reason = fmt.Sprintf("flushed %d beyond written %d", a.Flushed, a.Written)
	}
	if reason != "" {
		s.counters.AckViolations++
		return fmt.Errorf("%w: %s", ErrBadAck, reason)
	}
	p.lastRead, p.lastAck = now, now
	p.ackWritten, p.ackFlushed = a.Written, max(a.Flushed, p.ackFlushed)
	s.completeWaiters()
	return nil
}

// quorumAck is the highest offset that InSyncReplicas-1 slaves have
// acknowledged (math.MaxInt64 when no slave is needed, -1 when too few).
func (s *MasterState) quorumAck() int64 {
	need := s.cfg.InSyncReplicas - 1
	if need <= 0 {
		return 1<<63 - 1
	}
	if need == 1 { // the common case, on every ack: no allocation
		best := int64(-1)
		for _, p := range s.streaming {
			best = max(best, p.ackWritten)
		}
		return best
	}
	acks := make([]int64, 0, len(s.streaming))
	for _, p := range s.streaming {
		acks = append(acks, p.ackWritten)
	}
	if len(acks) < need {
		return -1
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i] > acks[j] })
	return acks[need-1]
}

func (s *MasterState) completeWaiters() {
	if s.waiters.Len() > 0 {
		if q := s.quorumAck(); q >= 0 {
			s.waiters.completeUpTo(q)
		}
	}
}

// Confirmed is the highest offset held by InSyncReplicas copies.
func (s *MasterState) Confirmed(logMax int64) int64 {
	q := s.quorumAck()
	if q < 0 {
		return 0
	}
	return min(q, logMax)
}

func (s *MasterState) inSync(p *peer, logMax int64) bool {
	return p.phase == phaseStreaming && logMax-p.ackWritten <= s.cfg.MaxGapNotInSync
}

// InSyncCount is the number of copies in sync, the master included.
func (s *MasterState) InSyncCount(logMax int64) int {
	n := 1
	for _, p := range s.streaming {
		if s.inSync(p, logMax) {
			n++
		}
	}
	return n
}

// CanAccept is the strict-mode check made before a message is stored: it
// returns ErrNotEnoughInSync when MinInSyncReplicas > 1 and fewer copies are in sync.
func (s *MasterState) CanAccept(logMax int64) error {
	if s.cfg.MinInSyncReplicas > 1 {
		if n := s.InSyncCount(logMax); n < s.cfg.MinInSyncReplicas {
			return fmt.Errorf("%w: %d in sync, %d required", ErrNotEnoughInSync, n, s.cfg.MinInSyncReplicas)
		}
	}
	return nil
}

// Wait registers a SYNC_MASTER waiter for a message ending at endOffset. The
// channel (buffered) receives exactly one status: at once when the copies
// already exist (ReplOK), when too few slaves are in sync
// (ReplSlaveNotAvailable) or the deadline has passed (ReplTimeout);
// otherwise later from Ack or Expire.
func (s *MasterState) Wait(endOffset int64, deadline time.Time, logMax int64, now time.Time) <-chan ReplStatus {
	ch := make(chan ReplStatus, 1)
	switch {
	case s.cfg.InSyncReplicas <= 1 || s.quorumAck() >= endOffset:
		ch <- ReplOK
	case s.InSyncCount(logMax) < s.cfg.InSyncReplicas:
		ch <- ReplSlaveNotAvailable
	case !deadline.After(now):
		ch <- ReplTimeout
	default:
		s.waiters.add(endOffset, deadline, ch, nil)
	}
	return ch
}

// WaitFunc is WaitCallback with a function.
func (s *MasterState) WaitFunc(endOffset int64, deadline time.Time, logMax int64, now time.Time, fn func(ReplStatus)) (ReplStatus, bool) {
	return s.WaitCallback(endOffset, deadline, logMax, now, ReplFunc(fn))
}

// WaitCallback is Wait for a caller that wants to be called rather than to
// receive: cb gets exactly one status. When the status is known at once,
// WaitCallback returns it with ok set and never calls cb; otherwise cb is
// queued when an Ack, Expire or Close completes the waiter, and the driver
// calls it from TakeCompleted, outside its lock. An ack thereby answers the
// waiting send from the goroutine that read it, with no hand-off.
func (s *MasterState) WaitCallback(endOffset int64, deadline time.Time, logMax int64, now time.Time, cb ReplCallback) (ReplStatus, bool) {
	switch {
	case s.cfg.InSyncReplicas <= 1 || s.quorumAck() >= endOffset:
		return ReplOK, true
	case s.InSyncCount(logMax) < s.cfg.InSyncReplicas:
		return ReplSlaveNotAvailable, true
	case !deadline.After(now):
		return ReplTimeout, true
	}
	s.waiters.add(endOffset, deadline, nil, cb)
	return 0, false
}

// TakeCompleted appends the callback waiters completed since the last call
// to dst and forgets them.
func (s *MasterState) TakeCompleted(dst []Completion) []Completion {
	if len(s.waiters.fired) == 0 {
		return dst
	}
	dst = append(dst, s.waiters.fired...)
	clear(s.waiters.fired)
	s.waiters.fired = s.waiters.fired[:0]
	return dst
}

// Pending is the number of waiters not completed yet.
func (s *MasterState) Pending() int { return s.waiters.Len() }

// NextDeadline is the earliest waiter deadline.
func (s *MasterState) NextDeadline() (time.Time, bool) { return s.waiters.nextDeadline() }

// Expire completes waiters whose deadline passed with ReplTimeout and
// returns the connections silent for longer than HousekeepingInterval
// (already forgotten; the caller closes them).
func (s *MasterState) Expire(now time.Time) []ConnID {
	s.waiters.expire(now)
	var dead []ConnID
	for id, p := range s.peers {
		if now.Sub(p.lastRead) > s.cfg.HousekeepingInterval {
			dead = append(dead, id)
			s.forget(id)
			s.counters.Expired++
		}
	}
	return dead
}

// Close completes every pending waiter with ReplTimeout.
func (s *MasterState) Close() { s.waiters.failAll(ReplTimeout) }

// SendPlan says what a connection's sender should do next.
type SendPlan struct {
	Data      bool  // read and send records
	Offset    int64 // from here
	MaxBytes  int   // at most this many
	Epoch     int64 // epoch of those records
	Heartbeat bool  // nothing to send and idle for HeartbeatInterval
}

// Plan decides the next frame for id. With no data and no heartbeat due,
// the sender sleeps until the log grows or HeartbeatWait passes.
func (s *MasterState) Plan(id ConnID, logMax int64, now time.Time) SendPlan {
	p := s.peers[id]
	if p == nil || p.phase != phaseStreaming {
		return SendPlan{}
	}
	if p.next < logMax {
		n := min(int64(s.cfg.TransferBatchSize), logMax-p.next)
		epoch, end, ok := s.epochs.At(p.next)
		if !ok {
			epoch = s.Epoch()
		} else if end > 0 {
			n = min(n, end-p.next) // a batch never crosses an epoch boundary
		}
		return SendPlan{Data: true, Offset: p.next, MaxBytes: int(n), Epoch: epoch}
	}
	if now.Sub(p.lastSent) >= s.cfg.HeartbeatInterval {
		return SendPlan{Heartbeat: true}
	}
	return SendPlan{}
}

// HeartbeatWait is how long the sender of id may sleep before a heartbeat is due.
func (s *MasterState) HeartbeatWait(id ConnID, now time.Time) time.Duration {
	p := s.peers[id]
	if p == nil {
		return s.cfg.HeartbeatInterval
	}
	return max(0, s.cfg.HeartbeatInterval-now.Sub(p.lastSent))
}

// Sent records that n bytes from offset went out on id (n = 0 for a heartbeat).
func (s *MasterState) Sent(id ConnID, offset int64, n int, now time.Time) error {
	p := s.peers[id]
	if p == nil {
		return ErrClosed
	}
	if n > 0 {
		if offset != p.next {
			return fmt.Errorf("%w: sent %d, expected %d", ErrOffsetMismatch, offset, p.next)
		}
		p.next += int64(n)
	}
	p.lastSent = now
	return nil
}

// HeartbeatFrame builds the heartbeat for id.
func (s *MasterState) HeartbeatFrame(id ConnID, logMax int64) Heartbeat {
	h := Heartbeat{Epoch: s.Epoch(), MasterMax: logMax, Confirmed: s.Confirmed(logMax)}
	if p := s.peers[id]; p != nil {
		h.NextOffset = p.next
	}
	return h
}

// DataHeader builds the Data frame fields for records read per plan.
func (s *MasterState) DataHeader(plan SendPlan, records []byte, logMax int64) Data {
	return s.DataHeaderCRC(plan, BatchCRC(records), logMax)
}

// DataHeaderCRC is DataHeader for records whose BatchCRC the caller computed,
// so that the sender checksums a batch without holding the lock around the state.
func (s *MasterState) DataHeaderCRC(plan SendPlan, crc uint32, logMax int64) Data {
	return Data{Epoch: plan.Epoch, StartOffset: plan.Offset, MasterMax: logMax,
		Confirmed: s.Confirmed(logMax), CRC: crc}
}

// SlaveInfo is the status of one connected slave.
type SlaveInfo struct {
	Addr           string
	BrokerID       int64
	Streaming      bool // handshake done
	AckOffset      int64
	FlushedOffset  int64
	SentOffset     int64
	LagBytes       int64
	LagSeconds     float64 // time since its ack last reached the master's max (0 when caught up)
	InSync         bool
	LastAck        time.Time
	ConnectedSince time.Time
}

// MasterStatus is the master's replication status.
type MasterStatus struct {
	Epoch             int64
	MinOffset         int64
	MaxOffset         int64
	Confirmed         int64
	InSyncCount       int // copies in sync, master included
	InSyncReplicas    int
	MinInSyncReplicas int
	PendingWaiters    int
	Slaves            []SlaveInfo
	Counters          MasterCounters
}

// Status reports every connection, sorted by broker id then address.
func (s *MasterState) Status(logMin, logMax int64, now time.Time) MasterStatus {
	st := MasterStatus{Epoch: s.Epoch(), MinOffset: logMin, MaxOffset: logMax, Confirmed: s.Confirmed(logMax),
		InSyncCount: s.InSyncCount(logMax), InSyncReplicas: s.cfg.InSyncReplicas,
		MinInSyncReplicas: s.cfg.MinInSyncReplicas, PendingWaiters: s.waiters.Len(), Counters: s.counters}
	for _, p := range s.peers {
		si := SlaveInfo{Addr: p.addr, BrokerID: p.brokerID, Streaming: p.phase == phaseStreaming,
			AckOffset: p.ackWritten, FlushedOffset: p.ackFlushed, SentOffset: p.next,
			InSync: s.inSync(p, logMax), LastAck: p.lastAck, ConnectedSince: p.connectedSince}
		if si.Streaming {
			si.LagBytes = max(0, logMax-p.ackWritten)
			if si.LagBytes > 0 {
				si.LagSeconds = max(0, now.Sub(s.appendedAt(p.ackWritten, p.connectedSince)).Seconds())
			}
		}
		st.Slaves = append(st.Slaves, si)
	}
	sort.Slice(st.Slaves, func(i, j int) bool {
		if st.Slaves[i].BrokerID != st.Slaves[j].BrokerID {
			return st.Slaves[i].BrokerID < st.Slaves[j].BrokerID
		}
		return st.Slaves[i].Addr < st.Slaves[j].Addr
	})
	return st
}

// Appended records that the log reached maxOffset at now (driven by the
// log's OnAppend; samples closer than 1 ms are dropped).
func (s *MasterState) Appended(maxOffset int64, now time.Time) {
	if n := len(s.samples); n > 0 && (now.Sub(s.samples[n-1].t) < time.Millisecond || s.samples[n-1].off >= maxOffset) {
		return
	}
	if len(s.samples) >= maxSamples {
		k := copy(s.samples, s.samples[maxSamples/2:])
		s.samples = s.samples[:k]
	}
	s.samples = append(s.samples, appendSample{off: maxOffset, t: now})
}

// appendedAt estimates when the byte at off was appended: the time of the
// first sample past it. Older than the ring it returns the oldest sample
// (a lower bound on the lag); with no samples, fallback.
func (s *MasterState) appendedAt(off int64, fallback time.Time) time.Time {
	i := sort.Search(len(s.samples), func(i int) bool { return s.samples[i].off > off })
	if i < len(s.samples) {
		return s.samples[i].t
	}
	if n := len(s.samples); n > 0 {
		return s.samples[n-1].t
	}
	return fallback
}

package hawire

import (
	"fmt"
	"time"
)

// SlavePhase is where a slave is in its conversation with a master.
type SlavePhase int

// Slave phases.
const (
	SlaveDisconnected SlavePhase = iota
	SlaveAwaitHello
	SlaveAwaitAccept
	SlaveStreaming
	SlaveFailed // stopped after an unrecoverable answer; see Status.LastError
)

func (p SlavePhase) String() string {
	switch p {
	case SlaveDisconnected:
		return "disconnected"
	case SlaveAwaitHello:
		return "await-hello"
	case SlaveAwaitAccept:
		return "await-accept"
	case SlaveStreaming:
		return "streaming"
	case SlaveFailed:
		return "failed"
	}
	return "unknown"
}

// RecoveryKind is what a slave does after an Error frame.
type RecoveryKind int

// Recovery actions. Every one but RecoverStop is followed by a reconnect
// after the backoff (Disconnected returns the wait).
const (
	RecoverReconnect RecoveryKind = iota // reconnect after the backoff
	RecoverTruncate                      // Truncate(Offset), fix the epoch file, reconnect after the backoff
	RecoverReset                         // Reset(Offset) (segment-aligned), clear the epoch file, reconnect after the backoff
	RecoverStop                          // stop replicating; Status reports why
)

// Recovery is the slave's answer to an Error frame.
type Recovery struct {
	Kind   RecoveryKind
	Offset int64
	Code   ErrorCode // the master's code
	Proven bool      // the master proved the verdict
	Err    error
}

// LogView is the part of the slave's log the state machine looks at.
type LogView struct {
	Min, Max, Flushed, SegmentSize int64
}

// SlaveCounters count the verdicts a slave refused to obey.
type SlaveCounters struct {
	UnprovenMasters uint64 // ACCEPT or ERROR without a valid master proof
	StaleMasters    uint64 // master epoch below the slave's last epoch
	WipesRefused    uint64 // a wipe of the non-empty log without AllowWipe
	BadVerdicts     uint64 // verdicts that contradict the slave's log
	VersionRefusals uint64 // no protocol version shared with the peer
	Wipes           uint64 // wipes done with AllowWipe
}

// SlaveState is the slave's replication logic without sockets or clocks.
// The caller serialises calls.
type SlaveState struct {
	cfg          SlaveConfig
	epochs       *EpochHistory
	phase        SlavePhase
	next         int64 // where the next Data frame must start (received and validated so far)
	written      int64 // how far the log holds what was received (acknowledged)
	recvEpoch    int64 // epoch of the last validated Data frame
	masterEpochs []EpochEntry
	masterEpoch  int64
	masterMax    int64
	confirmed    int64
	lastRead     time.Time
	lastAck      time.Time
	caughtUpAt   time.Time
	lastErr      error
	// The conversation's handshake: the master's nonce from its Hello and
	// the handshake sent back (with the slave's nonce), which every master
	// proof on this connection must cover.
	masterNonce [NonceLen]byte
	sent        Handshake
	sentOK      bool
	// Reconnect backoff: the current bound (0 = none yet) and when the
	// current connection started streaming.
	backoff        time.Duration
	streamingSince time.Time
	counters       SlaveCounters
}

// NewSlaveState builds the slave state around its epoch history.
func NewSlaveState(cfg SlaveConfig, epochs *EpochHistory) *SlaveState {
	if cfg.Rand == nil {
		cfg.Rand = defaultRand
	}
	return &SlaveState{cfg: cfg, epochs: epochs}
}

// Phase is the current phase.
func (s *SlaveState) Phase() SlavePhase { return s.phase }

// Epochs is the slave's epoch history (owned by the state; lock around it).
func (s *SlaveState) Epochs() *EpochHistory { return s.epochs }

// Counters returns a copy of the refusal counters.
func (s *SlaveState) Counters() SlaveCounters { return s.counters }

// Connected starts a conversation.
func (s *SlaveState) Connected(now time.Time) {
	if s.phase != SlaveFailed {
		s.phase = SlaveAwaitHello
	}
	s.lastRead, s.lastAck = now, now
	s.sentOK = false
	s.streamingSince = time.Time{}
}

// Disconnected ends a conversation, or a dial that failed; err (may be nil)
// is kept for Status. It returns how long to wait before the next dial:
// the backoff bound doubles from ReconnectMin up to ReconnectMax on every
// call and is reset only by a connection that streamed for ReconnectReset;
// the wait is drawn in [bound/2, bound). Whatever a peer answers, dials are
// at least ReconnectMin/2 apart.
func (s *SlaveState) Disconnected(err error, now time.Time) time.Duration {
	if s.phase == SlaveStreaming && !s.streamingSince.IsZero() && now.Sub(s.streamingSince) >= s.cfg.ReconnectReset {
		s.backoff = 0
	}
	if s.phase != SlaveFailed {
		s.phase = SlaveDisconnected
		if err != nil {
			s.lastErr = err
		}
	}
	s.sentOK = false
	s.streamingSince = time.Time{}
	if s.backoff == 0 {
		s.backoff = s.cfg.ReconnectMin
	} else {
		s.backoff = min(2*s.backoff, s.cfg.ReconnectMax)
	}
	j := s.cfg.Rand()
	if j < 0 || j >= 1 {
		j = 0
	}
	return s.backoff/2 + time.Duration(j*float64(s.backoff/2))
}

// Fail stops replication for good (until restarted) with err.
func (s *SlaveState) Fail(err error) {
	s.phase = SlaveFailed
	s.lastErr = err
}

// OnHello answers the master's Hello with the Handshake to send. nonce is
// the slave's fresh random nonce for this connection. A Hello sharing no
// version is refused (ErrUnsupportedVersion): the driver reconnects after
// the backoff, since an unproven peer must not stop replication.
func (s *SlaveState) OnHello(h Hello, lv LogView, nonce [NonceLen]byte, now time.Time) (Handshake, error) {
	if s.phase != SlaveAwaitHello {
		return Handshake{}, fmt.Errorf("%w: HELLO in phase %s", ErrUnexpectedFrame, s.phase)
	}
	s.lastRead = now
	if MaxVersion < h.MinVersion || h.MaxVersion < MinVersion {
		s.counters.VersionRefusals++
		err := fmt.Errorf("%w: master speaks %d..%d, slave %d..%d", ErrUnsupportedVersion, h.MinVersion, h.MaxVersion, MinVersion, MaxVersion)
		s.lastErr = err
		return Handshake{}, err
	}
	hs := Handshake{Version: min(MaxVersion, h.MaxVersion), Cluster: s.cfg.ClusterName, BrokerName: s.cfg.BrokerName,
		BrokerID: s.cfg.BrokerID, MinOffset: lv.Min, MaxOffset: lv.Max, SegmentSize: lv.SegmentSize, SlaveNonce: nonce}
	if l, ok := s.epochs.Last(); ok {
		hs.LastEpoch, hs.LastEpochStart = l.Epoch, l.StartOffset
	}
	if s.cfg.Secret != "" {
		hs.Proof = SlaveProof(s.cfg.Secret, h.Nonce, hs)
	}
	s.masterNonce, s.sent, s.sentOK = h.Nonce, hs, true
	s.phase = SlaveAwaitAccept
	return hs, nil
}

// lastEpoch is the newest epoch of the slave's log (0 without any).
func (s *SlaveState) lastEpoch() int64 {
	l, _ := s.epochs.Last()
	return l.Epoch
}

// refuse records a refused verdict.
func (s *SlaveState) refuse(counter *uint64, err error) error {
	*counter++
	s.lastErr = err
	return err
}

// OnAccept starts streaming. It returns the first Ack to send. Nothing is
// taken from a master that does not prove the Accept (ErrMasterUnproven),
// whose epoch is below the slave's last epoch (ErrStaleMaster), or whose
// Accept contradicts the slave's log; the driver closes the connection and
// reconnects after the backoff.
func (s *SlaveState) OnAccept(a Accept, lv LogView, now time.Time) (Ack, error) {
	if s.phase != SlaveAwaitAccept || !s.sentOK {
		return Ack{}, fmt.Errorf("%w: ACCEPT in phase %s", ErrUnexpectedFrame, s.phase)
	}
	s.lastRead = now
	if s.cfg.Secret != "" && !VerifyAcceptProof(s.cfg.Secret, s.masterNonce, s.sent, a) {
		return Ack{}, s.refuse(&s.counters.UnprovenMasters, fmt.Errorf("%w: ACCEPT (epoch %d, start %d) without a valid proof", ErrMasterUnproven, a.Epoch, a.StartOffset))
	}
	if last := s.lastEpoch(); a.Epoch < last {
		return Ack{}, s.refuse(&s.counters.StaleMasters, fmt.Errorf("%w: master epoch %d, slave's last epoch %d", ErrStaleMaster, a.Epoch, last))
	}
	empty := lv.Min == lv.Max
	if !empty && a.StartOffset != lv.Max {
		return Ack{}, s.refuse(&s.counters.BadVerdicts, fmt.Errorf("%w: master starts at %d, slave log ends at %d", ErrOffsetMismatch, a.StartOffset, lv.Max))
	}
	if empty && a.StartOffset != lv.Max && lv.SegmentSize > 0 && a.StartOffset%lv.SegmentSize != 0 {
		return Ack{}, s.refuse(&s.counters.BadVerdicts, fmt.Errorf("%w: empty slave log cannot start at unaligned %d", ErrOffsetMismatch, a.StartOffset))
	}
	if a.StartOffset < a.MasterMin || a.StartOffset > a.MasterMax {
		return Ack{}, s.refuse(&s.counters.BadVerdicts, fmt.Errorf("%w: start %d outside the master's log [%d, %d]", ErrBadVerdict, a.StartOffset, a.MasterMin, a.MasterMax))
	}
	if _, err := NewEpochHistory(a.Epochs); err != nil {
		return Ack{}, err
	}
	s.phase = SlaveStreaming
	s.streamingSince = now
	s.next, s.written, s.recvEpoch = a.StartOffset, a.StartOffset, 0
	s.masterEpochs = a.Epochs
	s.masterEpoch, s.masterMax, s.confirmed = a.Epoch, a.MasterMax, a.Confirmed
	s.lastAck = now
	s.lastErr = nil
	s.noteCaughtUp(a.StartOffset, now)
	// An empty log starts at the master's start offset: nothing below it exists there.
	return Ack{Written: a.StartOffset, Flushed: min(lv.Flushed, a.StartOffset)}, nil
}

// DataPlan tells the driver how to apply a Data frame.
type DataPlan struct {
	// NewEpoch, when set, must be appended to the epoch history and saved
	// before the records are appended.
	NewEpoch *EpochEntry
}

// OnData validates a Data frame: it must continue exactly where the
// previous one ended, carry whole records with a good CRC, and its epoch must
// not go back. On success the frame counts as received; the caller appends it
// (in order) and then calls Appended, or drops the connection.
func (s *SlaveState) OnData(d Data, lv LogView, now time.Time) (DataPlan, error) {
	if s.phase != SlaveStreaming {
		return DataPlan{}, fmt.Errorf("%w: DATA in phase %s", ErrUnexpectedFrame, s.phase)
	}
	s.lastRead = now
	if d.StartOffset != s.next {
		return DataPlan{}, fmt.Errorf("%w: data at %d, expected %d", ErrOffsetMismatch, d.StartOffset, s.next)
	}
	if err := d.Verify(lv.SegmentSize); err != nil {
		return DataPlan{}, err
	}
	last, ok := s.epochs.Last()
	known := max(last.Epoch, s.recvEpoch)
	if d.Epoch < known {
		return DataPlan{}, fmt.Errorf("%w: data epoch %d older than %d", ErrEpochOrder, d.Epoch, known)
	}
	var plan DataPlan
	if d.Epoch > known || !ok {
		start := d.StartOffset
		for _, e := range s.masterEpochs {
			if e.Epoch == d.Epoch && e.StartOffset <= start {
				start = e.StartOffset
			}
		}
		if ok && start < last.StartOffset {
			start = d.StartOffset
		}
		plan.NewEpoch = &EpochEntry{Epoch: d.Epoch, StartOffset: start}
	}
	s.masterMax, s.confirmed = max(s.masterMax, d.MasterMax), d.Confirmed
	s.next += int64(len(d.Records))
	s.recvEpoch = d.Epoch
	return plan, nil
}

// Appended records that a received frame is in the log; it returns the Ack to send.
func (s *SlaveState) Appended(newEpoch *EpochEntry, lv LogView, now time.Time) Ack {
	if newEpoch != nil {
		if l, ok := s.epochs.Last(); !ok || l.Epoch < newEpoch.Epoch {
			_ = s.epochs.Append(*newEpoch) // validated in OnData
		}
	}
	s.written = lv.Max
	s.lastAck = now
	s.noteCaughtUp(lv.Max, now)
	return Ack{Written: lv.Max, Flushed: min(lv.Flushed, lv.Max)}
}

// Written is the offset acknowledged so far.
func (s *SlaveState) Written() int64 { return s.written }

// OnHeartbeat checks the master's position.
func (s *SlaveState) OnHeartbeat(h Heartbeat, lv LogView, now time.Time) error {
	if s.phase != SlaveStreaming {
		return fmt.Errorf("%w: HEARTBEAT in phase %s", ErrUnexpectedFrame, s.phase)
	}
	s.lastRead = now
	if h.NextOffset != s.next {
		return fmt.Errorf("%w: master will send %d, slave expects %d", ErrOffsetMismatch, h.NextOffset, s.next)
	}
	s.masterEpoch, s.masterMax, s.confirmed = h.Epoch, h.MasterMax, h.Confirmed
	s.noteCaughtUp(lv.Max, now)
	return nil
}

func (s *SlaveState) noteCaughtUp(localMax int64, now time.Time) {
	if localMax >= s.masterMax {
		s.caughtUpAt = now
	}
}

// OnError decides what to do about an Error frame from the master (see
// "Errors and recovery" in the package doc). Only a verdict the master
// proved, from a master whose epoch is not below the slave's last epoch,
// and that agrees with the slave's log may truncate, wipe or stop
// replication; anything else is a transient refusal (reconnect after the
// backoff), counted and kept for Status. A wipe of a non-empty log needs
// AllowWipe besides.
func (s *SlaveState) OnError(e ErrorFrame, lv LogView) Recovery {
	remote := &RemoteError{Code: e.Code, Offset: e.Offset, Message: e.Message}
	retry := func(counter *uint64, err error) Recovery {
		if counter != nil {
			*counter++
		}
		s.lastErr = err
		return Recovery{Kind: RecoverReconnect, Code: e.Code, Err: err}
	}
	proven := s.sentOK && e.Extended
	if s.cfg.Secret != "" {
		proven = proven && VerifyErrorProof(s.cfg.Secret, s.masterNonce, s.sent, e)
	}
	switch e.Code {
	case CodeDiverged, CodeOffsetTooOld, CodeUnsupportedVersion, CodeConfigMismatch:
	default:
		// NOT_AUTHORISED, NOT_MASTER, WRONG_GROUP, PROTOCOL: retry later,
		// proven or not.
		return retry(nil, remote)
	}
	if !proven {
		return retry(&s.counters.UnprovenMasters, fmt.Errorf("%w: refused %s: %w", ErrMasterUnproven, e.Code, remote))
	}
	if last := s.lastEpoch(); e.MasterEpoch < last {
		return retry(&s.counters.StaleMasters, fmt.Errorf("%w: master epoch %d, slave's last epoch %d: refused %w", ErrStaleMaster, e.MasterEpoch, last, remote))
	}
	stop := func() Recovery {
		s.Fail(remote)
		return Recovery{Kind: RecoverStop, Code: e.Code, Proven: true, Err: remote}
	}
	empty := lv.Min == lv.Max
	switch e.Code {
	case CodeDiverged:
		n := e.Offset
		if empty || n < 0 || n >= lv.Max {
			return retry(&s.counters.BadVerdicts, fmt.Errorf("%w: common point %d, slave log [%d, %d): refused %w", ErrBadVerdict, n, lv.Min, lv.Max, remote))
		}
		if s.cfg.OnDiverged != OnDivergedTruncate {
			return stop()
		}
		if n > lv.Min {
			if n > e.MasterMax {
				return retry(&s.counters.BadVerdicts, fmt.Errorf("%w: common point %d beyond the master's max %d: refused %w", ErrBadVerdict, n, e.MasterMax, remote))
			}
			s.lastErr = remote
			return Recovery{Kind: RecoverTruncate, Offset: n, Code: e.Code, Proven: true, Err: remote}
		}
		// Nothing in common above MinOffset: the whole log would go.
		if !s.cfg.AllowWipe {
			return retry(&s.counters.WipesRefused, fmt.Errorf("%w: master (epoch %d, log [%d, %d]) shares nothing with the slave log [%d, %d): refused %w",
				ErrWipeRefused, e.MasterEpoch, e.MasterMin, e.MasterMax, lv.Min, lv.Max, remote))
		}
		s.counters.Wipes++
		s.lastErr = remote
		return Recovery{Kind: RecoverReset, Offset: lv.Min, Code: e.Code, Proven: true, Err: remote}
	case CodeOffsetTooOld:
		if empty || e.Offset <= lv.Max {
			return retry(&s.counters.BadVerdicts, fmt.Errorf("%w: master min %d, slave log ends at %d: refused %w", ErrBadVerdict, e.Offset, lv.Max, remote))
		}
		if s.cfg.OnTooOld != OnTooOldWipe {
			return stop()
		}
		if !s.cfg.AllowWipe {
			return retry(&s.counters.WipesRefused, fmt.Errorf("%w: refused %w", ErrWipeRefused, remote))
		}
		s.counters.Wipes++
		s.lastErr = remote
		off := e.Offset
		if lv.SegmentSize > 0 {
			off -= off % lv.SegmentSize
		}
		return Recovery{Kind: RecoverReset, Offset: off, Code: e.Code, Proven: true, Err: remote}
	}
	// UNSUPPORTED_VERSION, CONFIG_MISMATCH from a proven master.
	return stop()
}

// AckDue reports whether HeartbeatInterval passed since the last ack.
func (s *SlaveState) AckDue(now time.Time) bool {
	return s.phase == SlaveStreaming && now.Sub(s.lastAck) >= s.cfg.HeartbeatInterval
}

// Touch records that bytes arrived from the master at now (part of a large
// frame): a slow but moving link is not a silent one.
func (s *SlaveState) Touch(now time.Time) {
	if now.After(s.lastRead) {
		s.lastRead = now
	}
}

// AckSent records a heartbeat ack.
func (s *SlaveState) AckSent(now time.Time) { s.lastAck = now }

// Expired reports whether the master has been silent for HousekeepingInterval.
func (s *SlaveState) Expired(now time.Time) bool {
	return (s.phase == SlaveStreaming || s.phase == SlaveAwaitAccept || s.phase == SlaveAwaitHello) &&
		now.Sub(s.lastRead) > s.cfg.HousekeepingInterval
}

// SlaveStatus is the slave's replication status.
type SlaveStatus struct {
	MasterAddr      string
	Connected       bool
	State           string
	MasterEpoch     int64
	MasterMaxOffset int64
	Confirmed       int64
	LocalMinOffset  int64
	LocalMaxOffset  int64
	FlushedOffset   int64
	LagBytes        int64
	LagSeconds      float64 // time since the slave last held everything the master had told it about
	LastEpoch       int64
	LastError       string
	Reconnects      uint64
	// Counters are the verdicts this slave refused (unproven, stale or
	// contradicting masters, refused wipes).
	Counters SlaveCounters
	// Truncations and TruncatedBytes count the divergent tails this process cut (or wiped) at
	// the master's request: bytes it held that the master's log does not. Under SYNC_MASTER
	// none of them was acknowledged with SEND_OK; under ASYNC_MASTER they may have been.
	Truncations    uint64
	TruncatedBytes int64
}

// Status fills the state-machine part of the status.
func (s *SlaveState) Status(lv LogView, now time.Time) SlaveStatus {
	st := SlaveStatus{Connected: s.phase == SlaveStreaming, State: s.phase.String(), MasterEpoch: s.masterEpoch,
		MasterMaxOffset: s.masterMax, Confirmed: s.confirmed, LocalMinOffset: lv.Min, LocalMaxOffset: lv.Max,
		FlushedOffset: lv.Flushed, LagBytes: max(0, s.masterMax-lv.Max), Counters: s.counters}
	if st.LagBytes > 0 && !s.caughtUpAt.IsZero() {
		st.LagSeconds = now.Sub(s.caughtUpAt).Seconds()
	}
	if l, ok := s.epochs.Last(); ok {
		st.LastEpoch = l.Epoch
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}

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

// Recovery actions.
const (
	RecoverReconnect RecoveryKind = iota // reconnect after the backoff
	RecoverTruncate                      // Truncate(Offset), fix the epoch file, reconnect at once
	RecoverReset                         // Reset(Offset), clear the epoch file, reconnect at once
	RecoverStop                          // stop replicating; Status reports why
)

// Recovery is the slave's answer to an Error frame.
type Recovery struct {
	Kind   RecoveryKind
	Offset int64
	Err    error
}

// LogView is the part of the slave's log the state machine looks at.
type LogView struct {
	Min, Max, Flushed, SegmentSize int64
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
}

// NewSlaveState builds the slave state around its epoch history.
func NewSlaveState(cfg SlaveConfig, epochs *EpochHistory) *SlaveState {
	return &SlaveState{cfg: cfg, epochs: epochs}
}

// Phase is the current phase.
func (s *SlaveState) Phase() SlavePhase { return s.phase }

// Epochs is the slave's epoch history (owned by the state; lock around it).
func (s *SlaveState) Epochs() *EpochHistory { return s.epochs }

// Connected starts a conversation.
func (s *SlaveState) Connected(now time.Time) {
	if s.phase != SlaveFailed {
		s.phase = SlaveAwaitHello
	}
	s.lastRead, s.lastAck = now, now
}

// Disconnected ends it; err (may be nil) is kept for Status.
func (s *SlaveState) Disconnected(err error) {
	if s.phase != SlaveFailed {
		s.phase = SlaveDisconnected
		if err != nil {
			s.lastErr = err
		}
	}
}

// Fail stops replication for good (until restarted) with err.
func (s *SlaveState) Fail(err error) {
	s.phase = SlaveFailed
	s.lastErr = err
}

// OnHello answers the master's Hello with the Handshake to send.
func (s *SlaveState) OnHello(h Hello, lv LogView, now time.Time) (Handshake, error) {
	if s.phase != SlaveAwaitHello {
		return Handshake{}, fmt.Errorf("%w: HELLO in phase %s", ErrUnexpectedFrame, s.phase)
	}
	s.lastRead = now
	if MaxVersion < h.MinVersion || h.MaxVersion < MinVersion {
		return Handshake{}, fmt.Errorf("%w: master speaks %d..%d, slave %d..%d", ErrUnsupportedVersion, h.MinVersion, h.MaxVersion, MinVersion, MaxVersion)
	}
	hs := Handshake{Version: min(MaxVersion, h.MaxVersion), Cluster: s.cfg.ClusterName, BrokerName: s.cfg.BrokerName,
		BrokerID: s.cfg.BrokerID, MinOffset: lv.Min, MaxOffset: lv.Max, SegmentSize: lv.SegmentSize}
	if l, ok := s.epochs.Last(); ok {
		hs.LastEpoch, hs.LastEpochStart = l.Epoch, l.StartOffset
	}
	if s.cfg.Secret != "" {
		hs.Proof = ComputeProof(s.cfg.Secret, h.Nonce, hs)
	}
	s.phase = SlaveAwaitAccept
	return hs, nil
}

// OnAccept starts streaming. It returns the first Ack to send.
func (s *SlaveState) OnAccept(a Accept, lv LogView, now time.Time) (Ack, error) {
	if s.phase != SlaveAwaitAccept {
		return Ack{}, fmt.Errorf("%w: ACCEPT in phase %s", ErrUnexpectedFrame, s.phase)
	}
	empty := lv.Min == lv.Max
	if !empty && a.StartOffset != lv.Max {
		return Ack{}, fmt.Errorf("%w: master starts at %d, slave log ends at %d", ErrOffsetMismatch, a.StartOffset, lv.Max)
	}
	if empty && a.StartOffset != lv.Max && lv.SegmentSize > 0 && a.StartOffset%lv.SegmentSize != 0 {
		return Ack{}, fmt.Errorf("%w: empty slave log cannot start at unaligned %d", ErrOffsetMismatch, a.StartOffset)
	}
	if _, err := NewEpochHistory(a.Epochs); err != nil {
		return Ack{}, err
	}
	s.phase = SlaveStreaming
	s.next, s.written, s.recvEpoch = a.StartOffset, a.StartOffset, 0
	s.masterEpochs = a.Epochs
	s.masterEpoch, s.masterMax, s.confirmed = a.Epoch, a.MasterMax, a.Confirmed
	s.lastRead, s.lastAck = now, now
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

// OnError decides the documented recovery for an Error frame from the master.
func (s *SlaveState) OnError(e ErrorFrame) Recovery {
	err := &RemoteError{Code: e.Code, Offset: e.Offset, Message: e.Message}
	s.lastErr = err
	switch e.Code {
	case CodeDiverged:
		if s.cfg.OnDiverged == OnDivergedTruncate {
			return Recovery{Kind: RecoverTruncate, Offset: e.Offset, Err: err}
		}
		s.Fail(err)
		return Recovery{Kind: RecoverStop, Err: err}
	case CodeOffsetTooOld:
		if s.cfg.OnTooOld == OnTooOldWipe {
			return Recovery{Kind: RecoverReset, Offset: e.Offset, Err: err}
		}
		s.Fail(err)
		return Recovery{Kind: RecoverStop, Err: err}
	case CodeUnsupportedVersion, CodeConfigMismatch:
		s.Fail(err)
		return Recovery{Kind: RecoverStop, Err: err}
	}
	return Recovery{Kind: RecoverReconnect, Err: err}
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
		FlushedOffset: lv.Flushed, LagBytes: max(0, s.masterMax-lv.Max)}
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

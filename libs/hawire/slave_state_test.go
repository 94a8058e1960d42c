package hawire

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const groupSecret = "the-group-secret-0123456789"

// conv is one connection of a SlaveState to a (real or fake) master: the
// Hello it got and the Handshake it sent back.
type conv struct {
	s  *SlaveState
	mn [NonceLen]byte
	hs Handshake
}

// slaveWith builds a SlaveState over a history whose last epoch is lastEpoch (starting at 0).
func slaveWith(t *testing.T, lastEpoch int64, tweak func(*SlaveConfig)) *SlaveState {
	t.Helper()
	cfg := DefaultSlaveConfig()
	cfg.Secret = groupSecret
	cfg.Rand = func() float64 { return 0 }
	if tweak != nil {
		tweak(&cfg)
	}
	require.NoError(t, cfg.Validate())
	var entries []EpochEntry
	if lastEpoch > 0 {
		entries = []EpochEntry{{Epoch: lastEpoch, StartOffset: 0}}
	}
	eh, err := NewEpochHistory(entries)
	require.NoError(t, err)
	return NewSlaveState(cfg, eh)
}

// connect runs Connected and OnHello with fresh nonces derived from seed.
func connect(t *testing.T, s *SlaveState, lv LogView, seed byte) *conv {
	t.Helper()
	c := &conv{s: s}
	c.mn[0], c.mn[1] = seed, 'm'
	var sn [NonceLen]byte
	sn[0], sn[1] = seed, 's'
	s.Connected(t0)
	hs, err := s.OnHello(Hello{MinVersion: MinVersion, MaxVersion: MaxVersion, Nonce: c.mn}, lv, sn, t0)
	require.NoError(t, err)
	c.hs = hs
	return c
}

// accept is an Accept proven with secret ("" = no proof) for this connection.
func (c *conv) accept(secret string, a Accept) Accept {
	if secret != "" {
		a.Proof = AcceptProof(secret, c.mn, c.hs, a)
	}
	return a
}

// refusal is an Error frame from a master of epoch epoch, proven with secret ("" = no proof).
func (c *conv) refusal(secret string, code ErrorCode, off, epoch int64) ErrorFrame {
	e := ErrorFrame{Code: code, Offset: off, Message: code.String(), Extended: true, MasterEpoch: epoch, MasterMin: 0, MasterMax: 0}
	if code == CodeOffsetTooOld {
		e.MasterMin, e.MasterMax = off, off+1000
	}
	if secret != "" {
		e.Proof = ErrorProof(secret, c.mn, c.hs, e)
	}
	return e
}

var fullLog = LogView{Min: 0, Max: 5000, Flushed: 5000, SegmentSize: 1000}

// TestUnprovenMasterCannotTouchTheLog: whatever a peer without the secret
// answers (DIVERGED at 0, OFFSET_TOO_OLD, ACCEPT), the slave takes no data,
// truncates nothing, wipes nothing and does not stop; it backs off, counts
// and reports the refusal. AllowWipe and OnTooOld=wipe are on, the most a
// master could ask of this slave.
func TestUnprovenMasterCannotTouchTheLog(t *testing.T) {
	allowAll := func(c *SlaveConfig) { c.AllowWipe, c.OnTooOld = true, OnTooOldWipe }
	for _, secret := range []string{"", "a-wrong-secret-0123456789"} {
		name := "no proof"
		if secret != "" {
			name = "wrong secret"
		}
		t.Run(name, func(t *testing.T) {
			s := slaveWith(t, 3, allowAll)
			for i, verdict := range []func(c *conv) ErrorFrame{
				func(c *conv) ErrorFrame { return c.refusal(secret, CodeDiverged, 0, 99) },
				func(c *conv) ErrorFrame { return c.refusal(secret, CodeOffsetTooOld, 9000, 99) },
				func(c *conv) ErrorFrame { return c.refusal(secret, CodeUnsupportedVersion, 0, 99) },
				func(c *conv) ErrorFrame { return c.refusal(secret, CodeConfigMismatch, 4096, 99) },
				func(*conv) ErrorFrame { return ErrorFrame{Code: CodeDiverged, Offset: 0} }, // no trailer at all
			} {
				e := verdict(connect(t, s, fullLog, byte(i+1)))
				r := s.OnError(e, fullLog)
				require.Equal(t, RecoverReconnect, r.Kind, "%s", e.Code)
				require.ErrorIs(t, r.Err, ErrMasterUnproven, "%s", e.Code)
				require.NotEqual(t, SlaveFailed, s.Phase())
				require.Contains(t, s.Status(fullLog, t0).LastError, "prove")
				require.Greater(t, s.Disconnected(r.Err, t0), time.Duration(0))
			}
			c := connect(t, s, fullLog, 6)
			_, err := s.OnAccept(c.accept(secret, Accept{Epoch: 99, StartOffset: 5000, MasterMax: 5000, Epochs: []EpochEntry{{3, 0}, {99, 5000}}}), fullLog, t0)
			require.ErrorIs(t, err, ErrMasterUnproven)
			recs := makeRecs(1, 64)
			_, err = s.OnData(Data{Epoch: 99, StartOffset: 5000, CRC: BatchCRC(recs), Records: recs}, fullLog, t0)
			require.ErrorIs(t, err, ErrUnexpectedFrame, "no data taken from an unproven master")
			require.Equal(t, uint64(6), s.Counters().UnprovenMasters)
			require.Zero(t, s.Counters().Wipes)
		})
	}
}

// TestReplayedMasterProofIsRefused: verdicts a master proved on one
// connection do not verify on another (the slave's nonce is fresh).
func TestReplayedMasterProofIsRefused(t *testing.T) {
	s := slaveWith(t, 3, func(c *SlaveConfig) { c.AllowWipe = true })
	a := connect(t, s, fullLog, 1)
	recordedErr := a.refusal(groupSecret, CodeDiverged, 0, 3)
	recordedAcc := a.accept(groupSecret, Accept{Epoch: 3, StartOffset: 5000, MasterMax: 6000, Epochs: []EpochEntry{{3, 0}}})
	s.Disconnected(nil, t0)

	// Same master nonce, new slave nonce.
	s.Connected(t0)
	hs, err := s.OnHello(Hello{MinVersion: MinVersion, MaxVersion: MaxVersion, Nonce: a.mn}, fullLog, [NonceLen]byte{9}, t0)
	require.NoError(t, err)
	require.NotEqual(t, a.hs.Proof, hs.Proof)
	r := s.OnError(recordedErr, fullLog)
	require.Equal(t, RecoverReconnect, r.Kind)
	require.ErrorIs(t, r.Err, ErrMasterUnproven)
	s.Disconnected(nil, t0)
	connect(t, s, fullLog, 2)
	_, err = s.OnAccept(recordedAcc, fullLog, t0)
	require.ErrorIs(t, err, ErrMasterUnproven)
	// The genuine verdict on its own connection would have been obeyed.
	b := connect(t, s, fullLog, 3)
	require.Equal(t, RecoverReset, s.OnError(b.refusal(groupSecret, CodeDiverged, 0, 3), fullLog).Kind)
}

// TestLowerEpochMasterIsRefused: a master whose epoch is below the slave's
// last epoch is refused, proven or not; one at or above it may truncate.
func TestLowerEpochMasterIsRefused(t *testing.T) {
	s := slaveWith(t, 5, nil)
	c := connect(t, s, fullLog, 1)
	_, err := s.OnAccept(c.accept(groupSecret, Accept{Epoch: 4, StartOffset: 5000, MasterMax: 6000, Epochs: []EpochEntry{{4, 0}}}), fullLog, t0)
	require.ErrorIs(t, err, ErrStaleMaster)
	require.Contains(t, s.Status(fullLog, t0).LastError, "epoch 4")
	s.Disconnected(err, t0)

	c = connect(t, s, fullLog, 2)
	r := s.OnError(c.refusal(groupSecret, CodeDiverged, 2000, 4), fullLog)
	require.Equal(t, RecoverReconnect, r.Kind)
	require.ErrorIs(t, r.Err, ErrStaleMaster)
	s.Disconnected(r.Err, t0)
	require.Equal(t, uint64(2), s.Counters().StaleMasters)

	for _, epoch := range []int64{5, 6} {
		c = connect(t, s, fullLog, byte(epoch))
		r = s.OnError(c.refusal(groupSecret, CodeDiverged, 2000, epoch), LogView{Min: 0, Max: 5000, SegmentSize: 1000})
		require.Equal(t, RecoverReconnect, r.Kind, "common point beyond the master's max (0)")
		require.ErrorIs(t, r.Err, ErrBadVerdict)
		s.Disconnected(r.Err, t0)
		c = connect(t, s, fullLog, byte(epoch+10))
		e := ErrorFrame{Code: CodeDiverged, Offset: 2000, Extended: true, MasterEpoch: epoch, MasterMax: 4000}
		e.Proof = ErrorProof(groupSecret, c.mn, c.hs, e)
		r = s.OnError(e, fullLog)
		require.Equal(t, RecoverTruncate, r.Kind, "epoch %d", epoch)
		require.Equal(t, int64(2000), r.Offset)
		s.Disconnected(r.Err, t0)
	}
}

// TestEmptyMasterCannotWipeWithoutAllowWipe: a proven master that shares
// nothing with the slave above its MinOffset (an empty or rebuilt master)
// or whose log starts after the slave's end makes a non-empty slave wipe
// only with AllowWipe.
func TestEmptyMasterCannotWipeWithoutAllowWipe(t *testing.T) {
	lv := LogView{Min: 1000, Max: 5000, SegmentSize: 1000}
	t.Run("refused", func(t *testing.T) {
		s := slaveWith(t, 3, nil)
		for i, off := range []int64{0, 1000} {
			c := connect(t, s, lv, byte(i))
			r := s.OnError(c.refusal(groupSecret, CodeDiverged, off, 7), lv)
			require.Equal(t, RecoverReconnect, r.Kind)
			require.ErrorIs(t, r.Err, ErrWipeRefused)
			require.Contains(t, s.Status(lv, t0).LastError, "AllowWipe")
			s.Disconnected(r.Err, t0)
		}
		// OnTooOld=fail: a proven OFFSET_TOO_OLD stops and reports, never wipes.
		c := connect(t, s, lv, 9)
		r := s.OnError(c.refusal(groupSecret, CodeOffsetTooOld, 9000, 7), lv)
		require.Equal(t, RecoverStop, r.Kind)
		require.Equal(t, uint64(2), s.Counters().WipesRefused)
		require.Zero(t, s.Counters().Wipes)
	})
	t.Run("allowed", func(t *testing.T) {
		s := slaveWith(t, 3, func(c *SlaveConfig) { c.AllowWipe, c.OnTooOld = true, OnTooOldWipe })
		c := connect(t, s, lv, 1)
		r := s.OnError(c.refusal(groupSecret, CodeDiverged, 0, 7), lv)
		require.Equal(t, RecoverReset, r.Kind)
		require.Equal(t, lv.Min, r.Offset)
		s.Disconnected(r.Err, t0)
		c = connect(t, s, lv, 2)
		r = s.OnError(c.refusal(groupSecret, CodeOffsetTooOld, 9500, 7), lv)
		require.Equal(t, RecoverReset, r.Kind)
		require.Equal(t, int64(9000), r.Offset, "segment-aligned")
		require.Equal(t, uint64(2), s.Counters().Wipes)
		// Still no wipe for a master below the slave's epoch.
		s.Disconnected(r.Err, t0)
		c = connect(t, s, lv, 3)
		require.ErrorIs(t, s.OnError(c.refusal(groupSecret, CodeDiverged, 0, 2), lv).Err, ErrStaleMaster)
	})
	t.Run("wipe needs AllowWipe in the configuration", func(t *testing.T) {
		cfg := DefaultSlaveConfig()
		cfg.Secret, cfg.OnTooOld = groupSecret, OnTooOldWipe
		require.ErrorContains(t, cfg.Validate(), "AllowWipe")
	})
}

// TestVerdictsThatContradictTheLog are refused even when proven.
func TestVerdictsThatContradictTheLog(t *testing.T) {
	s := slaveWith(t, 3, func(c *SlaveConfig) { c.AllowWipe, c.OnTooOld = true, OnTooOldWipe })
	for i, e := range []struct {
		code ErrorCode
		off  int64
	}{{CodeDiverged, 5000}, {CodeDiverged, 7000}, {CodeOffsetTooOld, 5000}, {CodeOffsetTooOld, 10}} {
		c := connect(t, s, fullLog, byte(i))
		r := s.OnError(c.refusal(groupSecret, e.code, e.off, 3), fullLog)
		require.Equal(t, RecoverReconnect, r.Kind, "%s at %d", e.code, e.off)
		require.ErrorIs(t, r.Err, ErrBadVerdict)
		s.Disconnected(r.Err, t0)
	}
	c := connect(t, s, fullLog, 9)
	_, err := s.OnAccept(c.accept(groupSecret, Accept{Epoch: 3, StartOffset: 5000, MasterMin: 0, MasterMax: 4000}), fullLog, t0)
	require.ErrorIs(t, err, ErrBadVerdict, "accept beyond the master's own max")
	require.Equal(t, uint64(5), s.Counters().BadVerdicts)
}

// TestVersionOneMasterIsRefusedNotObeyed: a Hello without a shared version
// is a refusal with backoff, never a stop (an unproven peer could send it).
func TestVersionOneMasterIsRefusedNotObeyed(t *testing.T) {
	s := slaveWith(t, 3, nil)
	s.Connected(t0)
	_, err := s.OnHello(Hello{MinVersion: Version1, MaxVersion: Version1}, fullLog, [NonceLen]byte{}, t0)
	require.ErrorIs(t, err, ErrUnsupportedVersion)
	require.NotEqual(t, SlaveFailed, s.Phase())
	require.Equal(t, uint64(1), s.Counters().VersionRefusals)
	require.Greater(t, s.Disconnected(err, t0), time.Duration(0))
	// Proven UNSUPPORTED_VERSION and CONFIG_MISMATCH do stop.
	c := connect(t, s, fullLog, 1)
	require.Equal(t, RecoverStop, s.OnError(c.refusal(groupSecret, CodeConfigMismatch, 4096, 3), fullLog).Kind)
}

// TestReconnectBackoff: every reconnect waits; the bound doubles up to the
// cap whatever the peer answers, the jitter stays in [bound/2, bound), and
// only a connection that streamed for ReconnectReset resets it.
func TestReconnectBackoff(t *testing.T) {
	for _, j := range []float64{0, 0.5, 0.999999} {
		t.Run(fmt.Sprint(j), func(t *testing.T) {
			s := slaveWith(t, 3, func(c *SlaveConfig) { c.Rand = func() float64 { return j } })
			cfg := s.cfg
			bound := cfg.ReconnectMin
			var total time.Duration
			n := 0
			for total < 20*time.Second {
				c := connect(t, s, fullLog, byte(n))
				// A peer that answers DIVERGED at 0 as fast as it can.
				r := s.OnError(c.refusal("", CodeDiverged, 0, 9), fullLog)
				d := s.Disconnected(r.Err, t0.Add(total))
				require.GreaterOrEqual(t, d, bound/2, "attempt %d", n)
				require.Less(t, d, bound+time.Nanosecond, "attempt %d", n)
				total += d
				bound = min(2*bound, cfg.ReconnectMax)
				n++
			}
			// 100ms doubling to 5s, waits of at least half the bound: at
			// most 14 attempts in 20 s (a busy loop makes thousands).
			require.LessOrEqual(t, n, 14, "attempts in 20 s")
		})
	}
	t.Run("reset only after a healthy streaming period", func(t *testing.T) {
		s := slaveWith(t, 3, nil)
		for i := 0; i < 6; i++ {
			s.Disconnected(nil, t0)
		}
		stream := func(at time.Time, seed byte) {
			c := connect(t, s, fullLog, seed)
			_, err := s.OnAccept(c.accept(groupSecret, Accept{Epoch: 3, StartOffset: 5000, MasterMax: 5000, Epochs: []EpochEntry{{3, 0}}}), fullLog, at)
			require.NoError(t, err)
		}
		stream(t0, 1)
		d := s.Disconnected(nil, t0.Add(s.cfg.ReconnectReset/2))
		require.GreaterOrEqual(t, d, s.cfg.ReconnectMax/2, "a short session does not reset the backoff")
		stream(t0, 2)
		d = s.Disconnected(nil, t0.Add(s.cfg.ReconnectReset))
		require.Equal(t, s.cfg.ReconnectMin/2, d, "a healthy session resets it")
	})
}

// TestMasterRefusesStrangerSlaves: without the secret (or with a wrong one)
// a slave is refused NOT_AUTHORISED, counted, and cannot acknowledge: SYNC
// waiters are answered SLAVE_NOT_AVAILABLE, never OK.
func TestMasterRefusesStrangerSlaves(t *testing.T) {
	s := testMasterState(t, groupSecret, EpochEntry{1, 0})
	var n [NonceLen]byte
	n[0] = 42
	for i, secret := range []string{"", "a-wrong-secret-0123456789"} {
		id := ConnID(i + 1)
		s.Connect(id, "stranger", n, t0)
		_, _, ef := s.Handshake(id, handshakeFor(secret, Hello{Nonce: n}, 0, 0, 0, 0), 0, 1000, t0)
		require.NotNil(t, ef)
		require.Equal(t, CodeNotAuthorised, ef.Code)
		require.Error(t, s.Ack(id, Ack{Written: 1000, Flushed: 1000}, 1000, t0), "acks from a refused peer")
		require.Equal(t, ReplSlaveNotAvailable, <-s.Wait(500, t0.Add(time.Second), 1000, t0))
		require.Equal(t, 1, s.InSyncCount(1000))
	}
	require.Equal(t, uint64(2), s.Counters().AuthFailures)
	st := s.Status(0, 1000, t0)
	for _, si := range st.Slaves {
		require.False(t, si.Streaming)
	}
}

// TestSlaveStatusSaysWhy: the refusal reason reaches Status.
func TestSlaveStatusSaysWhy(t *testing.T) {
	s := slaveWith(t, 5, nil)
	c := connect(t, s, fullLog, 1)
	r := s.OnError(c.refusal(groupSecret, CodeDiverged, 2000, 2), fullLog)
	require.ErrorIs(t, r.Err, ErrStaleMaster)
	st := s.Status(fullLog, t0)
	require.True(t, strings.Contains(st.LastError, "epoch 2") && strings.Contains(st.LastError, "DIVERGED"), st.LastError)
	require.Equal(t, uint64(1), st.Counters.StaleMasters)
}

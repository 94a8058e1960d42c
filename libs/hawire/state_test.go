package hawire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Unix(1_700_000_000, 0)

func testMasterState(t *testing.T, secret string, entries ...EpochEntry) *MasterState {
	cfg := DefaultMasterConfig()
	cfg.Secret = secret
	h, err := NewEpochHistory(entries)
	require.NoError(t, err)
	return NewMasterState(cfg, 1000, h)
}

func handshakeFor(secret string, hello Hello, min, max, epoch, epochStart int64) Handshake {
	hs := Handshake{Version: MaxVersion, Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1,
		MinOffset: min, MaxOffset: max, SegmentSize: 1000, LastEpoch: epoch, LastEpochStart: epochStart}
	hs.SlaveNonce[0] = byte(max)
	if secret != "" {
		hs.Proof = SlaveProof(secret, hello.Nonce, hs)
	}
	return hs
}

func TestMasterHandshakeDecisions(t *testing.T) {
	s := testMasterState(t, "k", EpochEntry{1, 0}, EpochEntry{3, 500}, EpochEntry{4, 800})
	var n [NonceLen]byte
	n[3] = 3
	v1 := handshakeFor("", Hello{Nonce: n}, 0, 0, 0, 0)
	v1.Version = Version1
	cases := []struct {
		name       string
		hs         Handshake
		code       ErrorCode
		off, start int64
	}{
		{"fresh slave gets everything from min", handshakeFor("k", Hello{Nonce: n}, 0, 0, 0, 0), 0, 0, 0},
		{"in step, current epoch", handshakeFor("k", Hello{Nonce: n}, 0, 900, 4, 800), 0, 0, 900},
		{"behind in an old epoch", handshakeFor("k", Hello{Nonce: n}, 0, 400, 1, 0), 0, 0, 400},
		{"old epoch tail beyond its end", handshakeFor("k", Hello{Nonce: n}, 0, 600, 1, 0), CodeDiverged, 500, 0},
		{"epoch the master never had", handshakeFor("k", Hello{Nonce: n}, 0, 700, 2, 450), CodeDiverged, 450, 0},
		{"same epoch other start", handshakeFor("k", Hello{Nonce: n}, 0, 900, 4, 820), CodeDiverged, 800, 0},
		{"ahead of master", handshakeFor("k", Hello{Nonce: n}, 0, 1200, 4, 800), CodeDiverged, 1000, 0},
		{"no epochs at all", handshakeFor("k", Hello{Nonce: n}, 100, 300, 0, 0), CodeDiverged, 100, 0},
		{"wrong secret", handshakeFor("x", Hello{Nonce: n}, 0, 0, 0, 0), CodeNotAuthorised, 0, 0},
		{"replayed proof from another nonce", handshakeFor("k", Hello{}, 0, 0, 0, 0), CodeNotAuthorised, 0, 0},
		{"no proof", handshakeFor("", Hello{Nonce: n}, 0, 0, 0, 0), CodeNotAuthorised, 0, 0},
	}
	for i, c := range cases {
		id := ConnID(i + 1)
		s.Connect(id, "x", n, t0)
		acc, _, ef := s.Handshake(id, c.hs, 0, 1000, t0)
		if c.code == 0 {
			require.Nil(t, ef, c.name)
			require.Equal(t, c.start, acc.StartOffset, c.name)
			require.Equal(t, int64(4), acc.Epoch)
			require.True(t, VerifyAcceptProof("k", n, c.hs, acc), "%s: the accept carries the master's proof", c.name)
		} else {
			require.NotNil(t, ef, c.name)
			require.Equal(t, c.code, ef.Code, c.name)
			require.Equal(t, c.off, ef.Offset, c.name)
			require.True(t, VerifyErrorProof("k", n, c.hs, *ef), "%s: the refusal carries the master's proof", c.name)
			if c.code == CodeNotAuthorised {
				require.Zero(t, ef.MasterEpoch+ef.MasterMin+ef.MasterMax, "%s: a stranger learns nothing about the log", c.name)
			} else {
				require.Equal(t, [3]int64{4, 0, 1000}, [3]int64{ef.MasterEpoch, ef.MasterMin, ef.MasterMax}, c.name)
			}
		}
		s.Disconnect(id)
	}
	// A version-1 handshake cannot carry a master proof: refused, unproven.
	s.Connect(99, "x", n, t0)
	_, _, ef := s.Handshake(99, v1, 0, 1000, t0)
	require.Equal(t, CodeUnsupportedVersion, ef.Code)
	require.False(t, ef.Extended)
	// Too old: log starts at 2000 now.
	s2 := testMasterState(t, "", EpochEntry{1, 0})
	s2.Connect(1, "x", n, t0)
	_, _, ef = s2.Handshake(1, handshakeFor("", Hello{}, 0, 500, 1, 0), 2000, 5000, t0)
	require.Equal(t, CodeOffsetTooOld, ef.Code)
	require.Equal(t, int64(2000), ef.Offset)
	// A second handshake on the same connection is refused.
	s2.Connect(2, "x", n, t0)
	_, _, ef = s2.Handshake(2, handshakeFor("", Hello{}, 0, 0, 0, 0), 0, 5000, t0)
	require.Nil(t, ef)
	_, _, ef = s2.Handshake(2, handshakeFor("", Hello{}, 0, 0, 0, 0), 0, 5000, t0)
	require.Equal(t, CodeProtocol, ef.Code)
}

func streamingPeer(t *testing.T, s *MasterState, id ConnID, brokerID, slaveMax, logMax int64) {
	s.Connect(id, "peer", [NonceLen]byte{}, t0)
	hs := handshakeFor("", Hello{}, 0, slaveMax, 1, 0)
	hs.BrokerID = brokerID
	_, _, ef := s.Handshake(id, hs, 0, logMax, t0)
	require.Nil(t, ef)
}

func TestAckValidationNeverMovesAck(t *testing.T) {
	s := testMasterState(t, "", EpochEntry{1, 0})
	streamingPeer(t, s, 1, 1, 100, 1000)
	require.NoError(t, s.Sent(1, 100, 200, t0))
	require.NoError(t, s.Ack(1, Ack{Written: 250, Flushed: 200}, 1000, t0))
	for _, a := range []Ack{{Written: 240, Flushed: 200}, {Written: 301, Flushed: 0}, {Written: 300, Flushed: 301}, {Written: 1001}} {
		require.ErrorIs(t, s.Ack(1, a, 1000, t0), ErrBadAck, "%+v", a)
	}
	require.Equal(t, int64(250), s.Status(0, 1000, t0).Slaves[0].AckOffset)
	require.Equal(t, uint64(4), s.Counters().AckViolations)
}

func TestWaitersCompleteByAckAndDeadline(t *testing.T) {
	s := testMasterState(t, "", EpochEntry{1, 0})
	// No slave: not available at once.
	require.Equal(t, ReplSlaveNotAvailable, <-s.Wait(10, t0.Add(time.Second), 100, t0))
	streamingPeer(t, s, 1, 1, 0, 0)
	require.NoError(t, s.Sent(1, 0, 1000, t0))
	var chs []<-chan ReplStatus
	for i := 1; i <= 10; i++ {
		chs = append(chs, s.Wait(int64(i*100), t0.Add(time.Duration(i)*time.Second), 1000, t0))
	}
	// Out-of-order insert.
	late := s.Wait(50, t0.Add(20*time.Second), 1000, t0)
	require.Equal(t, 11, s.Pending())
	require.NoError(t, s.Ack(1, Ack{Written: 500}, 1000, t0))
	require.Equal(t, ReplOK, <-late)
	for i := 0; i < 5; i++ {
		require.Equal(t, ReplOK, <-chs[i])
	}
	require.Equal(t, 5, s.Pending())
	d, ok := s.NextDeadline()
	require.True(t, ok)
	require.Equal(t, t0.Add(6*time.Second), d)
	s.Expire(t0.Add(7 * time.Second))
	require.Equal(t, ReplTimeout, <-chs[5])
	require.Equal(t, ReplTimeout, <-chs[6])
	require.NoError(t, s.Ack(1, Ack{Written: 1000}, 1000, t0.Add(7*time.Second)))
	for i := 7; i < 10; i++ {
		require.Equal(t, ReplOK, <-chs[i])
	}
	require.Zero(t, s.Pending())
	// Already acknowledged: OK at once.
	require.Equal(t, ReplOK, <-s.Wait(900, t0, 1000, t0))
	// Far behind: not in sync.
	s.cfg.MaxGapNotInSync = 10
	require.Equal(t, ReplSlaveNotAvailable, <-s.Wait(2000, t0.Add(time.Second), 2000, t0))
	require.Equal(t, 1, s.InSyncCount(2000))
	s.cfg.MinInSyncReplicas = 2
	require.ErrorIs(t, s.CanAccept(2000), ErrNotEnoughInSync)
	require.NoError(t, s.CanAccept(1005))
}

func TestQuorumOfThree(t *testing.T) {
	s := testMasterState(t, "", EpochEntry{1, 0})
	s.cfg.InSyncReplicas = 3
	streamingPeer(t, s, 1, 1, 0, 0)
	streamingPeer(t, s, 2, 2, 0, 0)
	_ = s.Sent(1, 0, 1000, t0)
	_ = s.Sent(2, 0, 1000, t0)
	ch := s.Wait(500, t0.Add(time.Second), 1000, t0)
	require.NoError(t, s.Ack(1, Ack{Written: 800}, 1000, t0))
	require.Empty(t, ch)
	require.NoError(t, s.Ack(2, Ack{Written: 600}, 1000, t0))
	require.Equal(t, ReplOK, <-ch)
	require.Equal(t, int64(600), s.Confirmed(1000))
}

func TestPlanRespectsBatchAndEpochs(t *testing.T) {
	s := testMasterState(t, "", EpochEntry{1, 0}, EpochEntry{2, 300})
	s.cfg.TransferBatchSize = 200
	s.cfg.HeartbeatInterval = time.Second
	streamingPeer(t, s, 1, 1, 0, 0)
	p := s.Plan(1, 1000, t0)
	require.Equal(t, SendPlan{Data: true, Offset: 0, MaxBytes: 200, Epoch: 1}, p)
	require.NoError(t, s.Sent(1, 0, 200, t0))
	p = s.Plan(1, 1000, t0)
	require.Equal(t, SendPlan{Data: true, Offset: 200, MaxBytes: 100, Epoch: 1}, p)
	require.NoError(t, s.Sent(1, 200, 100, t0))
	p = s.Plan(1, 1000, t0)
	require.Equal(t, int64(2), p.Epoch)
	require.NoError(t, s.Sent(1, 300, 700, t0))
	require.False(t, s.Plan(1, 1000, t0.Add(500*time.Millisecond)).Heartbeat)
	require.True(t, s.Plan(1, 1000, t0.Add(time.Second)).Heartbeat)
	require.Len(t, s.Expire(t0.Add(time.Minute)), 1)
}

// DataHeaderCRC, for a CRC the sender computed without the lock, builds the
// header DataHeader builds from the records themselves.
func TestDataHeaderCRCMatchesDataHeader(t *testing.T) {
	s := testMasterState(t, "", EpochEntry{1, 0})
	streamingPeer(t, s, 1, 1, 0, 0)
	records := []byte("records of one batch")
	p := s.Plan(1, 1000, t0)
	want := s.DataHeader(p, records, 1000)
	require.Equal(t, BatchCRC(records), want.CRC)
	require.Equal(t, want, s.DataHeaderCRC(p, BatchCRC(records), 1000))
}

func TestSlaveStateFlow(t *testing.T) {
	cfg := DefaultSlaveConfig()
	cfg.Secret = "k"
	eh, _ := NewEpochHistory(nil)
	s := NewSlaveState(cfg, eh)
	s.Connected(t0)
	lv := LogView{Min: 0, Max: 0, SegmentSize: 1000}
	mn := [NonceLen]byte{1}
	hs, err := s.OnHello(Hello{MinVersion: 1, MaxVersion: 3, Nonce: mn}, lv, [NonceLen]byte{2}, t0)
	require.NoError(t, err)
	require.Equal(t, Version2, hs.Version)
	require.Equal(t, [NonceLen]byte{2}, hs.SlaveNonce)
	require.True(t, VerifySlaveProof("k", mn, hs))
	acc := Accept{Epoch: 2, StartOffset: 2000, MasterMax: 2100, Epochs: []EpochEntry{{1, 0}, {2, 1500}}}
	acc.Proof = AcceptProof("k", mn, hs, acc)
	_, err = s.OnAccept(acc, lv, t0)
	require.NoError(t, err)
	recs := makeRecs(2, 50)
	d := Data{Epoch: 2, StartOffset: 2000, MasterMax: 2100, CRC: BatchCRC(recs), Records: recs}
	plan, err := s.OnData(d, lv, t0)
	require.NoError(t, err)
	require.Equal(t, &EpochEntry{2, 1500}, plan.NewEpoch)
	lv = LogView{Min: 2000, Max: 2100, Flushed: 2000, SegmentSize: 1000}
	ack := s.Appended(plan.NewEpoch, lv, t0)
	require.Equal(t, Ack{Written: 2100, Flushed: 2000}, ack)
	// Wrong offset, bad CRC.
	_, err = s.OnData(d, lv, t0)
	require.ErrorIs(t, err, ErrOffsetMismatch)
	d.StartOffset, d.CRC = 2100, 1
	_, err = s.OnData(d, lv, t0)
	require.ErrorIs(t, err, ErrBadCRC)
	proven := func(e ErrorFrame) ErrorFrame {
		e.Extended, e.MasterEpoch, e.MasterMin, e.MasterMax = true, 2, 0, 5000
		e.Proof = ErrorProof("k", mn, hs, e)
		return e
	}
	r := s.OnError(proven(ErrorFrame{Code: CodeDiverged, Offset: 2050}), lv)
	require.Equal(t, RecoverTruncate, r.Kind)
	require.Equal(t, int64(2050), r.Offset)
	require.Equal(t, RecoverStop, s.OnError(proven(ErrorFrame{Code: CodeOffsetTooOld, Offset: 3000}), lv).Kind)
	require.Equal(t, SlaveFailed, s.Phase())
}

func TestEpochFileRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	entries := []EpochEntry{{1, 0}, {2, 4096}, {5, 1 << 40}}
	require.NoError(t, SaveEpochFile(dir, entries))
	got, err := LoadEpochFile(dir)
	require.NoError(t, err)
	require.Equal(t, entries, got)
	b := formatEpochFile(entries)
	b[20] ^= 1
	_, err = parseEpochFile(b)
	require.ErrorIs(t, err, ErrEpochFile)
	got, err = LoadEpochFile(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, got)
}

func FuzzEpochFile(f *testing.F) {
	f.Add(formatEpochFile([]EpochEntry{{1, 0}, {2, 10}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := parseEpochFile(b); err == nil {
			if _, err := parseEpochFile(formatEpochFile(e)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

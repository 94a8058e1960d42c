package hawire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func split(t testing.TB, frame []byte, want FrameType) []byte {
	typ, body, rest, err := SplitFrame(frame)
	require.NoError(t, err)
	require.Empty(t, rest)
	require.Equal(t, want, typ)
	return body
}

func sampleHandshake() Handshake {
	h := Handshake{Version: Version2, Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1,
		MinOffset: 0, MaxOffset: 1 << 30, SegmentSize: 1 << 30, LastEpoch: 3, LastEpochStart: 4096,
		Proof: bytes.Repeat([]byte{7}, ProofLen)}
	h.SlaveNonce[0], h.SlaveNonce[31] = 5, 6
	return h
}

func TestRoundTripEveryFrame(t *testing.T) {
	h := Hello{MinVersion: 1, MaxVersion: 2}
	h.Nonce[0], h.Nonce[31] = 9, 10
	got, err := DecodeHello(split(t, AppendHello(nil, h), FrameHello))
	require.NoError(t, err)
	require.Equal(t, h, got)

	hs := sampleHandshake()
	gotHs, err := DecodeHandshake(split(t, AppendHandshake(nil, hs), FrameHandshake))
	require.NoError(t, err)
	require.Equal(t, hs, gotHs)

	// A version-1 handshake has no slave nonce; it still decodes, so the
	// master can name the peer it refuses.
	v1 := sampleHandshake()
	v1.Version, v1.SlaveNonce = Version1, [NonceLen]byte{}
	v1Body := split(t, AppendHandshake(nil, v1), FrameHandshake)
	require.Len(t, v1Body, len(split(t, AppendHandshake(nil, hs), FrameHandshake))-NonceLen)
	gotV1, err := DecodeHandshake(v1Body)
	require.NoError(t, err)
	require.Equal(t, v1, gotV1)

	a := Accept{Epoch: 4, StartOffset: 100, MasterMin: 0, MasterMax: 200, Confirmed: 150,
		Epochs: []EpochEntry{{1, 0}, {4, 90}}, Proof: bytes.Repeat([]byte{3}, ProofLen)}
	gotA, err := DecodeAccept(split(t, AppendAccept(nil, a), FrameAccept))
	require.NoError(t, err)
	require.Equal(t, a, gotA)
	a.Proof = nil
	gotA, err = DecodeAccept(split(t, AppendAccept(nil, a), FrameAccept))
	require.NoError(t, err)
	require.Equal(t, a, gotA)

	recs := makeRecs(3, 40)
	d := Data{Epoch: 4, StartOffset: 100, MasterMax: 300, Confirmed: 120, CRC: BatchCRC(recs), Records: recs}
	gotD, err := DecodeData(split(t, AppendData(nil, d), FrameData))
	require.NoError(t, err)
	require.Equal(t, d, gotD)
	require.NoError(t, gotD.Verify(0))

	hb := Heartbeat{Epoch: 4, MasterMax: 300, Confirmed: 200, NextOffset: 250}
	gotHb, err := DecodeHeartbeat(split(t, AppendHeartbeat(nil, hb), FrameHeartbeat))
	require.NoError(t, err)
	require.Equal(t, hb, gotHb)

	ack := Ack{Written: 300, Flushed: 200}
	gotAck, err := DecodeAck(split(t, AppendAck(nil, ack), FrameAck))
	require.NoError(t, err)
	require.Equal(t, ack, gotAck)

	e := ErrorFrame{Code: CodeDiverged, Offset: 77, Message: "diverged"}
	plain := split(t, AppendError(nil, e), FrameError)
	gotE, err := DecodeError(plain)
	require.NoError(t, err)
	require.Equal(t, e, gotE)

	// The version-2 trailer of a master's refusal.
	e.Extended, e.MasterEpoch, e.MasterMin, e.MasterMax = true, 9, 4096, 1<<40
	e.Proof = bytes.Repeat([]byte{1}, ProofLen)
	ext := split(t, AppendError(nil, e), FrameError)
	require.Equal(t, plain, ext[:len(plain)], "the trailer only appends")
	require.Len(t, ext, len(plain)+3*8+1+ProofLen)
	gotE, err = DecodeError(ext)
	require.NoError(t, err)
	require.Equal(t, e, gotE)
	for i := len(plain) + 1; i < len(ext); i++ {
		_, err := DecodeError(ext[:i])
		require.ErrorIs(t, err, ErrShortFrame, "trailer cut at %d", i)
	}
}

func TestFramesConcatenateAndStream(t *testing.T) {
	var b []byte
	b = AppendAck(b, Ack{Written: 1, Flushed: 1})
	b = AppendHeartbeat(b, Heartbeat{Epoch: 1})
	b = AppendError(b, ErrorFrame{Code: CodeNotMaster})
	fr := NewFrameReader(bytes.NewReader(b), 0)
	for _, want := range []FrameType{FrameAck, FrameHeartbeat, FrameError} {
		typ, _, err := fr.Next(MaxControlFrame)
		require.NoError(t, err)
		require.Equal(t, want, typ)
	}
	_, _, err := fr.Next(MaxControlFrame)
	require.Error(t, err)
}

// Reading a frame into a buffer that holds it allocates nothing (the master reads an ack per
// send, the slave a data frame per batch).
func TestFrameReaderAllocatesNothing(t *testing.T) {
	one := AppendAck(nil, Ack{Written: 1, Flushed: 1})
	stream := bytes.Repeat(one, 200)
	r := bytes.NewReader(stream)
	fr := NewFrameReader(r, 0)
	_, _, err := fr.Next(MaxControlFrame) // sizes its buffer
	require.NoError(t, err)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, _, err := fr.Next(MaxControlFrame); err != nil {
			t.Fatal(err)
		}
	}))
}

// FrameBuffered is true exactly when the next frame is whole in the read buffer: the slave
// then leaves a frame's ack to the frame after it.
func TestFrameBuffered(t *testing.T) {
	one := AppendAck(nil, Ack{Written: 1, Flushed: 1})
	two := AppendHeartbeat(nil, Heartbeat{Epoch: 1})
	stream := append(bytes.Clone(one), two...)
	for cut := 0; cut <= len(two); cut++ {
		pr, pw := io.Pipe()
		fr := NewFrameReader(pr, 0)
		go func() {
			_, _ = pw.Write(stream[:len(one)+cut]) // one write: buffered together
		}()
		typ, _, err := fr.Next(MaxControlFrame)
		require.NoError(t, err)
		require.Equal(t, FrameAck, typ)
		require.Equal(t, cut == len(two), fr.FrameBuffered(), "%d bytes of the next frame buffered", cut)
		pw.Close()
	}
}

func TestFrameReaderLimits(t *testing.T) {
	big := binary.BigEndian.AppendUint32(nil, 1<<30)
	big = append(big, byte(FrameData))
	_, _, err := NewFrameReader(bytes.NewReader(big), 0).Next(MaxHandshakeFrame)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	_, _, err = NewFrameReader(bytes.NewReader([]byte{0, 0, 0, 0, 1}), 0).Next(MaxHandshakeFrame)
	require.ErrorIs(t, err, ErrBadFrame)
}

func TestDecodersRejectShortAndBad(t *testing.T) {
	full := AppendHandshake(nil, sampleHandshake())
	body := split(t, full, FrameHandshake)
	for i := 0; i < len(body)-ProofLen-1; i++ {
		_, err := DecodeHandshake(body[:i])
		require.Error(t, err, "prefix %d", i)
	}
	bad := bytes.Clone(body)
	bad[0] ^= 1
	_, err := DecodeHandshake(bad)
	require.ErrorIs(t, err, ErrBadMagic)
	neg := split(t, AppendAck(nil, Ack{Written: -1}), FrameAck)
	_, err = DecodeAck(neg)
	require.ErrorIs(t, err, ErrBadFrame)
	huge := split(t, AppendAccept(nil, Accept{}), FrameAccept)
	binary.BigEndian.PutUint32(huge[40:], 1<<31)
	_, err = DecodeAccept(huge)
	require.ErrorIs(t, err, ErrBadFrame)
}

func TestSlaveProof(t *testing.T) {
	var n1, n2 [NonceLen]byte
	n2[0] = 1
	const secret = "0123456789abcdef-slave"
	hs := sampleHandshake()
	hs.Proof = SlaveProof(secret, n1, hs)
	require.True(t, VerifySlaveProof(secret, n1, hs))
	require.False(t, VerifySlaveProof(secret, n2, hs), "replayed on another master nonce")
	require.False(t, VerifySlaveProof("0123456789abcdef-other", n1, hs), "wrong secret")
	for name, tamper := range map[string]func(*Handshake){
		"max offset":  func(h *Handshake) { h.MaxOffset++ },
		"min offset":  func(h *Handshake) { h.MinOffset++ },
		"epoch":       func(h *Handshake) { h.LastEpoch++ },
		"broker id":   func(h *Handshake) { h.BrokerID++ },
		"broker":      func(h *Handshake) { h.BrokerName = "broker-b" },
		"slave nonce": func(h *Handshake) { h.SlaveNonce[3] ^= 1 },
		"version":     func(h *Handshake) { h.Version = Version1 },
		"short proof": func(h *Handshake) { h.Proof = h.Proof[:ProofLen-1] },
	} {
		h := hs
		h.Proof = bytes.Clone(hs.Proof)
		tamper(&h)
		require.False(t, VerifySlaveProof(secret, n1, h), "tampered %s", name)
	}
}

func TestMasterProofs(t *testing.T) {
	const secret = "0123456789abcdef-master"
	var mn [NonceLen]byte
	mn[7] = 7
	hs := sampleHandshake()
	hs.Proof = SlaveProof(secret, mn, hs)
	a := Accept{Epoch: 4, StartOffset: 100, MasterMin: 0, MasterMax: 200, Confirmed: 150, Epochs: []EpochEntry{{1, 0}, {4, 90}}}
	a.Proof = AcceptProof(secret, mn, hs, a)
	require.True(t, VerifyAcceptProof(secret, mn, hs, a))
	e := ErrorFrame{Code: CodeDiverged, Offset: 0, Message: "diverged", Extended: true, MasterEpoch: 4, MasterMin: 0, MasterMax: 200}
	e.Proof = ErrorProof(secret, mn, hs, e)
	require.True(t, VerifyErrorProof(secret, mn, hs, e))

	other := hs
	other.SlaveNonce[0] ^= 1
	require.False(t, VerifyAcceptProof(secret, mn, other, a), "accept replayed to another slave nonce")
	require.False(t, VerifyErrorProof(secret, mn, other, e), "error replayed to another slave nonce")
	var mn2 [NonceLen]byte
	require.False(t, VerifyAcceptProof(secret, mn2, hs, a), "accept replayed on another master nonce")
	require.False(t, VerifyErrorProof(secret, mn2, hs, e), "error replayed on another master nonce")
	require.False(t, VerifyAcceptProof("0123456789abcdef-wrong!", mn, hs, a), "wrong secret")
	id := hs
	id.BrokerID = 2
	id.Proof = SlaveProof(secret, mn, id)
	require.False(t, VerifyErrorProof(secret, mn, id, e), "verdict for another broker id")

	for name, tamper := range map[string]func(*ErrorFrame){
		"code":     func(e *ErrorFrame) { e.Code = CodeOffsetTooOld },
		"offset":   func(e *ErrorFrame) { e.Offset = 1 },
		"message":  func(e *ErrorFrame) { e.Message = "x" },
		"epoch":    func(e *ErrorFrame) { e.MasterEpoch = 5 },
		"min":      func(e *ErrorFrame) { e.MasterMin = 1 },
		"max":      func(e *ErrorFrame) { e.MasterMax = 1 },
		"trailer":  func(e *ErrorFrame) { e.Extended = false },
		"no proof": func(e *ErrorFrame) { e.Proof = nil },
	} {
		x := e
		tamper(&x)
		require.False(t, VerifyErrorProof(secret, mn, hs, x), "tampered %s", name)
	}
	for name, tamper := range map[string]func(*Accept){
		"epoch":     func(a *Accept) { a.Epoch = 5 },
		"start":     func(a *Accept) { a.StartOffset = 0 },
		"min":       func(a *Accept) { a.MasterMin = 1 },
		"max":       func(a *Accept) { a.MasterMax = 1 },
		"confirmed": func(a *Accept) { a.Confirmed = 1 },
		"epochs":    func(a *Accept) { a.Epochs = a.Epochs[:1] },
	} {
		x := a
		tamper(&x)
		require.False(t, VerifyAcceptProof(secret, mn, hs, x), "tampered %s", name)
	}

	// Domain and frame-type separation: no proof stands in for another.
	asErr := ErrorFrame{Extended: true, Proof: a.Proof}
	require.False(t, VerifyErrorProof(secret, mn, hs, asErr))
	require.False(t, VerifyAcceptProof(secret, mn, hs, Accept{Proof: hs.Proof}), "a slave proof is not a master proof")
	// Stable bytes: the proofs are a wire format; changing their input breaks peers.
	require.Equal(t, "rmqha/hawire v2 slave handshake proof\x00", slaveProofDomain)
	require.Equal(t, "rmqha/hawire v2 master verdict proof\x00", masterProofDomain)
}

func TestCheckRecords(t *testing.T) {
	recs := makeRecs(3, 40)
	require.NoError(t, CheckRecords(0, recs, 0))
	require.ErrorIs(t, CheckRecords(0, recs[:len(recs)-1], 0), ErrPartialRecord)
	// A BLANK that ends the segment.
	seg := int64(200)
	b := append(bytes.Clone(recs), blank(int(seg)-len(recs))...)
	require.NoError(t, CheckRecords(0, b, seg))
	require.ErrorIs(t, CheckRecords(0, b[:len(b)-1], seg), ErrPartialRecord)
	require.ErrorIs(t, CheckRecords(8, b, seg), ErrPartialRecord, "crosses the segment end")
	withAfter := append(bytes.Clone(blank(16)), recs...)
	require.ErrorIs(t, CheckRecords(0, withAfter, 0), ErrPartialRecord, "BLANK not last")
	junk := bytes.Clone(recs)
	junk[5] = 0
	require.True(t, errors.Is(CheckRecords(0, junk, 0), ErrPartialRecord))
}

func makeRecs(n, size int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		r := make([]byte, size)
		binary.BigEndian.PutUint32(r, uint32(size))
		binary.BigEndian.PutUint32(r[4:], MagicV1)
		for j := 8; j < size; j++ {
			r[j] = byte(i + j)
		}
		b = append(b, r...)
	}
	return b
}

func blank(n int) []byte {
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b, uint32(n))
	binary.BigEndian.PutUint32(b[4:], MagicBlank)
	return b
}

package hawire

import (
	"bytes"
	"encoding/binary"
	"errors"
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
	return Handshake{Version: 1, Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1,
		MinOffset: 0, MaxOffset: 1 << 30, SegmentSize: 1 << 30, LastEpoch: 3, LastEpochStart: 4096,
		Proof: bytes.Repeat([]byte{7}, ProofLen)}
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

	a := Accept{Epoch: 4, StartOffset: 100, MasterMin: 0, MasterMax: 200, Confirmed: 150,
		Epochs: []EpochEntry{{1, 0}, {4, 90}}}
	gotA, err := DecodeAccept(split(t, AppendAccept(nil, a), FrameAccept))
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
	gotE, err := DecodeError(split(t, AppendError(nil, e), FrameError))
	require.NoError(t, err)
	require.Equal(t, e, gotE)
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

func TestProof(t *testing.T) {
	var n1, n2 [NonceLen]byte
	n2[0] = 1
	hs := sampleHandshake()
	hs.Proof = ComputeProof("s3cret", n1, hs)
	require.True(t, VerifyProof("s3cret", n1, hs))
	require.False(t, VerifyProof("s3cret", n2, hs), "replayed on another nonce")
	require.False(t, VerifyProof("other", n1, hs))
	hs.MaxOffset++
	require.False(t, VerifyProof("s3cret", n1, hs), "tampered field")
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

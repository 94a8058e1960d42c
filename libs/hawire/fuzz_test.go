package hawire

import (
	"bytes"
	"testing"
)

// Each target decodes arbitrary bytes; whatever decodes must re-encode to a
// frame that decodes to the same value. None may panic.

func seedFrames(f *testing.F, frames ...[]byte) {
	for _, fr := range frames {
		_, body, _, err := SplitFrame(fr)
		if err == nil {
			f.Add(body)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
}

func FuzzHello(f *testing.F) {
	seedFrames(f, AppendHello(nil, Hello{MinVersion: 1, MaxVersion: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeHello(b)
		if err != nil {
			return
		}
		_, body, _, _ := SplitFrame(AppendHello(nil, v))
		w, err := DecodeHello(body)
		if err != nil || w != v {
			t.Fatalf("round trip: %v %+v %+v", err, v, w)
		}
	})
}

func FuzzHandshake(f *testing.F) {
	v1 := sampleHandshake()
	v1.Version = Version1
	seedFrames(f, AppendHandshake(nil, sampleHandshake()), AppendHandshake(nil, Handshake{}), AppendHandshake(nil, v1))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeHandshake(b)
		if err != nil {
			return
		}
		_, body, _, _ := SplitFrame(AppendHandshake(nil, v))
		w, err := DecodeHandshake(body)
		if err != nil || w.Cluster != v.Cluster || w.BrokerName != v.BrokerName || w.MaxOffset != v.MaxOffset ||
			w.LastEpoch != v.LastEpoch || !bytes.Equal(w.Proof, v.Proof) || w.BrokerID != v.BrokerID ||
			w.Version != v.Version || w.SlaveNonce != v.SlaveNonce || w.MinOffset != v.MinOffset {
			t.Fatalf("round trip: %v %+v %+v", err, v, w)
		}
	})
}

func FuzzAccept(f *testing.F) {
	seedFrames(f, AppendAccept(nil, Accept{Epoch: 2, Epochs: []EpochEntry{{1, 0}, {2, 10}}}),
		AppendAccept(nil, Accept{Epoch: 2, Epochs: []EpochEntry{{1, 0}}, Proof: bytes.Repeat([]byte{9}, ProofLen)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeAccept(b)
		if err != nil {
			return
		}
		_, body, _, _ := SplitFrame(AppendAccept(nil, v))
		w, err := DecodeAccept(body)
		if err != nil || len(w.Epochs) != len(v.Epochs) || w.StartOffset != v.StartOffset || w.Epoch != v.Epoch ||
			w.MasterMin != v.MasterMin || w.MasterMax != v.MasterMax || !bytes.Equal(w.Proof, v.Proof) {
			t.Fatalf("round trip: %v %+v %+v", err, v, w)
		}
		for i := range w.Epochs {
			if w.Epochs[i] != v.Epochs[i] {
				t.Fatalf("epoch %d differs", i)
			}
		}
	})
}

func FuzzData(f *testing.F) {
	recs := makeRecs(2, 20)
	seedFrames(f, AppendData(nil, Data{Epoch: 1, StartOffset: 0, CRC: BatchCRC(recs), Records: recs}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeData(b)
		if err != nil {
			return
		}
		_ = v.Verify(1 << 10) // must not panic
		_ = v.Verify(0)
		_, body, _, _ := SplitFrame(AppendData(nil, v))
		w, err := DecodeData(body)
		if err != nil || w.StartOffset != v.StartOffset || w.CRC != v.CRC || !bytes.Equal(w.Records, v.Records) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzHeartbeat(f *testing.F) {
	seedFrames(f, AppendHeartbeat(nil, Heartbeat{Epoch: 1, MasterMax: 5, NextOffset: 5}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeHeartbeat(b)
		if err != nil {
			return
		}
		_, body, _, _ := SplitFrame(AppendHeartbeat(nil, v))
		if w, err := DecodeHeartbeat(body); err != nil || w != v {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzAck(f *testing.F) {
	seedFrames(f, AppendAck(nil, Ack{Written: 10, Flushed: 5}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeAck(b)
		if err != nil {
			return
		}
		_, body, _, _ := SplitFrame(AppendAck(nil, v))
		if w, err := DecodeAck(body); err != nil || w != v {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzError(f *testing.F) {
	seedFrames(f, AppendError(nil, ErrorFrame{Code: CodeOffsetTooOld, Offset: 1 << 30, Message: "too old"}),
		AppendError(nil, ErrorFrame{Code: CodeDiverged, Message: "d", Extended: true, MasterEpoch: 3, MasterMax: 9, Proof: bytes.Repeat([]byte{2}, ProofLen)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeError(b)
		if err != nil {
			return
		}
		_, body, _, _ := SplitFrame(AppendError(nil, v))
		w, err := DecodeError(body)
		if err != nil || w.Code != v.Code || w.Offset != v.Offset || w.Message != v.Message || w.Extended != v.Extended ||
			w.MasterEpoch != v.MasterEpoch || w.MasterMin != v.MasterMin || w.MasterMax != v.MasterMax || !bytes.Equal(w.Proof, v.Proof) {
			t.Fatalf("round trip: %v %+v %+v", err, v, w)
		}
	})
}

// FuzzFrameStream feeds arbitrary bytes to the frame reader and every decoder.
func FuzzFrameStream(f *testing.F) {
	f.Add(AppendAck(AppendHello(nil, Hello{MinVersion: 1, MaxVersion: 1}), Ack{Written: 3}))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := NewFrameReader(bytes.NewReader(b), 0)
		for {
			typ, body, err := fr.Next(MaxHandshakeFrame)
			if err != nil {
				return
			}
			switch typ {
			case FrameHello:
				_, _ = DecodeHello(body)
			case FrameHandshake:
				_, _ = DecodeHandshake(body)
			case FrameAccept:
				_, _ = DecodeAccept(body)
			case FrameData:
				if d, err := DecodeData(body); err == nil {
					_ = d.Verify(64)
				}
			case FrameHeartbeat:
				_, _ = DecodeHeartbeat(body)
			case FrameAck:
				_, _ = DecodeAck(body)
			case FrameError:
				_, _ = DecodeError(body)
			}
		}
	})
}

// FuzzCheckRecords guards the record walker used on every Data frame.
func FuzzCheckRecords(f *testing.F) {
	f.Add(int64(0), makeRecs(2, 16), int64(64))
	f.Add(int64(32), append(makeRecs(1, 16), blank(16)...), int64(64))
	f.Fuzz(func(t *testing.T, start int64, b []byte, seg int64) {
		if start < 0 || seg < 0 || start > 1<<50 || seg > 1<<40 {
			return
		}
		_ = CheckRecords(start, b, seg)
	})
}

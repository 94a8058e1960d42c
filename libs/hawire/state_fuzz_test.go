package hawire

import (
	"slices"
	"testing"
	"time"
)

// FuzzMasterState drives MasterState with arbitrary event sequences and
// checks its invariants: acknowledged offsets never exceed the log's max and
// never go backwards, and every waiter completes exactly once.
func FuzzMasterState(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 2, 5, 3, 9, 4, 1, 5, 2})
	f.Add([]byte{0, 0, 1, 0, 3, 200, 3, 100, 5, 9, 6, 1, 2, 0, 4, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := DefaultMasterConfig()
		cfg.Secret = fuzzSecret
		cfg.MaxGapNotInSync = 1000
		cfg.InSyncReplicas = 2
		h, _ := NewEpochHistory([]EpochEntry{{1, 0}, {3, 500}})
		s := NewMasterState(cfg, 1000, h)
		now := t0
		logMin, logMax := int64(0), int64(100)
		type w struct {
			ch  <-chan ReplStatus
			got int
		}
		var waiters []*w
		lastAck := map[ConnID]int64{}
		next := func(i *int) int64 {
			if *i >= len(ops) {
				return 0
			}
			v := int64(ops[*i])
			*i++
			return v
		}
		for i := 0; i < len(ops); {
			op := next(&i) % 8
			id := ConnID(next(&i)%3 + 1)
			arg := next(&i) * 13
			switch op {
			case 0:
				s.Connect(id, "x", [NonceLen]byte{}, now)
			case 1:
				hs := Handshake{Version: MaxVersion, Cluster: cfg.ClusterName, BrokerName: cfg.BrokerName, BrokerID: int64(id),
					SegmentSize: 1000, MinOffset: 0, MaxOffset: arg % (logMax + 50), LastEpoch: arg % 4, LastEpochStart: (arg / 4) % 600}
				if arg%5 != 0 { // every fifth handshake comes without the secret
					hs.Proof = SlaveProof(fuzzSecret, [NonceLen]byte{}, hs)
				}
				acc, _, ef := s.Handshake(id, hs, logMin, logMax, now)
				if ef == nil {
					if hs.Proof == nil {
						t.Fatal("accepted a handshake without proof")
					}
					if !VerifyAcceptProof(fuzzSecret, [NonceLen]byte{}, hs, acc) {
						t.Fatal("accept without a valid master proof")
					}
					lastAck[id] = s.peers[id].ackWritten
				} else if ef.Extended && !VerifyErrorProof(fuzzSecret, [NonceLen]byte{}, hs, *ef) {
					t.Fatalf("refusal %s without a valid master proof", ef.Code)
				}
			case 2:
				_ = s.Ack(id, Ack{Written: arg, Flushed: arg / 2}, logMax, now)
			case 3:
				logMax += arg
				s.Appended(logMax, now)
			case 4:
				if p := s.Plan(id, logMax, now); p.Data {
					_ = s.Sent(id, p.Offset, p.MaxBytes, now)
				}
			case 5:
				waiters = append(waiters, &w{ch: s.Wait(arg, now.Add(time.Duration(arg)*time.Millisecond), logMax, now)})
			case 6:
				now = now.Add(time.Duration(arg) * time.Millisecond)
				for _, d := range s.Expire(now) {
					delete(lastAck, d)
				}
			case 7:
				s.Disconnect(id)
				delete(lastAck, id)
			}
			nStreaming := 0
			for pid, p := range s.peers {
				if p.phase != phaseStreaming {
					continue
				}
				nStreaming++
				if !slices.Contains(s.streaming, p) {
					t.Fatalf("streaming peer %d missing from the streaming list", pid)
				}
				if p.ackWritten > max(logMax, lastAck[pid]) || p.ackWritten < lastAck[pid] {
					t.Fatalf("peer %d ack %d (before %d, max %d)", pid, p.ackWritten, lastAck[pid], logMax)
				}
				lastAck[pid] = p.ackWritten
			}
			if len(s.streaming) != nStreaming {
				t.Fatalf("streaming list holds %d peers, %d are streaming", len(s.streaming), nStreaming)
			}
			_ = s.Status(logMin, logMax, now)
		}
		s.Close()
		for i, x := range waiters {
			for {
				select {
				case <-x.ch:
					x.got++
					continue
				default:
				}
				break
			}
			if x.got != 1 {
				t.Fatalf("waiter %d completed %d times", i, x.got)
			}
		}
	})
}

const fuzzSecret = "fuzz-secret-0123456789"

// FuzzSlaveState feeds arbitrary decoded frames to SlaveState: no panic,
// the expected offset only moves through validated data, and nothing a
// peer without the secret sends makes the slave take data, truncate, wipe
// or stop. Without a secret (AllowUnauthenticated) the epoch and wipe rules
// still hold: no wipe without AllowWipe, no truncation at or below MinOffset.
func FuzzSlaveState(f *testing.F) {
	recs := makeRecs(2, 40)
	f.Add(false, AppendData(AppendAccept(AppendHello(nil, Hello{MinVersion: 2, MaxVersion: 2}), Accept{Epoch: 1, Epochs: []EpochEntry{{1, 0}}}),
		Data{Epoch: 1, CRC: BatchCRC(recs), Records: recs}))
	f.Add(true, AppendError(AppendHello(nil, Hello{MinVersion: 2, MaxVersion: 2}), ErrorFrame{Code: CodeDiverged, Extended: true, MasterEpoch: 9}))
	f.Add(true, AppendError(AppendHello(nil, Hello{MinVersion: 2, MaxVersion: 2}), ErrorFrame{Code: CodeOffsetTooOld, Offset: 5000, Extended: true, MasterEpoch: 9}))
	f.Fuzz(func(t *testing.T, withSecret bool, b []byte) {
		eh, _ := NewEpochHistory([]EpochEntry{{3, 1000}})
		cfg := DefaultSlaveConfig()
		if withSecret {
			cfg.Secret = fuzzSecret
		} else {
			cfg.AllowUnauthenticated = true
		}
		s := NewSlaveState(cfg, eh)
		s.Connected(t0)
		lv := LogView{Min: 1000, Max: 2000, SegmentSize: 1000}
		for len(b) > 0 {
			typ, body, rest, err := SplitFrame(b)
			if err != nil {
				return
			}
			b = rest
			switch typ {
			case FrameHello:
				if h, err := DecodeHello(body); err == nil {
					_, _ = s.OnHello(h, lv, [NonceLen]byte{1}, t0)
				}
			case FrameAccept:
				if a, err := DecodeAccept(body); err == nil {
					if _, err := s.OnAccept(a, lv, t0); err == nil && withSecret {
						t.Fatal("streaming from a master without the secret")
					}
				}
			case FrameData:
				if d, err := DecodeData(body); err == nil {
					if plan, err := s.OnData(d, lv, t0); err == nil {
						if withSecret {
							t.Fatal("data taken from a master without the secret")
						}
						if lv.Min == lv.Max {
							lv.Min = d.StartOffset
						}
						lv.Max = d.StartOffset + int64(len(d.Records))
						s.Appended(plan.NewEpoch, lv, t0)
					}
				}
			case FrameHeartbeat:
				if h, err := DecodeHeartbeat(body); err == nil {
					_ = s.OnHeartbeat(h, lv, t0)
				}
			case FrameError:
				if e, err := DecodeError(body); err == nil {
					r := s.OnError(e, lv)
					switch {
					case withSecret && r.Kind != RecoverReconnect:
						t.Fatalf("%v from a master without the secret", r.Kind)
					case r.Kind == RecoverReset:
						t.Fatal("wipe without AllowWipe")
					case r.Kind == RecoverTruncate && r.Offset <= lv.Min:
						t.Fatalf("truncation at %d, slave min %d", r.Offset, lv.Min)
					case r.Kind != RecoverReconnect && e.MasterEpoch < 3:
						t.Fatalf("%v for a master of epoch %d below the slave's 3", r.Kind, e.MasterEpoch)
					}
				}
			}
			_ = s.Status(lv, t0)
			if s.Phase() == SlaveDisconnected || s.Phase() == SlaveFailed {
				s.Connected(t0)
			}
		}
	})
}

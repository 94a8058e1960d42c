package commitlog

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// model is the in-memory reference: the ordered list of stored messages.
type model struct {
	msgs []modelMsg
}

type modelMsg struct {
	off, end int64
	topic    string
	qid      int32
	qoff     int64
	body     string
}

func (m *model) queue(topic string, qid int32) []modelMsg {
	var out []modelMsg
	for _, x := range m.msgs {
		if x.topic == topic && x.qid == qid {
			out = append(out, x)
		}
	}
	return out
}

func (m *model) truncate(off int64) {
	k := 0
	for k < len(m.msgs) && m.msgs[k].off < off {
		k++
	}
	m.msgs = m.msgs[:k]
}

func TestModelBased(t *testing.T) {
	seeds := 6
	steps := 400
	if testing.Short() {
		seeds, steps = 2, 200
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed, steps) })
	}
}

func runModel(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	ref := &model{}
	mem := vfs.NewMem()
	cfg := testConfig(mem)
	cfg.CQUnitsPerFile = 8
	if seed%2 == 0 {
		cfg.WriteBuffer = 4096 // buffered appends: visible after commit
	}
	s := openStore(t, cfg)
	visible := func() {
		end := int64(0)
		if len(ref.msgs) > 0 {
			end = ref.msgs[len(ref.msgs)-1].end
		}
		require.NoError(t, s.WaitDispatched(end, time.Now().Add(10*time.Second)))
	}
	defer func() { s.Close() }()
	topics := []string{"A", "B", "%RETRY%g"}
	newMsg := func(topic string, q int32) *Message {
		n := rng.Intn(400)
		if rng.Intn(20) == 0 {
			n = 6000 + rng.Intn(1500) // close to the segment size
		}
		return msg(topic, q, strings.Repeat(string(rune('a'+rng.Intn(26))), n), fmt.Sprintf("t%d", rng.Intn(3)))
	}
	record := func(m *Message, r AppendResult) {
		ref.msgs = append(ref.msgs, modelMsg{off: r.WroteOffset, end: r.EndOffset, topic: m.Topic, qid: m.QueueID, qoff: r.QueueOffset, body: string(m.Body)})
	}
	for step := 0; step < steps; step++ {
		switch op := rng.Intn(100); {
		case op < 45: // append
			m := newMsg(topics[rng.Intn(len(topics))], int32(rng.Intn(2)))
			want := int64(len(ref.queue(m.Topic, m.QueueID)))
			r, err := s.Append(m)
			require.NoError(t, err)
			require.Equal(t, want, r.QueueOffset, "step %d", step)
			if len(ref.msgs) > 0 {
				require.GreaterOrEqual(t, r.WroteOffset, ref.msgs[len(ref.msgs)-1].end)
			}
			record(m, r)
		case op < 55: // batch
			topic, q := topics[rng.Intn(len(topics))], int32(rng.Intn(2))
			var ms []*Message
			for i := 0; i < 1+rng.Intn(4); i++ {
				m := newMsg(topic, q)
				m.Body = m.Body[:len(m.Body)%500]
				ms = append(ms, m)
			}
			want := int64(len(ref.queue(topic, q)))
			rs, err := s.AppendBatch(ms)
			require.NoError(t, err)
			for i, r := range rs {
				require.Equal(t, want+int64(i), r.QueueOffset)
				record(ms[i], r)
			}
		case op < 70: // get messages
			topic, q := topics[rng.Intn(len(topics))], int32(rng.Intn(2))
			visible()
			qm := ref.queue(topic, q)
			max := int64(len(qm))
			off := int64(rng.Intn(int(max) + 3))
			maxMsgs := 1 + rng.Intn(10)
			g := s.GetMessages(topic, q, off, maxMsgs, 1<<30, nil)
			switch {
			case max == 0:
				if s.getCQ(topic, q) == nil {
					require.Equal(t, NoMatchedLogicQueue, g.Status)
				} else {
					require.Equal(t, NoMessageInQueue, g.Status)
				}
				require.Equal(t, int64(0), g.NextBeginOffset)
			case off == max:
				require.Equal(t, OffsetOverflowOne, g.Status)
				require.Equal(t, off, g.NextBeginOffset)
			case off > max:
				require.Equal(t, OffsetOverflowBadly, g.Status)
				require.Equal(t, int64(0), g.NextBeginOffset)
			default:
				end := off + int64(maxMsgs)
				if fe := (off/8 + 1) * 8; fe < end {
					end = fe
				}
				if max < end {
					end = max
				}
				require.Equal(t, Found, g.Status)
				require.Equal(t, end, g.NextBeginOffset, "step %d off %d", step, off)
				require.Len(t, g.Records, int(end-off))
				for i, rec := range g.Records {
					r, _, err := DecodeRecord(rec)
					require.NoError(t, err)
					x := qm[off+int64(i)]
					require.Equal(t, x.body, string(r.Body))
					require.Equal(t, x.off, r.PhysicalOffset)
					require.Equal(t, x.qoff, r.QueueOffset)
				}
				require.Equal(t, max, g.MaxOffset)
			}
		case op < 80: // read a record
			if len(ref.msgs) == 0 {
				continue
			}
			visible()
			x := ref.msgs[rng.Intn(len(ref.msgs))]
			rec, err := s.ReadRecord(x.off)
			require.NoError(t, err)
			r, _, err := DecodeRecord(rec)
			require.NoError(t, err)
			require.Equal(t, x.body, string(r.Body))
			require.Equal(t, x.topic, r.Topic)
		case op < 85: // truncate
			if len(ref.msgs) == 0 {
				continue
			}
			x := ref.msgs[len(ref.msgs)-1-rng.Intn(min(len(ref.msgs), 5))]
			require.NoError(t, s.Truncate(x.off))
			ref.truncate(x.off)
			require.Equal(t, x.off, s.MaxOffset())
		case op < 92: // clean restart
			require.NoError(t, s.Close())
			s = openStore(t, cfg)
			require.True(t, s.Recovery().Clean)
		default: // power cut after a flush of everything acknowledged
			target := s.MaxOffset()
			if len(ref.msgs) > 0 {
				target = max(target, ref.msgs[len(ref.msgs)-1].end)
			}
			require.NoError(t, <-s.WaitFlush(target, time.Now().Add(10*time.Second)))
			before := s.MaxOffset()
			crashed := mem.CrashClone(seed*1000 + int64(step))
			s.Close()
			mem = crashed
			cfg.FS = mem
			s = openStore(t, cfg)
			require.Equal(t, before, s.MaxOffset(), "fsynced data lost")
		}
		// Invariants after every step.
		if len(ref.msgs) > 0 && cfg.WriteBuffer == 0 {
			require.LessOrEqual(t, ref.msgs[len(ref.msgs)-1].end, s.MaxOffset())
		}
		for _, topic := range topics {
			for q := int32(0); q < 2; q++ {
				_ = s.QueueMaxOffset(topic, q)
			}
		}
	}
}

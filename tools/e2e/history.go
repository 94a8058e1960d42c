package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/remoting"
)

// Sent is one message a test sent, with what the broker answered.
type Sent struct {
	Topic string
	Body  []byte
	// Props are the properties the producer set (TAGS, KEYS and user properties; not UNIQ_KEY).
	Props map[string]string
	// UniqKey is the client message id (UNIQ_KEY); empty for batch members.
	UniqKey string
	// Answered is true when the producer got an answer (any status) rather than an error.
	Answered bool
	Status   primitive.SendStatus
	Err      error
	// OffsetMsgID names the store host and CommitLog offset of the stored record.
	OffsetMsgID string
	QueueID     int
	QueueOffset int64
}

// Stored reports whether the broker said the message is stored. Every status the client maps
// without an error (SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) means
// the master holds it.
func (s Sent) Stored() bool { return s.Answered && s.Err == nil }

// History collects the sends of a run; safe for concurrent use.
type History struct {
	mu   sync.Mutex
	sent []Sent
}

// Add records the answer to a single-message send (SendSync or SendAsync callback).
func (h *History) Add(msg *primitive.Message, res *primitive.SendResult, err error) {
	h.AddBatch([]*primitive.Message{msg}, res, err)
}

// AddBatch records the answer to a send of msgs (one message or a batch). The broker answers a
// batch with the members' offset ids joined by ',' and the first member's queue offset.
func (h *History) AddBatch(msgs []*primitive.Message, res *primitive.SendResult, err error) {
	var ids []string
	if err == nil && res != nil {
		ids = strings.Split(res.OffsetMsgID, ",")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, m := range msgs {
		s := Sent{Topic: m.Topic, Body: append([]byte(nil), m.Body...), Props: userProps(m.GetProperties()), Err: err}
		s.UniqKey = m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
		if err == nil && res != nil {
			s.Answered, s.Status = true, res.Status
			if i < len(ids) {
				s.OffsetMsgID = ids[i]
			}
			if res.MessageQueue != nil {
				s.QueueID = res.MessageQueue.QueueId
			}
			s.QueueOffset = res.QueueOffset + int64(i)
		}
		h.sent = append(h.sent, s)
	}
}

// AddUnanswered records a send that gets no answer (oneway): it may or may not be stored.
func (h *History) AddUnanswered(msg *primitive.Message) {
	s := Sent{Topic: msg.Topic, Body: append([]byte(nil), msg.Body...), Props: userProps(msg.GetProperties())}
	s.UniqKey = msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
	h.mu.Lock()
	h.sent = append(h.sent, s)
	h.mu.Unlock()
}

// Sent returns a copy of every recorded send.
func (h *History) Sent() []Sent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Sent(nil), h.sent...)
}

// Counts returns how many sends got each status, errors under "error".
func (h *History) Counts() map[string]int {
	out := map[string]int{}
	for _, s := range h.Sent() {
		if !s.Answered && s.Err == nil {
			out["unanswered"]++
			continue
		}
		if !s.Stored() {
			out["error"]++
			continue
		}
		out[StatusName(s.Status)]++
	}
	return out
}

// StatusName is RocketMQ's name of a send status.
func StatusName(st primitive.SendStatus) string {
	switch st {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "UNKNOWN(" + strconv.Itoa(int(st)) + ")"
}

// Check verifies the history against each broker in addrs: first that no two stored messages
// were given the same CommitLog offset or the same queue offset; then, for every stored message,
// that the record at the CommitLog offset of its id (VIEW_MESSAGE_BY_ID) is that message, intact
// (topic, body, properties, client id) and at the queue offset the send answer named; and, per
// topic, that the queues (ids 0..MaxProbeQueues-1, by GET_MAX_OFFSET) hold no more entries than
// the stored messages plus the sends whose outcome is unknown (errors, oneway), so nothing was
// stored twice. The topics must have been written only through this history. It returns every
// violation found, wrapped in ErrHistory.
func (h *History) Check(ctx context.Context, cli *remoting.Client, addrs ...string) error {
	var problems []string
	type qkey struct {
		topic string
		queue int
		off   int64
	}
	byPhys := map[int64]int{}
	byQueue := map[qkey]int{}
	sent := h.Sent()
	phys := make([]int64, len(sent))
	for i, s := range sent {
		if !s.Stored() {
			continue
		}
		id, err := primitive.UnmarshalMsgID([]byte(s.OffsetMsgID))
		if err != nil {
			problems = append(problems, fmt.Sprintf("message %q: bad offset id %q: %v", s.Body, s.OffsetMsgID, err))
			phys[i] = -1
			continue
		}
		phys[i] = id.Offset
		if j, dup := byPhys[id.Offset]; dup {
			problems = append(problems, fmt.Sprintf("CommitLog offset %d given to %q and %q", id.Offset, sent[j].Body, s.Body))
		}
		byPhys[id.Offset] = i
		k := qkey{s.Topic, s.QueueID, s.QueueOffset}
		if j, dup := byQueue[k]; dup {
			problems = append(problems, fmt.Sprintf("queue offset %s/%d/%d given to %q and %q", s.Topic, s.QueueID, s.QueueOffset, sent[j].Body, s.Body))
		}
		byQueue[k] = i
	}
	for _, addr := range addrs {
		if err := WaitDispatched(ctx, cli, addr); err != nil {
			problems = append(problems, addr+": "+err.Error())
		}
		problems = append(problems, checkCounts(ctx, cli, addr, sent)...)
		for i, s := range sent {
			if !s.Stored() || phys[i] < 0 {
				continue
			}
			if p := checkOne(ctx, cli, addr, phys[i], s); p != "" {
				problems = append(problems, addr+": "+p)
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	return fmt.Errorf("%w:\n  %s", ErrHistory, strings.Join(problems, "\n  "))
}

// WaitDispatched waits until addr has built its consume queues (and message index) for
// everything its CommitLog holds: the queues are read next, and a broker that has just
// caught up, restarted or created many topics is still dispatching.
func WaitDispatched(ctx context.Context, cli *remoting.Client, addr string) error {
	for {
		resp, err := cli.Invoke(ctx, addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
		if err == nil && resp.Code == remoting.Success {
			var kv struct {
				Table map[string]string `json:"table"`
			}
			if err = json.Unmarshal(resp.Body, &kv); err == nil {
				d, e1 := strconv.ParseInt(kv.Table["dispatchedOffset"], 10, 64)
				m, e2 := strconv.ParseInt(kv.Table["commitLogMaxOffset"], 10, 64)
				if e1 != nil || e2 != nil {
					return fmt.Errorf("runtime info without dispatchedOffset/commitLogMaxOffset")
				}
				if d >= m {
					return nil
				}
				err = fmt.Errorf("dispatched %d of %d", d, m)
			}
		} else if err == nil {
			err = fmt.Errorf("runtime info: code %d %s", resp.Code, resp.Remark)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("consume queues not built before the deadline: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// MaxProbeQueues is how many queue ids Check asks each broker about per topic.
const MaxProbeQueues = 16

// checkCounts compares each topic's queue lengths on addr with the history.
func checkCounts(ctx context.Context, cli *remoting.Client, addr string, sent []Sent) []string {
	type tally struct {
		stored, unknown int64
		maxClaim        map[int]int64
	}
	topics := map[string]*tally{}
	for _, s := range sent {
		t := topics[s.Topic]
		if t == nil {
			t = &tally{maxClaim: map[int]int64{}}
			topics[s.Topic] = t
		}
		if s.Stored() {
			t.stored++
			if s.QueueOffset+1 > t.maxClaim[s.QueueID] {
				t.maxClaim[s.QueueID] = s.QueueOffset + 1
			}
		} else {
			t.unknown++
		}
	}
	var problems []string
	for topic, t := range topics {
		var total int64
		for q := 0; q < MaxProbeQueues; q++ {
			ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}
			resp, err := cli.Invoke(ctx, addr, remoting.NewRequest(remoting.GetMaxOffset, ext, nil))
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: max offset of %s/%d: %v", addr, topic, q, err))
				continue
			}
			n, err := resp.ExtInt64("offset")
			if resp.Code != remoting.Success || err != nil {
				n = 0 // no such queue
			}
			if n < t.maxClaim[q] {
				problems = append(problems, fmt.Sprintf("%s: %s/%d holds %d entries, a send was answered with offset %d", addr, topic, q, n, t.maxClaim[q]-1))
			}
			total += n
		}
		if total < t.stored || total > t.stored+t.unknown {
			problems = append(problems, fmt.Sprintf("%s: topic %s holds %d entries for %d stored and %d unknown sends", addr, topic, total, t.stored, t.unknown))
		}
	}
	return problems
}

func checkOne(ctx context.Context, cli *remoting.Client, addr string, phys int64, s Sent) string {
	req := remoting.NewRequest(remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(phys, 10)}, nil)
	resp, err := cli.Invoke(ctx, addr, req)
	if err != nil {
		return fmt.Sprintf("message %q at %d: %v", s.Body, phys, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Sprintf("message %q at %d: missing: code %d %s", s.Body, phys, resp.Code, resp.Remark)
	}
	msgs, err := decodeRecords(resp.Body)
	if err != nil || len(msgs) != 1 {
		return fmt.Sprintf("message %q at %d: %d records decoded (%v)", s.Body, phys, len(msgs), err)
	}
	m := msgs[0]
	var diffs []string
	if m.Topic != s.Topic {
		diffs = append(diffs, fmt.Sprintf("topic %q", m.Topic))
	}
	if !bytes.Equal(m.Body, s.Body) {
		diffs = append(diffs, fmt.Sprintf("body %q", m.Body))
	}
	if m.CommitLogOffset != phys {
		diffs = append(diffs, fmt.Sprintf("commit log offset %d", m.CommitLogOffset))
	}
	if int(m.Queue.QueueId) != s.QueueID || m.QueueOffset != s.QueueOffset {
		diffs = append(diffs, fmt.Sprintf("queue %d offset %d, answer said %d/%d", m.Queue.QueueId, m.QueueOffset, s.QueueID, s.QueueOffset))
	}
	got := m.GetProperties()
	for k, v := range s.Props {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("property %s=%q, sent %q", k, got[k], v))
		}
	}
	if s.UniqKey != "" && got[primitive.PropertyUniqueClientMessageIdKeyIndex] != s.UniqKey {
		diffs = append(diffs, fmt.Sprintf("UNIQ_KEY %q, sent %q", got[primitive.PropertyUniqueClientMessageIdKeyIndex], s.UniqKey))
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("message %q at %d differs: %s", s.Body, phys, strings.Join(diffs, "; "))
}

// decodeRecords decodes CommitLog records with the client's own decoder, turning a panic on
// malformed bytes into an error.
func decodeRecords(b []byte) (msgs []*primitive.MessageExt, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("undecodable record: %v", r)
		}
	}()
	if len(b) < 4 {
		return nil, errors.New("short record")
	}
	return primitive.DecodeMessage(b), nil
}

// userProps keeps the properties a producer sets itself and the broker must store unchanged.
func userProps(p map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		if k == primitive.PropertyUniqueClientMessageIdKeyIndex || k == "WAIT" {
			continue
		}
		out[k] = v
	}
	return out
}

package commitlog

import (
	"fmt"
)

// GetStatus is RocketMQ's GetMessageStatus.
type GetStatus int

// Statuses of GetMessages (names as in RocketMQ).
const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowOne
	OffsetOverflowBadly
	OffsetTooSmall
	NoMessageInQueue
	NoMatchedLogicQueue
)

var getStatusNames = [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
	"OFFSET_OVERFLOW_ONE", "OFFSET_OVERFLOW_BADLY", "OFFSET_TOO_SMALL", "NO_MESSAGE_IN_QUEUE", "NO_MATCHED_LOGIC_QUEUE"}

func (g GetStatus) String() string {
	if int(g) < len(getStatusNames) && g >= 0 {
		return getStatusNames[g]
	}
	return fmt.Sprintf("GetStatus(%d)", int(g))
}

// GetResult is the outcome of GetMessages.
type GetResult struct {
	Status               GetStatus
	Records              [][]byte // raw stored records as they are
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
	MaxPhysOffsetScanned int64 // physical offset of the last CQ unit scanned (for suggestWhichBrokerId)
}

// maxScanUnits bounds the units one GetMessages call walks when filtering
// (RocketMQ: max(16000 bytes, maxMsgNums*20)).
func maxScanUnits(maxMsgs int) int {
	n := 16000 / CQUnitSize
	if maxMsgs > n {
		n = maxMsgs
	}
	return n
}

// Filter selects the messages GetFiltered returns. Both stages are optional; a zero Filter
// returns every message.
type Filter struct {
	// Tags sees the tags code of each consume-queue unit before its record is read (RocketMQ's
	// isMatchedByConsumeQueue); nil passes every unit.
	Tags func(tagsCode int64) bool
	// Properties sees the stored properties section (name 0x01 value 0x02, repeated) of each
	// record that passed Tags, once the record is read and validated (RocketMQ's
	// isMatchedByCommitLog); nil passes every record. The slice aliases a read buffer: it is
	// valid only during the call and must not be modified or kept.
	Properties func(props []byte) bool
}

// GetMessages reads up to maxMsgs messages (and about maxBytes, at least one
// message) from a queue starting at a logical offset, keeping those whose
// tags code passes match (nil matches all). It is GetFiltered with
// Filter{Tags: match}.
func (s *Store) GetMessages(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int, match func(tagsCode int64) bool) GetResult {
	return s.GetFiltered(topic, queueID, offset, maxMsgs, maxBytes, Filter{Tags: match})
}

// GetFiltered reads up to maxMsgs messages (and about maxBytes, at least one message) that
// pass f from a queue, starting at a logical offset. Statuses and NextBeginOffset follow
// RocketMQ's DefaultMessageStore.getMessage as seen by a master: for error statuses
// NextBeginOffset is the corrected offset (0, min or max); a slave that must keep the
// requested offset replaces it itself.
//
// At most maxScanUnits consume-queue units are examined per call. Units failing f.Tags are
// skipped without reading their records. With f.Properties the candidates are read in rounds:
// each round selects as many units as the limits leave room for (counting only records
// already accepted), reads them (contiguous records with one pread), and keeps those whose
// properties pass; rejected records free their share of the limits for the next round, so
// maxMsgs and maxBytes count accepted records only. NextBeginOffset is the first unit not
// examined; when every examined record was rejected the status is NoMatchedMessage with
// NextBeginOffset past them (the consumer's PULL_RETRY_IMMEDIATELY). Records of a round that
// mixes accepted and rejected ones are copied out, so a call keeps about maxBytes of memory
// whatever it rejected.
func (s *Store) GetFiltered(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int, f Filter) GetResult {
	res := GetResult{NextBeginOffset: offset}
	if maxMsgs <= 0 {
		maxMsgs = 1
	}
	cq := s.getCQ(topic, queueID)
	if cq == nil || s.closed.Load() {
		res.Status = NoMatchedLogicQueue
		res.NextBeginOffset = 0
		return res
	}
	min, max := cq.bounds()
	res.MinOffset, res.MaxOffset = min, max
	switch {
	case max == 0:
		res.Status, res.NextBeginOffset = NoMessageInQueue, 0
		return res
	case offset < min:
		res.Status, res.NextBeginOffset = OffsetTooSmall, min
		return res
	case offset == max:
		res.Status = OffsetOverflowOne
		return res
	case offset > max:
		res.Status = OffsetOverflowBadly
		if min == 0 {
			res.NextBeginOffset = min
		} else {
			res.NextBeginOffset = max
		}
		return res
	}
	units, err := cq.readUnits(offset, maxScanUnits(maxMsgs))
	if err != nil || len(units) == 0 {
		res.Status = OffsetFoundNull
		next := (offset/cq.per + 1) * cq.per
		if next > max {
			next = max
		}
		res.NextBeginOffset = next
		return res
	}
	res.Status = NoMatchedMessage
	n := len(units) / CQUnitSize
	// No round selects more than maxMsgs units, and no call returns more: one allocation each.
	most := maxMsgs
	if n < most {
		most = n
	}
	g := getter{s: s, topic: topic, queueID: queueID, most: most}
	g.picks = make([]pick, 0, g.most)
	clMin := s.minOffset.Load()
	nextPhysFileStart := int64(-1)
	i := 0
	for i < n {
		// One round: select candidates while the limits leave room, then read them.
		g.picks = g.picks[:0]
		pending, full := 0, false
		for ; i < n; i++ {
			u := getUnit(units[i*CQUnitSize:])
			res.MaxPhysOffsetScanned = u.phys
			if !u.valid() || int64(u.size) > s.maxRecordBytes() || u.phys+int64(u.size) > s.segEnd(u.phys) {
				continue
			}
			if nextPhysFileStart >= 0 && u.phys < nextPhysFileStart {
				continue
			}
			have := len(res.Records) + len(g.picks)
			if have > 0 && (have >= maxMsgs || (maxBytes > 0 && g.total+pending+int(u.size) > maxBytes)) {
				full = true
				break
			}
			if f.Tags != nil && !f.Tags(u.tags) {
				continue
			}
			if u.phys < clMin {
				if g.total+pending == 0 {
					res.Status = MessageWasRemoving
				}
				nextPhysFileStart = s.segEnd(u.phys)
				continue
			}
			g.picks = append(g.picks, pick{u.phys, u.size, offset + int64(i)})
			pending += int(u.size)
			nextPhysFileStart = -1
		}
		rejected := g.read(&res, f.Properties)
		if full && (f.Properties == nil || rejected == 0) {
			break // the limits are reached by what is returned
		}
	}
	res.NextBeginOffset = offset + int64(i)
	return res
}

// pick is a consume-queue unit selected for reading.
type pick struct {
	phys int64
	size int32
	q    int64
}

// getter reads the picks of GetFiltered's rounds.
type getter struct {
	s       *Store
	topic   string
	queueID int32
	most    int // capacity of the result's record list
	picks   []pick
	total   int // bytes of res.Records
}

// read reads the current picks (contiguous runs with one pread each), validates each record,
// applies the properties filter props (nil: none) and appends what passes to res. It returns how many
// picks were not returned (rejected by the filter, invalid, or unreadable).
func (g *getter) read(res *GetResult, props func([]byte) bool) (notReturned int) {
	s, picks := g.s, g.picks
	for a := 0; a < len(picks); {
		b := a + 1
		runEnd := picks[a].phys + int64(picks[a].size)
		for b < len(picks) && picks[b].phys == runEnd && s.segEnd(picks[a].phys) >= runEnd+int64(picks[b].size) {
			runEnd += int64(picks[b].size)
			b++
		}
		buf := make([]byte, runEnd-picks[a].phys)
		if err := s.readAt(buf, picks[a].phys); err != nil {
			if res.Status != Found && len(res.Records) == 0 {
				res.Status = MessageWasRemoving
			}
			notReturned += b - a
			a = b
			continue
		}
		first, dropped, kept := len(res.Records), 0, 0
		for k := a; k < b; k++ {
			rec := buf[picks[k].phys-picks[a].phys:][:picks[k].size]
			m, _, err := s.checkRecord(rec, picks[k].phys)
			if err == nil && (m.blank || m.queueID != g.queueID || m.queueOffset != picks[k].q || string(m.topic) != g.topic) {
				err = s.corruptAt(picks[k].phys, fmt.Sprintf("record is not %s/%d at queue offset %d", g.topic, g.queueID, picks[k].q))
			}
			if err != nil {
				s.log.WithError(err).WithField("topic", g.topic).WithField("queue", g.queueID).Error("consume queue points at an invalid record; not served")
				dropped++
				continue
			}
			if props != nil && !props(m.props) {
				dropped++
				continue
			}
			if res.Records == nil {
				res.Records = make([][]byte, 0, g.most)
			}
			res.Records = append(res.Records, rec)
			g.total += len(rec)
			kept += len(rec)
			res.Status = Found
		}
		if dropped > 0 && kept > 0 && props != nil {
			// Do not keep a whole run alive for the records it returns: move them to a
			// buffer of their own size.
			c := make([]byte, 0, kept)
			for k := first; k < len(res.Records); k++ {
				at := len(c)
				c = append(c, res.Records[k]...)
				res.Records[k] = c[at:len(c):len(c)]
			}
		}
		notReturned += dropped
		a = b
	}
	return notReturned
}

// QueueMinOffset is the first logical offset still readable in a queue.
func (s *Store) QueueMinOffset(topic string, queueID int32) int64 {
	if cq := s.getCQ(topic, queueID); cq != nil {
		min, _ := cq.bounds()
		return min
	}
	return 0
}

// QueueMaxOffset is the next logical offset of a queue (dispatched units).
func (s *Store) QueueMaxOffset(topic string, queueID int32) int64 {
	if cq := s.getCQ(topic, queueID); cq != nil {
		_, max := cq.bounds()
		return max
	}
	return 0
}

func (s *Store) storeTimeAt(u cqUnit) (int64, bool) {
	if !u.valid() {
		return 0, false
	}
	var b [80]byte
	n := int64(len(b))
	if int64(u.size) < n {
		n = int64(u.size)
	}
	if err := s.readAt(b[:n], u.phys); err != nil {
		return 0, false
	}
	return storeTimestampOf(b[:n])
}

// OffsetByTime returns the first logical offset whose store timestamp is at
// or after ts; the queue's max offset when every message is older, its min
// offset when every message is newer.
func (s *Store) OffsetByTime(topic string, queueID int32, ts int64) int64 {
	cq := s.getCQ(topic, queueID)
	if cq == nil {
		return 0
	}
	return cq.search(func(u cqUnit) bool {
		t, ok := s.storeTimeAt(u)
		return ok && t >= ts
	})
}

// EarliestMessageTime returns the store timestamp of the first readable
// message of a queue.
func (s *Store) EarliestMessageTime(topic string, queueID int32) (int64, error) {
	cq := s.getCQ(topic, queueID)
	if cq == nil {
		return 0, fmt.Errorf("%w: queue %s/%d", ErrNotFound, topic, queueID)
	}
	min, max := cq.bounds()
	for q := min; q < max; q++ {
		u, ok := cq.unitAt(q)
		if !ok {
			break
		}
		if t, ok := s.storeTimeAt(u); ok {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: no message in %s/%d", ErrNotFound, topic, queueID)
}

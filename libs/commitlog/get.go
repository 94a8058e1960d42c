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

// GetMessages reads up to maxMsgs messages (and about maxBytes, at least one
// message) from a queue starting at a logical offset, keeping those whose
// tags code passes match (nil matches all). Statuses and NextBeginOffset
// follow RocketMQ's DefaultMessageStore.getMessage as seen by a master: for
// error statuses NextBeginOffset is the corrected offset (0, min or max); a
// slave that must keep the requested offset replaces it itself.
func (s *Store) GetMessages(topic string, queueID int32, offset int64, maxMsgs int, maxBytes int, match func(tagsCode int64) bool) GetResult {
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
	clMin := s.minOffset.Load()
	nextPhysFileStart := int64(-1)
	total := 0
	type pick struct {
		phys int64
		size int32
		q    int64
	}
	var picks []pick
	i := 0
	for ; i*CQUnitSize < len(units); i++ {
		u := getUnit(units[i*CQUnitSize:])
		res.MaxPhysOffsetScanned = u.phys
		if !u.valid() || int64(u.size) > s.maxRecordBytes() || u.phys+int64(u.size) > s.segEnd(u.phys) {
			continue
		}
		if nextPhysFileStart >= 0 && u.phys < nextPhysFileStart {
			continue
		}
		if len(picks) > 0 && (len(picks) >= maxMsgs || (maxBytes > 0 && total+int(u.size) > maxBytes)) {
			break
		}
		if match != nil && !match(u.tags) {
			continue
		}
		if u.phys < clMin {
			if total == 0 {
				res.Status = MessageWasRemoving
			}
			nextPhysFileStart = s.segEnd(u.phys)
			continue
		}
		picks = append(picks, pick{u.phys, u.size, offset + int64(i)})
		total += int(u.size)
		nextPhysFileStart = -1
	}
	res.NextBeginOffset = offset + int64(i)
	// Read contiguous runs with one pread each.
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
			a = b
			continue
		}
		for k := a; k < b; k++ {
			rec := buf[picks[k].phys-picks[a].phys:][:picks[k].size]
			m, _, err := s.checkRecord(rec, picks[k].phys)
			if err == nil && (m.blank || m.queueID != queueID || m.queueOffset != picks[k].q || string(m.topic) != topic) {
				err = s.corruptAt(picks[k].phys, fmt.Sprintf("record is not %s/%d at queue offset %d", topic, queueID, picks[k].q))
			}
			if err != nil {
				s.log.WithError(err).WithField("topic", topic).WithField("queue", queueID).Error("consume queue points at an invalid record; not served")
				continue
			}
			res.Records = append(res.Records, rec)
			res.Status = Found
		}
		a = b
	}
	return res
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

package commitlog

import "fmt"

// MessageStoreTime returns the store timestamp (ms) of the message at a queue's logical offset
// (RocketMQ's getMessageStoreTimeStamp); ErrNotFound when the queue holds no readable message
// there.
func (s *Store) MessageStoreTime(topic string, queueID int32, offset int64) (int64, error) {
	cq := s.getCQ(topic, queueID)
	if cq == nil {
		return 0, fmt.Errorf("%w: queue %s/%d", ErrNotFound, topic, queueID)
	}
	u, ok := cq.unitAt(offset)
	if !ok {
		return 0, fmt.Errorf("%w: offset %d of %s/%d", ErrNotFound, offset, topic, queueID)
	}
	t, ok := s.storeTimeAt(u)
	if !ok {
		return 0, fmt.Errorf("%w: message at offset %d of %s/%d", ErrNotFound, offset, topic, queueID)
	}
	return t, nil
}

package meta

import "errors"

// Tables groups the four tables of one broker.
type Tables struct {
	Topics  *TopicTable
	Groups  *SubscriptionGroupTable
	Offsets *ConsumerOffsetTable
	Delay   *DelayOffsetTable
}

// Open creates and loads all four tables from one Config.
func Open(cfg Config) (*Tables, error) {
	var (
		t   Tables
		err error
	)
	if t.Topics, err = NewTopicTable(cfg); err != nil {
		return nil, err
	}
	if t.Groups, err = NewSubscriptionGroupTable(cfg); err != nil {
		return nil, err
	}
	if t.Offsets, err = NewConsumerOffsetTable(cfg); err != nil {
		return nil, err
	}
	if t.Delay, err = NewDelayOffsetTable(cfg); err != nil {
		return nil, err
	}
	return &t, nil
}

// Close writes the pending changes of the topic and group tables and stops
// their batch timers, then persists both offset tables; it returns every
// error. The tables stay readable.
func (t *Tables) Close() error {
	return errors.Join(t.Topics.Close(), t.Groups.Close(), t.PersistOffsets())
}

// PersistOffsets persists both offset tables (the periodic tick and the
// shutdown flush); it returns every error.
func (t *Tables) PersistOffsets() error {
	return errors.Join(t.Offsets.Persist(), t.Delay.Persist())
}

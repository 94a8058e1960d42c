package meta

import (
	"fmt"

	"github.com/rmqha/rmqha/libs/route"
)

// System topic names (Java TopicValidator / MixAll).
const (
	// AutoCreateTopicKey is the template topic auto-created topics inherit from.
	AutoCreateTopicKey = "TBW102"
	SelfTestTopic      = "SELF_TEST_TOPIC"
	BenchmarkTopic     = "BenchmarkTest"
	OffsetMovedEvent   = "OFFSET_MOVED_EVENT"
	ScheduleTopic      = "SCHEDULE_TOPIC_XXXX"
	// ScheduleTopicQueueNums is one queue per delay level.
	ScheduleTopicQueueNums = 18
	// RetryGroupTopicPrefix + group is a consumer group's retry topic.
	RetryGroupTopicPrefix = "%RETRY%"
	// DLQGroupTopicPrefix + group is a consumer group's dead-letter topic.
	DLQGroupTopicPrefix = "%DLQ%"
)

// RetryTopic returns the retry topic of a consumer group.
func RetryTopic(group string) string { return RetryGroupTopicPrefix + group }

// DLQTopic returns the dead-letter topic of a consumer group.
func DLQTopic(group string) string { return DLQGroupTopicPrefix + group }

// TopicTable is the broker's topic configuration table (topics.json).
type TopicTable struct {
	t configTable[TopicConfig]
}

// NewTopicTable validates cfg, loads topics.json (or its backup) and adds
// any missing system topics. A fresh or repaired table is written at once.
func NewTopicTable(cfg Config) (*TopicTable, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tt := &TopicTable{t: configTable[TopicConfig]{
		versioned:  versioned{cfg: cfg, store: newFileStore(cfg, TopicsFileName)},
		key:        "topicConfigTable",
		items:      map[string]TopicConfig{},
		clone:      TopicConfig.Clone,
		equal:      TopicConfig.Equal,
		appendItem: route.AppendTopicConfig,
		decode:     decodeTopics,
	}}
	found, err := tt.t.load()
	if err != nil {
		return nil, err
	}
	if !found {
		tt.t.version = route.NewDataVersion(cfg.Now())
	}
	added := 0
	for _, tc := range systemTopics(cfg) {
		if _, ok := tt.t.items[tc.TopicName]; !ok {
			tt.t.items[tc.TopicName] = tc
			added++
		}
	}
	if found && added > 0 {
		tt.t.bump()
	}
	if !found || added > 0 || tt.t.loaded.Source == LoadedBackup {
		if err := tt.t.save(); err != nil {
			return nil, err
		}
	}
	return tt, nil
}

func systemTopics(cfg Config) []TopicConfig {
	mk := func(name string, queues, perm int32) TopicConfig {
		tc := route.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, perm
		return tc
	}
	const rw = route.PermRead | route.PermWrite
	const rwi = rw | route.PermInherit
	out := []TopicConfig{
		mk(SelfTestTopic, 1, rw),
		mk(BenchmarkTopic, 1024, rw),
		mk(cfg.BrokerClusterName, route.DefaultReadQueueNums, rwi),
		mk(cfg.BrokerName, 1, rwi),
		mk(OffsetMovedEvent, 1, rw),
		mk(ScheduleTopic, ScheduleTopicQueueNums, rw),
		// Request-reply's topic, one queue, as RocketMQ's TopicConfigManager creates it.
		mk(cfg.BrokerClusterName+"_"+ReplyTopicPostfix, 1, rw),
	}
	if cfg.AutoCreateTopicEnable {
		out = append(out, mk(AutoCreateTopicKey, cfg.DefaultTopicQueueNums, rwi))
	}
	return out
}

func decodeTopics(data []byte) (DataVersion, map[string]TopicConfig, error) {
	w, err := route.DecodeTopicConfigSerializeWrapper(data)
	if err != nil {
		return DataVersion{}, nil, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if w.TopicConfigTable == nil {
		return DataVersion{}, nil, fmt.Errorf("%w: no topicConfigTable", ErrInvalidSnapshot)
	}
	for name, tc := range w.TopicConfigTable {
		if tc.TopicName != name {
			return DataVersion{}, nil, fmt.Errorf("%w: topic %q stored under key %q", ErrInvalidSnapshot, tc.TopicName, name)
		}
	}
	return w.DataVersion, w.TopicConfigTable, nil
}

// Get returns a topic's config.
func (tt *TopicTable) Get(topic string) (TopicConfig, bool) { return tt.t.get(topic) }

// Put stores tc (creating or replacing it) and persists the table. An
// identical config changes nothing and returns (false, nil). A persist error
// is returned with the in-memory change kept.
func (tt *TopicTable) Put(tc TopicConfig) (bool, error) {
	if err := checkTopicConfig(&tc); err != nil {
		return false, err
	}
	return tt.t.put(tc.TopicName, tc)
}

// PutIfAbsent stores tc unless the topic exists; it returns the config in
// the table and whether it was created, once the new topic is in the file.
func (tt *TopicTable) PutIfAbsent(tc TopicConfig) (TopicConfig, bool, error) {
	return tt.putIfAbsent(tc, Wait)
}

func (tt *TopicTable) putIfAbsent(tc TopicConfig, d Durability) (TopicConfig, bool, error) {
	if err := checkTopicConfig(&tc); err != nil {
		return TopicConfig{}, false, err
	}
	tt.t.mu.Lock()
	if old, ok := tt.t.items[tc.TopicName]; ok {
		tt.t.mu.Unlock()
		return old.Clone(), false, nil
	}
	tt.t.putLocked(tc.TopicName, tc)
	seq := tt.t.seq
	tt.t.mu.Unlock()
	return tc.Clone(), true, tt.t.commit(seq, d)
}

func checkTopicConfig(tc *TopicConfig) error {
	if err := ValidateTopicName(tc.TopicName); err != nil {
		return err
	}
	if tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 {
		return fmt.Errorf("%w: %q has negative queue counts", ErrInvalidTopic, tc.TopicName)
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = route.TopicFilterTypeSingleTag
	}
	return nil
}

// Delete removes a topic; it reports whether it existed.
func (tt *TopicTable) Delete(topic string) (bool, error) { return tt.t.delete(topic) }

// All returns every topic config, sorted by name.
func (tt *TopicTable) All() []TopicConfig { return tt.t.all() }

// Len returns the number of topics.
func (tt *TopicTable) Len() int { return tt.t.len() }

// DataVersion returns the table's current version.
func (tt *TopicTable) DataVersion() DataVersion { return tt.t.DataVersion() }

// LoadInfo reports where the table was loaded from.
func (tt *TopicTable) LoadInfo() LoadInfo { return tt.t.LoadInfo() }

// Snapshot returns the table as topics.json / GET_ALL_TOPIC_CONFIG JSON:
// {"dataVersion":..,"topicConfigTable":{..}}.
func (tt *TopicTable) Snapshot() []byte {
	b, _ := tt.t.snapshot()
	return b
}

// Wrapper returns a copy of the table for a REGISTER_BROKER body.
func (tt *TopicTable) Wrapper() route.TopicConfigSerializeWrapper {
	tt.t.mu.RLock()
	defer tt.t.mu.RUnlock()
	w := route.TopicConfigSerializeWrapper{DataVersion: tt.t.version, TopicConfigTable: make(map[string]TopicConfig, len(tt.t.items))}
	for n, tc := range tt.t.items {
		w.TopicConfigTable[n] = tc.Clone()
	}
	return w
}

// Persist writes the table now.
func (tt *TopicTable) Persist() error { return tt.t.save() }

// ApplySnapshot replaces the whole table with a master's snapshot (as
// produced by Snapshot or a Java GET_ALL_TOPIC_CONFIG) and adopts its
// version; topics missing from it are deleted. It reports whether the
// version or any topic changed, and persists when so.
func (tt *TopicTable) ApplySnapshot(data []byte) (bool, error) { return tt.t.applySnapshot(data) }

// CreateTopicInSendMessage implements the auto-create rule of a send to an
// unknown topic. An existing topic is returned as is (created false).
// Otherwise the default topic (normally TBW102) must exist and carry the
// inherit bit (TBW102 counts as read-write only when AutoCreateTopicEnable is
// off); the new topic gets min(queueNums, default writeQueueNums) read and
// write queues (at least 0) and the default's perm without the inherit bit.
// A table already holding AutoCreateTopicLimit topics creates none
// (ErrTopicLimit, which wraps ErrTopicNotExist).
// ErrTopicNotExist / ErrNoInheritPerm mean "answer TOPIC_NOT_EXIST". Any
// other error is a persist failure: the topic was created (created true)
// and can be used.
func (tt *TopicTable) CreateTopicInSendMessage(topic, defaultTopic string, queueNums int32) (TopicConfig, bool, error) {
	if err := ValidateTopicName(topic); err != nil {
		return TopicConfig{}, false, err
	}
	tt.t.mu.Lock()
	if tc, ok := tt.t.items[topic]; ok {
		tt.t.mu.Unlock()
		return tc.Clone(), false, nil
	}
	if lim := tt.t.cfg.AutoCreateTopicLimit; lim > 0 && len(tt.t.items) >= lim {
		tt.t.mu.Unlock()
		return TopicConfig{}, false, fmt.Errorf("%w: %q: the table holds %d topics (autoCreateTopicLimit)", ErrTopicLimit, topic, lim)
	}
	def, ok := tt.t.items[defaultTopic]
	if !ok {
		tt.t.mu.Unlock()
		return TopicConfig{}, false, fmt.Errorf("%w: %q (default topic %q missing)", ErrTopicNotExist, topic, defaultTopic)
	}
	perm := def.Perm
	if defaultTopic == AutoCreateTopicKey && !tt.t.cfg.AutoCreateTopicEnable {
		perm = route.PermRead | route.PermWrite
	}
	if !route.IsInherited(perm) {
		tt.t.mu.Unlock()
		return TopicConfig{}, false, fmt.Errorf("%w: %q (default topic %q perm %d)", ErrNoInheritPerm, topic, defaultTopic, perm)
	}
	n := min(queueNums, def.WriteQueueNums)
	if n < 0 {
		n = 0
	}
	tc := route.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = n, n
	tc.Perm = perm &^ route.PermInherit
	tc.TopicFilterType = def.TopicFilterType
	tt.t.putLocked(topic, tc)
	seq := tt.t.seq
	tt.t.mu.Unlock()
	tt.t.cfg.Logger.WithField("topic", topic).WithField("defaultTopic", defaultTopic).
		WithField("queues", n).Info("topic auto-created on send")
	return tc.Clone(), true, tt.t.commit(seq, Wait)
}

// CreateRetryTopic returns the retry topic %RETRY%<group>, creating it with
// queues read/write queues and perm read|write when missing, durable as d
// says. An existing topic is returned as it is (not waited for: callers that
// store a message in it use WaitDurable).
func (tt *TopicTable) CreateRetryTopic(group string, queues int32, d Durability) (TopicConfig, bool, error) {
	if err := validateGroupName(group); err != nil {
		return TopicConfig{}, false, err
	}
	tc := route.NewTopicConfig(RetryTopic(group))
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	tc.Perm = route.PermRead | route.PermWrite
	return tt.putIfAbsent(tc, d)
}

// WaitDurable returns once the latest change of topic is in the table file:
// at once when it is (or the topic is unknown), else after the rewrite it
// triggers or joins. A send into a topic a heartbeat created with Batch calls
// it before its answer, so an acknowledged message never names a topic the
// file lacks.
func (tt *TopicTable) WaitDurable(topic string) error { return tt.t.waitDurable(topic) }

// Flush writes the changes made with Batch that are not written yet.
func (tt *TopicTable) Flush() error { return tt.t.flush(false) }

// Close writes pending changes and stops the batch timer.
func (tt *TopicTable) Close() error { return tt.t.flush(true) }

// Writes is the number of successful table rewrites since the table was opened.
func (tt *TopicTable) Writes() uint64 { return tt.t.writes.Load() }

// Pending is the number of changes not yet in the table file.
func (tt *TopicTable) Pending() int { return int(tt.t.pending()) }

// CreateDLQTopic returns the dead-letter topic %DLQ%<group>, creating it
// with one queue and perm read|write when missing.
func (tt *TopicTable) CreateDLQTopic(group string) (TopicConfig, bool, error) {
	if err := validateGroupName(group); err != nil {
		return TopicConfig{}, false, err
	}
	tc := route.NewTopicConfig(DLQTopic(group))
	tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
	tc.Perm = route.PermRead | route.PermWrite
	return tt.PutIfAbsent(tc)
}

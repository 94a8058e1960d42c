package meta

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rmqha/rmqha/libs/broker/route"
)

// TopicGroupSeparator joins topic and group in consumer offset keys.
const TopicGroupSeparator = "@"

// OffsetKey returns the consumerOffset.json key "topic@group".
func OffsetKey(topic, group string) string { return topic + TopicGroupSeparator + group }

// SplitOffsetKey splits "topic@group"; ok is false without a separator.
func SplitOffsetKey(key string) (topic, group string, ok bool) {
	return strings.Cut(key, TopicGroupSeparator)
}

// ConsumerOffsetSnapshot is the decoded consumerOffset.json /
// GET_ALL_CONSUMER_OFFSET body: "topic@group" -> queueId -> next offset.
type ConsumerOffsetSnapshot struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	DataVersion DataVersion                `json:"dataVersion"`
}

// DecodeConsumerOffsetSnapshot parses an offset table in Java's
// (bare integer keys) or this package's form. Unknown keys are ignored.
func DecodeConsumerOffsetSnapshot(data []byte) (ConsumerOffsetSnapshot, error) {
	clean, err := route.Lenient(data)
	if err != nil {
		return ConsumerOffsetSnapshot{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	var s ConsumerOffsetSnapshot
	if err := json.Unmarshal(clean, &s); err != nil {
		return ConsumerOffsetSnapshot{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if s.OffsetTable == nil {
		return ConsumerOffsetSnapshot{}, fmt.Errorf("%w: no offsetTable", ErrInvalidSnapshot)
	}
	for k, q := range s.OffsetTable {
		if q == nil {
			delete(s.OffsetTable, k)
		}
	}
	return s, nil
}

// ConsumerOffsetTable holds committed consumer offsets (consumerOffset.json).
// It is persisted when the caller ticks Persist.
type ConsumerOffsetTable struct {
	versioned
	table map[string]map[int32]int64
}

// NewConsumerOffsetTable validates cfg and loads consumerOffset.json (or its
// backup).
func NewConsumerOffsetTable(cfg Config) (*ConsumerOffsetTable, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &ConsumerOffsetTable{
		versioned: versioned{cfg: cfg, store: newFileStore(cfg, ConsumerOffsetFileName)},
		table:     map[string]map[int32]int64{},
	}
	data, info, err := t.store.load(validateOffsets)
	t.loaded = info
	if err != nil {
		return nil, err
	}
	if data == nil {
		t.version = route.NewDataVersion(cfg.Now())
		return t, nil
	}
	s, err := DecodeConsumerOffsetSnapshot(data)
	if err != nil {
		return nil, err
	}
	t.table, t.version = s.OffsetTable, s.DataVersion
	t.persisted, t.persistedVersion = info.Source == LoadedFile, s.DataVersion
	return t, nil
}

func validateOffsets(data []byte) error {
	_, err := DecodeConsumerOffsetSnapshot(data)
	return err
}

// Commit stores the next offset to consume for (group, topic, queueID) as
// sent by the consumer (it may be lower than before: consumers rewind). It
// reports whether the stored value changed.
func (t *ConsumerOffsetTable) Commit(group, topic string, queueID int32, offset int64) bool {
	key := OffsetKey(topic, group)
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.table[key]
	if q == nil {
		q = map[int32]int64{}
		t.table[key] = q
	}
	if old, ok := q[queueID]; ok && old == offset {
		return false
	}
	q[queueID] = offset
	t.bump()
	return true
}

// Query returns the committed offset; found is false when none exists.
func (t *ConsumerOffsetTable) Query(group, topic string, queueID int32) (offset int64, found bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	offset, found = t.table[OffsetKey(topic, group)][queueID]
	return offset, found
}

// GroupOffsets lists a group's offsets: topic -> queueId -> offset.
func (t *ConsumerOffsetTable) GroupOffsets(group string) map[string]map[int32]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := map[string]map[int32]int64{}
	for key, q := range t.table {
		topic, g, ok := SplitOffsetKey(key)
		if !ok || g != group {
			continue
		}
		cp := make(map[int32]int64, len(q))
		for id, off := range q {
			cp[id] = off
		}
		out[topic] = cp
	}
	return out
}

// Groups returns every group with at least one offset, sorted.
func (t *ConsumerOffsetTable) Groups() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	seen := map[string]bool{}
	for key := range t.table {
		if _, g, ok := SplitOffsetKey(key); ok {
			seen[g] = true
		}
	}
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// Merge folds a remote table (the master's, or one handed back by a slave)
// into this one: for every queue the larger offset wins, so no offset is
// ever lowered, and nothing is deleted. It reports whether anything changed.
func (t *ConsumerOffsetTable) Merge(remote ConsumerOffsetSnapshot) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for key, rq := range remote.OffsetTable {
		q := t.table[key]
		for id, off := range rq {
			if old, ok := q[id]; ok && old >= off {
				continue
			}
			if q == nil {
				q = map[int32]int64{}
				t.table[key] = q
			}
			q[id] = off
			changed = true
		}
	}
	if changed {
		t.bump()
	}
	return changed
}

// Reset sets a group's offsets on topic to exactly the given values, lower
// or higher (an explicit administrative reset). It reports whether anything
// changed.
func (t *ConsumerOffsetTable) Reset(group, topic string, offsets map[int32]int64) bool {
	key := OffsetKey(topic, group)
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.table[key]
	changed := false
	for id, off := range offsets {
		if old, ok := q[id]; ok && old == off {
			continue
		}
		if q == nil {
			q = map[int32]int64{}
			t.table[key] = q
		}
		q[id] = off
		changed = true
	}
	if changed {
		t.bump()
	}
	return changed
}

// RemoveGroup deletes every offset of group (when the group is deleted).
func (t *ConsumerOffsetTable) RemoveGroup(group string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	changed := false
	for key := range t.table {
		if _, g, ok := SplitOffsetKey(key); ok && g == group {
			delete(t.table, key)
			changed = true
		}
	}
	if changed {
		t.bump()
	}
	return changed
}

// Snapshot returns consumerOffset.json / GET_ALL_CONSUMER_OFFSET JSON:
// {"offsetTable":{"topic@group":{"0":12}},"dataVersion":{..}}.
func (t *ConsumerOffsetTable) Snapshot() []byte {
	b, _ := t.snapshot()
	return b
}

func (t *ConsumerOffsetTable) snapshot() ([]byte, DataVersion) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	keys := make([]string, 0, len(t.table))
	for k := range t.table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst := append([]byte(nil), `{"offsetTable":{`...)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = route.AppendString(dst, k)
		dst = append(dst, ':')
		dst = route.AppendIntKeyMap(dst, t.table[k])
	}
	dst = append(dst, `},"dataVersion":`...)
	dst = route.AppendDataVersion(dst, t.version)
	return append(dst, '}'), t.version
}

// Persist writes the table if it changed since the last successful write.
// Call it periodically and at shutdown.
func (t *ConsumerOffsetTable) Persist() error {
	err := t.persist(t.snapshot, validateOffsets, true)
	if err != nil {
		t.cfg.Logger.WithError(err).WithField("table", "consumerOffset").Error("metadata persist failed")
	}
	return err
}

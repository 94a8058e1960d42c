package meta

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/route"
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
	// Resets are the latest explicit reset of each topic@group (Reset): slaves apply them as
	// exact values before merging offsetTable, which only raises (libs/metasync). Java
	// brokers ignore the key.
	Resets []OffsetReset `json:"resets,omitempty"`
}

// OffsetReset is one explicit reset of a group's offsets on a topic, with the table version
// it made. Its JSON shape is libs/metasync's OffsetReset.
type OffsetReset struct {
	Topic   string          `json:"topic"`
	Group   string          `json:"group"`
	Offsets map[int32]int64 `json:"offsets"`
	Version DataVersion     `json:"version"`
}

// Bounds on the kept resets.
const (
	// ResetFollowWindow: for this long after a reset, a commit that lowers a reset queue's
	// offset (a client applying the reset after first committing its old position) is
	// recorded into the reset, so slaves follow it down too.
	ResetFollowWindow = time.Minute
	// maxResets is the most topic@group resets kept; the oldest go first.
	maxResets = 4096
)

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
	// resets holds the latest explicit reset per topic@group; resetAt when it was made
	// (zero for resets loaded from the file).
	resets  map[string]*OffsetReset
	resetAt map[string]time.Time
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
		resets:    map[string]*OffsetReset{},
		resetAt:   map[string]time.Time{},
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
	for i := range s.Resets {
		r := s.Resets[i]
		t.resets[OffsetKey(r.Topic, r.Group)] = &r
	}
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
	old, had := q[queueID]
	if had && old == offset {
		return false
	}
	q[queueID] = offset
	t.bump()
	if r := t.resets[key]; r != nil && had && offset < old {
		if _, reset := r.Offsets[queueID]; reset && t.cfg.Now().Sub(t.resetAt[key]) < ResetFollowWindow {
			r.Offsets[queueID] = offset
			r.Version = t.version
		}
	}
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

// OffsetPair is one (topic, group) of the offset table.
type OffsetPair struct {
	Topic, Group string
}

// Pairs returns every (topic, group) with at least one offset, sorted by group then topic
// (RocketMQ's whichTopicByConsumer and whichGroupByTopic in one scan).
func (t *ConsumerOffsetTable) Pairs() []OffsetPair {
	t.mu.RLock()
	out := make([]OffsetPair, 0, len(t.table))
	for key := range t.table {
		if topic, g, ok := SplitOffsetKey(key); ok {
			out = append(out, OffsetPair{Topic: topic, Group: g})
		}
	}
	t.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Topic < out[j].Topic
	})
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
	if !changed {
		return false
	}
	t.bump()
	r := &OffsetReset{Topic: topic, Group: group, Offsets: make(map[int32]int64, len(offsets)), Version: t.version}
	for id, off := range offsets {
		r.Offsets[id] = off
	}
	t.resets[key] = r
	t.resetAt[key] = t.cfg.Now()
	t.pruneResetsLocked()
	return true
}

// pruneResetsLocked drops the oldest resets beyond maxResets.
func (t *ConsumerOffsetTable) pruneResetsLocked() {
	for len(t.resets) > maxResets {
		var oldest string
		for k, r := range t.resets {
			if oldest == "" || r.Version.Counter < t.resets[oldest].Version.Counter {
				oldest = k
			}
		}
		delete(t.resets, oldest)
		delete(t.resetAt, oldest)
	}
}

// Resets returns the kept explicit resets, ordered by topic@group.
func (t *ConsumerOffsetTable) Resets() []OffsetReset {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.resetsLocked()
}

func (t *ConsumerOffsetTable) resetsLocked() []OffsetReset {
	keys := make([]string, 0, len(t.resets))
	for k := range t.resets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]OffsetReset, 0, len(keys))
	for _, k := range keys {
		r := *t.resets[k]
		r.Offsets = make(map[int32]int64, len(t.resets[k].Offsets))
		for id, off := range t.resets[k].Offsets {
			r.Offsets[id] = off
		}
		out = append(out, r)
	}
	return out
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
	for key, r := range t.resets {
		if r.Group == group {
			delete(t.resets, key)
			delete(t.resetAt, key)
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
	if len(t.resets) > 0 {
		dst = append(dst, `,"resets":[`...)
		for i, r := range t.resetsLocked() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"topic":`...)
			dst = route.AppendString(dst, r.Topic)
			dst = append(dst, `,"group":`...)
			dst = route.AppendString(dst, r.Group)
			dst = append(dst, `,"offsets":`...)
			dst = route.AppendIntKeyMap(dst, r.Offsets)
			dst = append(dst, `,"version":`...)
			dst = route.AppendDataVersion(dst, r.Version)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
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

package meta

import (
	"encoding/json"
	"fmt"

	"github.com/rmqha/rmqha/libs/route"
)

// DelayOffsetSnapshot is the decoded delayOffset.json / GET_ALL_DELAY_OFFSET
// body: delay level -> offset in SCHEDULE_TOPIC_XXXX queue level-1.
type DelayOffsetSnapshot struct {
	OffsetTable map[int32]int64 `json:"offsetTable"`
	DataVersion DataVersion     `json:"dataVersion"`
}

// DecodeDelayOffsetSnapshot parses a delay-offset table in Java's (bare
// integer keys) or this package's form.
func DecodeDelayOffsetSnapshot(data []byte) (DelayOffsetSnapshot, error) {
	clean, err := route.Lenient(data)
	if err != nil {
		return DelayOffsetSnapshot{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	var s DelayOffsetSnapshot
	if err := json.Unmarshal(clean, &s); err != nil {
		return DelayOffsetSnapshot{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if s.OffsetTable == nil {
		return DelayOffsetSnapshot{}, fmt.Errorf("%w: no offsetTable", ErrInvalidSnapshot)
	}
	return s, nil
}

func validateDelay(data []byte) error {
	_, err := DecodeDelayOffsetSnapshot(data)
	return err
}

// DelayOffsetTable holds the delivery progress of each delay level
// (delayOffset.json). It is persisted when the caller ticks Persist.
type DelayOffsetTable struct {
	versioned
	table map[int32]int64
}

// NewDelayOffsetTable validates cfg and loads delayOffset.json (or its backup).
func NewDelayOffsetTable(cfg Config) (*DelayOffsetTable, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &DelayOffsetTable{
		versioned: versioned{cfg: cfg, store: newFileStore(cfg, DelayOffsetFileName)},
		table:     map[int32]int64{},
	}
	data, info, err := t.store.load(validateDelay)
	t.loaded = info
	if err != nil {
		return nil, err
	}
	if data == nil {
		t.version = route.NewDataVersion(cfg.Now())
		return t, nil
	}
	s, err := DecodeDelayOffsetSnapshot(data)
	if err != nil {
		return nil, err
	}
	t.table, t.version = s.OffsetTable, s.DataVersion
	t.persisted, t.persistedVersion = info.Source == LoadedFile, s.DataVersion
	return t, nil
}

// Update records the offset reached by a delay level; it reports whether
// the stored value changed.
func (t *DelayOffsetTable) Update(level int32, offset int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.table[level]; ok && old == offset {
		return false
	}
	t.table[level] = offset
	t.bump()
	return true
}

// Get returns a level's offset; found is false when none is recorded.
func (t *DelayOffsetTable) Get(level int32) (offset int64, found bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	offset, found = t.table[level]
	return offset, found
}

// All returns a copy of the table.
func (t *DelayOffsetTable) All() map[int32]int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[int32]int64, len(t.table))
	for k, v := range t.table {
		out[k] = v
	}
	return out
}

// Snapshot returns delayOffset.json / GET_ALL_DELAY_OFFSET JSON:
// {"offsetTable":{"1":0,..},"dataVersion":{..}}.
func (t *DelayOffsetTable) Snapshot() []byte {
	b, _ := t.snapshot()
	return b
}

func (t *DelayOffsetTable) snapshot() ([]byte, DataVersion) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	dst := append([]byte(nil), `{"offsetTable":`...)
	dst = route.AppendIntKeyMap(dst, t.table)
	dst = append(dst, `,"dataVersion":`...)
	dst = route.AppendDataVersion(dst, t.version)
	return append(dst, '}'), t.version
}

// ApplySnapshot replaces the table with a master's (Java slaves copy the
// file verbatim) and adopts its version. It reports whether anything
// changed; the caller persists with Persist.
func (t *DelayOffsetTable) ApplySnapshot(data []byte) (bool, error) {
	s, err := DecodeDelayOffsetSnapshot(data)
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	same := s.DataVersion == t.version && len(s.OffsetTable) == len(t.table)
	if same {
		for k, v := range s.OffsetTable {
			if old, ok := t.table[k]; !ok || old != v {
				same = false
				break
			}
		}
	}
	if same {
		return false, nil
	}
	t.table, t.version = s.OffsetTable, s.DataVersion
	return true, nil
}

// Persist writes the table if it changed since the last successful write.
func (t *DelayOffsetTable) Persist() error {
	err := t.persist(t.snapshot, validateDelay, true)
	if err != nil {
		t.cfg.Logger.WithError(err).WithField("table", "delayOffset").Error("metadata persist failed")
	}
	return err
}

package meta

import (
	"encoding/json"
	"fmt"

	"github.com/rmqha/rmqha/libs/route"
)

// SubscriptionGroupConfig is one consumer group's broker-side settings
// (subscriptionGroup.json, GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
type SubscriptionGroupConfig struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// NewSubscriptionGroupConfig returns Java's defaults for group: everything
// enabled, 1 retry queue, 16 retries, brokerId 0, slow consumers to broker 1.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName:                      group,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		BrokerID:                       route.MasterID,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIdsChangedEnable: true,
	}
}

// AppendSubscriptionGroupConfig writes c with keys in fastjson order.
func AppendSubscriptionGroupConfig(dst []byte, c SubscriptionGroupConfig) []byte {
	dst = append(dst, `{"brokerId":`...)
	dst = appendInt(dst, c.BrokerID)
	dst = append(dst, `,"consumeBroadcastEnable":`...)
	dst = appendBool(dst, c.ConsumeBroadcastEnable)
	dst = append(dst, `,"consumeEnable":`...)
	dst = appendBool(dst, c.ConsumeEnable)
	dst = append(dst, `,"consumeFromMinEnable":`...)
	dst = appendBool(dst, c.ConsumeFromMinEnable)
	dst = append(dst, `,"groupName":`...)
	dst = route.AppendString(dst, c.GroupName)
	dst = append(dst, `,"notifyConsumerIdsChangedEnable":`...)
	dst = appendBool(dst, c.NotifyConsumerIdsChangedEnable)
	dst = append(dst, `,"retryMaxTimes":`...)
	dst = appendInt(dst, int64(c.RetryMaxTimes))
	dst = append(dst, `,"retryQueueNums":`...)
	dst = appendInt(dst, int64(c.RetryQueueNums))
	dst = append(dst, `,"whichBrokerWhenConsumeSlowly":`...)
	dst = appendInt(dst, c.WhichBrokerWhenConsumeSlowly)
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler.
func (c SubscriptionGroupConfig) MarshalJSON() ([]byte, error) {
	return AppendSubscriptionGroupConfig(nil, c), nil
}

// UnmarshalJSON decodes on top of the defaults, so absent fields keep them
// (as with Java's constructor). Unknown 5.x fields are ignored.
func (c *SubscriptionGroupConfig) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	type plain SubscriptionGroupConfig
	v := plain(NewSubscriptionGroupConfig(""))
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = SubscriptionGroupConfig(v)
	return nil
}

func cloneGroup(c SubscriptionGroupConfig) SubscriptionGroupConfig { return c }

func equalGroup(a, b SubscriptionGroupConfig) bool { return a == b }

// SubscriptionGroupTable is the broker's consumer-group table
// (subscriptionGroup.json).
type SubscriptionGroupTable struct {
	t configTable[SubscriptionGroupConfig]
}

// NewSubscriptionGroupTable validates cfg and loads subscriptionGroup.json
// (or its backup).
func NewSubscriptionGroupTable(cfg Config) (*SubscriptionGroupTable, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	gt := &SubscriptionGroupTable{t: configTable[SubscriptionGroupConfig]{
		versioned:  versioned{cfg: cfg, store: newFileStore(cfg, SubscriptionGroupFileName)},
		key:        "subscriptionGroupTable",
		items:      map[string]SubscriptionGroupConfig{},
		clone:      cloneGroup,
		equal:      equalGroup,
		appendItem: AppendSubscriptionGroupConfig,
		decode:     decodeGroups,
	}}
	found, err := gt.t.load()
	if err != nil {
		return nil, err
	}
	if !found {
		gt.t.version = route.NewDataVersion(cfg.Now())
	}
	if gt.t.loaded.Source == LoadedBackup {
		if err := gt.t.save(); err != nil {
			return nil, err
		}
	}
	return gt, nil
}

// groupsWire is the file/wire shape of the table.
type groupsWire struct {
	DataVersion            DataVersion                        `json:"dataVersion"`
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
}

func decodeGroups(data []byte) (DataVersion, map[string]SubscriptionGroupConfig, error) {
	clean, err := route.Lenient(data)
	if err != nil {
		return DataVersion{}, nil, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	var w groupsWire
	if err := json.Unmarshal(clean, &w); err != nil {
		return DataVersion{}, nil, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if w.SubscriptionGroupTable == nil {
		return DataVersion{}, nil, fmt.Errorf("%w: no subscriptionGroupTable", ErrInvalidSnapshot)
	}
	for name, g := range w.SubscriptionGroupTable {
		if g.GroupName == "" {
			g.GroupName = name
			w.SubscriptionGroupTable[name] = g
		}
		if g.GroupName != name {
			return DataVersion{}, nil, fmt.Errorf("%w: group %q stored under key %q", ErrInvalidSnapshot, g.GroupName, name)
		}
	}
	return w.DataVersion, w.SubscriptionGroupTable, nil
}

// Get returns a group's config.
func (gt *SubscriptionGroupTable) Get(group string) (SubscriptionGroupConfig, bool) {
	return gt.t.get(group)
}

// FindOrCreate returns the group's config, creating it with the defaults
// when it is unknown and AutoCreateSubscriptionGroup is on (created true),
// durable as d says. It returns ErrGroupNotExist when auto-create is off and
// ErrGroupLimit (wrapping ErrGroupNotExist) when the table already holds
// AutoCreateSubscriptionGroupLimit groups. Any other error is a persist
// failure after the group was created.
func (gt *SubscriptionGroupTable) FindOrCreate(group string, d Durability) (SubscriptionGroupConfig, bool, error) {
	if err := validateGroupName(group); err != nil {
		return SubscriptionGroupConfig{}, false, err
	}
	gt.t.mu.Lock()
	if c, ok := gt.t.items[group]; ok {
		gt.t.mu.Unlock()
		return c, false, nil
	}
	if !gt.t.cfg.AutoCreateSubscriptionGroup {
		gt.t.mu.Unlock()
		return SubscriptionGroupConfig{}, false, fmt.Errorf("%w: %q", ErrGroupNotExist, group)
	}
	if lim := gt.t.cfg.AutoCreateSubscriptionGroupLimit; lim > 0 && len(gt.t.items) >= lim {
		gt.t.mu.Unlock()
		return SubscriptionGroupConfig{}, false, fmt.Errorf("%w: %q: the table holds %d groups (autoCreateSubscriptionGroupLimit)", ErrGroupLimit, group, lim)
	}
	c := NewSubscriptionGroupConfig(group)
	gt.t.putLocked(group, c)
	seq := gt.t.seq
	gt.t.mu.Unlock()
	gt.t.cfg.Logger.WithField("group", group).Info("subscription group auto-created")
	return c, true, gt.t.commit(seq, d)
}

// Put stores c and persists; an identical config returns (false, nil).
func (gt *SubscriptionGroupTable) Put(c SubscriptionGroupConfig) (bool, error) {
	if err := validateGroupName(c.GroupName); err != nil {
		return false, err
	}
	return gt.t.put(c.GroupName, c)
}

// Delete removes a group; it reports whether it existed.
func (gt *SubscriptionGroupTable) Delete(group string) (bool, error) { return gt.t.delete(group) }

// All returns every group config, sorted by name.
func (gt *SubscriptionGroupTable) All() []SubscriptionGroupConfig { return gt.t.all() }

// Len returns the number of groups.
func (gt *SubscriptionGroupTable) Len() int { return gt.t.len() }

// DataVersion returns the table's current version.
func (gt *SubscriptionGroupTable) DataVersion() DataVersion { return gt.t.DataVersion() }

// LoadInfo reports where the table was loaded from.
func (gt *SubscriptionGroupTable) LoadInfo() LoadInfo { return gt.t.LoadInfo() }

// Snapshot returns subscriptionGroup.json / GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// JSON: {"dataVersion":..,"subscriptionGroupTable":{..}}.
func (gt *SubscriptionGroupTable) Snapshot() []byte {
	b, _ := gt.t.snapshot()
	return b
}

// Persist writes the table now.
func (gt *SubscriptionGroupTable) Persist() error { return gt.t.save() }

// Flush writes the changes made with Batch that are not written yet.
func (gt *SubscriptionGroupTable) Flush() error { return gt.t.flush(false) }

// Close writes pending changes and stops the batch timer; later Batch
// changes are written only by Flush, Persist or a Wait change.
func (gt *SubscriptionGroupTable) Close() error { return gt.t.flush(true) }

// Writes is the number of successful table rewrites since the table was opened.
func (gt *SubscriptionGroupTable) Writes() uint64 { return gt.t.writes.Load() }

// Pending is the number of changes not yet in the table file.
func (gt *SubscriptionGroupTable) Pending() int { return int(gt.t.pending()) }

// ApplySnapshot replaces the whole table with a master's snapshot and adopts
// its version; groups missing from it are deleted. It reports whether the
// version or any group changed, and persists when so.
func (gt *SubscriptionGroupTable) ApplySnapshot(data []byte) (bool, error) {
	return gt.t.applySnapshot(data)
}

package metasync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// Table names one replicated metadata table. The names are the last token of
// announcement subjects and of snapshot URLs.
type Table string

// The four tables a master keeps and slaves replicate.
const (
	TableTopics             Table = "topics"
	TableSubscriptionGroups Table = "subscriptionGroups"
	TableConsumerOffsets    Table = "consumerOffsets"
	TableDelayOffsets       Table = "delayOffsets"
)

// AllTables is the registry of replicated metadata kinds, in RocketMQ's
// syncAll order. Every table the broker persists under config/ must be here;
// a test asserts it, so a new kind cannot be forgotten by the replication.
var AllTables = []Table{TableTopics, TableConsumerOffsets, TableDelayOffsets, TableSubscriptionGroups}

// ParseTable returns the table named s.
func ParseTable(s string) (Table, error) {
	t := Table(s)
	if !t.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownTable, s)
	}
	return t, nil
}

// Valid reports whether t is one of AllTables.
func (t Table) Valid() bool {
	switch t {
	case TableTopics, TableSubscriptionGroups, TableConsumerOffsets, TableDelayOffsets:
		return true
	}
	return false
}

// RequestCode is the remoting request that fetches t from a master.
func (t Table) RequestCode() int32 {
	switch t {
	case TableTopics:
		return remoting.GetAllTopicConfig
	case TableSubscriptionGroups:
		return remoting.GetAllSubscriptionGroupConfig
	case TableConsumerOffsets:
		return remoting.GetAllConsumerOffset
	case TableDelayOffsets:
		return remoting.GetAllDelayOffset
	}
	return -1
}

// FileName is the broker file (under <storePathRootDir>/config/) that holds t.
func (t Table) FileName() string {
	switch t {
	case TableTopics:
		return meta.TopicsFileName
	case TableSubscriptionGroups:
		return meta.SubscriptionGroupFileName
	case TableConsumerOffsets:
		return meta.ConsumerOffsetFileName
	case TableDelayOffsets:
		return meta.DelayOffsetFileName
	}
	return ""
}

// DataVersion is the version type of the broker's tables.
type DataVersion = meta.DataVersion

// tableHeader is the part of every table body metasync looks at.
type tableHeader struct {
	DataVersion *DataVersion     `json:"dataVersion"`
	Resets      []OffsetReset    `json:"resets"`
	OffsetTable *json.RawMessage `json:"offsetTable"`
	Topics      *json.RawMessage `json:"topicConfigTable"`
	Groups      *json.RawMessage `json:"subscriptionGroupTable"`
}

// NormalizeBody turns a master's GET_ALL_* body (Java's fastjson with bare
// integer map keys, or this project's standard JSON) into standard JSON and
// extracts its DataVersion (hasVersion false when the body carries none, as
// 4.x offset tables) and any explicit offset resets. It checks that the body
// holds the table's main key.
func NormalizeBody(t Table, body []byte) (clean []byte, v DataVersion, hasVersion bool, resets []OffsetReset, err error) {
	if !t.Valid() {
		return nil, v, false, nil, fmt.Errorf("%w: %q", ErrUnknownTable, string(t))
	}
	clean, err = route.Lenient(body)
	if err != nil {
		return nil, v, false, nil, fmt.Errorf("%w: %s body: %w", ErrInvalidSnapshot, t, err)
	}
	var h tableHeader
	if err := json.Unmarshal(clean, &h); err != nil {
		return nil, v, false, nil, fmt.Errorf("%w: %s body: %w", ErrInvalidSnapshot, t, err)
	}
	var main *json.RawMessage
	switch t {
	case TableTopics:
		main = h.Topics
	case TableSubscriptionGroups:
		main = h.Groups
	default:
		main = h.OffsetTable
	}
	if main == nil {
		return nil, v, false, nil, fmt.Errorf("%w: %s body has no table", ErrInvalidSnapshot, t)
	}
	if t == TableConsumerOffsets {
		for _, r := range h.Resets {
			if r.Topic == "" || r.Group == "" {
				return nil, v, false, nil, fmt.Errorf("%w: reset without topic or group", ErrInvalidSnapshot)
			}
		}
		resets = h.Resets
	}
	if h.DataVersion != nil {
		v, hasVersion = *h.DataVersion, true
	}
	return clean, v, hasVersion, resets, nil
}

// Digest is the content fingerprint of a normalized body (hex SHA-256). It
// tells changes apart for tables without a DataVersion.
func Digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:16])
}

// versionAfter reports whether a is strictly newer than b on both the
// timestamp and the counter. Versions of one table on one master only grow;
// a version older on both is a stale copy.
func versionAfter(a, b DataVersion) bool {
	return a.Timestamp > b.Timestamp && a.Counter > b.Counter
}

// resetNewer orders reset versions: timestamp, then counter.
func resetNewer(a, b DataVersion) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	return a.Counter > b.Counter
}

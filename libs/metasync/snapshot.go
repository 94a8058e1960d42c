package metasync

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// OffsetReset is an explicit administrative reset of one group's offsets on
// one topic. It is the only way a sync lowers a slave's consumer offset: a
// follower applies it once, when its Version is newer than the last reset it
// applied for the same topic@group. A master (or an admin tool) lists resets
// under a top-level "resets" key of its consumer offset body; metasync passes
// them on in the snapshot.
type OffsetReset struct {
	Topic   string          `json:"topic"`
	Group   string          `json:"group"`
	Offsets map[int32]int64 `json:"offsets"`
	Version DataVersion     `json:"version"`
}

// Snapshot is the envelope metasync stores on disk and serves over HTTP at
// /snapshot/<cluster>/<brokerName>/<table>:
//
//	{"cluster":"C","brokerName":"b","table":"consumerOffsets",
//	 "dataVersion":{..},"hasVersion":true,"digest":"…",
//	 "masterAddr":"…","epoch":0,"sequence":4,"fetchedAt":1700000000000,
//	 "resets":[…],"body":{…the master's table in standard JSON…}}
type Snapshot struct {
	Cluster     string      `json:"cluster"`
	BrokerName  string      `json:"brokerName"`
	Table       Table       `json:"table"`
	DataVersion DataVersion `json:"dataVersion"`
	// HasVersion is false when the master's body carried no dataVersion
	// (4.x offset tables); Digest then decides whether content changed.
	HasVersion bool   `json:"hasVersion"`
	Digest     string `json:"digest"`
	MasterAddr string `json:"masterAddr,omitempty"`
	Epoch      int64  `json:"epoch"`
	// Sequence counts the distinct versions the storing instance kept.
	Sequence uint64 `json:"sequence"`
	// FetchedAt is when the body was read from the master (Unix ms).
	FetchedAt int64           `json:"fetchedAt"`
	Resets    []OffsetReset   `json:"resets,omitempty"`
	Body      json.RawMessage `json:"body"`
}

// NewSnapshot builds the envelope of a master's GET_ALL_* body.
func NewSnapshot(cluster, brokerName string, t Table, body []byte, masterAddr string, epoch int64, now time.Time) (Snapshot, error) {
	if err := checkNames(cluster, brokerName); err != nil {
		return Snapshot{}, err
	}
	clean, v, has, resets, err := NormalizeBody(t, body)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{
		Cluster: cluster, BrokerName: brokerName, Table: t,
		DataVersion: v, HasVersion: has, Digest: Digest(clean),
		MasterAddr: masterAddr, Epoch: epoch, FetchedAt: now.UnixMilli(),
		Resets: resets, Body: clean,
	}, nil
}

// SameContent reports whether s and o hold the same table state: equal
// versions when both carry one (a master bumps the version on every change),
// else equal digests.
func (s Snapshot) SameContent(o Snapshot) bool {
	if s.HasVersion && o.HasVersion {
		return s.DataVersion.Equal(o.DataVersion)
	}
	return s.Digest == o.Digest
}

// Announcement returns the doorbell for s.
func (s Snapshot) Announcement(snapshotURL string) Announcement {
	return Announcement{
		Cluster: s.Cluster, BrokerName: s.BrokerName, Table: s.Table,
		DataVersion: s.DataVersion, Digest: s.Digest, MasterAddr: s.MasterAddr,
		Epoch: s.Epoch, Sequence: s.Sequence, SnapshotURL: snapshotURL,
	}
}

// AppendSnapshot appends s's JSON to dst.
func AppendSnapshot(dst []byte, s Snapshot) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	return append(dst, b...), nil
}

// DecodeSnapshot parses and validates an envelope; the body is checked to be
// a table of the named kind.
func DecodeSnapshot(data []byte) (Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if err := checkNames(s.Cluster, s.BrokerName); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	if !s.Table.Valid() {
		return Snapshot{}, fmt.Errorf("%w: table %q", ErrInvalidSnapshot, s.Table)
	}
	if _, _, _, _, err := NormalizeBody(s.Table, s.Body); err != nil {
		return Snapshot{}, err
	}
	for _, r := range s.Resets {
		if r.Topic == "" || r.Group == "" {
			return Snapshot{}, fmt.Errorf("%w: reset without topic or group", ErrInvalidSnapshot)
		}
	}
	return s, nil
}

// SnapshotPath is the HTTP path of a snapshot: /snapshot/<cluster>/<brokerName>/<table>.
func SnapshotPath(cluster, brokerName string, t Table) string {
	return "/snapshot/" + url.PathEscape(cluster) + "/" + url.PathEscape(brokerName) + "/" + string(t)
}

package metasync

import (
	"encoding/json"
	"fmt"
)

// Announcement is the message metasync publishes when a table's content at
// the master changed. It is a doorbell: it names the new version, never the
// table itself; slaves fetch the snapshot over HTTP.
//
//	{"cluster":"C","brokerName":"b","table":"topics",
//	 "dataVersion":{"timestamp":..,"counter":..,"stateVersion":0},
//	 "digest":"…","masterAddr":"10.0.0.1:10911","epoch":3,"sequence":17,
//	 "snapshotURL":"http://10.0.0.9:10950/snapshot/C/b/topics"}
type Announcement struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	Table      Table  `json:"table"`
	// DataVersion is the table's version at the master (zero when the master's
	// body carries none; Digest then identifies the content).
	DataVersion DataVersion `json:"dataVersion"`
	// Digest fingerprints the normalized table body.
	Digest     string `json:"digest,omitempty"`
	MasterAddr string `json:"masterAddr,omitempty"`
	// Epoch is the master's epoch from the registry (0 when unknown).
	Epoch int64 `json:"epoch"`
	// Sequence counts the versions this metasync stored for the table.
	Sequence uint64 `json:"sequence"`
	// SnapshotURL is where the publishing instance serves the snapshot.
	SnapshotURL string `json:"snapshotURL,omitempty"`
}

// AppendAnnouncement appends a's JSON to dst.
func AppendAnnouncement(dst []byte, a Announcement) []byte {
	b, _ := json.Marshal(a) // plain strings and integers: cannot fail
	return append(dst, b...)
}

// DecodeAnnouncement parses and validates an announcement.
func DecodeAnnouncement(data []byte) (Announcement, error) {
	var a Announcement
	if err := json.Unmarshal(data, &a); err != nil {
		return Announcement{}, fmt.Errorf("%w: %w", ErrInvalidAnnouncement, err)
	}
	if err := checkNames(a.Cluster, a.BrokerName); err != nil {
		return Announcement{}, fmt.Errorf("%w: %w", ErrInvalidAnnouncement, err)
	}
	if !a.Table.Valid() {
		return Announcement{}, fmt.Errorf("%w: table %q", ErrInvalidAnnouncement, a.Table)
	}
	return a, nil
}

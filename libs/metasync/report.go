package metasync

import (
	"encoding/json"
	"fmt"
	"time"
)

// FollowerReport is what a follower publishes on StatusSubject after it
// applied something (and at least every FallbackInterval), so that
// metasync's /status can show the version each slave holds.
type FollowerReport struct {
	Cluster    string        `json:"cluster"`
	BrokerName string        `json:"brokerName"`
	BrokerID   int64         `json:"brokerId"`
	Mode       Source        `json:"mode"`
	At         int64         `json:"at"` // Unix ms
	Tables     []TableReport `json:"tables"`
}

// TableReport is one table of a FollowerReport.
type TableReport struct {
	Table       Table       `json:"table"`
	DataVersion DataVersion `json:"dataVersion"`
	HasVersion  bool        `json:"hasVersion"`
	Sequence    uint64      `json:"sequence"`
	LastSync    int64       `json:"lastSync"` // Unix ms, 0 before the first sync
	Source      Source      `json:"source"`
	LastError   string      `json:"lastError,omitempty"`
}

// Report summarises s.
func (s FollowerStatus) Report(now time.Time) FollowerReport {
	r := FollowerReport{Cluster: s.Cluster, BrokerName: s.BrokerName, BrokerID: s.BrokerID, Mode: s.Mode, At: now.UnixMilli()}
	for _, t := range s.Tables {
		tr := TableReport{Table: t.Table, DataVersion: t.DataVersion, HasVersion: t.HasVersion, Sequence: t.Sequence, Source: t.Source, LastError: t.LastError}
		if !t.LastSync.IsZero() {
			tr.LastSync = t.LastSync.UnixMilli()
		}
		r.Tables = append(r.Tables, tr)
	}
	return r
}

// AppendFollowerReport appends r's JSON to dst.
func AppendFollowerReport(dst []byte, r FollowerReport) []byte {
	b, _ := json.Marshal(r) // strings and integers only
	return append(dst, b...)
}

// DecodeFollowerReport parses and validates a report.
func DecodeFollowerReport(data []byte) (FollowerReport, error) {
	var r FollowerReport
	if err := json.Unmarshal(data, &r); err != nil {
		return FollowerReport{}, fmt.Errorf("%w: report: %w", ErrInvalidAnnouncement, err)
	}
	if err := checkNames(r.Cluster, r.BrokerName); err != nil {
		return FollowerReport{}, fmt.Errorf("%w: report: %w", ErrInvalidAnnouncement, err)
	}
	for _, t := range r.Tables {
		if !t.Table.Valid() {
			return FollowerReport{}, fmt.Errorf("%w: report table %q", ErrInvalidAnnouncement, t.Table)
		}
	}
	return r, nil
}

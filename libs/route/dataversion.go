package route

import (
	"encoding/json"
	"time"
)

// DataVersion identifies one state of a metadata table. Every mutation sets
// Timestamp to the current time (ms) and increments Counter; StateVersion is
// a 5.x field that classic brokers leave at 0 (absent in 4.x JSON).
type DataVersion struct {
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
}

// NewDataVersion returns the version of a freshly created table: timestamp
// now, counter 0.
func NewDataVersion(now time.Time) DataVersion {
	return DataVersion{Timestamp: now.UnixMilli()}
}

// Next returns the version that follows v at time now.
func (v DataVersion) Next(now time.Time) DataVersion {
	return DataVersion{Timestamp: now.UnixMilli(), Counter: v.Counter + 1, StateVersion: v.StateVersion}
}

// Equal reports whether all three fields match (5.x semantics; a 4.x
// version decodes with StateVersion 0).
func (v DataVersion) Equal(o DataVersion) bool { return v == o }

// AppendDataVersion writes v as {"counter":..,"stateVersion":..,"timestamp":..}.
func AppendDataVersion(dst []byte, v DataVersion) []byte {
	dst = append(dst, `{"counter":`...)
	dst = appendInt(dst, v.Counter)
	dst = append(dst, `,"stateVersion":`...)
	dst = appendInt(dst, v.StateVersion)
	dst = append(dst, `,"timestamp":`...)
	dst = appendInt(dst, v.Timestamp)
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler with AppendDataVersion.
func (v DataVersion) MarshalJSON() ([]byte, error) { return AppendDataVersion(nil, v), nil }

var _ json.Marshaler = DataVersion{}

package failover

import (
	"encoding/json"
	"slices"
	"time"
)

// KeyPrefix is where leadership lives in the coordinator's key-value store.
const KeyPrefix = "rmqha/leader/"

// LeaderKey is the lock key of a broker group: rmqha/leader/<cluster>/<brokerName>.
func LeaderKey(cluster, brokerName string) string { return KeyPrefix + cluster + "/" + brokerName }

// StateKey holds the group's published State (compare-and-set only).
func StateKey(cluster, brokerName string) string { return LeaderKey(cluster, brokerName) + "/state" }

// SwitchoverKey holds a pending graceful switchover request.
func SwitchoverKey(cluster, brokerName string) string {
	return LeaderKey(cluster, brokerName) + "/switchover"
}

// CandidatePrefix holds the slaves' candidacies: CandidatePrefix(c, b) + <node>.
func CandidatePrefix(cluster, brokerName string) string {
	return LeaderKey(cluster, brokerName) + "/candidates/"
}

// CandidateKey is node's candidacy, held by its session (so a dead node's candidacy is
// released with its lease).
func CandidateKey(cluster, brokerName string, node int64) string {
	return CandidatePrefix(cluster, brokerName) + itoa(node)
}

// Candidate is what a slave advertises: how far its log reaches.
type Candidate struct {
	Node      int64 `json:"node"`
	Epoch     int64 `json:"epoch"`
	MaxOffset int64 `json:"maxOffset"`
}

// ahead reports whether c should take over before o: a later epoch, then a longer log, then
// the lower node id.
func (c Candidate) ahead(o Candidate) bool {
	if c.Epoch != o.Epoch {
		return c.Epoch > o.Epoch
	}
	if c.MaxOffset != o.MaxOffset {
		return c.MaxOffset > o.MaxOffset
	}
	return c.Node < o.Node
}

// CheckID is the node's lease check in the coordinator.
func CheckID(cluster, brokerName string, node int64) string {
	return "rmqha-failover/" + cluster + "/" + brokerName + "/" + itoa(node)
}

// Leader is the lock value: who is master and where.
type Leader struct {
	Node   int64     `json:"node"`
	Addr   string    `json:"addr"`
	HAAddr string    `json:"haAddr"`
	Epoch  int64     `json:"epoch"`
	Since  time.Time `json:"since"`
}

// State is what the master publishes: its epoch and which nodes hold everything it
// acknowledged (itself included).
type State struct {
	Epoch  int64   `json:"epoch"`
	Master int64   `json:"master"`
	InSync []int64 `json:"inSync"`
	// Handover names the only node allowed to take the lock next (graceful switchover); 0 = none.
	Handover int64 `json:"handover,omitempty"`
}

// Eligible reports whether node may take the lock under s (nil: nothing published yet).
func (s *State) Eligible(node int64, unclean bool) bool {
	if s == nil {
		return true
	}
	if s.Handover != 0 {
		return s.Handover == node
	}
	return unclean || slices.Contains(s.InSync, node)
}

// Switchover is a graceful switchover request.
type Switchover struct {
	// To is the node to hand over to; 0 picks any in-sync slave.
	To        int64     `json:"to"`
	Requested time.Time `json:"requested"`
}

func decode[T any](b []byte) (*T, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

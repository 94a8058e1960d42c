package syncer

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rmqha/rmqha/libs/metasync"
)

// Handler serves:
//
//	GET /snapshot/<cluster>/<brokerName>/<table>  the stored Snapshot envelope (200),
//	    404 when none is held, 503 when another instance owns the group
//	GET /health                                   200 {"status":"ok",...}
//	GET /status                                   per broker and table: version at the
//	    master, at metasync and at each reporting slave, age of the last successful sync
//	GET /metrics                                  the same in Prometheus form, plus Go runtime metrics
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /snapshot/{cluster}/{broker}/{table}", s.handleSnapshot)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /status", s.handleStatus)
	mux.Handle("GET /metrics", promhttp.HandlerFor(newMetricsRegistry(s), promhttp.HandlerOpts{}))
	return mux
}

func (s *Service) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	cluster, broker := r.PathValue("cluster"), r.PathValue("broker")
	tbl, err := metasync.ParseTable(r.PathValue("table"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if !s.owns(groupKey{cluster, broker}) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "this metasync instance does not own "+cluster+"/"+broker, http.StatusServiceUnavailable)
		return
	}
	snap, ok := s.store.Get(cluster, broker, tbl)
	if !ok {
		http.Error(w, "no snapshot of "+cluster+"/"+broker+"/"+string(tbl), http.StatusNotFound)
		return
	}
	body, err := metasync.AppendSnapshot(nil, snap)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Service) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status":        "ok",
		"instance":      s.cfg.InstanceName,
		"natsConnected": s.bus != nil && s.bus.Connected(),
		"consul":        s.consul != nil,
		"masters":       s.mode,
	})
}

// Status is the /status document.
type Status struct {
	Instance      string        `json:"instance"`
	URL           string        `json:"url"`
	Masters       string        `json:"masters"` // static, consul, namesrv, none
	NATSConnected bool          `json:"natsConnected"`
	ConsulLocks   bool          `json:"consulLocks"`
	Groups        []GroupStatus `json:"groups"`
}

// GroupStatus is one broker group.
type GroupStatus struct {
	Cluster    string        `json:"cluster"`
	BrokerName string        `json:"brokerName"`
	MasterAddr string        `json:"masterAddr"`
	Epoch      int64         `json:"epoch"`
	Owned      bool          `json:"owned"`
	Tables     []TableStatus `json:"tables"`
}

// TableStatus is one table of a group.
type TableStatus struct {
	Table metasync.Table `json:"table"`
	// MasterVersion is the version seen at the master on the last pull.
	MasterVersion *metasync.DataVersion `json:"masterVersion,omitempty"`
	// MetasyncVersion is the version of the stored snapshot.
	MetasyncVersion *metasync.DataVersion `json:"metasyncVersion,omitempty"`
	MetasyncDigest  string                `json:"metasyncDigest,omitempty"`
	Sequence        uint64                `json:"sequence"`
	// LastSuccessAgeMillis is the age of the last successful pull (-1: never).
	LastSuccessAgeMillis int64  `json:"lastSuccessAgeMillis"`
	LastError            string `json:"lastError,omitempty"`
	Announced            uint64 `json:"announced"`
	// Slaves are the versions the followers reported, by broker id.
	Slaves []SlaveTableStatus `json:"slaves,omitempty"`
}

// SlaveTableStatus is what one slave holds of a table.
type SlaveTableStatus struct {
	BrokerID    int64                `json:"brokerId"`
	Mode        metasync.Source      `json:"mode"`
	DataVersion metasync.DataVersion `json:"dataVersion"`
	Sequence    uint64               `json:"sequence"`
	Source      metasync.Source      `json:"source"`
	// LastSyncAgeMillis is the age of the slave's last successful sync (-1: never).
	LastSyncAgeMillis int64  `json:"lastSyncAgeMillis"`
	LastError         string `json:"lastError,omitempty"`
}

// Status reports every known group: the ones being synced and the ones that
// only have stored snapshots.
func (s *Service) Status() Status {
	now := s.cfg.Now()
	st := Status{Instance: s.cfg.InstanceName, URL: s.cfg.AdvertisedURL, Masters: s.mode, NATSConnected: s.bus != nil && s.bus.Connected(), ConsulLocks: s.locker != nil}
	s.mu.Lock()
	keys := map[groupKey]bool{}
	for k := range s.groups {
		keys[k] = true
	}
	s.store.mu.RLock()
	for k := range s.store.snaps {
		keys[groupKey{k.cluster, k.broker}] = true
	}
	s.store.mu.RUnlock()
	groups := make(map[groupKey]*group, len(s.groups))
	for k, g := range s.groups {
		groups[k] = g
	}
	reports := map[groupKey][]metasync.FollowerReport{}
	for k, m := range s.reports {
		for _, r := range m {
			reports[k] = append(reports[k], r)
		}
		sort.Slice(reports[k], func(i, j int) bool { return reports[k][i].BrokerID < reports[k][j].BrokerID })
	}
	s.mu.Unlock()
	ordered := make([]groupKey, 0, len(keys))
	for k := range keys {
		ordered = append(ordered, k)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].cluster != ordered[j].cluster {
			return ordered[i].cluster < ordered[j].cluster
		}
		return ordered[i].broker < ordered[j].broker
	})
	for _, k := range ordered {
		gs := GroupStatus{Cluster: k.cluster, BrokerName: k.broker}
		g := groups[k]
		if g != nil {
			g.mu.Lock()
			gs.MasterAddr, gs.Epoch, gs.Owned = g.target.Addr, g.target.Epoch, g.owned
			g.mu.Unlock()
		}
		for _, tbl := range metasync.AllTables {
			ts := TableStatus{Table: tbl, LastSuccessAgeMillis: -1}
			if g != nil {
				g.mu.Lock()
				sync := g.tables[tbl]
				if sync.masterHas {
					v := sync.masterVersion
					ts.MasterVersion = &v
				}
				if !sync.lastSuccess.IsZero() {
					ts.LastSuccessAgeMillis = now.Sub(sync.lastSuccess).Milliseconds()
				}
				ts.LastError, ts.Announced = sync.lastError, sync.announced
				g.mu.Unlock()
			}
			if snap, ok := s.store.Get(k.cluster, k.broker, tbl); ok {
				if snap.HasVersion {
					v := snap.DataVersion
					ts.MetasyncVersion = &v
				}
				ts.MetasyncDigest, ts.Sequence = snap.Digest, snap.Sequence
			}
			for _, r := range reports[k] {
				for _, rt := range r.Tables {
					if rt.Table != tbl {
						continue
					}
					sl := SlaveTableStatus{BrokerID: r.BrokerID, Mode: r.Mode, DataVersion: rt.DataVersion, Sequence: rt.Sequence, Source: rt.Source, LastError: rt.LastError, LastSyncAgeMillis: -1}
					if rt.LastSync > 0 {
						sl.LastSyncAgeMillis = now.Sub(time.UnixMilli(rt.LastSync)).Milliseconds()
					}
					ts.Slaves = append(ts.Slaves, sl)
				}
			}
			gs.Tables = append(gs.Tables, ts)
		}
		st.Groups = append(st.Groups, gs)
	}
	return st
}

func (s *Service) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Status())
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// catchUpThreshold is the lag above which a connected slave counts as catching up (and gets a
// progress bar) even when the master still counts it in sync.
const catchUpThreshold = 64 << 10

// HANode is one broker of a broker group in the haStatus report.
type HANode struct {
	BrokerID  int64  `json:"brokerId"`
	Addr      string `json:"addr"`
	Role      string `json:"role"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Source says where the row comes from: "runtime" (GET_BROKER_RUNTIME_INFO), "+http" when
	// the broker's /status added details, "master-view" for a slave only the master reports.
	Source    string `json:"source"`
	MinOffset int64  `json:"minOffset"`
	MaxOffset int64  `json:"maxOffset"`
	// Slave fields.
	Connected       *bool    `json:"connected,omitempty"`
	State           string   `json:"state,omitempty"`
	LagBytes        int64    `json:"lagBytes"`
	LagSeconds      *float64 `json:"lagSeconds,omitempty"`
	InSync          *bool    `json:"inSync,omitempty"`
	CatchingUp      bool     `json:"catchingUp,omitempty"`
	Progress        *float64 `json:"progress,omitempty"`        // 0..1 of the master's log held
	RateBytesPerSec *float64 `json:"rateBytesPerSec,omitempty"` // replication rate since the previous sample
	ETASeconds      *float64 `json:"etaSeconds,omitempty"`      // lag / rate
}

// HAGroup is one broker group (a master and its slaves).
type HAGroup struct {
	Cluster         string   `json:"cluster"`
	BrokerName      string   `json:"brokerName"`
	Epoch           int64    `json:"epoch"`
	ConfirmedOffset int64    `json:"confirmedOffset"`
	InSyncCount     int      `json:"inSyncCount"` // copies in sync, master included; -1 unknown
	SlaveCount      int      `json:"connectedSlaves"`
	Nodes           []HANode `json:"nodes"`
	// Failover is the election view of the master (or, without one, of any node) when
	// automatic failover is on.
	Failover *FailoverView `json:"failover,omitempty"`
	Warnings []string      `json:"warnings,omitempty"`
}

// FailoverView is the part of a broker's failover status haStatus shows.
type FailoverView struct {
	Holder      int64   `json:"lockHolder"` // node id holding the leader lock, 0 = free
	HolderAddr  string  `json:"lockHolderAddr,omitempty"`
	Epoch       int64   `json:"epoch"`
	InSync      []int64 `json:"inSync"`
	Fenced      bool    `json:"fenced"`
	LeaseLeftMs int64   `json:"leaseLeftMs"`
}

// HAReport is one haStatus sample.
type HAReport struct {
	Time     time.Time `json:"time"`
	Groups   []HAGroup `json:"groups"`
	Warnings []string  `json:"warnings,omitempty"`
}

var cmdHAStatus = &command{
	name:    "haStatus",
	summary: "replication of every broker group: offsets, lag, in-sync state, epoch; --watch",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.cluster, "c", "", "only this cluster")
		fs.StringVar(&o.httpList, "http", "", "brokers' HTTP status endpoints host:port[,host:port] for per-slave details")
		fs.BoolVar(&o.watch, "watch", false, "refresh until interrupted")
		fs.DurationVar(&o.interval, "interval", time.Second, "refresh interval of --watch")
		fs.IntVar(&o.count, "count", 0, "with --watch, stop after this many refreshes (0: never)")
		fs.BoolVar(&o.check, "check", false, "exit 1 when a group has a warning (slave missing, behind or unreachable)")
	},
	run: runHAStatus,
}

func runHAStatus(ctx context.Context, e *env) error {
	if e.o.interval <= 0 {
		return fmt.Errorf("%w: --interval must be > 0", ErrUsage)
	}
	https := splitAddrs(e.o.httpList)
	if !e.o.watch {
		rep, err := collectHA(ctx, e.admin, e.o.cluster, https, nil, e.now)
		if err != nil {
			return err
		}
		if rep.catchingUp() {
			// One more sample a moment later gives the rate and the time left.
			select {
			case <-ctx.Done():
			case <-time.After(e.o.interval):
				if r2, err := collectHA(ctx, e.admin, e.o.cluster, https, rep, e.now); err == nil {
					rep = r2
				}
			}
		}
		if err := renderHA(e, rep); err != nil {
			return err
		}
		return rep.checkErr(e.o.check)
	}
	var prev *HAReport
	tty := isTerminal(e.stdout)
	for i := 0; e.o.count == 0 || i < e.o.count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(e.o.interval):
			}
		}
		rep, err := collectHA(ctx, e.admin, e.o.cluster, https, prev, e.now)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Keep watching through outages; say so in place of the table.
			fmt.Fprintf(e.stdout, "%s  %v\n", e.now().Format(time.TimeOnly), err)
			continue
		}
		if tty && !e.o.json {
			fmt.Fprint(e.stdout, "\033[H\033[2J")
		}
		if !e.o.json {
			fmt.Fprintf(e.stdout, "Every %s: mqadmin haStatus  %s\n\n", e.o.interval, rep.Time.Format(time.TimeOnly))
		}
		if err := renderHA(e, rep); err != nil {
			return err
		}
		prev = rep
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (r *HAReport) catchingUp() bool {
	for _, g := range r.Groups {
		for _, n := range g.Nodes {
			if n.CatchingUp {
				return true
			}
		}
	}
	return false
}

// checkErr is the --check outcome: ErrServer when any warning was raised.
func (r *HAReport) checkErr(check bool) error {
	if !check {
		return nil
	}
	n := len(r.Warnings)
	for _, g := range r.Groups {
		n += len(g.Warnings)
	}
	if n > 0 {
		return fmt.Errorf("%w: %d replication warning(s)", ErrServer, n)
	}
	return nil
}

func boolp(b bool) *bool                        { return &b }
func floatp(f float64) *float64                 { return &f }
func atoi64(s string) int64                     { n, _ := strconv.ParseInt(s, 10, 64); return n }
func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// collectHA takes one sample of every broker group. prev, when given, is the previous sample,
// from which replication rates are computed.
func collectHA(ctx context.Context, a *Admin, cluster string, httpAddrs []string, prev *HAReport, now func() time.Time) (*HAReport, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	rep := &HAReport{Time: now(), Groups: []HAGroup{}}

	// HTTP status pages, keyed by the broker's remoting address.
	statusOf := map[string]*BrokerHTTPStatus{}
	fetchHTTP := func(hp string) {
		st, err := a.HTTPStatus(ctx, hp)
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("status page %s: %v", hp, err))
			return
		}
		for _, k := range []string{st.AdvertisedAddr, st.Addr} {
			if k != "" {
				statusOf[k] = st
			}
		}
	}
	for _, hp := range httpAddrs {
		fetchHTTP(hp)
	}

	type key struct{ cluster, name string }
	groups := map[key][]brokerRef{}
	for _, b := range brokers(ci, cluster) {
		k := key{b.Cluster, b.BrokerName}
		groups[k] = append(groups[k], b)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].cluster != keys[j].cluster {
			return keys[i].cluster < keys[j].cluster
		}
		return keys[i].name < keys[j].name
	})
	prevNodes := map[string]HANode{}
	if prev != nil {
		for _, g := range prev.Groups {
			for _, n := range g.Nodes {
				prevNodes[g.Cluster+"/"+g.BrokerName+"/"+strconv.FormatInt(n.BrokerID, 10)] = n
			}
		}
	}
	for _, k := range keys {
		g := HAGroup{Cluster: k.cluster, BrokerName: k.name, InSyncCount: -1}
		var master *HANode
		var masterKV map[string]string
		var slaves []HANode
		for _, b := range groups[k] {
			n := HANode{BrokerID: b.BrokerID, Addr: b.Addr, Source: "runtime"}
			kv, err := a.RuntimeInfo(ctx, b.Addr)
			if err != nil {
				n.Error = err.Error()
				n.Role = "?"
				g.Warnings = append(g.Warnings, fmt.Sprintf("broker %d (%s) %v", b.BrokerID, b.Addr, err))
			} else {
				n.Reachable = true
				n.Role = kv["brokerRole"]
				n.MinOffset, n.MaxOffset = atoi64(kv["commitLogMinOffset"]), atoi64(kv["commitLogMaxOffset"])
				if hp := kv["httpAddr"]; hp != "" && statusOf[b.Addr] == nil {
					if kv["httpTls"] == "true" {
						hp = "https://" + hp
					}
					fetchHTTP(hp)
				}
			}
			if js := kv["failover"]; js != "" && (g.Failover == nil || b.BrokerID == 0) {
				var fv FailoverView
				if err := json.Unmarshal([]byte(js), &fv); err == nil {
					g.Failover = &fv
				}
			}
			if b.BrokerID == 0 {
				masterKV = kv
				nn := n
				master = &nn
				continue
			}
			if kv != nil {
				if hasKey(kv, "haConnected") {
					n.Connected = boolp(kv["haConnected"] == "true")
				}
				n.LagBytes = atoi64(kv["haLagBytes"])
				if v, err := strconv.ParseFloat(kv["haLagSeconds"], 64); err == nil {
					n.LagSeconds = floatp(v)
				}
				n.State = kv["haState"]
			}
			slaves = append(slaves, n)
		}
		if master == nil {
			g.Warnings = append(g.Warnings, "no master registered")
		} else if masterKV != nil {
			g.Epoch = atoi64(masterKV["haEpoch"])
			g.ConfirmedOffset = atoi64(masterKV["haConfirmedOffset"])
			if hasKey(masterKV, "haInSyncCount") {
				g.InSyncCount = int(atoi64(masterKV["haInSyncCount"]))
			}
			g.SlaveCount = int(atoi64(masterKV["haSlaveCount"]))
		}

		// The master's /status knows each connected slave's acknowledged offset and in-sync state.
		// A runtime info carrying the same list under "haSlaves" (a JSON array shaped like
		// /status's haMaster.slaves) makes the status page unnecessary.
		var mst *BrokerHTTPStatus
		if master != nil {
			mst = statusOf[master.Addr]
			if js := masterKV["haSlaves"]; js != "" && (mst == nil || mst.HAMaster == nil) {
				var fromKV BrokerHTTPStatus
				fromKV.HAMaster = &haMasterStatus{Epoch: g.Epoch, Confirmed: g.ConfirmedOffset, InSyncCount: g.InSyncCount}
				if err := json.Unmarshal([]byte(js), &fromKV.HAMaster.Slaves); err == nil {
					mst = &fromKV
				} else {
					g.Warnings = append(g.Warnings, "master's haSlaves runtime key does not decode: "+err.Error())
				}
			}
		}
		if mst != nil && mst.HAMaster != nil {
			if statusOf[master.Addr] != nil {
				master.Source += "+http"
			}
			g.Epoch, g.ConfirmedOffset, g.InSyncCount = mst.HAMaster.Epoch, mst.HAMaster.Confirmed, mst.HAMaster.InSyncCount
			g.SlaveCount = 0
			for _, sv := range mst.HAMaster.Slaves {
				if sv.Streaming {
					g.SlaveCount++
				}
				idx := -1
				for i := range slaves {
					if slaves[i].BrokerID == sv.BrokerID {
						idx = i
					}
				}
				if idx < 0 {
					slaves = append(slaves, HANode{BrokerID: sv.BrokerID, Addr: sv.Addr, Role: "SLAVE", Source: "master-view",
						MaxOffset: sv.AckOffset, Error: "not registered with the name server"})
					idx = len(slaves) - 1
				}
				s := &slaves[idx]
				s.InSync = boolp(sv.InSync)
				if s.Connected == nil {
					s.Connected = boolp(sv.Streaming)
				}
				if sv.Streaming {
					s.LagSeconds = floatp(sv.LagSeconds)
				}
			}
			for i := range slaves {
				if slaves[i].InSync == nil && slaves[i].Reachable {
					slaves[i].InSync = boolp(false) // the master does not stream to it
				}
			}
		}
		for i := range slaves {
			s := &slaves[i]
			if sst := statusOf[s.Addr]; sst != nil && sst.HASlave != nil {
				s.Source += "+http"
				s.State = sst.HASlave.State
				if s.LagSeconds == nil {
					s.LagSeconds = floatp(sst.HASlave.LagSeconds)
				}
				if master == nil || !master.Reachable {
					s.LagBytes = sst.HASlave.LagBytes
				}
			}
			if master != nil && master.Reachable && s.Reachable {
				s.LagBytes = max(0, master.MaxOffset-s.MaxOffset)
			}
		}
		// Without the master's details, the in-sync count still settles the easy cases.
		if g.InSyncCount >= 0 {
			connected := 0
			for _, s := range slaves {
				if s.Connected != nil && *s.Connected {
					connected++
				}
			}
			for i := range slaves {
				s := &slaves[i]
				if s.InSync != nil || !s.Reachable {
					continue
				}
				switch {
				case s.Connected != nil && !*s.Connected, g.InSyncCount <= 1:
					s.InSync = boolp(false)
				case g.InSyncCount-1 >= connected && s.Connected != nil && *s.Connected:
					s.InSync = boolp(true)
				}
			}
		}
		for i := range slaves {
			s := &slaves[i]
			connected := s.Connected == nil || *s.Connected
			if s.Reachable && connected && master != nil && master.Reachable &&
				(s.LagBytes > catchUpThreshold || (s.InSync != nil && !*s.InSync && s.LagBytes > 0)) {
				s.CatchingUp = true
				if span := master.MaxOffset - master.MinOffset; span > 0 {
					s.Progress = floatp(math.Min(1, math.Max(0, float64(s.MaxOffset-master.MinOffset)/float64(span))))
				}
			}
			if p, ok := prevNodes[g.Cluster+"/"+g.BrokerName+"/"+strconv.FormatInt(s.BrokerID, 10)]; ok && prev != nil && s.Reachable && p.Reachable {
				if dt := rep.Time.Sub(prev.Time).Seconds(); dt > 0 {
					rate := math.Max(0, float64(s.MaxOffset-p.MaxOffset)/dt)
					s.RateBytesPerSec = floatp(rate)
					if rate > 0 && s.LagBytes > 0 {
						s.ETASeconds = floatp(float64(s.LagBytes) / rate)
					}
				}
			}
			switch {
			case s.Source == "master-view":
				g.Warnings = append(g.Warnings, fmt.Sprintf("slave %d (%s): %s", s.BrokerID, s.Addr, s.Error))
			case !s.Reachable:
			case s.Connected != nil && !*s.Connected:
				g.Warnings = append(g.Warnings, fmt.Sprintf("slave %d (%s) is not connected to its master", s.BrokerID, s.Addr))
			case s.InSync != nil && !*s.InSync:
				g.Warnings = append(g.Warnings, fmt.Sprintf("slave %d (%s) is not in sync (%s behind)", s.BrokerID, s.Addr, bytesString(s.LagBytes)))
			}
		}
		if master != nil && master.Reachable && g.SlaveCount == 0 && masterKV != nil && hasKey(masterKV, "haSlaveCount") {
			g.Warnings = append(g.Warnings, "no slave connected to the master")
		}
		// A slave of the previous sample that is no longer listed (stopped: the name server
		// drops a broker whose connection closed) stays visible while watching.
		for _, pg := range prevGroups(prev, g.Cluster, g.BrokerName) {
			for _, pn := range pg.Nodes {
				if pn.BrokerID == 0 || slices.ContainsFunc(slaves, func(s HANode) bool { return s.BrokerID == pn.BrokerID }) {
					continue
				}
				gone := HANode{BrokerID: pn.BrokerID, Addr: pn.Addr, Role: pn.Role, Source: "gone", MaxOffset: pn.MaxOffset,
					Error: "no longer registered with the name server"}
				slaves = append(slaves, gone)
				g.Warnings = append(g.Warnings, fmt.Sprintf("slave %d (%s) is gone from the name server", pn.BrokerID, pn.Addr))
			}
		}
		sort.Slice(slaves, func(i, j int) bool { return slaves[i].BrokerID < slaves[j].BrokerID })
		if master != nil {
			g.Nodes = append(g.Nodes, *master)
		}
		g.Nodes = append(g.Nodes, slaves...)
		rep.Groups = append(rep.Groups, g)
	}
	if len(rep.Groups) == 0 {
		if cluster != "" {
			return rep, fmt.Errorf("%w: no broker in cluster %q", ErrNotFound, cluster)
		}
		rep.Warnings = append(rep.Warnings, "the name server knows no broker")
	}
	return rep, nil
}

// prevGroups returns the previous sample's entry for a broker group (none or one).
func prevGroups(prev *HAReport, cluster, name string) []HAGroup {
	if prev == nil {
		return nil
	}
	for _, g := range prev.Groups {
		if g.Cluster == cluster && g.BrokerName == name {
			return []HAGroup{g}
		}
	}
	return nil
}

func renderHA(e *env, rep *HAReport) error {
	if e.o.json {
		if e.o.watch {
			// One line per sample, so a script can read the stream line by line.
			return printJSONLine(e.stdout, rep)
		}
		return printJSON(e.stdout, rep)
	}
	var rows [][]string
	var bars []string
	for _, g := range rep.Groups {
		insync := "?"
		if g.InSyncCount >= 0 {
			insync = strconv.Itoa(g.InSyncCount)
		}
		for _, n := range g.Nodes {
			row := []string{g.Cluster, g.BrokerName, strconv.FormatInt(n.BrokerID, 10), n.Role, n.Addr}
			if n.Source == "gone" {
				row = append(row, "-", "-", "-", "GONE", strconv.FormatInt(g.Epoch, 10))
				rows = append(rows, row)
				continue
			}
			if !n.Reachable && n.Source != "master-view" {
				row = append(row, "-", "-", "-", "UNREACHABLE", strconv.FormatInt(g.Epoch, 10))
				rows = append(rows, row)
				continue
			}
			lagB, lagS, sync := "-", "-", "-"
			if n.BrokerID == 0 {
				sync = "copies " + insync
			} else {
				lagB = bytesString(n.LagBytes)
				if n.LagSeconds != nil {
					lagS = strconv.FormatFloat(*n.LagSeconds, 'f', 1, 64)
				}
				switch {
				case n.Connected != nil && !*n.Connected:
					sync = "DISCONNECTED"
				case n.InSync == nil:
					sync = "?"
				case *n.InSync:
					sync = "yes"
				default:
					sync = "NO"
				}
				if n.State != "" && sync != "yes" {
					sync += " (" + n.State + ")"
				}
			}
			rows = append(rows, append(row, strconv.FormatInt(n.MaxOffset, 10), lagB, lagS, sync, strconv.FormatInt(g.Epoch, 10)))
			if n.CatchingUp {
				bars = append(bars, fmt.Sprintf("%s/%d catching up %s", g.BrokerName, n.BrokerID, progressLine(n)))
			}
		}
	}
	if err := table(e.stdout, []string{"CLUSTER", "BROKER", "ID", "ROLE", "ADDR", "MAX_OFFSET", "LAG_BYTES", "LAG_SEC", "IN_SYNC", "EPOCH"}, rows); err != nil {
		return err
	}
	for _, g := range rep.Groups {
		if f := g.Failover; f != nil {
			holder := "free"
			if f.Holder != 0 {
				holder = fmt.Sprintf("node %d %s", f.Holder, f.HolderAddr)
			}
			fenced := ""
			if f.Fenced {
				fenced = ", writes FENCED"
			}
			fmt.Fprintf(e.stdout, "%s/%s failover: lock %s, epoch %d, in-sync %v, lease left %d ms%s\n",
				g.Cluster, g.BrokerName, holder, f.Epoch, f.InSync, f.LeaseLeftMs, fenced)
		}
	}
	if len(bars) > 0 {
		fmt.Fprintln(e.stdout)
		for _, b := range bars {
			fmt.Fprintln(e.stdout, b)
		}
	}
	var warns []string
	for _, g := range rep.Groups {
		for _, w := range g.Warnings {
			warns = append(warns, g.BrokerName+": "+w)
		}
	}
	warns = append(warns, rep.Warnings...)
	if len(warns) > 0 {
		fmt.Fprintln(e.stdout)
		for _, w := range warns {
			fmt.Fprintln(e.stdout, "WARNING "+w)
		}
	}
	return nil
}

// progressLine renders "[#####.....]  45.0%  3.2 MiB/s  12s left".
func progressLine(n HANode) string {
	const width = 30
	var b strings.Builder
	frac := -1.0
	if n.Progress != nil {
		frac = *n.Progress
	}
	b.WriteByte('[')
	filled := 0
	if frac >= 0 {
		filled = int(math.Round(frac * width))
	}
	b.WriteString(strings.Repeat("#", filled))
	b.WriteString(strings.Repeat(".", width-filled))
	b.WriteByte(']')
	if frac >= 0 {
		fmt.Fprintf(&b, " %5.1f%%", frac*100)
	}
	fmt.Fprintf(&b, "  %s behind", bytesString(n.LagBytes))
	if n.RateBytesPerSec != nil {
		fmt.Fprintf(&b, "  %s/s", bytesString(int64(*n.RateBytesPerSec)))
		if n.ETASeconds != nil {
			fmt.Fprintf(&b, "  %s left", durationString(*n.ETASeconds))
		} else {
			b.WriteString("  stalled")
		}
	} else {
		b.WriteString("  rate unknown")
	}
	return b.String()
}

// bytesString renders a byte count with a binary unit.
func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, u := float64(n)/unit, 0
	for v >= unit && u < 4 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[u])
}

// durationString renders seconds as a short duration ("45s", "3m20s", "2h5m").
func durationString(s float64) string {
	if math.IsInf(s, 0) || math.IsNaN(s) || s > 1e7 {
		return "∞"
	}
	d := time.Duration(math.Ceil(s)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// printJSONLine writes v as one compact line.
func printJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"github.com/rmqha/rmqha/libs/broker/timer"
	"net"
	"net/http"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/obs"
	"github.com/sirupsen/logrus"
)

// Status is a snapshot of the broker for the /status endpoint and tools.
type Status struct {
	Role             string               `json:"role"`
	Cluster          string               `json:"cluster"`
	BrokerName       string               `json:"brokerName"`
	BrokerID         int64                `json:"brokerId"`
	Addr             string               `json:"addr"`
	AdvertisedAddr   string               `json:"advertisedAddr"`
	HAAddr           string               `json:"haAddr,omitempty"`
	HAServerAddr     string               `json:"haServerAddr,omitempty"`
	Running          bool                 `json:"running"`
	MinOffset        int64                `json:"minOffset"`
	MaxOffset        int64                `json:"maxOffset"`
	FlushedOffset    int64                `json:"flushedOffset"`
	DispatchedOffset int64                `json:"dispatchedOffset"`
	StoreError       string               `json:"storeError,omitempty"`
	Topics           int                  `json:"topics"`
	Groups           int                  `json:"groups"`
	Consumers        int                  `json:"consumerChannels"`
	Producers        int                  `json:"producerChannels"`
	HeldPulls        int                  `json:"heldPulls"`
	SendRequests     uint64               `json:"sendRequests"`
	SendRejects      uint64               `json:"sendRejects"`
	PullRequests     uint64               `json:"pullRequests"`
	Namesrvs         []string             `json:"namesrvs"`
	MasterAddr       string               `json:"masterAddr,omitempty"`
	HAMaster         *hawire.MasterStatus `json:"haMaster,omitempty"`
	HASlave          *hawire.SlaveStatus  `json:"haSlave,omitempty"`
	// WritesFenced and Failover: see role.go (automatic failover).
	WritesFenced bool `json:"writesFenced,omitempty"`
	Failover     any  `json:"failover,omitempty"`
	// StoreCheck is what the start-up consume-queue check found (commitlog.RecoveryReport).
	StoreCheck *StoreCheck `json:"storeCheck,omitempty"`
	// Timer is the timer-message service (pending, delivered, lateness histogram).
	Timer *timer.Stats `json:"timer,omitempty"`
}

// StoreCheck reports the consume-queue coverage check of the last start.
type StoreCheck struct {
	// Check says how coverage was checked (against the manifest, or why every queue was
	// rebuilt from the whole CommitLog).
	Check string `json:"check"`
	// Repaired lists the queues found incomplete and rebuilt, with their ranges.
	Repaired []commitlog.CQRepair `json:"repaired,omitempty"`
	// Restored is the number of consume-queue entries those rebuilds wrote.
	Restored int64 `json:"restored"`
	// Index is the background verification of the finished message-index files since the
	// start (messageIndexEnable): how many are left, verified, replaced, and the last failure.
	Index *commitlog.IndexCheck `json:"index,omitempty"`
	// Cut is where the start cut the CommitLog: its first record that failed its checks (a
	// torn tail after a crash, a flipped bit), and what was dropped from there on. Absent
	// when nothing was cut.
	Cut *LogCut `json:"cut,omitempty"`
}

// LogCut is a CommitLog cut made at start (commitlog.RecoveryReport).
type LogCut struct {
	At     int64  `json:"at"`     // the first invalid byte's offset: the log ends here now
	Bytes  int64  `json:"bytes"`  // CommitLog bytes dropped
	File   string `json:"file"`   // the segment holding that byte
	Reason string `json:"reason"` // why it is invalid
}

// Status reports role, identity, store offsets and replication state.
func (b *Broker) Status() Status {
	v := b.view()
	st := Status{
		Role: v.role, Cluster: b.cfg.BrokerClusterName, BrokerName: b.cfg.BrokerName,
		BrokerID: v.id, Addr: b.Addr(), AdvertisedAddr: b.brokerAddr, HAAddr: b.HAAddr(),
		HAServerAddr: v.haServerAddr, Running: b.running(),
		SendRequests: b.sends.Load(), SendRejects: b.sendRejects.Load(), PullRequests: b.pulls.Load(),
		Namesrvs: b.cfg.NamesrvAddrs(),
	}
	st.MasterAddr, _ = b.masterAddr.Load().(string)
	if b.store != nil {
		s := b.store.Stats()
		st.MinOffset, st.MaxOffset, st.FlushedOffset, st.DispatchedOffset = s.MinOffset, s.MaxOffset, s.FlushedOffset, s.DispatchedOffset
		if err := b.store.Err(); err != nil {
			st.StoreError = err.Error()
		}
		rep := b.store.Recovery()
		st.StoreCheck = &StoreCheck{Check: rep.CQCheck, Repaired: rep.CQRepairs, Restored: rep.CQRestored}
		if rep.CutAt >= 0 {
			st.StoreCheck.Cut = &LogCut{At: rep.CutAt, Bytes: rep.CutBytes, File: rep.CutFile, Reason: rep.CutReason}
		}
		if b.cfg.MessageIndexEnable {
			ic := b.store.IndexCheck()
			st.StoreCheck.Index = &ic
		}
	}
	if b.timers != nil {
		ts := b.timers.Stats()
		st.Timer = &ts
	}
	if b.tables != nil {
		st.Topics, st.Groups = b.tables.Topics.Len(), b.tables.Groups.Len()
	}
	if b.clients != nil {
		st.Consumers, st.Producers = b.clients.counts()
	}
	if b.holds != nil {
		st.HeldPulls = b.holds.heldCount()
	}
	if v.master != nil {
		ms := v.master.Status()
		st.HAMaster = &ms
	}
	if v.slave != nil {
		ss := v.slave.Status()
		st.HASlave = &ss
	}
	b.roleStatus(&st)
	return st
}

// Healthy reports whether the broker can do its job: running, store writable (a master) or
// readable (a slave), and for a slave a replication that has not stopped on an unrecoverable
// error. A SYNC_MASTER without an in-sync slave is healthy: it still stores and answers with
// SLAVE_NOT_AVAILABLE, which the status shows.
func (b *Broker) Healthy() error {
	if !b.running() {
		return errors.New("not running")
	}
	if b.store != nil && b.store.Err() != nil {
		return b.store.Err()
	}
	if sl := b.view().slave; sl != nil {
		if s := sl.Status(); s.State == hawire.SlaveFailed.String() {
			return errors.New("replication stopped: " + s.LastError)
		}
	}
	return nil
}

type httpServer struct {
	srv *http.Server
	ln  net.Listener
}

func startHTTP(b *Broker, addr string) (*httpServer, error) {
	var tc *tls.Config
	if b.cfg.HTTPTLSEnable {
		tc = b.tlsSrv.HTTP()
	}
	ln, err := obs.Listen(addr, tc)
	if err != nil {
		return nil, err
	}
	mux := obs.Mux(obs.Endpoints{
		Health:  b.Healthy,
		Status:  func() any { return b.Status() },
		Metrics: b.metrics.reg,
		Pprof:   b.cfg.HTTPPprofEnable,
	})
	if b.cfg.HTTPPprofEnable {
		b.log.WithFields(logrus.Fields{"key": "httpPprofEnable", "addr": ln.Addr().String()}).
			Warn("httpPprofEnable=true: profiling endpoints (/debug/pprof/) are exposed on the status port")
	}
	h := &httpServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *httpServer) addr() string { return h.ln.Addr().String() }

func (h *httpServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

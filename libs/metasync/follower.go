package metasync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"sort"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/sirupsen/logrus"
)

// Source says how a table reached a follower.
type Source string

const (
	// SourceNone: nothing synced yet.
	SourceNone Source = ""
	// SourceNATS: a metasync snapshot, fetched on an announcement or on the
	// catch-up after (re)connecting to NATS.
	SourceNATS Source = "nats"
	// SourceFallback: pulled from the master directly (NATS or metasync unavailable).
	SourceFallback Source = "fallback"
)

// FollowerConfig configures a Follower.
type FollowerConfig struct {
	// Cluster and BrokerName name the broker group whose tables are followed.
	Cluster    string
	BrokerName string
	// BrokerID is this slave's id, used in its status reports. Default 1.
	BrokerID int64
	// Tables are the slave's metadata tables; applied tables are persisted
	// through them (the same files the broker uses). Required.
	Tables *meta.Tables
	// Bus carries announcements; nil runs on the fallback only.
	Bus Bus
	// Snapshots serves metasync snapshots; nil runs on the fallback only.
	Snapshots SnapshotSource
	// Master pulls tables from the master directly (the fallback); nil disables it.
	Master MasterSource
	// SubjectPrefix roots the announcement subjects. Default DefaultSubjectPrefix.
	SubjectPrefix string
	// FallbackInterval is the period of the full sync: through metasync while
	// NATS is connected, else (or when metasync fails) from the master. Default 30s.
	FallbackInterval time.Duration
	// CheckInterval is how often the NATS connection state is examined; a
	// reconnect triggers an immediate catch-up. Default 1s.
	CheckInterval time.Duration
	// FetchTimeout bounds one snapshot fetch or master pull. Default 5s.
	FetchTimeout time.Duration
	// ResetStatePath is the file that remembers the explicit offset resets
	// already applied (so a restart does not apply one twice). Empty keeps
	// them in memory. Typically <storePathRootDir>/config/metasyncResets.json.
	ResetStatePath string
	// FS is the file-system seam for ResetStatePath. Default vfs.Default.
	FS vfs.FS
	// Active reports whether the tables should follow the master now; while it is false
	// nothing is fetched or applied (a slave promoted to master owns its tables). Default:
	// always.
	Active func() bool
	// Now is the clock for sync times. Default time.Now.
	Now func() time.Time
	// Logger receives sync events. Default a logrus logger on stderr.
	Logger logrus.FieldLogger
}

// DefaultFollowerConfig returns the production defaults.
func DefaultFollowerConfig() FollowerConfig {
	return FollowerConfig{
		BrokerID:         1,
		SubjectPrefix:    DefaultSubjectPrefix,
		FallbackInterval: 30 * time.Second,
		CheckInterval:    time.Second,
		FetchTimeout:     5 * time.Second,
		FS:               vfs.Default,
		Now:              time.Now,
		Logger:           logrus.New(),
	}
}

// Validate reports the first unusable field.
func (c FollowerConfig) Validate() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Cluster == "":
		return bad("Cluster", "empty")
	case c.BrokerName == "":
		return bad("BrokerName", "empty")
	case c.Tables == nil || c.Tables.Topics == nil || c.Tables.Groups == nil || c.Tables.Offsets == nil || c.Tables.Delay == nil:
		return bad("Tables", "all four tables are required")
	case c.Master == nil && c.Snapshots == nil:
		return bad("Master", "no snapshot source and no master: nothing to sync from")
	case c.SubjectPrefix == "":
		return bad("SubjectPrefix", "empty")
	case c.FallbackInterval <= 0:
		return bad("FallbackInterval", "%v is not positive", c.FallbackInterval)
	case c.CheckInterval <= 0:
		return bad("CheckInterval", "%v is not positive", c.CheckInterval)
	case c.FetchTimeout <= 0:
		return bad("FetchTimeout", "%v is not positive", c.FetchTimeout)
	case c.FS == nil:
		return bad("FS", "nil")
	case c.Now == nil:
		return bad("Now", "nil")
	case c.Logger == nil:
		return bad("Logger", "nil")
	}
	return nil
}

// TableStatus is what a follower holds of one table.
type TableStatus struct {
	Table Table `json:"table"`
	// DataVersion is the master's version of the last snapshot applied
	// (HasVersion false when the master's body had none).
	DataVersion DataVersion `json:"dataVersion"`
	HasVersion  bool        `json:"hasVersion"`
	Digest      string      `json:"digest,omitempty"`
	// Sequence is metasync's sequence of that snapshot (0 from the fallback).
	Sequence uint64 `json:"sequence"`
	// LastSync is the last time the table was confirmed current (applied or
	// found unchanged); zero before the first success.
	LastSync time.Time `json:"lastSync"`
	// LastChange is the last time a sync changed the local table.
	LastChange time.Time `json:"lastChange"`
	// Source is how the last successful sync reached the follower.
	Source Source `json:"source"`
	// LastError is the last failure since the last success ("" when none).
	LastError string `json:"lastError,omitempty"`
	// Applied counts the snapshots that changed the local table.
	Applied uint64 `json:"applied"`
}

// FollowerStatus is a follower's state.
type FollowerStatus struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	// Mode is SourceNATS while announcements flow and metasync answers,
	// SourceFallback while the follower pulls from the master itself.
	Mode         Source        `json:"mode"`
	BusConnected bool          `json:"busConnected"`
	Tables       []TableStatus `json:"tables"`
}

// Table returns the status of t.
func (s FollowerStatus) Table(t Table) TableStatus {
	for _, ts := range s.Tables {
		if ts.Table == t {
			return ts
		}
	}
	return TableStatus{Table: t}
}

// Follower keeps a slave's four metadata tables in step with its master:
// announcements on the bus trigger a fetch of the changed table from
// metasync; a full sync every FallbackInterval (and a catch-up on every
// reconnect) repairs lost announcements; without NATS or metasync it pulls
// from the master directly.
//
// Apply rules: topics and subscription groups are replaced whole (deletes
// propagate); consumer offsets are merged and never lowered, except by an
// explicit OffsetReset newer than the last one applied for that topic@group;
// delay offsets are applied as they are. Each applied table is persisted
// through the tables' own Persist.
type Follower struct {
	cfg FollowerConfig
	log logrus.FieldLogger

	mu     sync.Mutex
	state  map[Table]*tableState
	mode   Source
	resets map[string]DataVersion // topic@group -> version of the last applied reset

	pendMu  sync.Mutex
	pending map[Table]Announcement
	kick    chan struct{}
	syncReq chan chan error

	lastReportKey string    // loop goroutine only
	lastReport    time.Time // loop goroutine only

	cancel    func() error
	ctx       context.Context
	stop      context.CancelFunc
	done      chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
}

type tableState struct {
	st   TableStatus
	held bool
	snap Snapshot // header of the last applied snapshot (Body dropped)
}

// NewFollower validates cfg and loads the reset state.
func NewFollower(cfg FollowerConfig) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Follower{
		cfg:     cfg,
		log:     cfg.Logger.WithFields(logrus.Fields{"cluster": cfg.Cluster, "broker": cfg.BrokerName, "component": "metasync-follower"}),
		state:   map[Table]*tableState{},
		resets:  map[string]DataVersion{},
		pending: map[Table]Announcement{},
		kick:    make(chan struct{}, 1),
		syncReq: make(chan chan error),
		done:    make(chan struct{}),
		mode:    SourceFallback,
	}
	for _, t := range AllTables {
		f.state[t] = &tableState{st: TableStatus{Table: t}}
	}
	// Topics, groups and delay offsets adopt the master's version when applied
	// and persist it, so after a restart the held version is known.
	for t, v := range map[Table]DataVersion{
		TableTopics:             cfg.Tables.Topics.DataVersion(),
		TableSubscriptionGroups: cfg.Tables.Groups.DataVersion(),
		TableDelayOffsets:       cfg.Tables.Delay.DataVersion(),
	} {
		f.state[t].snap = Snapshot{Table: t, DataVersion: v, HasVersion: true}
		f.state[t].st.DataVersion, f.state[t].st.HasVersion = v, true
	}
	if err := f.loadResets(); err != nil {
		return nil, err
	}
	f.ctx, f.stop = context.WithCancel(context.Background())
	return f, nil
}

// Start subscribes to the group's announcements and starts the sync loop
// (which syncs every table at once).
func (f *Follower) Start() error {
	var err error
	f.startOnce.Do(func() {
		if f.cfg.Bus != nil {
			subj := GroupSubject(f.cfg.SubjectPrefix, f.cfg.Cluster, f.cfg.BrokerName)
			f.cancel, err = f.cfg.Bus.Subscribe(subj, f.onMessage)
			if err != nil {
				err = fmt.Errorf("subscribing to %s: %w", subj, err)
				close(f.done)
				return
			}
		}
		go f.run()
	})
	return err
}

// Close stops the loop and unsubscribes.
func (f *Follower) Close() error {
	f.startOnce.Do(func() { close(f.done) }) // never started: nothing runs
	f.closeOnce.Do(func() {
		f.stop()
		if f.cancel != nil {
			_ = f.cancel()
		}
	})
	<-f.done
	return nil
}

// SyncNow runs a full sync (metasync while the bus is connected, else the
// master) and returns the joined errors of the tables that failed. A
// promotion waits on it before opening for writes.
func (f *Follower) SyncNow(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case f.syncReq <- ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-f.done:
		return ErrClosed
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Status returns a copy of the follower's state.
func (f *Follower) Status() FollowerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := FollowerStatus{Cluster: f.cfg.Cluster, BrokerName: f.cfg.BrokerName, BrokerID: f.cfg.BrokerID, Mode: f.mode, BusConnected: f.busConnected()}
	for _, t := range AllTables {
		s.Tables = append(s.Tables, f.state[t].st)
	}
	return s
}

func (f *Follower) busConnected() bool { return f.cfg.Bus != nil && f.cfg.Bus.Connected() }

func (f *Follower) onMessage(subject string, data []byte) {
	a, err := DecodeAnnouncement(data)
	if err != nil {
		f.log.WithError(err).WithField("subject", subject).Warn("ignoring undecodable announcement")
		return
	}
	if a.Cluster != f.cfg.Cluster || a.BrokerName != f.cfg.BrokerName {
		return
	}
	f.pendMu.Lock()
	f.pending[a.Table] = a // the latest announcement of a table wins
	f.pendMu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *Follower) run() {
	defer close(f.done)
	tick := time.NewTicker(f.cfg.CheckInterval)
	defer tick.Stop()
	wasConnected := false
	var lastFull time.Time
	first := true
	for {
		connected := f.busConnected()
		now := f.cfg.Now()
		switch {
		case connected && !wasConnected:
			// (Re)connected: announcements may have been lost meanwhile.
			f.syncAll(connected)
			lastFull = now
		case first || now.Sub(lastFull) >= f.cfg.FallbackInterval:
			f.syncAll(connected)
			lastFull = now
		}
		first = false
		wasConnected = connected
		select {
		case <-f.ctx.Done():
			return
		case <-f.kick:
			f.handlePending()
		case ch := <-f.syncReq:
			ch <- f.syncAll(f.busConnected())
			lastFull = f.cfg.Now()
		case <-tick.C:
		}
		f.report()
	}
}

func (f *Follower) handlePending() {
	f.pendMu.Lock()
	anns := f.pending
	f.pending = map[Table]Announcement{}
	f.pendMu.Unlock()
	if f.cfg.Active != nil && !f.cfg.Active() {
		return
	}
	for _, t := range AllTables {
		a, ok := anns[t]
		if !ok {
			continue
		}
		f.mu.Lock()
		ts := f.state[t]
		cur := ts.held && (a.Digest != "" && a.Digest == ts.snap.Digest || ts.snap.HasVersion && !a.DataVersion.Equal(DataVersion{}) && a.DataVersion.Equal(ts.snap.DataVersion))
		f.mu.Unlock()
		if cur {
			continue // already applied (another instance's duplicate, or our own fetch)
		}
		if src, _ := f.syncTable(t, true, a.SnapshotURL); src != SourceNone {
			f.mu.Lock()
			f.mode = src
			f.mu.Unlock()
		}
	}
}

// syncAll syncs every table; viaMetasync tries metasync first (always when
// there is no master to fall back to).
func (f *Follower) syncAll(viaMetasync bool) error {
	if f.cfg.Active != nil && !f.cfg.Active() {
		return nil
	}
	viaMetasync = viaMetasync || f.cfg.Master == nil
	var errs []error
	fallback := false
	for _, t := range AllTables {
		src, err := f.syncTable(t, viaMetasync, "")
		if err != nil {
			errs = append(errs, err)
		}
		if src == SourceFallback {
			fallback = true
		}
	}
	f.mu.Lock()
	if fallback || !viaMetasync {
		f.mode = SourceFallback
	} else {
		f.mode = SourceNATS
	}
	f.mu.Unlock()
	return errors.Join(errs...)
}

// syncTable fetches t from metasync (when viaMetasync and a source exists),
// else or on failure from the master, and applies it. It returns the source
// used.
func (f *Follower) syncTable(t Table, viaMetasync bool, hint string) (Source, error) {
	var errs []error
	if viaMetasync && f.cfg.Snapshots != nil {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.FetchTimeout)
		s, err := f.cfg.Snapshots.Fetch(ctx, f.cfg.Cluster, f.cfg.BrokerName, t, hint)
		cancel()
		if err == nil {
			if err = f.apply(s, SourceNATS); err == nil {
				return SourceNATS, nil
			}
		}
		errs = append(errs, fmt.Errorf("metasync: %w", err))
	}
	if f.cfg.Master != nil {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.FetchTimeout)
		body, addr, err := f.cfg.Master.Pull(ctx, t)
		cancel()
		if err == nil {
			var s Snapshot
			s, err = NewSnapshot(f.cfg.Cluster, f.cfg.BrokerName, t, body, addr, 0, f.cfg.Now())
			if err == nil {
				if err = f.apply(s, SourceFallback); err == nil {
					if len(errs) > 0 {
						f.log.WithError(errors.Join(errs...)).WithField("table", t).Debug("metasync unavailable, pulled from the master")
					}
					return SourceFallback, nil
				}
			}
		}
		errs = append(errs, fmt.Errorf("master: %w", err))
	}
	if len(errs) == 0 {
		return SourceNone, nil
	}
	err := fmt.Errorf("%s: %w", t, errors.Join(errs...))
	f.mu.Lock()
	f.state[t].st.LastError = err.Error()
	f.mu.Unlock()
	return SourceNone, err
}

// apply installs s into the local tables unless they already hold it.
func (f *Follower) apply(s Snapshot, src Source) error {
	now := f.cfg.Now()
	f.mu.Lock()
	ts := f.state[s.Table]
	held, prev := ts.held || ts.snap.HasVersion, ts.snap
	f.mu.Unlock()
	if held && s.SameContent(prev) {
		f.markSynced(s, src, now, false, true)
		return nil
	}
	if held && src == SourceNATS && s.HasVersion && prev.HasVersion && versionAfter(prev.DataVersion, s.DataVersion) && s.Epoch <= prev.Epoch {
		// A lagging metasync copy (e.g. an instance that just took over); the
		// next announcement or sync brings the current one.
		f.log.WithFields(logrus.Fields{"table": s.Table, "held": prev.DataVersion, "offered": s.DataVersion}).Info("ignoring a snapshot older than the table held")
		f.markSynced(s, src, now, false, false)
		return nil
	}
	changed, err := f.install(s)
	if err != nil {
		return err
	}
	f.markSynced(s, src, now, changed, true)
	if changed {
		f.log.WithFields(logrus.Fields{"table": s.Table, "version": s.DataVersion, "source": src, "sequence": s.Sequence}).Debug("table synced")
	}
	return nil
}

// markSynced records a successful sync; adopt makes s the held snapshot.
func (f *Follower) markSynced(s Snapshot, src Source, now time.Time, changed, adopt bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ts := f.state[s.Table]
	if adopt {
		hdr := s
		hdr.Body = nil
		ts.snap = hdr
		ts.st.DataVersion, ts.st.HasVersion, ts.st.Digest, ts.st.Sequence = s.DataVersion, s.HasVersion, s.Digest, s.Sequence
	}
	ts.held = true
	ts.st.LastSync = now
	ts.st.Source = src
	ts.st.LastError = ""
	if changed {
		ts.st.LastChange = now
		ts.st.Applied++
	}
}

// install writes s into the local table and persists it.
func (f *Follower) install(s Snapshot) (bool, error) {
	tb := f.cfg.Tables
	switch s.Table {
	case TableTopics:
		return tb.Topics.ApplySnapshot(s.Body)
	case TableSubscriptionGroups:
		return tb.Groups.ApplySnapshot(s.Body)
	case TableDelayOffsets:
		changed, err := tb.Delay.ApplySnapshot(s.Body)
		if err != nil {
			return false, err
		}
		return changed, tb.Delay.Persist()
	case TableConsumerOffsets:
		remote, err := meta.DecodeConsumerOffsetSnapshot(s.Body)
		if err != nil {
			return false, err
		}
		// Resets first: a reset sets exact values, the merge then only raises
		// what consumers committed at the master after the reset.
		changed, err := f.applyResets(s.Resets)
		if err != nil {
			return changed, err
		}
		if tb.Offsets.Merge(remote) {
			changed = true
		}
		return changed, tb.Offsets.Persist()
	}
	return false, fmt.Errorf("%w: %q", ErrUnknownTable, string(s.Table))
}

func (f *Follower) applyResets(rs []OffsetReset) (bool, error) {
	changed, marked := false, false
	for _, r := range rs {
		key := meta.OffsetKey(r.Topic, r.Group)
		f.mu.Lock()
		last, seen := f.resets[key]
		f.mu.Unlock()
		if seen && !resetNewer(r.Version, last) {
			continue
		}
		if f.cfg.Tables.Offsets.Reset(r.Group, r.Topic, r.Offsets) {
			changed = true
		}
		f.mu.Lock()
		f.resets[key] = r.Version
		f.mu.Unlock()
		marked = true
		f.log.WithFields(logrus.Fields{"topic": r.Topic, "group": r.Group, "version": r.Version}).Info("applied an explicit consumer offset reset")
	}
	if marked {
		return changed, f.saveResets()
	}
	return changed, nil
}

// resetState is the ResetStatePath file.
type resetState struct {
	Resets map[string]DataVersion `json:"resets"`
}

func (f *Follower) loadResets() error {
	if f.cfg.ResetStatePath == "" {
		return nil
	}
	data, err := vfs.ReadFileLimit(f.cfg.FS, f.cfg.ResetStatePath, 64<<20)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", f.cfg.ResetStatePath, err)
	}
	var st resetState
	if err := json.Unmarshal(data, &st); err != nil {
		// A damaged marker file only risks re-applying a reset: warn, start empty.
		f.log.WithError(err).WithField("file", f.cfg.ResetStatePath).Warn("ignoring unreadable reset state")
		return nil
	}
	for k, v := range st.Resets {
		f.resets[k] = v
	}
	return nil
}

func (f *Follower) saveResets() error {
	if f.cfg.ResetStatePath == "" {
		return nil
	}
	f.mu.Lock()
	keys := make([]string, 0, len(f.resets))
	for k := range f.resets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	st := resetState{Resets: make(map[string]DataVersion, len(keys))}
	for _, k := range keys {
		st.Resets[k] = f.resets[k]
	}
	f.mu.Unlock()
	data, _ := json.Marshal(st)
	return vfs.WriteFileAtomic(f.cfg.FS, f.cfg.ResetStatePath, data)
}

// report publishes the follower's state when it changed, or when the last
// report is older than FallbackInterval.
func (f *Follower) report() {
	if !f.busConnected() {
		return
	}
	st := f.Status()
	key := fmt.Sprint(st.Mode)
	for _, t := range st.Tables {
		key += fmt.Sprintf("|%v/%s/%d/%s", t.DataVersion, t.Digest, t.Applied, t.LastError)
	}
	now := f.cfg.Now()
	if key == f.lastReportKey && now.Sub(f.lastReport) < f.cfg.FallbackInterval {
		return
	}
	subj := StatusSubject(f.cfg.SubjectPrefix, f.cfg.Cluster, f.cfg.BrokerName, f.cfg.BrokerID)
	if err := f.cfg.Bus.Publish(subj, AppendFollowerReport(nil, st.Report(now))); err != nil {
		f.log.WithError(err).Debug("publishing the follower report failed")
		return
	}
	f.lastReportKey, f.lastReport = key, now
}

package meta

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/route"
)

// Durability says when a change to a topic or subscription-group table is
// in its file.
type Durability int

const (
	// Wait returns once the change is in the table file. Changes pending at
	// that moment are written by the same rewrite (one writer at a time; the
	// callers waiting behind it find their change already written).
	Wait Durability = iota
	// Batch returns at once: the change is written with the next batch, at
	// most Config.PersistBatchInterval later, or by the call that brings the
	// number of unwritten changes to Config.PersistBatchSize. A crash before
	// that loses it (what heartbeats and pulls auto-create is created again
	// by the next one).
	Batch
)

// versioned is the version and persistence state shared by every table.
type versioned struct {
	cfg    Config
	store  *fileStore
	loaded LoadInfo

	mu      sync.RWMutex // guards version and the table's content
	version DataVersion

	persistMu        sync.Mutex // serialises file writes; taken before mu
	persisted        bool       // persistedVersion is meaningful
	persistedVersion DataVersion

	// Change sequence of the config tables (topics, groups): seq counts
	// changes (under mu), written is the seq the last successful rewrite
	// covered (stored under persistMu).
	seq     uint64
	written atomic.Uint64
	writes  atomic.Uint64 // successful table rewrites

	batchMu sync.Mutex
	timer   *time.Timer // armed while Batch changes wait for the interval
	closed  bool
}

// bump moves to the next version; mu must be held for writing.
func (v *versioned) bump() { v.version = v.version.Next(v.cfg.Now()) }

// DataVersion returns the current version.
func (v *versioned) DataVersion() DataVersion {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.version
}

// LoadInfo reports where the table came from at start.
func (v *versioned) LoadInfo() LoadInfo { return v.loaded }

// persist writes the current snapshot. With onlyIfChanged it skips the write
// when the version has not moved since the last successful one. The snapshot
// is taken under persistMu so the last writer always writes the newest state.
func (v *versioned) persist(snapshot func() ([]byte, DataVersion), validate func([]byte) error, onlyIfChanged bool) error {
	if v.store == nil {
		return nil
	}
	v.persistMu.Lock()
	defer v.persistMu.Unlock()
	data, ver := snapshot()
	if onlyIfChanged && v.persisted && ver == v.persistedVersion {
		return nil
	}
	if err := v.store.save(data, validate); err != nil {
		return err
	}
	v.persisted, v.persistedVersion = true, ver
	return nil
}

// configTable is a versioned map of named configs (topics, groups) whose
// snapshot is {"dataVersion":..,"<key>":{name:config,..}}.
type configTable[V any] struct {
	versioned
	key        string
	items      map[string]V
	clone      func(V) V
	equal      func(a, b V) bool
	appendItem func([]byte, V) []byte
	decode     func([]byte) (DataVersion, map[string]V, error)
	// changed is the seq of each item's latest change (WaitDurable).
	changed map[string]uint64
}

func (t *configTable[V]) get(name string) (V, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.items[name]
	if ok {
		v = t.clone(v)
	}
	return v, ok
}

// putLocked stores v and reports whether the content changed; mu held.
func (t *configTable[V]) putLocked(name string, v V) bool {
	if old, ok := t.items[name]; ok && t.equal(old, v) {
		return false
	}
	t.items[name] = t.clone(v)
	t.changeLocked(name)
	return true
}

// changeLocked records a change of item name (new version, next seq); mu
// held for writing. It returns the change's seq.
func (t *configTable[V]) changeLocked(name string) uint64 {
	t.bump()
	t.seq++
	if t.changed == nil {
		t.changed = map[string]uint64{}
	}
	t.changed[name] = t.seq
	return t.seq
}

func (t *configTable[V]) put(name string, v V) (bool, error) {
	t.mu.Lock()
	changed := t.putLocked(name, v)
	seq := t.seq
	t.mu.Unlock()
	if !changed {
		return false, nil
	}
	return true, t.commit(seq, Wait)
}

func (t *configTable[V]) delete(name string) (bool, error) {
	t.mu.Lock()
	_, ok := t.items[name]
	if ok {
		delete(t.items, name)
		t.changeLocked(name)
		delete(t.changed, name)
	}
	seq := t.seq
	t.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, t.commit(seq, Wait)
}

// commit makes change seq durable as d asks.
func (t *configTable[V]) commit(seq uint64, d Durability) error {
	if d == Wait {
		return t.sync(seq)
	}
	t.schedule()
	return nil
}

// sync returns once a rewrite covering change seq succeeded: the first
// caller writes the whole table (every change made so far), callers queued
// behind it on persistMu find their change written and return.
func (t *configTable[V]) sync(seq uint64) error {
	if t.written.Load() >= seq {
		return nil
	}
	if t.store == nil {
		t.persistMu.Lock()
		t.mu.RLock()
		cur := t.seq
		t.mu.RUnlock()
		if cur > t.written.Load() {
			t.written.Store(cur)
		}
		t.persistMu.Unlock()
		return nil
	}
	t.persistMu.Lock()
	defer t.persistMu.Unlock()
	if t.written.Load() >= seq {
		return nil
	}
	t.mu.RLock()
	data, ver, cur := t.snapshotLocked(), t.version, t.seq
	t.mu.RUnlock()
	if err := t.store.save(data, t.validate); err != nil {
		t.cfg.Logger.WithError(err).WithField("table", t.key).Error("metadata persist failed")
		return err
	}
	t.persisted, t.persistedVersion = true, ver
	t.written.Store(cur)
	t.writes.Add(1)
	return nil
}

// pending is the number of changes not yet written.
func (t *configTable[V]) pending() uint64 {
	t.mu.RLock()
	cur := t.seq
	t.mu.RUnlock()
	w := t.written.Load()
	if cur <= w {
		return 0
	}
	return cur - w
}

// schedule arranges for Batch changes to be written: at once when
// PersistBatchSize of them are pending (in the caller), otherwise by a timer
// PersistBatchInterval after the first of them.
func (t *configTable[V]) schedule() {
	n := t.pending()
	if n == 0 {
		return
	}
	if n >= t.cfg.batchSize() {
		t.mu.RLock()
		cur := t.seq
		t.mu.RUnlock()
		_ = t.sync(cur) // logged; the timer below retries
		if t.pending() == 0 {
			return
		}
	}
	t.batchMu.Lock()
	defer t.batchMu.Unlock()
	if t.timer != nil || t.closed {
		return
	}
	t.timer = time.AfterFunc(t.cfg.batchInterval(), t.flushBatch)
}

// flushBatch is the batch timer: it writes what is pending and, when the
// write failed, tries again one interval later.
func (t *configTable[V]) flushBatch() {
	t.batchMu.Lock()
	t.timer = nil
	closed := t.closed
	t.batchMu.Unlock()
	if closed {
		return
	}
	t.mu.RLock()
	cur := t.seq
	t.mu.RUnlock()
	if t.sync(cur) != nil || t.pending() > 0 {
		t.schedule()
	}
}

// flush writes every pending change now and stops the batch timer when
// closing; it returns the write error.
func (t *configTable[V]) flush(closing bool) error {
	t.batchMu.Lock()
	if closing {
		t.closed = true
	}
	if t.timer != nil && closing {
		t.timer.Stop()
		t.timer = nil
	}
	t.batchMu.Unlock()
	t.mu.RLock()
	cur := t.seq
	t.mu.RUnlock()
	return t.sync(cur)
}

// waitDurable returns once the latest change of item name is written
// (at once when it already is, or for an unknown name).
func (t *configTable[V]) waitDurable(name string) error {
	t.mu.RLock()
	seq := t.changed[name]
	t.mu.RUnlock()
	if seq == 0 || t.written.Load() >= seq {
		return nil
	}
	return t.sync(seq)
}

func (t *configTable[V]) all() []V {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.items))
	for n := range t.items {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]V, 0, len(names))
	for _, n := range names {
		out = append(out, t.clone(t.items[n]))
	}
	return out
}

func (t *configTable[V]) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.items)
}

func (t *configTable[V]) snapshotLocked() []byte {
	dst := append([]byte(nil), `{"dataVersion":`...)
	dst = route.AppendDataVersion(dst, t.version)
	dst = append(dst, ',', '"')
	dst = append(dst, t.key...)
	dst = append(dst, `":{`...)
	names := make([]string, 0, len(t.items))
	for n := range t.items {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = route.AppendString(dst, n)
		dst = append(dst, ':')
		dst = t.appendItem(dst, t.items[n])
	}
	return append(dst, '}', '}')
}

func (t *configTable[V]) snapshot() ([]byte, DataVersion) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshotLocked(), t.version
}

func (t *configTable[V]) validate(data []byte) error {
	_, _, err := t.decode(data)
	return err
}

// save writes the table now, whether or not anything changed since the
// last write (start-up repairs, explicit Persist calls).
func (t *configTable[V]) save() error {
	t.mu.Lock()
	t.seq++
	seq := t.seq
	t.mu.Unlock()
	return t.sync(seq)
}

// load fills the table from its file; it reports whether content was found.
func (t *configTable[V]) load() (bool, error) {
	data, info, err := t.store.load(t.validate)
	t.loaded = info
	if err != nil || data == nil {
		return false, err
	}
	ver, items, err := t.decode(data)
	if err != nil {
		return false, err
	}
	t.version, t.items = ver, items
	t.persisted, t.persistedVersion = info.Source == LoadedFile, ver
	return true, nil
}

// applySnapshot replaces the whole table with a decoded snapshot and adopts
// its version. It reports whether the version or the content changed.
func (t *configTable[V]) applySnapshot(data []byte) (bool, error) {
	ver, items, err := t.decode(data)
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	same := ver == t.version && len(items) == len(t.items)
	if same {
		for n, v := range items {
			old, ok := t.items[n]
			if !ok || !t.equal(old, v) {
				same = false
				break
			}
		}
	}
	var seq uint64
	if !same {
		t.items, t.version = items, ver
		t.seq++
		seq = t.seq
		t.changed = map[string]uint64{}
		for n := range items {
			t.changed[n] = seq
		}
	}
	t.mu.Unlock()
	if same {
		return false, nil
	}
	return true, t.commit(seq, Wait)
}

package meta

import (
	"sort"
	"sync"

	"github.com/rmqha/rmqha/libs/broker/route"
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
	t.bump()
	return true
}

func (t *configTable[V]) put(name string, v V) (bool, error) {
	t.mu.Lock()
	changed := t.putLocked(name, v)
	t.mu.Unlock()
	if !changed {
		return false, nil
	}
	return true, t.save()
}

func (t *configTable[V]) delete(name string) (bool, error) {
	t.mu.Lock()
	_, ok := t.items[name]
	if ok {
		delete(t.items, name)
		t.bump()
	}
	t.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, t.save()
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

// save persists the table after a change.
func (t *configTable[V]) save() error {
	err := t.persist(t.snapshot, t.validate, false)
	if err != nil {
		t.cfg.Logger.WithError(err).WithField("table", t.key).Error("metadata persist failed")
	}
	return err
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
	if !same {
		t.items, t.version = items, ver
	}
	t.mu.Unlock()
	if same {
		return false, nil
	}
	return true, t.save()
}

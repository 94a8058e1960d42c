package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// SectorSize is the unit in which MemFS.CrashClone decides whether an
// unsynced write reached the platter.
const SectorSize = 512

// MemFS is an in-memory FS that remembers, per file, what was last made
// durable by Sync, so that CrashClone can produce what a disk might hold after
// a power cut.
//
// Model: directory operations (create, remove, rename, truncate-on-create) are
// durable at once; file contents and Truncate become durable only at Sync.
type MemFS struct {
	mu       sync.Mutex
	files    map[string]*memNode
	dirs     map[string]bool
	clock    func() time.Time
	capacity uint64
}

type memNode struct {
	mu     sync.RWMutex
	data   []byte
	synced []byte
	// [dirtyLo, dirtyHi) covers every byte that may differ from synced.
	dirtyLo, dirtyHi int64
	mod              time.Time
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	return &MemFS{files: map[string]*memNode{}, dirs: map[string]bool{"/": true, ".": true}, clock: time.Now, capacity: 1 << 40}
}

// NewCrashableMem is NewMem; the name says what it is for.
func NewCrashableMem() *MemFS { return NewMem() }

// SetClock sets the clock used for modification times (retention tests).
func (m *MemFS) SetClock(now func() time.Time) {
	m.mu.Lock()
	m.clock = now
	m.mu.Unlock()
}

// SetCapacity sets the size DiskUsage reports as the disk's capacity.
func (m *MemFS) SetCapacity(bytes uint64) {
	m.mu.Lock()
	m.capacity = bytes
	m.mu.Unlock()
}

func clean(name string) string { return filepath.Clean(name) }

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) parentExists(name string) bool {
	d := filepath.Dir(name)
	return m.dirs[d]
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.parentExists(name) {
		return nil, notExist("create", name)
	}
	if m.dirs[name] {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fmt.Errorf("is a directory")}
	}
	n := &memNode{mod: m.clock()}
	m.files[name] = n
	return &memFile{fs: m, node: n, name: name}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, notExist("open", name)
	}
	return &memFile{fs: m, node: n, name: name}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		prefix := name + string(filepath.Separator)
		for k := range m.files {
			if strings.HasPrefix(k, prefix) {
				return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("directory not empty")}
			}
		}
		for k := range m.dirs {
			if strings.HasPrefix(k, prefix) {
				return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return notExist("remove", name)
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := name + string(filepath.Separator)
	for k := range m.files {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(m.files, k)
		}
	}
	for k := range m.dirs {
		if k == name || strings.HasPrefix(k, prefix) {
			delete(m.dirs, k)
		}
	}
	return nil
}

// Rename implements FS (files only).
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return notExist("rename", oldname)
	}
	if !m.parentExists(newname) {
		return notExist("rename", newname)
	}
	delete(m.files, oldname)
	m.files[newname] = n
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; ; d = filepath.Dir(d) {
		if _, isFile := m.files[d]; isFile {
			return &fs.PathError{Op: "mkdir", Path: d, Err: fmt.Errorf("not a directory")}
		}
		m.dirs[d] = true
		if p := filepath.Dir(d); p == d {
			break
		}
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, notExist("list", dir)
	}
	seen := map[string]bool{}
	add := func(p string) {
		if p != dir && filepath.Dir(p) == dir {
			seen[filepath.Base(p)] = true
		}
	}
	for k := range m.files {
		add(k)
	}
	for k := range m.dirs {
		add(k)
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	n, ok := m.files[name]
	isDir := m.dirs[name]
	m.mu.Unlock()
	if ok {
		n.mu.RLock()
		defer n.mu.RUnlock()
		return FileInfo{Name: filepath.Base(name), Size: int64(len(n.data)), ModTime: n.mod}, nil
	}
	if isDir {
		return FileInfo{Name: filepath.Base(name), IsDir: true}, nil
	}
	return FileInfo{}, notExist("stat", name)
}

// SyncDir implements FS; directory operations are already durable in MemFS.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return notExist("syncdir", dir)
	}
	return nil
}

// DiskUsage implements FS: the capacity set by SetCapacity minus the bytes held.
func (m *MemFS) DiskUsage(string) (total, free uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var used uint64
	for _, n := range m.files {
		n.mu.RLock()
		used += uint64(len(n.data))
		n.mu.RUnlock()
	}
	if used > m.capacity {
		return m.capacity, 0, nil
	}
	return m.capacity, m.capacity - used, nil
}

// CrashClone returns a new MemFS holding what a disk could contain after a
// power cut at this instant: every synced byte, and for each 512-byte sector
// written (or truncated) since the last Sync, randomly the new or the old
// content. An unsynced extension of a file keeps a random length, with
// sectors that did not make it reading as zeros. The choice is driven by seed.
func (m *MemFS) CrashClone(seed int64) *MemFS {
	rng := rand.New(rand.NewSource(seed))
	m.mu.Lock()
	defer m.mu.Unlock()
	out := &MemFS{files: map[string]*memNode{}, dirs: map[string]bool{}, clock: m.clock, capacity: m.capacity}
	for d := range m.dirs {
		out.dirs[d] = true
	}
	names := make([]string, 0, len(m.files))
	for k := range m.files {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic for a seed
	for _, name := range names {
		n := m.files[name]
		n.mu.RLock()
		data := crashContent(rng, n)
		mod := n.mod
		n.mu.RUnlock()
		out.files[name] = &memNode{data: data, synced: append([]byte(nil), data...), mod: mod}
	}
	return out
}

func crashContent(rng *rand.Rand, n *memNode) []byte {
	cur, syn := n.data, n.synced
	if n.dirtyHi <= n.dirtyLo && len(cur) == len(syn) {
		return append([]byte(nil), syn...)
	}
	// Length after the crash.
	length := len(syn)
	switch {
	case len(cur) > len(syn):
		// Extension: some prefix of the new length survived.
		length = len(syn) + rng.Intn(len(cur)-len(syn)+1)
		if rng.Intn(3) == 0 {
			length = len(cur)
		}
	case len(cur) < len(syn):
		if rng.Intn(2) == 0 {
			length = len(cur)
		}
	}
	res := make([]byte, length)
	copy(res, syn)
	lo := n.dirtyLo / SectorSize * SectorSize
	hi := n.dirtyHi
	if hi > int64(length) {
		hi = int64(length)
	}
	for s := lo; s < hi; s += SectorSize {
		e := s + SectorSize
		if e > int64(length) {
			e = int64(length)
		}
		if rng.Intn(2) == 0 {
			continue // old content (or zeros beyond the synced length)
		}
		for i := s; i < e; i++ {
			var b byte
			if i < int64(len(cur)) {
				b = cur[i]
			}
			res[i] = b
		}
	}
	return res
}

type memFile struct {
	fs     *MemFS
	node   *memNode
	name   string
	mu     sync.Mutex
	closed bool
}

var errClosedFile = fmt.Errorf("file already closed")

func (f *memFile) check(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: errClosedFile}
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fmt.Errorf("negative offset")}
	}
	n := f.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(len(n.data)) {
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (n *memNode) markDirty(lo, hi int64) {
	if n.dirtyHi <= n.dirtyLo {
		n.dirtyLo, n.dirtyHi = lo, hi
		return
	}
	if lo < n.dirtyLo {
		n.dirtyLo = lo
	}
	if hi > n.dirtyHi {
		n.dirtyHi = hi
	}
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fmt.Errorf("negative offset")}
	}
	n := f.node
	now := f.fs.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	end := off + int64(len(p))
	if end > int64(len(n.data)) {
		if end > int64(cap(n.data)) {
			nc := int64(cap(n.data)) * 2
			if nc < end {
				nc = end
			}
			nd := make([]byte, end, nc)
			copy(nd, n.data)
			n.data = nd
		} else {
			n.data = n.data[:end]
		}
	}
	copy(n.data[off:], p)
	n.markDirty(off, end)
	n.mod = now
	return len(p), nil
}

func (m *MemFS) now() time.Time {
	m.mu.Lock()
	c := m.clock
	m.mu.Unlock()
	return c()
}

func (f *memFile) Sync() error {
	if err := f.check("sync"); err != nil {
		return err
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.synced) != len(n.data) {
		if len(n.data) < len(n.synced) {
			n.synced = n.synced[:len(n.data)]
		} else {
			ns := make([]byte, len(n.data))
			copy(ns, n.synced)
			n.synced = ns
		}
	}
	if n.dirtyHi > n.dirtyLo {
		lo, hi := n.dirtyLo, n.dirtyHi
		if hi > int64(len(n.data)) {
			hi = int64(len(n.data))
		}
		if lo < hi {
			copy(n.synced[lo:hi], n.data[lo:hi])
		}
	}
	n.dirtyLo, n.dirtyHi = 0, 0
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fmt.Errorf("negative size")}
	}
	n := f.node
	now := f.fs.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	old := int64(len(n.data))
	if size <= old {
		// Zero the tail so that a later extension reads zeros.
		for i := size; i < old; i++ {
			n.data[i] = 0
		}
		n.data = n.data[:size]
		n.markDirty(size, old)
	} else {
		nd := make([]byte, size)
		copy(nd, n.data)
		n.data = nd
		n.markDirty(old, size)
	}
	n.mod = now
	return nil
}

func (f *memFile) Size() (int64, error) {
	if err := f.check("stat"); err != nil {
		return 0, err
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: errClosedFile}
	}
	f.closed = true
	return nil
}

// ReadFile returns a copy of a file's current content (test helper).
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	name = clean(name)
	m.mu.Lock()
	n, ok := m.files[name]
	m.mu.Unlock()
	if !ok {
		return nil, notExist("read", name)
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return append([]byte(nil), n.data...), nil
}

// WriteFile replaces a file's content and marks it durable (test helper for
// damaging a store on disk).
func (m *MemFS) WriteFile(name string, data []byte) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.parentExists(name) {
		return notExist("write", name)
	}
	n, ok := m.files[name]
	if !ok {
		n = &memNode{}
		m.files[name] = n
	}
	n.mu.Lock()
	n.data = append([]byte(nil), data...)
	n.synced = append([]byte(nil), data...)
	n.dirtyLo, n.dirtyHi = 0, 0
	n.mod = m.clock()
	n.mu.Unlock()
	return nil
}

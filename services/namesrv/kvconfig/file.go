package kvconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// maxFileSize bounds what Open reads (MaxEntries items of the largest size fit far below it
// with the defaults; a bigger file is refused rather than read).
const maxFileSize = 1 << 30

// fileLayout is RocketMQ's KVConfigSerializeWrapper.
type fileLayout struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// File is the file-backed Store.
type File struct {
	fs   vfs.FS
	path string
	lim  Limits

	mu    sync.RWMutex
	table map[string]map[string]string
	n     int
}

// OpenFile loads path (a missing file is an empty configuration) on fsys.
func OpenFile(fsys vfs.FS, path string, lim Limits) (*File, error) {
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	f := &File{fs: fsys, path: path, lim: lim, table: map[string]map[string]string{}}
	data, err := readAll(fsys, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("kvconfig: %s: %w", path, err)
	}
	var l fileLayout
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	for ns, items := range l.ConfigTable {
		for k, v := range items {
			if err := lim.checkItem(ns, k, v); err != nil {
				return nil, fmt.Errorf("kvconfig: %s: %w", path, err)
			}
			f.n++
		}
		if len(items) > 0 {
			f.table[ns] = items
		}
	}
	if f.n > lim.MaxEntries {
		return nil, fmt.Errorf("%w: %s holds %d items, kvConfigMaxEntries %d", ErrLimit, path, f.n, lim.MaxEntries)
	}
	return f, nil
}

func readAll(fsys vfs.FS, name string) ([]byte, error) {
	fh, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	size, err := fh.Size()
	if err != nil {
		return nil, err
	}
	if size > maxFileSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrLimit, size)
	}
	buf := make([]byte, size)
	n, err := fh.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

// Put implements Store.
func (f *File) Put(namespace, key, value string) error {
	if err := f.lim.checkItem(namespace, key, value); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	items := f.table[namespace]
	old, exists := items[key]
	if exists && old == value {
		return nil
	}
	if !exists && f.n >= f.lim.MaxEntries {
		return fmt.Errorf("%w: %d items, kvConfigMaxEntries %d", ErrLimit, f.n, f.lim.MaxEntries)
	}
	next := cloneTable(f.table)
	if next[namespace] == nil {
		next[namespace] = map[string]string{}
	}
	next[namespace][key] = value
	if err := f.save(next); err != nil {
		return err
	}
	f.table = next
	if !exists {
		f.n++
	}
	return nil
}

// Get implements Store.
func (f *File) Get(namespace, key string) (string, bool, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.table[namespace][key]
	return v, ok, nil
}

// Delete implements Store.
func (f *File) Delete(namespace, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.table[namespace][key]; !ok {
		return nil
	}
	next := cloneTable(f.table)
	delete(next[namespace], key)
	if len(next[namespace]) == 0 {
		delete(next, namespace)
	}
	if err := f.save(next); err != nil {
		return err
	}
	f.table = next
	f.n--
	return nil
}

// List implements Store.
func (f *File) List(namespace string) (map[string]string, bool, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	items, ok := f.table[namespace]
	if !ok {
		return nil, false, nil
	}
	out := make(map[string]string, len(items))
	for k, v := range items {
		out[k] = v
	}
	return out, true, nil
}

func cloneTable(t map[string]map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(t)+1)
	for ns, items := range t {
		c := make(map[string]string, len(items)+1)
		for k, v := range items {
			c[k] = v
		}
		out[ns] = c
	}
	return out
}

// save writes table to a temporary file, syncs it and renames it over the file, so a crash
// leaves either the old or the new configuration.
func (f *File) save(table map[string]map[string]string) error {
	data, err := json.Marshal(fileLayout{ConfigTable: table})
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(f.fs, f.path, data); err != nil {
		return fmt.Errorf("kvconfig: %w", err)
	}
	return nil
}

package vfs

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that a crash leaves either the old or the new
// content: write <path>.tmp, fsync it, rename it over path, fsync the directory (created when
// missing). The temporary file is removed when a step fails.
func WriteFileAtomic(fsys FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = fsys.Remove(tmp)
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return fsys.SyncDir(dir)
}

// ReadFileLimit reads a whole file of at most limit bytes; a larger file is an error naming
// both sizes, never read.
func ReadFileLimit(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", path, size, limit)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

package metasync

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new content: write <path>.tmp, fsync it, rename it over path,
// fsync the directory.
func WriteFileAtomic(fsys vfs.FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// ReadFile reads a whole file of at most limit bytes.
func ReadFile(fsys vfs.FS, path string, limit int64) ([]byte, error) {
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
		return nil, fmt.Errorf("%s is %d bytes, limit %d", path, size, limit)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

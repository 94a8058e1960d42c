// Package vfs is the small file-system seam under the commitlog store.
//
// Every byte the store reads or writes goes through FS, so tests can swap the
// operating system for an in-memory file system that simulates power loss
// (MemFS.CrashClone) or for a wrapper that injects EIO/ENOSPC on a chosen
// operation (NewErrorFS).
//
// The interface is deliberately narrow: positional reads and writes, fsync of a
// file and of a directory, truncate, rename and listing. Nothing is memory
// mapped, so a large store costs file descriptors and page cache, not Go heap.
package vfs

import (
	"io"
	"time"
)

// File is an open regular file. ReadAt and WriteAt are positional (pread and
// pwrite) and safe for concurrent use on disjoint ranges.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the file's data durable (fdatasync).
	Sync() error
	// Truncate sets the file's length.
	Truncate(size int64) error
	// Size returns the current length of the file.
	Size() (int64, error)
	// Name returns the path the file was opened with.
	Name() string
}

// FileInfo is what Stat reports about a path.
type FileInfo struct {
	Name    string // base name
	Size    int64
	ModTime time.Time
	IsDir   bool
}

// FS is the file system the store runs on. Paths use the host separator.
type FS interface {
	// Create creates or truncates a file for reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a path and everything below it; a missing path is not an error.
	RemoveAll(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// List returns the sorted base names in a directory; a missing
	// directory yields an error satisfying errors.Is(err, fs.ErrNotExist).
	List(dir string) ([]string, error)
	// Stat describes a path.
	Stat(name string) (FileInfo, error)
	// SyncDir makes the directory's entries (creations, removals, renames) durable.
	SyncDir(dir string) error
	// DiskUsage reports the capacity and the free space of the file system holding path.
	DiskUsage(path string) (total, free uint64, err error)
}

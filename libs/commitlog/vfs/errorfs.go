package vfs

import (
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
)

// Op names an operation the ErrorFS can fail.
type Op int

// Operations an Injector is asked about.
const (
	OpWrite Op = iota
	OpSync
	OpCreate
	OpRead
	OpTruncate
	OpRemove
	OpRename
	OpSyncDir
)

func (o Op) String() string {
	switch o {
	case OpWrite:
		return "write"
	case OpSync:
		return "sync"
	case OpCreate:
		return "create"
	case OpRead:
		return "read"
	case OpTruncate:
		return "truncate"
	case OpRemove:
		return "remove"
	case OpRename:
		return "rename"
	case OpSyncDir:
		return "syncdir"
	}
	return "unknown"
}

// Common injected errors.
var (
	EIO    error = syscall.EIO
	ENOSPC error = syscall.ENOSPC
)

// Injector decides whether an operation fails. It is called before the
// operation runs; a non-nil result is returned instead of running it. An
// injector may also block (to simulate a hung disk).
type Injector interface {
	MaybeError(op Op, path string) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

// MaybeError implements Injector.
func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

// OnNth fails the n-th (1-based) call of op, and, when sticky, every later one too.
type OnNth struct {
	Op     Op
	N      int64
	Err    error
	Sticky bool
	count  atomic.Int64
}

// MaybeError implements Injector.
func (o *OnNth) MaybeError(op Op, _ string) error {
	if op != o.Op {
		return nil
	}
	c := o.count.Add(1)
	if c == o.N || (o.Sticky && c > o.N) {
		return o.Err
	}
	return nil
}

// Switch fails every op in its set while armed; tests arm and disarm it.
type Switch struct {
	mu  sync.Mutex
	ops map[Op]error
}

// Arm makes op fail with err from now on.
func (s *Switch) Arm(op Op, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ops == nil {
		s.ops = map[Op]error{}
	}
	s.ops[op] = err
}

// Disarm stops failing op.
func (s *Switch) Disarm(op Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ops, op)
}

// MaybeError implements Injector.
func (s *Switch) MaybeError(op Op, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops[op]
}

// ErrorFS wraps an FS and consults an Injector before each operation.
type ErrorFS struct {
	inner FS
	inj   Injector
}

// NewErrorFS wraps inner so that inj can fail chosen operations.
func NewErrorFS(inner FS, inj Injector) *ErrorFS { return &ErrorFS{inner: inner, inj: inj} }

func (e *ErrorFS) fail(op Op, path string) error {
	if err := e.inj.MaybeError(op, path); err != nil {
		return &fs.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

// Create implements FS.
func (e *ErrorFS) Create(name string) (File, error) {
	if err := e.fail(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &errFile{File: f, e: e}, nil
}

// Open implements FS.
func (e *ErrorFS) Open(name string) (File, error) {
	f, err := e.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &errFile{File: f, e: e}, nil
}

// Remove implements FS.
func (e *ErrorFS) Remove(name string) error {
	if err := e.fail(OpRemove, name); err != nil {
		return err
	}
	return e.inner.Remove(name)
}

// RemoveAll implements FS.
func (e *ErrorFS) RemoveAll(name string) error {
	if err := e.fail(OpRemove, name); err != nil {
		return err
	}
	return e.inner.RemoveAll(name)
}

// Rename implements FS.
func (e *ErrorFS) Rename(oldname, newname string) error {
	if err := e.fail(OpRename, oldname); err != nil {
		return err
	}
	return e.inner.Rename(oldname, newname)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(dir string) error { return e.inner.MkdirAll(dir) }

// List implements FS.
func (e *ErrorFS) List(dir string) ([]string, error) { return e.inner.List(dir) }

// Stat implements FS.
func (e *ErrorFS) Stat(name string) (FileInfo, error) { return e.inner.Stat(name) }

// SyncDir implements FS.
func (e *ErrorFS) SyncDir(dir string) error {
	if err := e.fail(OpSyncDir, dir); err != nil {
		return err
	}
	return e.inner.SyncDir(dir)
}

// DiskUsage implements FS.
func (e *ErrorFS) DiskUsage(path string) (uint64, uint64, error) { return e.inner.DiskUsage(path) }

type errFile struct {
	File
	e *ErrorFS
}

func (f *errFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.e.fail(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *errFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.e.fail(OpWrite, f.Name()); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *errFile) Sync() error {
	if err := f.e.fail(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errFile) Truncate(size int64) error {
	if err := f.e.fail(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

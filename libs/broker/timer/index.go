package timer

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// index is the on-disk timer index: one file per bucket, named by the bucket's start in ms
// (20 digits, so names sort by time), holding 32-byte entries (format.go) in the order they
// were indexed, plus the checkpoint. Every access goes through vfs.FS. Used by the Service's
// loop goroutine only.
//
//	<dir>/
//	  checkpoint                 Checkpoint, replaced by write-temp, fsync, rename, fsync dir
//	  index/00000001764595200000 entries of slots [1764595200000, +span)
//	  index/00000001764595260000 ...
type index struct {
	fs      vfs.FS
	dir     string
	open    map[int64]vfs.File
	size    map[int64]int64
	dirty   map[int64]bool
	created bool // a file was created since the last sync (the directory needs an fsync)
}

// maxOpenIndexFiles bounds the file descriptors the index keeps open for appending.
const maxOpenIndexFiles = 64

func newIndex(fsys vfs.FS, dir string) (*index, error) {
	if err := fsys.MkdirAll(filepath.Join(dir, "index")); err != nil {
		return nil, fmt.Errorf("timer index: %w", err)
	}
	return &index{fs: fsys, dir: dir, open: map[int64]vfs.File{}, size: map[int64]int64{}, dirty: map[int64]bool{}}, nil
}

func (x *index) path(bucket int64) string {
	return filepath.Join(x.dir, "index", fmt.Sprintf("%020d", bucket))
}

// file opens a bucket for appending; the first open in this process cuts a torn tail.
func (x *index) file(bucket int64) (vfs.File, error) {
	if f, ok := x.open[bucket]; ok {
		return f, nil
	}
	if len(x.open) >= maxOpenIndexFiles {
		// Closed unsynced: sync opens them again (an fsync flushes the file, whichever
		// descriptor asks).
		x.closeAll()
	}
	f, err := x.fs.Open(x.path(bucket))
	if errors.Is(err, fs.ErrNotExist) {
		f, err = x.fs.Create(x.path(bucket))
		x.created = true
	}
	if err != nil {
		return nil, err
	}
	sz, err := f.Size()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if whole := sz / EntrySize * EntrySize; whole != sz {
		if err := f.Truncate(whole); err != nil {
			_ = f.Close()
			return nil, err
		}
		sz = whole
	}
	x.open[bucket], x.size[bucket] = f, sz
	return f, nil
}

// append writes e at the end of its bucket's file.
func (x *index) append(bucket int64, e Entry) error {
	f, err := x.file(bucket)
	if err != nil {
		return fmt.Errorf("timer index %d: %w", bucket, err)
	}
	if _, err := f.WriteAt(AppendEntry(nil, e), x.size[bucket]); err != nil {
		// The tail may be partly written: the next open cuts it.
		_ = f.Close()
		delete(x.open, bucket)
		return fmt.Errorf("timer index %d: %w", bucket, err)
	}
	x.size[bucket] += EntrySize
	x.dirty[bucket] = true
	return nil
}

// takeDirty hands the buckets written since the last call to a background sync (syncFiles)
// and reports whether a file was created (the directory needs an fsync too).
func (x *index) takeDirty() (buckets []int64, created bool) {
	for b := range x.dirty {
		buckets = append(buckets, b)
		delete(x.dirty, b)
	}
	created, x.created = x.created, false
	return buckets, created
}

// syncFiles fsyncs buckets through descriptors of its own, so that it can run beside the
// loop's appends (an fsync flushes the file whichever descriptor asks). A bucket removed
// meanwhile was delivered: not an error.
func (x *index) syncFiles(buckets []int64, dir bool) error {
	for _, b := range buckets {
		f, err := x.fs.Open(x.path(b))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("timer index %d sync: %w", b, err)
		}
		err = f.Sync()
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("timer index %d sync: %w", b, err)
		}
	}
	if dir {
		if err := x.fs.SyncDir(filepath.Join(x.dir, "index")); err != nil {
			return fmt.Errorf("timer index dir sync: %w", err)
		}
	}
	return nil
}

// redirty gives buckets of a failed background sync back to the next one.
func (x *index) redirty(buckets []int64, dir bool) {
	for _, b := range buckets {
		x.dirty[b] = true
	}
	x.created = x.created || dir
}

// sync makes every appended entry durable, in the caller's goroutine.
func (x *index) sync() error {
	for b := range x.dirty {
		f, ok := x.open[b]
		if !ok {
			var err error
			if f, err = x.fs.Open(x.path(b)); err != nil {
				return fmt.Errorf("timer index %d sync: %w", b, err)
			}
		}
		err := f.Sync()
		if !ok {
			_ = f.Close()
		}
		if err != nil {
			return fmt.Errorf("timer index %d sync: %w", b, err)
		}
		delete(x.dirty, b)
	}
	if x.created {
		if err := x.fs.SyncDir(filepath.Join(x.dir, "index")); err != nil {
			return fmt.Errorf("timer index dir sync: %w", err)
		}
		x.created = false
	}
	return nil
}

func (x *index) closeAll() {
	for b, f := range x.open {
		_ = f.Close()
		delete(x.open, b)
	}
}

// read returns the entries of a bucket; a missing file is (nil, false, nil).
func (x *index) read(bucket int64) (entries []Entry, exists bool, bad int, err error) {
	f, ok := x.open[bucket]
	if !ok {
		f, err = x.fs.Open(x.path(bucket))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, 0, nil
		}
		if err != nil {
			return nil, false, 0, err
		}
		defer f.Close()
	}
	sz, err := f.Size()
	if err != nil {
		return nil, true, 0, err
	}
	buf := make([]byte, sz)
	if n, err := f.ReadAt(buf, 0); n != len(buf) {
		return nil, true, 0, fmt.Errorf("timer index %d read: %w", bucket, err)
	}
	entries, bad, _ = DecodeEntries(buf)
	return entries, true, bad, nil
}

// buckets lists the bucket files, oldest first, with their sizes.
func (x *index) buckets() ([]int64, []int64, error) {
	names, err := x.fs.List(filepath.Join(x.dir, "index"))
	if err != nil {
		return nil, nil, err
	}
	var bs, sizes []int64
	for _, n := range names {
		b, err := strconv.ParseInt(n, 10, 64)
		if err != nil || len(n) != 20 {
			continue
		}
		var sz int64
		if sz = x.size[b]; sz == 0 {
			if fi, err := x.fs.Stat(filepath.Join(x.dir, "index", n)); err == nil {
				sz = fi.Size
			}
		}
		bs, sizes = append(bs, b), append(sizes, sz)
	}
	return bs, sizes, nil
}

// remove deletes a bucket whose timers are all delivered.
func (x *index) remove(bucket int64) error {
	if f, ok := x.open[bucket]; ok {
		_ = f.Close()
		delete(x.open, bucket)
	}
	delete(x.dirty, bucket)
	delete(x.size, bucket)
	return x.fs.Remove(x.path(bucket))
}

func (x *index) checkpointPath() string { return filepath.Join(x.dir, "checkpoint") }

// readCheckpoint returns the checkpoint; a missing or damaged one is the zero checkpoint
// (re-index the whole timer queue) and reported through damaged.
func (x *index) readCheckpoint() (c Checkpoint, damaged bool, err error) {
	f, err := x.fs.Open(x.checkpointPath())
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, err
	}
	defer f.Close()
	buf := make([]byte, CheckpointSize)
	if n, _ := f.ReadAt(buf, 0); n != CheckpointSize {
		return Checkpoint{}, true, nil
	}
	c, err = DecodeCheckpoint(buf)
	if err != nil {
		return Checkpoint{}, true, nil
	}
	return c, false, nil
}

func (x *index) writeCheckpoint(c Checkpoint) error {
	return vfs.WriteFileAtomic(x.fs, x.checkpointPath(), AppendCheckpoint(nil, c))
}

func (x *index) close() error {
	err := x.sync()
	x.closeAll()
	return err
}

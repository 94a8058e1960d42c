package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// conformance runs the same checks against every FS implementation.
func conformance(t *testing.T, f FS, root string) {
	t.Helper()
	dir := filepath.Join(root, "a", "b")
	if err := f.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.List(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List missing: %v", err)
	}
	if _, err := f.Open(filepath.Join(dir, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open missing: %v", err)
	}
	name := filepath.Join(dir, "f1")
	fl, err := f.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fl.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fl.WriteAt([]byte("world"), 10); err != nil {
		t.Fatal(err)
	}
	if n, _ := fl.Size(); n != 15 {
		t.Fatalf("size %d", n)
	}
	buf := make([]byte, 15)
	if _, err := fl.ReadAt(buf, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, []byte("hello\x00\x00\x00\x00\x00world")) {
		t.Fatalf("content %q", buf)
	}
	if n, err := fl.ReadAt(make([]byte, 10), 10); n != 5 || err != io.EOF {
		t.Fatalf("short read %d %v", n, err)
	}
	if err := fl.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fl.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if n, _ := fl.Size(); n != 3 {
		t.Fatalf("size after truncate %d", n)
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(name, filepath.Join(dir, "f2")); err != nil {
		t.Fatal(err)
	}
	names, err := f.List(dir)
	if err != nil || len(names) != 1 || names[0] != "f2" {
		t.Fatalf("list %v %v", names, err)
	}
	st, err := f.Stat(filepath.Join(dir, "f2"))
	if err != nil || st.Size != 3 || st.IsDir {
		t.Fatalf("stat %+v %v", st, err)
	}
	if err := f.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if total, free, err := f.DiskUsage(root); err != nil || total == 0 || free > total {
		t.Fatalf("usage %d %d %v", total, free, err)
	}
	if err := f.Remove(filepath.Join(dir, "f2")); err != nil {
		t.Fatal(err)
	}
	if err := f.RemoveAll(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat after RemoveAll: %v", err)
	}
}

func TestConformanceOS(t *testing.T)  { conformance(t, Default, t.TempDir()) }
func TestConformanceMem(t *testing.T) { conformance(t, NewMem(), "/root") }

func TestCrashCloneKeepsSyncedBytes(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		m := NewMem()
		if err := m.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
		f, _ := m.Create("/d/x")
		synced := bytes.Repeat([]byte{1}, 3000)
		f.WriteAt(synced, 0)
		f.Sync()
		f.WriteAt(bytes.Repeat([]byte{2}, 5000), 3000)
		c := m.CrashClone(seed)
		got, err := c.ReadFile("/d/x")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 3000 || !bytes.Equal(got[:3000], synced) {
			t.Fatalf("seed %d: synced prefix lost", seed)
		}
		for i := 3000; i < len(got); i++ {
			if got[i] != 0 && got[i] != 2 {
				t.Fatalf("seed %d: byte %d = %d", seed, i, got[i])
			}
		}
	}
}

func TestCrashCloneVaries(t *testing.T) {
	lengths := map[int]bool{}
	for seed := int64(0); seed < 40; seed++ {
		m := NewMem()
		m.MkdirAll("/d")
		f, _ := m.Create("/d/x")
		f.WriteAt(bytes.Repeat([]byte{7}, 10000), 0)
		got, _ := m.CrashClone(seed).ReadFile("/d/x")
		lengths[len(got)] = true
	}
	if len(lengths) < 3 {
		t.Fatalf("crash clone not random enough: %v", lengths)
	}
}

func TestCrashCloneUnsyncedTruncate(t *testing.T) {
	seen := map[int]bool{}
	for seed := int64(0); seed < 20; seed++ {
		m := NewMem()
		m.MkdirAll("/d")
		f, _ := m.Create("/d/x")
		f.WriteAt(bytes.Repeat([]byte{7}, 4096), 0)
		f.Sync()
		f.Truncate(1000)
		got, _ := m.CrashClone(seed).ReadFile("/d/x")
		seen[len(got)] = true
		f.Sync()
		got, _ = m.CrashClone(seed).ReadFile("/d/x")
		if len(got) != 1000 {
			t.Fatalf("synced truncate not kept: %d", len(got))
		}
	}
	if !seen[1000] || !seen[4096] {
		t.Fatalf("unsynced truncate outcomes %v", seen)
	}
}

func TestErrorFS(t *testing.T) {
	inj := &OnNth{Op: OpWrite, N: 2, Err: ENOSPC}
	e := NewErrorFS(NewMem(), inj)
	e.MkdirAll("/d")
	f, err := e.Create("/d/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("b"), 1); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("want ENOSPC, got %v", err)
	}
	if _, err := f.WriteAt([]byte("c"), 1); err != nil {
		t.Fatalf("non-sticky: %v", err)
	}
	var sw Switch
	e2 := NewErrorFS(NewMem(), &sw)
	e2.MkdirAll("/d")
	g, _ := e2.Create("/d/y")
	sw.Arm(OpSync, EIO)
	if err := g.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("want EIO, got %v", err)
	}
	sw.Disarm(OpSync)
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
}

package vfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// TestWriteAtTailBytes writes a file in appends of every size class (raw, and over maxRawWrite
// so ordinary) and overwrites inside it, on the OS and in memory, and reads back every byte.
func TestWriteAtTailBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		root string
	}{{"os", Default, t.TempDir()}, {"mem", NewMem(), "/m"}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fs.MkdirAll(tc.root); err != nil {
				t.Fatal(err)
			}
			f, err := tc.fs.Create(filepath.Join(tc.root, "seg"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var want []byte
			for i, n := range []int{1, 20, 1000, 4096, 4097, maxRawWrite, maxRawWrite + 1, 3} {
				p := bytes.Repeat([]byte{byte(i + 1)}, n)
				got, err := WriteAtTail(f, p, int64(len(want)))
				if err != nil || got != n {
					t.Fatalf("append %d bytes: n=%d err=%v", n, got, err)
				}
				want = append(want, p...)
			}
			if _, err := WriteAtTail(f, []byte("over"), 10); err != nil {
				t.Fatal(err)
			}
			copy(want[10:], "over")
			if n, _ := f.Size(); n != int64(len(want)) {
				t.Fatalf("size %d, want %d", n, len(want))
			}
			got := make([]byte, len(want))
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("bytes read back differ from the bytes written")
			}
			if n, err := WriteAtTail(f, nil, 0); n != 0 || err != nil {
				t.Fatalf("empty write: n=%d err=%v", n, err)
			}
		})
	}
}

// TestWriteAtTailConcurrent writes disjoint ranges of one file from several goroutines.
func TestWriteAtTailConcurrent(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const writers, per, size = 4, 200, 100
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				off := int64((i*writers + w) * size)
				if _, err := WriteAtTail(f, bytes.Repeat([]byte{byte(w + 1)}, size), off); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := make([]byte, writers*per*size)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < writers*per; i++ {
		if want := bytes.Repeat([]byte{byte(i%writers + 1)}, size); !bytes.Equal(got[i*size:(i+1)*size], want) {
			t.Fatalf("range %d holds %v", i, got[i*size])
		}
	}
	if n := rawWriters.Load(); n != 0 {
		t.Fatalf("%d raw-write slots still held", n)
	}
}

// TestWriteAtTailErrors checks the raw path fails as WriteAt does: a descriptor opened
// read-only, a closed file and a negative offset.
func TestWriteAtTailErrors(t *testing.T) {
	name := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	f := newOSFile(ro)
	_, rawErr := f.WriteAtTail([]byte("abc"), 0)
	_, ordErr := ro.WriteAt([]byte("abc"), 0)
	var pe *os.PathError
	if !errors.As(rawErr, &pe) || pe.Op != "write" || pe.Path != name || !errors.Is(rawErr, syscall.EBADF) {
		t.Fatalf("raw write to a read-only descriptor: %v", rawErr)
	}
	if !errors.Is(ordErr, syscall.EBADF) {
		t.Fatalf("ordinary write to a read-only descriptor: %v", ordErr)
	}
	if _, err := f.WriteAtTail([]byte("abc"), -1); err == nil {
		t.Fatal("negative offset accepted")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAtTail([]byte("abc"), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write to a closed file: %v", err)
	}
	if n := rawWriters.Load(); n != 0 {
		t.Fatalf("%d raw-write slots still held", n)
	}
}

// TestRawWriteSlots checks the limit: GOMAXPROCS-1 raw writes at a time, none with one P.
func TestRawWriteSlots(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	if acquireRawWrite() {
		t.Fatal("a raw write was allowed with GOMAXPROCS=1")
	}
	runtime.GOMAXPROCS(3)
	if !acquireRawWrite() || !acquireRawWrite() {
		t.Fatal("GOMAXPROCS=3 refused one of its two raw writes")
	}
	if acquireRawWrite() {
		t.Fatal("GOMAXPROCS=3 allowed a third raw write")
	}
	releaseRawWrite()
	if !acquireRawWrite() {
		t.Fatal("a released slot was not reusable")
	}
	releaseRawWrite()
	releaseRawWrite()
	if n := rawWriters.Load(); n != 0 {
		t.Fatalf("%d slots held after releasing all", n)
	}
}

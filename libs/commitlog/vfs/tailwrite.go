package vfs

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// TailWriter is implemented by files that can write at the end of an append-only file without
// the scheduler's system-call hand-off.
//
// A pwrite made through the syscall package enters the scheduler's system-call state. When the
// process was idle, its monitor thread sleeps, and that call wakes it (a futex wake-up); it then
// polls every 20 µs for as long as any goroutine runs. A broker that idles between sends, and a
// slave that idles between replicated frames, pays that once per batch: on one synchronous send
// at a time it was 6.5% of the master's CPU and 14% of the slave's.
//
// A raw write cannot be handed off, so the caller's P stays held until it returns. Appends at
// the end of a CommitLog segment or a consume queue land in the page cache: the partial last
// page is the one just written, so the call copies and returns. It can still wait (dirty-page
// throttling, a page read back after a restart). So at most GOMAXPROCS-1 raw writes run at a
// time in the process, and any other write takes the ordinary path: one P always stays free
// for the rest of the process, and with GOMAXPROCS=1 every write is ordinary. A write larger
// than maxRawWrite also takes it: such a write (a replicated backlog's batch) pays the wake-up
// once per many messages, and a raw call that long would hold back a stop-the-world pause.
type TailWriter interface {
	// WriteAtTail is WriteAt, for a write at or near the end of the file.
	WriteAtTail(p []byte, off int64) (int, error)
}

// WriteAtTail writes p at off with f's WriteAtTail when it has one, and with WriteAt otherwise
// (an in-memory file, a fault-injecting wrapper).
func WriteAtTail(f File, p []byte, off int64) (int, error) {
	if t, ok := f.(TailWriter); ok {
		return t.WriteAtTail(p, off)
	}
	return f.WriteAt(p, off)
}

// maxRawWrite is the largest write made raw: 256 KiB into new page-cache pages takes well
// under a millisecond.
const maxRawWrite = 256 << 10

// rawWriters counts the raw writes in progress in the process.
var rawWriters atomic.Int32

func acquireRawWrite() bool {
	if rawWriters.Add(1) > int32(runtime.GOMAXPROCS(0))-1 {
		rawWriters.Add(-1)
		return false
	}
	return true
}

func releaseRawWrite() { rawWriters.Add(-1) }

// tailWriter holds one raw write's state, under mu. The file's RawConn holds the file's write
// lock around attempt, so the file cannot be closed under it.
type tailWriter struct {
	mu    sync.Mutex
	rc    syscall.RawConn
	fn    func(fd uintptr) bool // attempt, bound once
	p     []byte
	off   int64
	n     int
	errno syscall.Errno
}

func (t *tailWriter) attempt(fd uintptr) bool {
	for len(t.p) > 0 {
		r, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&t.p[0])), uintptr(len(t.p)), uintptr(t.off), 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e != 0:
			t.errno = e
			return true
		case r == 0:
			t.errno = syscall.EIO // pwrite of a non-empty buffer to a regular file wrote nothing
			return true
		}
		t.n += int(r)
		t.p = t.p[r:]
		t.off += int64(r)
	}
	return true
}

// WriteAtTail writes p at off with raw pwrite calls when a raw-write slot is free, and with
// WriteAt otherwise. Its errors are WriteAt's: *os.PathError with Op "write".
func (f *osFile) WriteAtTail(p []byte, off int64) (int, error) {
	if f.tail.rc == nil || off < 0 || len(p) == 0 || len(p) > maxRawWrite || !acquireRawWrite() {
		return f.File.WriteAt(p, off)
	}
	defer releaseRawWrite()
	t := &f.tail
	t.mu.Lock()
	t.p, t.off, t.n, t.errno = p, off, 0, 0
	err := t.rc.Write(t.fn)
	n, errno := t.n, t.errno
	t.p = nil
	t.mu.Unlock()
	switch {
	case err != nil:
		// The file is closing (RawConn's only error here, before attempt ran): the ordinary
		// call gives that as WriteAt does, os.ErrClosed.
		return f.File.WriteAt(p, off)
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
	}
	return n, nil // attempt wrote all of p, or set errno
}

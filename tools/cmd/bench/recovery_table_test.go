package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The crash recovery row: a store killed with kill -9 while appending (ASYNC_FLUSH, the
// broker's default), opened again with its files in the page cache (warm) and with them evicted
// (cold), beside a sequential read of the same bytes with a cold page cache, in the same run.

// recoveryChildEnv names the directory a re-executed test binary fills with a store before it
// is killed (TestRecoveryTableChild).
const recoveryChildEnv = "RMQHA_RECOVERY_CHILD_DIR"

// recoveryConfig is the store the row crashes and recovers: the broker's defaults (1 GiB
// segments, ASYNC_FLUSH, the message index on).
func recoveryConfig(dir string) commitlog.Config {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = dir
	return cfg
}

// TestRecoveryTableChild is the process the recovery row kills: with RMQHA_RECOVERY_CHILD_DIR
// set it appends 1 KiB records (UNIQ_KEY and KEYS, eight queues) until the log holds
// RMQHA_RECOVERY_CHILD_BYTES, prints "ready" and waits to be killed.
func TestRecoveryTableChild(t *testing.T) {
	dir := os.Getenv(recoveryChildEnv)
	if dir == "" {
		t.Skip("the recovery row's child process")
	}
	total, err := strconv.ParseInt(os.Getenv("RMQHA_RECOVERY_CHILD_BYTES"), 10, 64)
	require.NoError(t, err)
	s, err := commitlog.Open(recoveryConfig(dir))
	require.NoError(t, err)
	body := make([]byte, 1024)
	host := netip.MustParseAddrPort("127.0.0.1:5555")
	for i := 0; s.MaxOffset() < total; i++ {
		key := fmt.Sprintf("%032d", i)
		m := &commitlog.Message{Topic: "TableRecovery", QueueID: int32(i % 8), Body: body, BornTimestamp: time.Now().UnixMilli(), BornHost: host,
			Properties: "KEYS\x01k" + key[24:] + "\x02UNIQ_KEY\x01" + key + "\x02"}
		_, err := s.Append(m)
		require.NoError(t, err)
	}
	fmt.Println("ready")
	select {} // killed here, with nothing closed
}

// crashedStore runs TestRecoveryTableChild into dir and kills it with SIGKILL once the log
// holds total bytes.
func crashedStore(t *testing.T, dir string, total int64) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRecoveryTableChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), recoveryChildEnv+"="+dir, "RMQHA_RECOVERY_CHILD_BYTES="+strconv.FormatInt(total, 10))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the store writer exited before it was ready")
	case <-time.After(10 * time.Minute):
		t.Fatal("the store writer was not ready within 10 minutes")
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
}

// evictDir writes back and drops from the page cache every file under dir, so that the next
// read of them comes from the disk.
func evictDir(t *testing.T, dir string) {
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return evictFile(p)
	}))
}

// syncDir writes back every file under dir, leaving it in the page cache.
func syncDir(t *testing.T, dir string) {
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	}))
}

func evictFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages cannot be dropped
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// coldReadRate reads every file under dir once with a cold page cache, in 1 MiB reads, and
// returns bytes/s.
func coldReadRate(t *testing.T, dir string) float64 {
	evictDir(t, dir)
	buf := make([]byte, 1<<20)
	var n int64
	start := time.Now()
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "commitlog"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			k, err := f.Read(buf)
			n += int64(k)
			if err != nil {
				return nil // io.EOF
			}
		}
	}))
	return float64(n) / time.Since(start).Seconds()
}

// recoverOnce opens the crashed store in dir, returns how long Open took, how long until the
// consume queues and the index covered the whole log, and the report, then closes it.
func recoverOnce(t *testing.T, dir string) (open, caughtUp time.Duration, rep commitlog.RecoveryReport, cpu time.Duration) {
	c0 := selfCPU(t)
	start := time.Now()
	s, err := commitlog.Open(recoveryConfig(dir))
	require.NoError(t, err)
	open = time.Since(start)
	require.NoError(t, s.WaitDispatched(s.MaxOffset(), time.Now().Add(5*time.Minute)))
	deadline := time.Now().Add(5 * time.Minute)
	for s.IndexedOffset() < s.MaxOffset() {
		require.True(t, time.Now().Before(deadline), "the index did not catch up within 5 minutes")
		time.Sleep(time.Millisecond)
	}
	caughtUp = time.Since(start)
	cpu = selfCPU(t) - c0
	rep = s.Recovery()
	require.False(t, rep.Clean, "the store was killed: recovery must not trust it as clean")
	require.Negative(t, rep.CutAt, "every record the killed writer appended reached the kernel: nothing is cut (%+v)", rep)
	require.NoError(t, s.Close())
	return open, caughtUp, rep, cpu
}

// recoveryRow crashes a store of size bytes twice and recovers it cold, then warm.
func recoveryRow(t *testing.T, size int64) tableRow {
	cold := t.TempDir()
	crashedStore(t, cold, size)
	readRate := coldReadRate(t, cold)
	// The read above brought the log back in: evict it again, and every other file.
	evictDir(t, cold)
	coldOpen, coldAll, rep, cpu := recoverOnce(t, cold)
	require.NoError(t, os.RemoveAll(cold))

	warm := t.TempDir()
	crashedStore(t, warm, size)
	// As for the cold run, the killed writer's dirty pages are written back first: the warm
	// run measures recovery with the files in the page cache, not the kernel's writeback of
	// the writer's data (fsynced by Open).
	syncDir(t, warm)
	warmOpen, warmAll, _, warmCPU := recoverOnce(t, warm)

	gib := float64(rep.MaxOffset) / (1 << 30)
	perGiB := func(d time.Duration) float64 { return d.Seconds() / gib }
	records := float64(max(rep.MaxOffset/1200, 1)) // about 1.2 KiB per stored 1 KiB record
	readS := 1 / (readRate / (1 << 30))
	return tableRow{Goal: fmt.Sprintf("crash recovery after kill -9, %d MiB CommitLog, cold page cache", rep.MaxOffset>>20),
		Value: perGiB(coldOpen), Unit: "s/GiB", Anchor: "sequential read of the same log, cold page cache", AnchorVal: readS, AnchorUnit: "s/GiB",
		Ratio: ratio(perGiB(coldOpen), readS), Allocs: -1,
		CPU: []procUS{{"bench", float64(cpu.Nanoseconds()) / 1e3 / records}},
		Note: fmt.Sprintf("open %.0f ms (%d MiB validated), queues and index caught up %.0f ms; warm: open %.2f s/GiB, caught up %.0f ms, CPU %.2f s/GiB; CPU per record (cold)",
			float64(coldOpen.Microseconds())/1e3, rep.ScannedBytes>>20, float64(coldAll.Microseconds())/1e3,
			perGiB(warmOpen), float64(warmAll.Microseconds())/1e3, perGiB(warmCPU))}
}

// TestRecoveryTable prints only the table's crash recovery row (make bench prints it with the
// others). RMQHA_RECOVERY_MIB sets the size of the killed store's log (default the table's).
func TestRecoveryTable(t *testing.T) {
	if os.Getenv("RMQHA_BENCH") == "" {
		t.Skip("set RMQHA_BENCH=1 to run the crash recovery row")
	}
	size := fullTable.Recovery
	if v, err := strconv.Atoi(os.Getenv("RMQHA_RECOVERY_MIB")); err == nil && v > 0 {
		size = int64(v) << 20
	}
	row := recoveryRow(t, size)
	var out strings.Builder
	printTable(&out, []tableRow{row})
	fmt.Print("\n" + out.String() + "\n")
}

package meta

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var errInjected = errors.New("injected I/O error")

// faultFS wraps OSFS; fail decides per operation and path whether to fail.
// Operations: mkdir, read, create, write, sync, close, rename, remove, syncdir.
type faultFS struct {
	OSFS
	mu     sync.Mutex
	fail   func(op, name string) error
	writes map[string]int // completed renames onto each target
}

func (f *faultFS) check(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		return nil
	}
	return f.fail(op, name)
}

func (f *faultFS) setFail(fn func(op, name string) error) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

func (f *faultFS) renames(target string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes[target]
}

func (f *faultFS) MkdirAll(dir string) error {
	if err := f.check("mkdir", dir); err != nil {
		return err
	}
	return f.OSFS.MkdirAll(dir)
}

func (f *faultFS) ReadFile(name string) ([]byte, error) {
	if err := f.check("read", name); err != nil {
		return nil, err
	}
	return f.OSFS.ReadFile(name)
}

func (f *faultFS) Create(name string) (File, error) {
	if err := f.check("create", name); err != nil {
		return nil, err
	}
	file, err := f.OSFS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Rename(oldname, newname string) error {
	if err := f.check("rename", newname); err != nil {
		return err
	}
	if err := f.OSFS.Rename(oldname, newname); err != nil {
		return err
	}
	f.mu.Lock()
	if f.writes == nil {
		f.writes = map[string]int{}
	}
	f.writes[newname]++
	f.mu.Unlock()
	return nil
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.check("syncdir", dir); err != nil {
		return err
	}
	return f.OSFS.SyncDir(dir)
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.check("write", f.name); err != nil {
		// A torn write: half the bytes reach the file.
		n, _ := f.File.Write(p[:len(p)/2])
		return n, err
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Close() error {
	err := f.File.Close()
	if cerr := f.fs.check("close", f.name); cerr != nil {
		return cerr
	}
	return err
}

// testConfig returns a config persisting under a temp dir with a manual
// clock, a fault-injecting FS and a captured logger.
func testConfig(t *testing.T) (Config, *testClock, *faultFS, *test.Hook) {
	t.Helper()
	clock := newTestClock()
	fsys := &faultFS{}
	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	logger.SetOutput(io.Discard)
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.BrokerClusterName = "DefaultCluster"
	cfg.BrokerName = "broker-a"
	cfg.FS = fsys
	cfg.Now = clock.Now
	cfg.Logger = logger
	return cfg, clock, fsys, hook
}

func configPath(cfg Config, name string) string {
	return filepath.Join(cfg.StorePathRootDir, "config", name)
}

func writeConfigFile(t *testing.T, cfg Config, name, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.StorePathRootDir, "config"), 0o755))
	require.NoError(t, os.WriteFile(configPath(cfg, name), []byte(content), 0o644))
}

func readConfigFile(t *testing.T, cfg Config, name string) string {
	t.Helper()
	b, err := os.ReadFile(configPath(cfg, name))
	require.NoError(t, err)
	return string(b)
}

func noTempFiles(t *testing.T, cfg Config) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cfg.StorePathRootDir, "config"))
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasSuffix(e.Name(), ".tmp"), "leftover %s", e.Name())
	}
}

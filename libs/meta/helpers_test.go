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

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
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

// faultFS wraps the OS file system in a vfs.ErrorFS; fail decides per
// operation and path whether to fail (rename is asked with the source path).
// It also counts renames onto each table file.
type faultFS struct {
	*vfs.ErrorFS
	mu      sync.Mutex
	fail    func(op vfs.Op, name string) error
	renamed map[string]int
}

func newFaultFS(inner vfs.FS) *faultFS {
	f := &faultFS{renamed: map[string]int{}}
	f.ErrorFS = vfs.NewErrorFS(inner, vfs.InjectorFunc(f.maybeError))
	return f
}

func (f *faultFS) maybeError(op vfs.Op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(op, name); err != nil {
			return err
		}
	}
	if op == vfs.OpRename {
		f.renamed[strings.TrimSuffix(name, ".tmp")]++
	}
	return nil
}

func (f *faultFS) setFail(fn func(op vfs.Op, name string) error) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

// renames counts completed-or-attempted renames of <target>.tmp onto target.
func (f *faultFS) renames(target string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renamed[target]
}

// testConfig returns a config persisting under a temp dir with a manual
// clock, a fault-injecting FS and a captured logger.
func testConfig(t *testing.T) (Config, *testClock, *faultFS, *test.Hook) {
	t.Helper()
	clock := newTestClock()
	fsys := newFaultFS(vfs.Default)
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

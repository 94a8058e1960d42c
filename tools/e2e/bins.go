package e2e

import (
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/rmqha/rmqha/tools/harness"
)

// groupServices are the binaries a Group runs.
var groupServices = []string{"namesrv", "master", "slave"}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// BinDir returns a folder holding the namesrv, master and slave binaries of this checkout:
// $RMQHA_BIN_DIR when it has all three, else a build of only those three (so the group tests do
// not depend on services they do not run). The build goes to one folder per checkout under the
// temp dir, under a file lock, so test processes of several packages share it: go build leaves
// an up-to-date binary alone, and the second package's build costs next to nothing.
func BinDir() (string, error) {
	binOnce.Do(func() {
		if d := os.Getenv("RMQHA_BIN_DIR"); d != "" && hasAll(d) {
			binDir = d
			return
		}
		root, err := harness.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("rmqha-e2e-bin-%08x", crc32.ChecksumIEEE([]byte(root))))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			binErr = err
			return
		}
		lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			binErr = err
			return
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			binErr = err
			return
		}
		defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
		args := []string{"build", "-o", dir + string(os.PathSeparator)}
		for _, s := range groupServices {
			args = append(args, harness.Services[s])
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("e2e: go build %v: %v\n%s", groupServices, err, out)
			return
		}
		binDir = dir
	})
	return binDir, binErr
}

func hasAll(dir string) bool {
	for _, s := range groupServices {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			return false
		}
	}
	return true
}

func binaryPath(t testing.TB, name string) string {
	t.Helper()
	dir, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

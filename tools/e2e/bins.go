package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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
// $RMQHA_BIN_DIR when it has all three, else a fresh build of only those three (so the group
// tests do not depend on services they do not run).
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
		dir, err := os.MkdirTemp("", "rmqha-e2e-bin-")
		if err != nil {
			binErr = err
			return
		}
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

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Services are the binaries the group is made of, by name, with the package
// that builds each, relative to the repository root.
var Services = map[string]string{
	"namesrv":  "./services/namesrv",
	"master":   "./services/master",
	"slave":    "./services/slave",
	"metasync": "./services/metasync",
}

// RepoRoot finds the repository root (the folder holding go.work) from the
// working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.work")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("harness: no go.work above the working directory")
		}
		dir = parent
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// BuildBinaries builds every service once per test process into a temporary
// folder (or uses $RMQHA_BIN_DIR when set and complete) and returns the
// folder. Tests start binaries from there, so they test exactly the code of
// this checkout.
func BuildBinaries() (string, error) {
	buildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if d := os.Getenv("RMQHA_BIN_DIR"); d != "" {
			ok := true
			for _, pkg := range buildable(root) {
				if !fileExists(filepath.Join(d, filepath.Base(pkg))) {
					ok = false
				}
			}
			if ok {
				buildDir = d
				return
			}
		}
		dir, err := os.MkdirTemp("", "rmqha-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildErr = BuildInto(root, dir)
		buildDir = dir
	})
	return buildDir, buildErr
}

// buildable lists the services whose folder holds Go files yet.
func buildable(root string) []string {
	var pkgs []string
	for _, pkg := range Services {
		if m, _ := filepath.Glob(filepath.Join(root, pkg, "*.go")); len(m) > 0 {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs
}

// BuildInto builds every service from root into dir.
func BuildInto(root, dir string) error {
	args := append([]string{"build", "-o", dir + string(os.PathSeparator)}, buildable(root)...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", fmt.Sprintf("GOMAXPROCS=%d", runtime.NumCPU()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("harness: go build services: %v\n%s", err, out)
	}
	return nil
}

// Binary returns the path of a built service for a test.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir, err := BuildBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

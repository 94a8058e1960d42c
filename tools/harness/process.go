package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ProcessConfig describes a child process.
type ProcessConfig struct {
	Name string   // for logs
	Bin  string   // executable path
	Args []string // arguments
	Env  []string // extra environment (KEY=VALUE), added to the parent's
	Dir  string   // working directory; also where <Name>.log is written
	// Stdout, when set, receives the process's output in addition to the log file.
	Stdout io.Writer
}

// Process is a started child process that can be faulted and restarted.
type Process struct {
	cfg     ProcessConfig
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	logPath string
	logFile *os.File
}

// StartProcess starts cfg.Bin and returns at once; use WaitFor for readiness.
func StartProcess(cfg ProcessConfig) (*Process, error) {
	if cfg.Dir == "" {
		return nil, errors.New("harness: ProcessConfig.Dir is required")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	p := &Process{cfg: cfg, logPath: filepath.Join(cfg.Dir, cfg.Name+".log")}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// StartProcessT starts a process for a test: it is killed at the end of the
// test and its log is printed when the test failed.
func StartProcessT(t testing.TB, cfg ProcessConfig) *Process {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	p, err := StartProcess(cfg)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- log of %s (%s), last 8 KiB ---\n%s", cfg.Name, p.logPath, p.LogTail(8<<10))
		}
	})
	return p
}

func (p *Process) start() error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== start %s %v at %s\n", p.cfg.Bin, p.cfg.Args, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.cfg.Bin, p.cfg.Args...)
	cmd.Dir = p.cfg.Dir
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	var out io.Writer = f
	if p.cfg.Stdout != nil {
		out = io.MultiWriter(f, p.cfg.Stdout)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group so that a Ctrl-C at the terminal reaches the parent
	// only, which then stops children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("harness: start %s: %w", p.cfg.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.exitErr, p.logFile = cmd, done, nil, f
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		f.Close()
		close(done)
	}()
	return nil
}

// Name returns the configured name.
func (p *Process) Name() string { return p.cfg.Name }

// PID returns the current pid, 0 when not running.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done != nil && !p.exited()
}

// Done is closed when the current incarnation exits.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// ExitErr is the exit error of the last incarnation once it exited.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return errors.New("harness: not started")
	}
	select {
	case <-done:
		return nil
	default:
	}
	return cmd.Process.Signal(sig)
}

// Kill sends SIGKILL (a crash: nothing is flushed) and waits for the exit.
func (p *Process) Kill() {
	_ = p.signal(syscall.SIGCONT) // a paused process must die too
	_ = p.signal(syscall.SIGKILL)
	if d := p.Done(); d != nil {
		<-d
	}
}

// Stop sends SIGTERM and waits up to timeout, then kills. It returns the
// exit error of a clean stop (nil when it exited 0).
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.Done():
		return p.ExitErr()
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("harness: %s did not stop within %s, killed", p.cfg.Name, timeout)
	}
}

// Pause freezes the process (SIGSTOP) and returns once the kernel reports every thread of
// it stopped, so that what a test does next meets a frozen process.
func (p *Process) Pause() error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	return WaitFor(10*time.Second, func() error { return stoppedState(cmd.Process.Pid) })
}

// stoppedState is nil when every thread of pid is in the stopped state ('T' in
// /proc/<pid>/task/<tid>/stat).
func stoppedState(pid int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			return err
		}
		// pid (comm) state ...: the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return fmt.Errorf("harness: unreadable stat of task %s", t.Name())
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return fmt.Errorf("harness: task %s of %d in state %c, not stopped", t.Name(), pid, st)
		}
	}
	return nil
}

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

// Restart starts the same command again after the previous incarnation
// exited (kill or stop it first).
func (p *Process) Restart() error {
	if p.Running() {
		return errors.New("harness: restart of a running process")
	}
	return p.start()
}

// LogPath is the file that collects the process's output.
func (p *Process) LogPath() string { return p.logPath }

// LogTail returns the last n bytes of the log.
func (p *Process) LogTail(n int64) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// LogContains reports whether the log holds s.
func (p *Process) LogContains(s string) bool {
	b, _ := os.ReadFile(p.logPath)
	return bytes.Contains(b, []byte(s))
}

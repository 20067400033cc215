package stack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A Process is a program the stack started, with its log and PID file in
// the run directory (so Down, and stackctl down, stop it too).
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	pid  string
}

// Start runs bin with args in the background, logging to RUN/NAME.log
// (appended) with KUBECONFIG set to the stack's.
func (s *Stack) Start(_ context.Context, name, bin string, args ...string) (*Process, error) {
	return s.start(nil, name, bin, args...)
}

// start is Start with env added to the process's environment.
func (s *Stack) start(env []string, name, bin string, args ...string) (*Process, error) {
	if err := os.MkdirAll(s.Run, 0o750); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(s.Run, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	// NOTE: not tied to a context: a process of `make dev` outlives the
	// program that started it; it is stopped by PID.
	cmd := exec.Command(bin, args...) //nolint:noctx // Stopped by PID, see above.
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+s.Kubeconfig), env...)
	// Its own process group: a Ctrl-C meant for the caller is not its.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, err
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{}), pid: s.pidFile(name)}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	if err := os.WriteFile(p.pid, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		p.Kill()
		return nil, err
	}
	s.Stepf("%s: started (pid %d, log %s)", name, cmd.Process.Pid, filepath.Join(s.Run, name+".log"))
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// pidFile is where the stack keeps a process's ID (the control plane's
// too).
func (s *Stack) pidFile(name string) string { return filepath.Join(s.Run, name+".pid") }

// PID is the ID of the stack's process name (kube-apiserver, etcd, ...), if
// it is running.
func (s *Stack) PID(name string) (int, bool) { return readPID(s.pidFile(name)) }

// readPID is the process ID a PID file holds.
func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	_ = os.Remove(p.pid)
}

// Stop sends SIGTERM, then SIGKILL after 10 s, and waits.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
	_ = os.Remove(p.pid)
}

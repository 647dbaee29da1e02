package localcluster

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// processExit is a process's end: done closes once it exited, with err.
type processExit struct {
	done chan struct{}
	err  error
}

// exitedYet reports whether the process has exited.
func (e *processExit) exitedYet() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// startProcess starts cmd and watches for its end.
func startProcess(cmd *exec.Cmd) (*processExit, error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := &processExit{done: make(chan struct{})}
	go func() {
		exited.err = cmd.Wait()
		close(exited.done)
	}()
	return exited, nil
}

// stopProcess ends a process started by startProcess, unless it already
// exited: SIGTERM, then SIGKILL after 20 s.
func stopProcess(cmd *exec.Cmd, exited *processExit) {
	if exited.exitedYet() {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited.done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited.done
	}
}

package release

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Process is a container of the release running as a process.
type Process struct {
	// Name is the replica's name, e.g. hami-webhook-0.
	Name string
	// Args are its arguments.
	Args []string
	// Ports are its listening addresses by argument name.
	Ports map[string]string

	cmd    *exec.Cmd
	out    lockedBuffer
	exited chan struct{}
	err    error
	stop   []func()
}

// start runs binary with args and exactly env (a container's environment
// is its own, not the test's), its output to log too.
func start(name, binary string, args, env []string, log io.Writer) (*Process, error) {
	p := &Process{Name: name, Args: args, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = env
	var w io.Writer = &p.out
	if log != nil {
		w = io.MultiWriter(&p.out, prefixed(log, name))
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Output is what it printed so far.
func (p *Process) Output() string { return p.out.String() }

// Stop ends it as the kubelet does: SIGTERM, SIGKILL after 20 s.
func (p *Process) Stop() {
	for _, f := range p.stop {
		f()
	}
	p.stop = nil
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// freeAddr is a free loopback address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// baseEnv is what a container's process needs of the test's environment
// to run at all.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// prefixed writes each line to w after "[name] ".
func prefixed(w io.Writer, name string) io.Writer {
	return &prefixWriter{w: w, prefix: []byte("[" + name + "] ")}
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	midLn  bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out bytes.Buffer
	for _, c := range b {
		if !p.midLn {
			out.Write(p.prefix)
			p.midLn = true
		}
		out.WriteByte(c)
		if c == '\n' {
			p.midLn = false
		}
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

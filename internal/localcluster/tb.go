package localcluster

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// processTB implements ktesting.TB for code that runs outside a Go test
// (TestMain, benchmarks sharing one control plane, hami-local), so that the
// kube-apiserver test server can be started there. Log output goes to out;
// Fatal and Skip abort the caller through failNow, which run turns back
// into an error (unlike testing.T, never runtime.Goexit: the caller may be
// main).
type processTB struct {
	name string
	out  io.Writer

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

// failNow is the panic value Fatal and FailNow raise.
type failNow struct{ msg string }

func newProcessTB(name string, out io.Writer) *processTB {
	if out == nil {
		out = io.Discard
	}
	return &processTB{name: name, out: out}
}

// run calls fn and turns a Fatal inside it into an error.
func (t *processTB) run(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failNow)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", f.msg)
		}
	}()
	fn()
	return nil
}

// cleanup runs the registered cleanups, last first.
func (t *processTB) cleanup() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		fn := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		fn()
	}
}

func (t *processTB) Attr(key, value string) {}
func (t *processTB) Chdir(dir string) {
	if err := os.Chdir(dir); err != nil {
		t.Fatalf("chdir %s: %v", dir, err)
	}
}
func (t *processTB) Cleanup(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, fn)
}
func (t *processTB) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *processTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *processTB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}
func (t *processTB) FailNow() { t.fatal("FailNow called") }
func (t *processTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *processTB) Fatal(args ...any)                 { t.fatal(fmt.Sprint(args...)) }
func (t *processTB) Fatalf(format string, args ...any) { t.fatal(fmt.Sprintf(format, args...)) }
func (t *processTB) fatal(msg string) {
	t.Log(msg)
	t.Fail()
	panic(failNow{msg: msg})
}
func (t *processTB) Helper() {}
func (t *processTB) Log(args ...any) {
	t.write(fmt.Sprintln(args...))
}
func (t *processTB) Logf(format string, args ...any) {
	t.write(fmt.Sprintf(format, args...) + "\n")
}
func (t *processTB) write(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.out, s)
}
func (t *processTB) Name() string { return t.name }
func (t *processTB) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	if err := os.Setenv(key, value); err != nil {
		t.Fatalf("setenv %s: %v", key, err)
	}
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, old)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}
func (t *processTB) Skip(args ...any) { t.fatal("skipped: " + fmt.Sprint(args...)) }
func (t *processTB) Skipf(format string, args ...any) {
	t.fatal("skipped: " + fmt.Sprintf(format, args...))
}
func (t *processTB) SkipNow()      { t.fatal("skipped") }
func (t *processTB) Skipped() bool { return false }
func (t *processTB) TempDir() string {
	dir, err := os.MkdirTemp("", t.name)
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

//go:build unix

package localcluster

import (
	"os"

	"golang.org/x/sys/unix"
)

// CaptureStderr points file descriptor 2 at f, so that what libraries
// write to stderr directly (the apiserver's etcd client logs through its
// own zap logger there) ends up in the log, and returns the original
// stderr for the caller's own messages.
func CaptureStderr(f *os.File) (*os.File, error) {
	orig, err := unix.Dup(2)
	if err != nil {
		return nil, err
	}
	if err := unix.Dup2(int(f.Fd()), 2); err != nil {
		_ = unix.Close(orig)
		return nil, err
	}
	return os.NewFile(uintptr(orig), "stderr"), nil
}

// RestoreStderr points file descriptor 2 back at orig, the file
// CaptureStderr returned.
func RestoreStderr(orig *os.File) error {
	return unix.Dup2(int(orig.Fd()), 2)
}

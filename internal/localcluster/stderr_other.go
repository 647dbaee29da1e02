//go:build !unix

package localcluster

import "os"

// CaptureStderr leaves stderr alone where file descriptors cannot be
// redirected.
func CaptureStderr(*os.File) (*os.File, error) { return os.Stderr, nil }

// RestoreStderr does nothing where CaptureStderr did nothing.
func RestoreStderr(*os.File) error { return nil }

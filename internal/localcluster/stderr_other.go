//go:build !unix

package localcluster

import "os"

// CaptureStderr leaves stderr alone where file descriptors cannot be
// redirected.
func CaptureStderr(*os.File) (*os.File, error) { return os.Stderr, nil }

package localcluster

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/klog/v2"
)

// RedirectKlog sends everything logged through klog (kube-apiserver,
// kube-scheduler, client-go) to w instead of stderr, at verbosity v.
func RedirectKlog(w io.Writer, v int) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
		"one_output":      "true",
		"v":               strconv.Itoa(max(v, 0)),
	} {
		if err := fs.Set(name, value); err != nil {
			return err
		}
	}
	klog.SetOutput(w)
	return nil
}

// RunLogged runs a test suite (a TestMain's body) with klog redirected, at
// verbosity v, to a file of its own under the temporary directory, named
// after name and the process. When run fails, or E2E_KEEP_LOG is set, the
// file is kept and its path printed on stderr after what ("... logs");
// otherwise it is removed. It returns run's exit code.
func RunLogged(name string, v int, what string, run func(log *os.File) int) int {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d.log", name, os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	if err := RedirectKlog(f, v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := run(f)
	if code != 0 || os.Getenv("E2E_KEEP_LOG") != "" {
		fmt.Fprintf(os.Stderr, "%s: %s\n", what, path)
	} else {
		_ = os.Remove(path)
	}
	return code
}

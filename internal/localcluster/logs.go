package localcluster

import (
	"flag"
	"io"
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

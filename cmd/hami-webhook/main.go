// Command hami-webhook is hami-scheduler's mutating admission webhook for
// pod CREATE, a binary of its own so that it scales and fails independently
// of the scheduler. See webhook/README.md for its flags and behaviour.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hami-scheduler/hami-scheduler/webhook"
)

func main() {
	klog.InitFlags(flag.CommandLine)
	f := registerFlags(flag.CommandLine) // --kubeconfig is registered by controller-runtime
	flag.Parse()
	if f.version {
		fmt.Println(version.Get().GitVersion)
		return
	}
	ctrllog.SetLogger(klog.NewKlogr())
	opts, err := f.options()
	if err != nil {
		klog.ErrorS(err, "Invalid flags")
		os.Exit(2)
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		klog.ErrorS(err, "No Kubernetes client configuration")
		os.Exit(1)
	}
	klog.InfoS("Starting hami-webhook", "version", version.Get().GitVersion,
		"schedulerName", opts.SchedulerName, "takeOverDefaultScheduler", opts.TakeOverDefaultScheduler)
	if err := webhook.Run(ctrl.SetupSignalHandler(), restConfig, opts); err != nil {
		klog.ErrorS(err, "hami-webhook failed")
		os.Exit(1)
	}
}

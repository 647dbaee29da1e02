// Command kubectl-hami is a kubectl plugin for clusters that share GPUs
// with HAMi (hami-scheduler or HAMi's own scheduler extender). Copied onto
// the PATH it runs as `kubectl hami`.
//
//	kubectl hami top [NODE...] [-l selector] [-n namespace] [-o wide|json] [--device-config file]
//
// shows each node's cards, of every vendor: model, memory, cores and
// sharers used of their totals as bars, the pods on each card (with the
// cards reserved for members of gangs waiting at Permit, from their
// PodGroups), and totals per node and for the cluster. It reads the same
// annotations the scheduler does.
//
//	kubectl hami why (POD | workload/NAME) [-n namespace] [--device-config file]
//
// shows why a waiting pod, or a Kueue workload waiting on hami-scheduler's
// admission check, cannot be placed: every node's cards, one by one,
// against what it asks.
//
//	kubectl hami switch --hami-namespace namespace [--hami-release name] [--back] [--dry-run]
//
// hands device scheduling from HAMi's scheduler and webhook to
// hami-scheduler, or back (internal/switchover, docs/switching.md). See
// README.md next to this file.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// NewRootCommand returns `kubectl hami` with its subcommands and the usual
// kubectl connection flags (--kubeconfig, --context, -n, ...).
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommand(streams, nil, nil)
}

// newRootCommand is NewRootCommand with the clientset and the dynamic
// client given (nil: from the config flags).
func newRootCommand(streams genericiooptions.IOStreams, client func() (kubernetes.Interface, error), dynamicClient func() (dynamic.Interface, error)) *cobra.Command {
	cf := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-hami",
		Short: "Inspect HAMi GPU sharing (which pod holds how much of which card), and switch from HAMi's scheduler to hami-scheduler",
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl hami",
		},
		SilenceUsage: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	cf.AddFlags(root.PersistentFlags())
	root.AddCommand(newTopCommand(cf, streams, client, dynamicClient))
	root.AddCommand(newSwitchCommand(cf, streams, client))
	root.AddCommand(newWhyCommand(cf, streams, client, dynamicClient))
	return root
}

// clientFromFlags makes the clientset of the connection flags
// (--kubeconfig, --context, ...) when it is called.
func clientFromFlags(cf *genericclioptions.ConfigFlags) func() (kubernetes.Interface, error) {
	return func() (kubernetes.Interface, error) {
		cfg, err := cf.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	}
}

func main() {
	os.Exit(execute())
}

// execute runs the command line until it ends or is interrupted: an
// interrupted switch stops at its current step, and running it again
// finishes it.
func execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := root.ExecuteContext(ctx); err != nil {
		return 1
	}
	return 0
}

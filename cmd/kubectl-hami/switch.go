package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/internal/switchover"
)

// SwitchOptions are the inputs of `kubectl hami switch`.
type SwitchOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Switch are the switch's options, from the flags.
	Switch switchover.Options
	// ProbeResource is the device resource of the webhook probe.
	ProbeResource string
	// Back undoes an earlier switch.
	Back bool

	// client returns the clientset; tests replace it.
	client func() (kubernetes.Interface, error)
}

const switchExample = `  # See what the switch from HAMi's release "hami" in kube-system would change
  kubectl hami switch --hami-namespace kube-system --dry-run

  # Switch: hami-scheduler (installed in hami-system with values-beside-hami.yaml,
  # its scheduler at 0 replicas) takes over
  kubectl hami switch --hami-namespace kube-system

  # Back to HAMi's scheduler and webhook, as the switch recorded them
  kubectl hami switch --hami-namespace kube-system --back`

// newSwitchCommand returns the switch subcommand with the clientset given
// (nil: from the config flags).
func newSwitchCommand(cf *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, client func() (kubernetes.Interface, error)) *cobra.Command {
	o := &SwitchOptions{ConfigFlags: cf, IOStreams: streams, client: client}
	cmd := &cobra.Command{
		Use:   "switch --hami-namespace NAMESPACE [--back] [--dry-run]",
		Short: "Hand device scheduling from HAMi's scheduler and webhook to hami-scheduler, or back",
		Long: `Hand the scheduling of device pods from HAMi's release (its chart, Project-HAMi/HAMi
v2.10 charts/hami) to hami-scheduler, installed beforehand beside it (the chart's
values-beside-hami.yaml) with its scheduler at 0 replicas and its webhook registered:

  1. record HAMi's scheduler replicas and webhook configuration in the annotation
     hami.io/switch-record of HAMi's scheduler Deployment;
  2. delete HAMi's MutatingWebhookConfiguration, once a dry-run device pod shows
     hami-scheduler's webhook admitting device pods with HAMi's scheduler name (so
     no device pod is admitted unmutated);
  3. scale HAMi's scheduler Deployment to 0 and wait until its last pod is gone;
  4. scale hami-scheduler's Deployment up and wait until a pod is ready (the two
     schedulers never run at the same time).

HAMi's device plugin, its device ConfigMap, its Services and every pod stay;
unbound pods naming the scheduler are placed by hami-scheduler. --back undoes the
switch from the record, in reverse order. --dry-run prints every step and takes
none. Running it again finishes an interrupted switch, or switches again after a
helm upgrade of HAMi's release brought its scheduler and webhook back.
docs/switching.md has the details.`,
		Example:               switchExample,
		DisableFlagsInUseLine: true,
		SilenceUsage:          true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Switch.HAMiNamespace, "hami-namespace", "", "Namespace of HAMi's Helm release (required).")
	f.StringVar(&o.Switch.HAMiRelease, "hami-release", switchover.DefaultHAMiRelease, "Name of HAMi's Helm release.")
	f.StringVar(&o.Switch.Namespace, "scheduler-namespace", switchover.DefaultNamespace, "Namespace of hami-scheduler's scheduler Deployment.")
	f.StringVar(&o.Switch.Deployment, "scheduler-deployment", switchover.DefaultDeployment, "Name of hami-scheduler's scheduler Deployment.")
	f.Int32Var(&o.Switch.Replicas, "scheduler-replicas", switchover.DefaultReplicas, "hami-scheduler's replicas after the switch, when its Deployment is at 0.")
	f.StringVar(&o.Switch.ProbeNamespace, "probe-namespace", switchover.DefaultProbeNamespace, "Namespace of the dry-run device pod that shows hami-scheduler's webhook admitting.")
	f.StringVar(&o.ProbeResource, "probe-resource", string(switchover.DefaultProbeResource), "Device resource the dry-run pod asks for.")
	f.DurationVar(&o.Switch.Timeout, "timeout", switchover.DefaultTimeout, "Limit of each wait (pods gone, a pod ready).")
	f.BoolVar(&o.Switch.DryRun, "dry-run", false, "Print every change and make none.")
	f.BoolVar(&o.Back, "back", false, "Undo an earlier switch: HAMi's scheduler and webhook as recorded.")
	return cmd
}

// Complete fills in the output and the clientset.
func (o *SwitchOptions) Complete() error {
	o.Switch.Out = o.Out
	o.Switch.ProbeResource = corev1.ResourceName(o.ProbeResource)
	if o.client == nil {
		o.client = clientFromFlags(o.ConfigFlags)
	}
	return nil
}

// Validate checks the flags.
func (o *SwitchOptions) Validate() error {
	switch {
	case o.Switch.HAMiNamespace == "":
		return errors.New("--hami-namespace is required: the namespace of HAMi's Helm release")
	case o.Switch.Replicas < 1:
		return errors.New("--scheduler-replicas must be at least 1")
	case o.Switch.Timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	return nil
}

// Run switches, or switches back.
func (o *SwitchOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	client, err := o.client()
	if err != nil {
		return err
	}
	if o.Back {
		return switchover.Back(ctx, client, o.Switch)
	}
	return switchover.Switch(ctx, client, o.Switch)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
)

// TopOptions are the inputs of `kubectl hami top`.
type TopOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Output is "", "wide" or "json".
	Output string
	// Selector is a node label selector.
	Selector string
	// Nodes are the node names given as arguments.
	Nodes []string
	// Namespace restricts the pods listed; empty for all.
	Namespace string
	// DeviceConfig is the path of HAMi's device-config.yaml whose vendors'
	// cards are read; empty for every vendor of HAMi's chart default.
	DeviceConfig string
	// vendors are the vendors read, from DeviceConfig (Complete).
	vendors []devices.Vendor
	// split is, per vendor name, the split count of its DRA cards, from
	// DeviceConfig (Complete).
	split func(vendor string) int32

	// client returns the clientset; tests replace it.
	client func() (kubernetes.Interface, error)
	// dynamicClient returns the dynamic client PodGroups are listed with;
	// tests replace it.
	dynamicClient func() (dynamic.Interface, error)
}

const topExample = `  # Every GPU node's cards, with bars, the pods on each card and totals
  kubectl hami top

  # Two nodes, full UUIDs and each container's grant
  kubectl hami top gpu-0 gpu-1 -o wide

  # Nodes labelled pool=train; list only the pods of namespace ml
  kubectl hami top -l pool=train -n ml

  # The same as a JSON document (kind Top, apiVersion kubectl-hami.hami.io/v1)
  kubectl hami top -o json

  # Only the vendors the cluster's own device config enables, with its resource names
  kubectl -n kube-system get configmap hami-scheduler-device -o jsonpath='{.data.device-config\.yaml}' > device-config.yaml
  kubectl hami top --device-config device-config.yaml`

// NewTopCommand returns the top subcommand.
func NewTopCommand(cf *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newTopCommand(cf, streams, nil, nil)
}

// newTopCommand is NewTopCommand with the clientset and the dynamic client
// given (nil: from the config flags).
func newTopCommand(cf *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams,
	client func() (kubernetes.Interface, error), dynamicClient func() (dynamic.Interface, error)) *cobra.Command {
	o := &TopOptions{ConfigFlags: cf, IOStreams: streams, client: client, dynamicClient: dynamicClient}
	cmd := &cobra.Command{
		Use:   "top [NODE...]",
		Short: "Show the device cards of HAMi nodes: memory, cores and sharers used, and the pods on each card",
		Long: `Show, per node, each card a HAMi device plugin registered, of every vendor
(NVIDIA's hami.io/node-nvidia-register, Ascend's hami.io/node-register-<chip>, ...), and
what the pods bound to the node hold of it (the vendor's allocated annotation, NVIDIA's
hami.io/vgpu-devices-allocated), read the way the scheduler reads them: pods whose
spec.nodeName equals their hami.io/vgpu-node annotation and that have not terminated.
Works against hami-scheduler and HAMi's own scheduler extender alike.

Each node says its kind: "device plugin", or "DRA" with the driver whose ResourceSlices
publish its cards (HAMi's hami-core-gpu.project-hami.io, NVIDIA's gpu.nvidia.com). A DRA
card counts every allocated ResourceClaim on it, whoever wrote it (hami-scheduler,
HAMi-DRA's webhook, a user's claim asking capacity): a share by its consumed capacity,
a device allocated whole in full; each shown under the pod the claim is reserved for,
"(claim <name>)" with -o wide. A card a device plugin and a driver both list is one card.

The cards that members of a gang (a PodGroup, scheduling.x-k8s.io) hold while they
wait at Permit for the rest of the gang count too, from the reservations hami-scheduler
publishes on the PodGroup (hami.io/gang-reservations); such a pod is shown as
"ns/pod (gang ns/podgroup, waiting)".

The vendors read are those of HAMi's chart-default device config (every vendor, with
their default resource names); --device-config reads the cluster's own
device-config.yaml instead.

With -n only that namespace's pods are listed; the amounts still count every pod.`,
		Example:               topExample,
		DisableFlagsInUseLine: true,
		SilenceUsage:          true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: wide or json.")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "Node label selector (e.g. -l key1=value1,key2=value2).")
	cmd.Flags().StringVar(&o.DeviceConfig, "device-config", "", "HAMi's device-config.yaml whose vendors to read (default: every vendor of HAMi's chart default).")
	return cmd
}

// Complete fills the options from the flags and arguments.
func (o *TopOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Nodes = args
	if f := cmd.Flag("namespace"); f != nil && f.Changed && o.ConfigFlags.Namespace != nil {
		o.Namespace = *o.ConfigFlags.Namespace
	}
	var err error
	if o.vendors, o.split, err = clustervendors.WithSplitCounts(o.DeviceConfig); err != nil {
		return err
	}
	if o.client == nil {
		o.client = clientFromFlags(o.ConfigFlags)
	}
	if o.dynamicClient == nil {
		o.dynamicClient = func() (dynamic.Interface, error) {
			cfg, err := o.ConfigFlags.ToRESTConfig()
			if err != nil {
				return nil, err
			}
			return dynamic.NewForConfig(cfg)
		}
	}
	return nil
}

// Validate checks the options.
func (o *TopOptions) Validate() error {
	switch o.Output {
	case "", "wide", "json":
	default:
		return fmt.Errorf("unknown output format %q: want wide or json", o.Output)
	}
	if len(o.Nodes) > 0 && o.Selector != "" {
		return errors.New("node names cannot be given together with a selector (-l)")
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("selector %q: %w", o.Selector, err)
	}
	return nil
}

// Run reads the nodes and pods and prints them.
func (o *TopOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	client, err := o.client()
	if err != nil {
		return err
	}
	dynamicClient, err := o.dynamicClient()
	if err != nil {
		return err
	}
	doc, err := o.top(ctx, client, dynamicClient)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		if err := writeJSON(o.Out, &doc); err != nil {
			return err
		}
		return nil
	}
	return writeTable(o.Out, &doc, o.Output == "wide")
}

// top lists what it needs and builds the document. PodGroups are listed
// before pods: a gang member let through between the two lists is then
// found bound, or handed over, and counted from its own annotation, where
// the other order could miss it.
func (o *TopOptions) top(ctx context.Context, client kubernetes.Interface, dynamicClient dynamic.Interface) (Top, error) {
	nodes, err := o.listNodes(ctx, client)
	if err != nil {
		return Top{}, err
	}
	gangs, gangWarnings := listWaitingGangs(ctx, dynamicClient)
	pods, warnings, err := o.listPods(ctx, client, nodes)
	if err != nil {
		return Top{}, err
	}
	members, memberWarnings := o.listWaitingMembers(ctx, client, gangs, nodes)
	c, draWarnings, err := allocation.ListDRA(ctx, client)
	if err != nil {
		return Top{}, err
	}
	c.Vendors, c.Nodes, c.Pods, c.Gangs, c.DRASplit = o.vendors, nodes, slices.Concat(pods, members), gangs, o.split
	report := allocation.ReadCluster(c)
	var unregistered []string
	if len(o.Nodes) > 0 {
		unregistered = withoutCards(report, nodes)
	}
	doc := buildTop(report, unregistered, o.Namespace)
	doc.Warnings = slices.Concat(warnings, gangWarnings, memberWarnings, draWarnings, o.unscheduled(pods))
	return doc, nil
}

// unscheduled are allocation.Unscheduled's warnings for the pods of the -n
// namespace (every namespace without it). Only bound pods are listed
// with -node/-l: a pending pod has no node to select it by.
func (o *TopOptions) unscheduled(pods []corev1.Pod) []string {
	if o.Namespace == "" {
		return allocation.Unscheduled(o.vendors, pods)
	}
	var mine []corev1.Pod
	for i := range pods {
		if pods[i].Namespace == o.Namespace {
			mine = append(mine, pods[i])
		}
	}
	return allocation.Unscheduled(o.vendors, mine)
}

// withoutCards lists the nodes of which the report has neither a card nor
// an error: no vendor's device plugin registered cards there, and no
// known DRA driver publishes any.
func withoutCards(r allocation.Report, nodes []corev1.Node) []string {
	seen := map[string]bool{}
	for i := range r.Cards {
		seen[r.Cards[i].Node] = true
	}
	var out []string
	for i := range nodes {
		if _, unreadable := r.NodeErrors[nodes[i].Name]; !unreadable && !seen[nodes[i].Name] {
			out = append(out, nodes[i].Name)
		}
	}
	return out
}

// listNodes gets the named nodes, or lists those the selector matches.
func (o *TopOptions) listNodes(ctx context.Context, client kubernetes.Interface) ([]corev1.Node, error) {
	if len(o.Nodes) == 0 {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		return list.Items, nil
	}
	var nodes []corev1.Node
	seen := map[string]bool{}
	for _, name := range o.Nodes {
		if seen[name] {
			continue
		}
		seen[name] = true
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, *n)
	}
	return nodes, nil
}

// notTerminated selects the pods whose phase is neither Succeeded nor
// Failed.
func notTerminated() fields.Selector {
	return fields.AndSelectors(
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))
}

// listPodsMatching lists the pods of every namespace the field selector
// matches. Without permission to list pods cluster-wide and with -n, it
// lists that namespace's instead, and narrowed is true.
func (o *TopOptions) listPodsMatching(ctx context.Context, client kubernetes.Interface, sel fields.Selector) (pods []corev1.Pod, narrowed bool, err error) {
	opts := metav1.ListOptions{FieldSelector: sel.String()}
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	if err != nil && apierrors.IsForbidden(err) && o.Namespace != "" {
		list, err = client.CoreV1().Pods(o.Namespace).List(ctx, opts)
		narrowed = true
	}
	if err != nil {
		return nil, false, err
	}
	return list.Items, narrowed, nil
}

// listPods lists the pods that may hold cards of the nodes: those bound to
// one of them and not terminated, in every namespace (the amounts count
// them all). Without permission to list pods cluster-wide and with -n, it
// falls back to that namespace and says so.
func (o *TopOptions) listPods(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node) ([]corev1.Pod, []string, error) {
	alive := notTerminated()
	var selectors []fields.Selector
	if len(o.Nodes) > 0 {
		// A few named nodes: ask for their pods only.
		for i := range nodes {
			selectors = append(selectors, fields.AndSelectors(fields.OneTermEqualSelector("spec.nodeName", nodes[i].Name), alive))
		}
	} else {
		selectors = []fields.Selector{alive}
	}
	var warnings []string
	var pods []corev1.Pod
	for _, sel := range selectors {
		list, narrowed, err := o.listPodsMatching(ctx, client, sel)
		if err != nil {
			return nil, nil, fmt.Errorf("listing pods: %w", err)
		}
		if narrowed && len(warnings) == 0 {
			warnings = append(warnings, fmt.Sprintf("pods cannot be listed in all namespaces: the amounts used count only namespace %s", o.Namespace))
		}
		pods = append(pods, list...)
	}
	onNodes := map[string]bool{}
	for i := range nodes {
		onNodes[nodes[i].Name] = true
	}
	seen := map[string]bool{}
	kept := pods[:0]
	for i := range pods {
		key := pods[i].Namespace + "/" + pods[i].Name
		if onNodes[pods[i].Spec.NodeName] && !seen[key] {
			seen[key] = true
			kept = append(kept, pods[i])
		}
	}
	// The API lists by namespace and name; fakes may not.
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Namespace != kept[j].Namespace {
			return kept[i].Namespace < kept[j].Namespace
		}
		return kept[i].Name < kept[j].Name
	})
	return kept, warnings, nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
)

// workloadsGVR is Kueue's Workload resource.
var workloadsGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

const whyExample = `  # Why a pending pod cannot be placed, node by node and card by card
  kubectl hami why train-0 -n team-a

  # Why a Kueue workload waits: its admission checks, then each pod set's pod, card by card
  kubectl hami why workload/job-train-5f2c9 -n team-a`

// newWhyCommand returns the why subcommand.
func newWhyCommand(cf *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams,
	client func() (kubernetes.Interface, error), dynamicClient func() (dynamic.Interface, error)) *cobra.Command {
	var deviceConfig string
	cmd := &cobra.Command{
		Use:     "why (POD | workload/NAME)",
		Short:   "Show why a waiting pod or Kueue workload cannot be placed: every node's cards, one by one, against what it asks",
		Example: whyExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vendors, err := clustervendors.FromFileOrChart(deviceConfig)
			if err != nil {
				return err
			}
			if client == nil {
				client = clientFromFlags(cf)
			}
			if dynamicClient == nil {
				dynamicClient = func() (dynamic.Interface, error) {
					cfg, err := cf.ToRESTConfig()
					if err != nil {
						return nil, err
					}
					return dynamic.NewForConfig(cfg)
				}
			}
			ns := "default"
			if cf.Namespace != nil && *cf.Namespace != "" {
				ns = *cf.Namespace
			}
			return runWhy(cmd.Context(), streams.Out, vendors, client, dynamicClient, ns, args[0])
		},
	}
	cmd.Flags().StringVar(&deviceConfig, "device-config", "", "HAMi's device-config.yaml whose vendors' cards are read (Ascend and Iluvatar switched on); default: every vendor of HAMi's chart default")
	return cmd
}

// whyTarget is a pod to explain: a pod of the cluster, or one of a
// workload's pod sets built from its template.
type whyTarget struct {
	title string
	pod   *corev1.Pod
}

func runWhy(ctx context.Context, out io.Writer, vendors []devices.Vendor, client func() (kubernetes.Interface, error), dynamicClient func() (dynamic.Interface, error), ns, arg string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := client()
	if err != nil {
		return err
	}
	var targets []whyTarget
	if name, ok := strings.CutPrefix(arg, "workload/"); ok {
		d, err := dynamicClient()
		if err != nil {
			return err
		}
		if targets, err = workloadTargets(ctx, out, d, ns, name, vendors); err != nil {
			return err
		}
	} else {
		p, err := c.CoreV1().Pods(ns).Get(ctx, strings.TrimPrefix(arg, "pod/"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != "" {
			fmt.Fprintf(out, "pod %s/%s is placed on %s\n", ns, p.Name, p.Spec.NodeName)
			return nil
		}
		targets = []whyTarget{{title: "pod " + ns + "/" + p.Name, pod: p}}
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	report := allocation.Read(vendors, nodes.Items, pods.Items)
	for _, t := range targets {
		explain(out, vendors, nodes.Items, report.Cards, t)
	}
	return nil
}

// workloadTargets prints the workload's admission checks and returns one
// pod of each pod set, built from its template.
func workloadTargets(ctx context.Context, out io.Writer, d dynamic.Interface, ns, name string, vendors []devices.Vendor) ([]whyTarget, error) {
	u, err := d.Resource(workloadsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var wl struct {
		Spec struct {
			PodSets []struct {
				Name     string                 `json:"name"`
				Count    int32                  `json:"count"`
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"podSets"`
		} `json:"spec"`
		Status struct {
			Conditions      []metav1.Condition `json:"conditions"`
			AdmissionChecks []struct {
				Name, State, Message string
			} `json:"admissionChecks"`
		} `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &wl); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "workload %s/%s\n", ns, name)
	for _, c := range wl.Status.Conditions {
		if c.Type == "QuotaReserved" || c.Type == "Admitted" {
			fmt.Fprintf(out, "  %s: %s %s\n", c.Type, c.Status, c.Message)
		}
	}
	for _, c := range wl.Status.AdmissionChecks {
		fmt.Fprintf(out, "  check %s: %s %s\n", c.Name, c.State, c.Message)
	}
	var targets []whyTarget
	for _, ps := range wl.Spec.PodSets {
		p := &corev1.Pod{ObjectMeta: ps.Template.ObjectMeta, Spec: ps.Template.Spec}
		p.Namespace = ns
		for _, ctr := range devices.Containers(p) {
			for _, v := range vendors {
				_, _ = v.Default(ctr)
			}
		}
		targets = append(targets, whyTarget{title: fmt.Sprintf("pod set %s (%d pods)", ps.Name, ps.Count), pod: p})
	}
	return targets, nil
}

// explain prints, for every node with cards of a vendor the pod asks,
// whether the pod's first container asking that vendor fits each card,
// and the node's verdict from the vendor's Fit.
func explain(out io.Writer, vendors []devices.Vendor, nodes []corev1.Node, cards []allocation.CardUse, t whyTarget) {
	fmt.Fprintf(out, "\n%s\n", t.title)
	affinity := nodeaffinity.GetRequiredNodeAffinity(t.pod)
	byNode := map[string][]allocation.CardUse{}
	for _, c := range cards {
		byNode[c.Node+"\x00"+c.Vendor] = append(byNode[c.Node+"\x00"+c.Vendor], c)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, v := range vendors {
		req, err := v.ParsePod(t.pod)
		if err != nil {
			fmt.Fprintf(out, "  %s request unreadable: %v\n", v.Name(), err)
			continue
		}
		if req.IsZero() {
			continue
		}
		ctr := firstAsking(&req)
		fmt.Fprintf(out, "  asks %d %s card(s) of %s and %d%% cores per container\n", ctr.Count, v.Name(), memoryWords(ctr), ctr.Cores)
		for _, n := range nodes {
			cs := byNode[n.Name+"\x00"+v.Name()]
			if len(cs) == 0 {
				continue
			}
			if ok, err := affinity.Match(&n); err != nil || !ok {
				fmt.Fprintf(out, "  node %s: not selected by the pod's node selector or affinity\n", n.Name)
				continue
			}
			plain := make([]devices.Card, len(cs))
			used := make([]devices.Usage, len(cs))
			for i := range cs {
				plain[i], used[i] = cs[i].Card, cs[i].Used
			}
			verdict := "fits"
			if _, rej := v.Fit(plain, used, &req); rej != nil {
				verdict = "does not fit: " + rej.Reason()
			}
			fmt.Fprintf(out, "  node %s: %s\n", n.Name, verdict)
			for i := range cs {
				c, u := &cs[i], used[i]
				why := "can take it"
				switch r, refused := devices.StandardRefusal(&c.Card, u, &ctr, &req.Preferences); {
				case !c.Healthy:
					why = "unhealthy"
				case c.Cordoned:
					why = "cordoned"
				case refused:
					why = r.String()
				}
				fmt.Fprintf(out, "    %-12s  %d/%d MiB free, %d/%d shares free, %d/%d cores free: %s\n",
					shortID(c.UUID), int64(c.MemoryMiB)-u.MemoryMiB, c.MemoryMiB, c.Split-u.Sharers, c.Split, int64(c.CoreTotal)-u.Cores, c.CoreTotal, why)
			}
		}
	}
}

// firstAsking is the first regular container's request that asks for a
// card (else the first init container's).
func firstAsking(req *devices.PodRequest) devices.Request {
	for i := req.Inits; i < len(req.Containers); i++ {
		if !req.Containers[i].IsZero() {
			return req.Containers[i]
		}
	}
	for _, c := range req.Containers {
		if !c.IsZero() {
			return c
		}
	}
	return devices.Request{}
}

func memoryWords(r devices.Request) string {
	if r.MemoryMiB > 0 {
		return fmt.Sprintf("%d MiB", r.MemoryMiB)
	}
	return fmt.Sprintf("%d%% memory", r.MemoryPercent)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

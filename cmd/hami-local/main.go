// Command hami-local runs a whole hami-scheduler cluster in one process,
// for trying it out: etcd and kube-apiserver, simulated GPU nodes whose
// device plugin and kubelet are played by internal/localcluster/simnode's
// agent, kube-scheduler with the hami-scheduler and default-scheduler
// profiles, the admission webhook (registered with the apiserver), and the
// deployment, replicaset, garbage-collector and namespace controllers. Once
// the apiserver sends pods to the webhook it writes a kubeconfig for
// kubectl, and it prints which card each GPU pod got. With -kueue, Kueue's
// controller-manager runs beside them, with hami-scheduler's admission
// check (cardfit).
//
//	hami-local [-dir _local] [-nodes "2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10"] [-device-config file] [-kueue] [-hami-dra]
//	hami-local status [-kubeconfig _local/kubeconfig]
//
// A group followed by "dra" (e.g. "2 nodes x 4 cards of NVIDIA
// A100-SXM4-40GB 40 GiB, dra", or "dra nvidia" for NVIDIA's driver) runs a
// DRA driver instead of HAMi's device plugin: the agent publishes its
// ResourceSlices and plays its kubelet plugin, and the DeviceClasses the
// drivers' charts install are created. -hami-dra runs the model of
// HAMi-DRA's webhook (internal/localcluster/hamidra) instead of
// hami-webhook: pods asking nvidia.com/gpu get a ResourceClaim that
// kube-scheduler's DynamicResources allocates (docs/dra.md).
//
// Node groups of other vendors (e.g. "1 node x 4 cards of Ascend910B4 32
// GiB"; see simnode.ParseSpec for the model words per vendor) mix with
// NVIDIA's; the scheduler and the webhook then run on HAMi's chart-default
// device-config.yaml with Ascend and Iluvatar switched on, unless
// -device-config names another.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hami-scheduler/hami-scheduler/cardfit"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/allocation"
	"github.com/hami-scheduler/hami-scheduler/internal/clustervendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/hamidra"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

const defaultNodes = "2 nodes x 4 cards of NVIDIA A100-SXM4-40GB 40 GiB, split 10; 1 node x 2 cards of Tesla T4 15 GiB, split 4"

func main() {
	args := os.Args[1:]
	var err error
	if len(args) > 0 && args[0] == "status" {
		err = status(args[1:], os.Stdout)
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = up(ctx, args, os.Stdout)
		stop()
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "hami-local:", err)
		os.Exit(1)
	}
}

// status prints the allocation table of the cluster the kubeconfig names.
func status(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hami-local status", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", filepath.Join("_local", "kubeconfig"), "kubeconfig of the cluster")
	deviceConfig := fs.String("device-config", "", "HAMi's device-config.yaml whose vendors' cards to read (Ascend and Iluvatar switched on); default: every vendor of HAMi's chart default")
	if err := fs.Parse(args); err != nil {
		return err
	}
	vendors, split, err := clustervendors.WithSplitCounts(*deviceConfig) // a superset of what hami-local runs with
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("%w (is hami-local running? start it with make run)", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w (is hami-local running?)", err)
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	r, err := readCluster(ctx, client, allocation.Cluster{Vendors: vendors, Nodes: nodes.Items, Pods: pods.Items, DRASplit: split})
	if err != nil {
		return err
	}
	allocation.WriteTable(out, vendors, r, pods.Items)
	return nil
}

// readCluster reads the cards of c's nodes, with the ResourceSlices and
// ResourceClaims of the cluster (DRA cards and what claims take of them);
// a warning from allocation.ListDRA is reported as an unaccounted node
// problem of the table.
func readCluster(ctx context.Context, client kubernetes.Interface, c allocation.Cluster) (allocation.Report, error) {
	listed, warnings, err := allocation.ListDRA(ctx, client)
	if err != nil {
		return allocation.Report{}, err
	}
	c.Slices, c.Claims = listed.Slices, listed.Claims
	r := allocation.ReadCluster(c)
	r.UnreadableNodes = append(r.UnreadableNodes, warnings...)
	return r, nil
}

// up runs the local cluster until ctx ends, printing to out.
func up(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hami-local", flag.ContinueOnError)
	dir := fs.String("dir", "_local", "directory for the kubeconfig and the log")
	nodeSpec := fs.String("nodes", defaultNodes, `simulated GPU nodes: groups like "4 nodes x 8 cards of NVIDIA A100 40 GiB, split 10" or "1 node x 4 cards of Ascend910B4 32 GiB", separated by ";"`)
	deviceConfig := fs.String("device-config", "", "HAMi's device-config.yaml for the scheduler and the webhook (Ascend and Iluvatar switched on); default: HAMi's chart default when -nodes has groups of other vendors than NVIDIA, else NVIDIA's built-in defaults")
	verbosity := fs.Int("v", 0, "log verbosity of the control plane and scheduler (in the log file)")
	every := fs.Duration("table-every", 2*time.Second, "how often to reprint the allocation table when it changed (0: never)")
	fastNodes := fs.Bool("fast-nodes", false, "simulated device plugins and kubelets without client limits or admission delay (the old shortcut)")
	dpQPS := fs.Float64("device-plugin-qps", simnode.DefaultDevicePluginQPS, "QPS of each simulated node's device plugin client (HAMi's: 5; negative: no limit)")
	dpBurst := fs.Int("device-plugin-burst", simnode.DefaultDevicePluginBurst, "burst of each simulated node's device plugin client (HAMi's: 10)")
	admissionDelay := fs.Duration("admission-delay", simnode.DefaultAdmissionDelay, "how long a simulated kubelet takes from seeing a pod bound to calling Allocate (negative: none)")
	withKueue := fs.Bool("kueue", false, "also run Kueue's controller-manager (make bin/kueue builds it from Go modules; -kueue-binary) with HAMi's resource transformations and the Job and pod integrations, and hami-scheduler's admission check "+cardfit.ControllerName+" (docs/kueue.md)")
	kueueBinary := fs.String("kueue-binary", filepath.Join("bin", "kueue"), "Kueue's controller-manager, for -kueue")
	featureGates := fs.String("feature-gates", "", `feature gates of the API server and the scheduler, e.g. "GenericWorkload=true" for Kubernetes' own gangs (scheduling.k8s.io/v1beta1 PodGroup, served with it)`)
	hamiDRA := fs.Bool("hami-dra", false, "run the model of HAMi-DRA's webhook instead of hami-webhook: pods asking nvidia.com/gpu get a ResourceClaim (HAMi's DRA driver's class) for kube-scheduler's DynamicResources; use with dra node groups")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hami-local [flags]          run the local cluster\n       hami-local status [-kubeconfig path] [-device-config path]  print the card allocation\n\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nThe card model of a -nodes group picks its vendor by these words:\n")
		for _, v := range simnode.Vendors() {
			fmt.Fprintf(fs.Output(), "  %s\n", v)
		}
		fmt.Fprintf(fs.Output(), "\nA group followed by \"dra\" runs a DRA driver instead of the device plugin:\n")
		for _, m := range simnode.DRAModels() {
			fmt.Fprintf(fs.Output(), "  %s\n", m)
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	specs, err := simnode.ParseSpecs(*nodeSpec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	schedArgs, webhookVendors, err := vendorSetup(specs, *deviceConfig, *dir)
	if err != nil {
		return err
	}
	logPath := filepath.Join(*dir, "hami-local.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Keep the terminal for what we print: everything else that writes to
	// stderr (etcd's client among them) goes to the log.
	console, err := localcluster.CaptureStderr(logFile)
	if err != nil {
		return err
	}
	stderr := os.Stderr
	os.Stderr = console
	defer func() {
		os.Stderr = stderr
		_ = localcluster.RestoreStderr(console)
	}()
	if err := localcluster.RedirectKlog(logFile, *verbosity); err != nil {
		return err
	}

	// A kubeconfig left by an earlier run would let a script start before
	// this cluster is up: it appears only once the webhook admits pods.
	kubeconfig := filepath.Join(*dir, "kubeconfig")
	if err := os.Remove(kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	started := time.Now()
	fmt.Fprintf(out, "starting etcd and kube-apiserver (log: %s)\n", logPath)
	cp, err := localcluster.Start(localcluster.Options{Log: logFile, FeatureGates: *featureGates})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "stopping")
		cp.Stop()
		fmt.Fprintln(out, "stopped")
	}()

	var nodes []*corev1.Node
	for _, s := range specs {
		nodes = append(nodes, s.Build("gpu-node", len(nodes))...)
	}
	if err := simnode.Create(ctx, cp.Client, nodes); err != nil {
		return err
	}
	// The DRA drivers' DeviceClasses, as their charts install them.
	classes := simnode.DeviceClasses(specs)
	if err := localcluster.InstallDeviceClasses(ctx, cp.Config, classes); err != nil {
		return err
	}
	agent, err := simnode.NewAgent(cp.Config, simnode.Options{
		Workers: 8, Fast: *fastNodes, AdmissionDelay: noneIfZero(*admissionDelay),
		DevicePluginQPS: float32(*dpQPS), DevicePluginBurst: *dpBurst,
	})
	if err != nil {
		return err
	}
	if err := agent.Start(ctx); err != nil {
		return err
	}
	defer agent.Stop()
	if err := simnode.WaitForSlices(ctx, cp.Client, nodes, time.Minute); err != nil {
		return err
	}
	controllers, err := localcluster.StartControllers(ctx, cp.Config)
	if err != nil {
		return err
	}
	defer controllers.Stop()
	// The chart's PodGroup CRD (scheduler-plugins' gangs), before the
	// scheduler, as helm install applies it.
	if err := localcluster.InstallPodGroupCRD(ctx, cp.Config); err != nil {
		return err
	}
	var cardFit *cardfit.Options
	if *withKueue {
		// Before the scheduler, whose admission check finds Kueue's API at once.
		fmt.Fprintf(out, "starting Kueue (%s)\n", *kueueBinary)
		kueue, err := cp.StartKueue(ctx, localcluster.KueueOptions{Binary: *kueueBinary, Log: logFile})
		if err != nil {
			return err
		}
		defer kueue.Stop()
		cardFit = &cardfit.Options{}
	}
	sched, err := localcluster.StartScheduler(ctx, cp.Config, localcluster.SchedulerOptions{Args: schedArgs, CardFit: cardFit})
	if err != nil {
		return err
	}
	defer sched.Stop()
	// The admission webhook, as in a real deployment: it gives device pods
	// schedulerName hami-scheduler and HAMi's defaults (of the vendors the
	// device config enables); or HAMi-DRA's in its place.
	hookURL, stopHook, err := startWebhook(ctx, cp, webhookVendors, *hamiDRA)
	if err != nil {
		return err
	}
	defer stopHook()
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nhami-local is up in %s: %d simulated GPU nodes, %s\n", time.Since(started).Round(100*time.Millisecond), len(nodes), agent.Options())
	if schedArgs != nil {
		fmt.Fprintf(out, "vendors: %d enabled by %s (Ascend and Iluvatar switched on); try kubectl apply -f examples/vendors/\n", len(webhookVendors), *schedArgs.DeviceConfigFile)
	}
	for _, s := range specs {
		fmt.Fprintf(out, "  %s\n", s)
	}
	for _, c := range classes {
		fmt.Fprintf(out, "DeviceClass %s (%s)\n", c.Name, simnode.DeviceClassSource(c.Name))
		if c.Spec.ExtendedResourceName != nil {
			fmt.Fprintf(out, "  maps %s: kube-scheduler's DynamicResources backs it by DRA (docs/dra.md)\n", *c.Spec.ExtendedResourceName)
		}
	}
	hookDoes, examples := "gives pods that\nask for a device of an enabled vendor schedulerName: hami-scheduler and HAMi's defaults", "examples/"
	if *hamiDRA {
		hookDoes = fmt.Sprintf("is a model of\n%s: it turns nvidia.com/gpu, gpumem and gpucores\ninto a ResourceClaim that kube-scheduler's DynamicResources allocates", hamidra.Version)
		examples = "examples/dra/"
	}
	fmt.Fprintf(out, `
Try it (kubectl is yours; the admission webhook at %[3]s %[4]s):
  kubectl --kubeconfig %[1]s apply -f %[5]s
  kubectl --kubeconfig %[1]s get pods -o wide
  %[2]s status -kubeconfig %[1]s    # the card allocation, any time
The allocation table below is reprinted when it changes. Ctrl-C stops everything.

`, kubeconfig, os.Args[0], hookURL, hookDoes, examples)
	if *every > 0 {
		vendors, err := clustervendors.FromConfigs(webhookVendors)
		if err != nil {
			return err
		}
		printTables(ctx, cp.Client, vendors, devices.SplitCounts(vendors, webhookVendors), out, *every)
	} else {
		<-ctx.Done()
	}
	return nil
}

// startWebhook runs and registers hami-webhook, or with hamiDRA the model
// of HAMi-DRA's webhook, and waits until the apiserver calls it; it
// returns the webhook's URL and how to stop it.
func startWebhook(ctx context.Context, cp *localcluster.ControlPlane, vendors []devices.Config, hamiDRA bool) (string, func(), error) {
	if hamiDRA {
		hook, err := localcluster.StartHAMiDRAWebhook(ctx, cp.Config, localcluster.HAMiDRAWebhookOptions{})
		if err != nil {
			return "", nil, err
		}
		if err := hook.WaitAdmitting(ctx, metav1.NamespaceDefault, time.Minute); err != nil {
			hook.Stop()
			return "", nil, err
		}
		return hook.URL, hook.Stop, nil
	}
	hook, err := localcluster.StartWebhook(ctx, cp.Config, localcluster.WebhookOptions{Vendors: vendors})
	if err != nil {
		return "", nil, err
	}
	if err := hook.WaitAdmitting(ctx, metav1.NamespaceDefault, probeResource(vendors), time.Minute); err != nil {
		hook.Stop()
		return "", nil, err
	}
	return hook.URL, hook.Stop, nil
}

// printTables prints the allocation table of the vendors' cards whenever
// it changed, at most once per interval, until ctx ends.
func printTables(ctx context.Context, client kubernetes.Interface, vendors []devices.Vendor, split func(string) int32, out io.Writer, interval time.Duration) {
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer, nodeInformer := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }, DeleteFunc: notify}
	_, _ = podInformer.Informer().AddEventHandler(handler)
	_, _ = nodeInformer.Informer().AddEventHandler(handler)
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())

	last := ""
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	dirty := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			dirty = true
		case <-ticker.C:
			if !dirty {
				continue
			}
			dirty = false
			podList, _ := podInformer.Lister().List(labels.Everything())
			nodeList, _ := nodeInformer.Lister().List(labels.Everything())
			pods := make([]corev1.Pod, 0, len(podList))
			for _, p := range podList {
				pods = append(pods, *p)
			}
			nodes := make([]corev1.Node, 0, len(nodeList))
			for _, n := range nodeList {
				nodes = append(nodes, *n)
			}
			// Claims change with their pods (reserved, then bound): the
			// slices and claims are listed when a pod or node changed.
			r, err := readCluster(ctx, client, allocation.Cluster{Vendors: vendors, Nodes: nodes, Pods: pods, DRASplit: split})
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				fmt.Fprintf(out, "hami-local: %v\n", err)
				continue
			}
			var b strings.Builder
			allocation.WriteTable(&b, vendors, r, pods)
			if table := b.String(); table != last {
				last = table
				fmt.Fprintf(out, "--- %s ---\n%s\n", time.Now().Format("15:04:05"), table)
			}
		}
	}
}

// probeResource is a device resource the webhook routes: the count of the
// first vendor it runs with (NVIDIA's without a device config).
func probeResource(configs []devices.Config) corev1.ResourceName {
	vendors, err := clustervendors.FromConfigs(configs)
	if err != nil || len(vendors) == 0 {
		return nvidia.DefaultCountName
	}
	return vendors[0].Resources().Count
}

// noneIfZero maps a zero duration flag to "none" for simnode.Options, where
// zero means the default.
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

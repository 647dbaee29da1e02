package e2e

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/awsneuron"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
	"github.com/hami-scheduler/hami-scheduler/scheduler/profile"
)

// vendorExamples holds one pod manifest per vendor.
const vendorExamples = "../../examples/vendors"

// On a cluster of every vendor (simnode.EveryVendorSpec, the cluster the
// examples document) with a scheduler and a webhook on HAMi's chart device
// config, Ascend and Iluvatar switched on: every shipped vendor example,
// routed by the webhook, and a pod with containers of two vendors (NVIDIA
// and Ascend, on a node with both) run, and each carries what its
// vendors' device plugins read.
func TestEveryVendor(t *testing.T) {
	// The NVIDIA node (the first) also has Ascend 910B4 NPUs, which support
	// the hami-core soft split.
	npus, err := simnode.ParseSpec("1 node x 4 cards of Ascend910B4 32 GiB, hami-core")
	if err != nil {
		t.Fatal(err)
	}
	e, registry, nodes := startVendorCluster(t, "vendors", func(i int, n *corev1.Node) {
		if i == 0 {
			npus.AddTo(n)
		}
	})
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}

	// The two-vendor pod first: once NVIDIA's plugin has served it the
	// node lock is free, and Ascend's plugin finds the pod by listing the
	// node's pending pods.
	two := e.pod("two-vendors", gpu{name: "cuda", cards: 1, memory: 2000}, gpu{name: "npu"})
	two.Spec.Containers[1].Resources.Limits = corev1.ResourceList{
		"huawei.com/Ascend910B4": resource.MustParse("1"), "huawei.com/Ascend910B4-memory": resource.MustParse("8192"),
	}
	e.create(two)
	pod := e.waitRunning(two.Name)
	if pod.Spec.NodeName != nodes[0].Name {
		t.Errorf("pod %s runs on %s, want %s (the only node with both vendors)", pod.Name, pod.Spec.NodeName, nodes[0].Name)
	}
	got := checkVendorPod(t, registry, pod, byName[pod.Spec.NodeName])
	if !slices.Equal(got, []string{"Ascend910B4", nvidia.VendorWord}) {
		t.Errorf("pod %s is served by %v, want Ascend910B4 and NVIDIA", pod.Name, got)
	}

	// A soft-split NPU (hami-core) runs only where the node supports it.
	soft := e.pod("ascend-hami-core", gpu{name: "npu"})
	soft.Annotations = map[string]string{ascend.VNPUModeAnnotation: ascend.ModeHAMiCore}
	soft.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		"huawei.com/Ascend910B4": resource.MustParse("1"), "huawei.com/Ascend910B4-memory": resource.MustParse("4000"),
		"huawei.com/Ascend910B4-core": resource.MustParse("25"),
	}
	e.create(soft)
	pod = e.waitRunning(soft.Name)
	if pod.Spec.NodeName != nodes[0].Name {
		t.Errorf("pod %s runs on %s, want %s (the only node with hami-core NPUs)", pod.Name, pod.Spec.NodeName, nodes[0].Name)
	}
	checkVendorPod(t, registry, pod, byName[pod.Spec.NodeName])

	files, err := filepath.Glob(filepath.Join(vendorExamples, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", vendorExamples, err)
	}
	var names []string
	for _, f := range files {
		p := examplePod(t, f)
		p.Namespace = e.ns
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[groupLabel] = e.group
		if created := e.create(p); created.Spec.SchedulerName != profile.SchedulerName {
			t.Errorf("example %s: schedulerName %q after admission, want %s (the webhook routes every vendor)", f, created.Spec.SchedulerName, profile.SchedulerName)
		}
		names = append(names, p.Name)
	}
	served := map[string]bool{}
	for i, name := range names {
		pod := e.waitRunning(name)
		got := checkVendorPod(t, registry, pod, byName[pod.Spec.NodeName])
		if len(got) != 1 {
			t.Errorf("example %s is served by %v, want one vendor", files[i], got)
		}
		for _, v := range got {
			served[v] = true
		}
	}
	// One example per vendor; NVIDIA's are in examples/, and of the
	// Ascend and Iluvatar chips one each.
	for _, v := range registry.Vendors() {
		other := v.Name() == nvidia.VendorWord || strings.HasPrefix(v.Name(), "Ascend") && v.Name() != "Ascend910B4" ||
			slices.Contains([]string{"MR-V100", "MR-V50", "BI-V100"}, v.Name())
		if !other && !served[v.Name()] {
			t.Errorf("no example runs on vendor %s", v.Name())
		}
	}
	checkEveryVendorAccounted(e, nodes, append(slices.Sorted(maps.Keys(served)), nvidia.VendorWord))
	// Every plugin that locks released its lock: the shared one and
	// Cambricon's own.
	for _, n := range nodes {
		e.checkNodeUnlocked(n.Name)
		e.eventually("node "+n.Name+" without "+cambricon.LockAnnotation, func() (bool, string) {
			fresh, err := controlPlane.Client.CoreV1().Nodes().Get(e.ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			lock, held := fresh.Annotations[cambricon.LockAnnotation]
			return !held, lock
		})
	}
}

// startVendorCluster runs the scheduler on HAMi's chart device config
// (Ascend and Iluvatar on) and a webhook for a new namespace, and adds the
// nodes of simnode.EveryVendorSpec (mutate, if set, changes them first).
// The scheduler is restarted with the defaults when the test ends.
func startVendorCluster(t *testing.T, name string, mutate func(i int, n *corev1.Node)) (*env, *devices.Registry, []*corev1.Node) {
	t.Helper()
	t.Cleanup(func() { restartScheduler(t, nil) })
	restartScheduler(t, vendorClusterArgs())
	configs := chartVendors(t)
	registry, err := vendors.NewRegistry(configs)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, name)
	e.vendors = registry.Vendors()
	e.startWebhook(configs)
	return e, registry, e.addNodes(simnode.EveryVendorSpec, mutate)
}

// startWebhook runs the webhook, as hami-local runs it, for the test's
// namespace only, with the vendors' configs (nil: its default, NVIDIA),
// until the test ends.
func (e *env) startWebhook(configs []devices.Config) {
	e.t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + webhookLabel + `":"` + e.ns + `"}}}`)
	if _, err := controlPlane.Client.CoreV1().Namespaces().Patch(e.ctx, e.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	w, err := localcluster.StartWebhook(e.ctx, controlPlane.Config, localcluster.WebhookOptions{
		ConfigurationName: "hami-webhook-" + e.ns, NamespaceLabels: map[string]string{webhookLabel: e.ns}, Vendors: configs,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
}

// vendorClusterArgs are the scheduler's args on the every-vendor cluster:
// HAMi's chart device config, Ascend and Iluvatar on.
func vendorClusterArgs() *hamiv1.HAMiArgs {
	return &hamiv1.HAMiArgs{DeviceConfigFile: ptr.To(chartDeviceConfig), EnableAscend: ptr.To(true), EnableIluvatar: ptr.To(true)}
}

// checkEveryVendorAccounted runs the accounting check (no pod problem, no
// over-commit) over every vendor and checks that it read cards on every
// node and that each vendor serving a pod has cards held.
func checkEveryVendorAccounted(e *env, nodes []*corev1.Node, served []string) {
	e.t.Helper()
	withCards, held := map[string]bool{}, map[string]bool{}
	for _, c := range e.checkAccounting() {
		withCards[c.Node] = true
		held[c.Vendor] = held[c.Vendor] || c.Used.Sharers > 0
	}
	for _, n := range nodes {
		if !withCards[n.Name] {
			e.t.Errorf("accounting: no card of node %s read", n.Name)
		}
	}
	for _, v := range served {
		if !held[v] {
			e.t.Errorf("accounting: no %s card held, though a pod runs on one", v)
		}
	}
}

// chartVendors are the vendors a scheduler on HAMi's chart device config
// runs with Ascend and Iluvatar switched on.
func chartVendors(t *testing.T) []devices.Config {
	t.Helper()
	settings, err := hamiconfig.FromDeviceConfigFile(chartDeviceConfig, deviceconfig.Options{EnableAscend: true, EnableIluvatar: true})
	if err != nil {
		t.Fatal(err)
	}
	return settings.Configs
}

// examplePod reads a shipped example: one named Pod.
func examplePod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if p.Kind != "Pod" || p.Name == "" {
		t.Fatalf("%s: want a named Pod, got kind %q name %q", file, p.Kind, p.Name)
	}
	return p
}

// pluginEnd is what a vendor's device plugin (simnode's model of it)
// leaves on a pod it has served, where that differs from HAMi's NVIDIA
// plugin (bind-phase success, the to-allocate key emptied).
type pluginEnd struct {
	// phase is the bind-phase the plugin leaves ("": success).
	phase string
	// flags are annotations the plugin sets once it has served the pod.
	flags map[string]string
	// keepsToAllocate: the plugin never reads the to-allocate key.
	keepsToAllocate bool
}

// pluginEnds by vendor name.
var pluginEnds = map[string]pluginEnd{
	// Cambricon's plugin sets its own spelling of the flag; HAMi's stays
	// "false". It never sets bind-phase.
	cambricon.VendorWord: {phase: devices.BindPhaseAllocating, keepsToAllocate: true,
		flags: map[string]string{cambricon.PluginAssignedAnnotation: "true", cambricon.AssignedAnnotation: "false"}},
	// Biren's consumes the allocated key, never the to-allocate one, and
	// never sets success.
	biren.VendorWord:     {phase: devices.BindPhaseAllocating, keepsToAllocate: true},
	enflame.DRSWord:      {phase: devices.BindPhaseAllocating, flags: map[string]string{enflame.AssignedAnnotation: "true"}},
	awsneuron.VendorWord: {flags: map[string]string{awsneuron.AllocatedFlagAnnotation: "true"}},
}

// checkVendorPod checks what the device plugins of a running pod's
// vendors read: hami.io/vgpu-node naming its node, bind-phase success,
// each vendor's allocated annotation listing cards of that vendor on the
// node for the containers that ask, nothing left to allocate, and the
// vendor's extra annotations. It returns the vendors that serve the pod,
// sorted.
func checkVendorPod(t *testing.T, registry *devices.Registry, pod *corev1.Pod, node *corev1.Node) []string {
	t.Helper()
	if node == nil {
		t.Errorf("pod %s runs on %s, not a node of the test", pod.Name, pod.Spec.NodeName)
		return nil
	}
	a := pod.Annotations
	if a[devices.AssignedNode] != node.Name {
		t.Errorf("pod %s: %s=%q, want %s", pod.Name, devices.AssignedNode, a[devices.AssignedNode], node.Name)
	}
	// What the scheduler assigned, as its record keeps it: Biren's plugin
	// consumes the allocated key.
	held, err := devices.ReadAllocated(a)
	if err != nil || !held.Recorded() {
		t.Errorf("pod %s: %s = %q (%v), want the scheduler's record", pod.Name, devices.AssignmentRecord, a[devices.AssignmentRecord], err)
	}
	var served []string
	for _, v := range registry.Vendors() {
		req, err := v.ParsePod(pod)
		if err != nil {
			t.Errorf("pod %s: %s: %v", pod.Name, v.Name(), err)
			continue
		}
		if req.IsZero() {
			continue
		}
		served = append(served, v.Name())
		cards, err := v.Inventory(node)
		if err != nil {
			t.Errorf("node %s: %s: %v", node.Name, v.Name(), err)
		}
		onNode := map[string]bool{}
		for _, c := range cards {
			onNode[c.UUID] = true
		}
		end := pluginEnds[v.Name()]
		if want := cmp.Or(end.phase, devices.BindPhaseSuccess); a[devices.BindPhase] != want {
			t.Errorf("pod %s: %s=%q, want %s (%s's plugin)", pod.Name, devices.BindPhase, a[devices.BindPhase], want, v.Name())
		}
		toAllocate, allocated := v.AssignmentAnnotations()
		recorded, _ := held.Value(allocated)
		t.Logf("pod %s on %s: %s %s (recorded %s)", pod.Name, node.Name, allocated, a[allocated], recorded)
		assignment, err := devices.DecodeAssignment(recorded)
		if err != nil {
			t.Errorf("pod %s: %s %q: %v", pod.Name, allocated, recorded, err)
			continue
		}
		for i, r := range req.Containers {
			if i >= len(assignment) {
				t.Errorf("pod %s: %s %q has no entry for container %d", pod.Name, allocated, a[allocated], i)
				continue
			}
			if r.IsZero() != (len(assignment[i]) == 0) {
				t.Errorf("pod %s: container %d asks %+v of %s, %s gives it %v", pod.Name, i, r, v.Name(), allocated, assignment[i])
			}
			for _, g := range assignment[i] {
				if !onNode[g.UUID] {
					t.Errorf("pod %s: %s names card %s, not a %s card of node %s", pod.Name, allocated, g.UUID, v.Name(), node.Name)
				}
			}
		}
		if toAllocate != "" && toAllocate != allocated && !end.keepsToAllocate && strings.Contains(a[toAllocate], ",") {
			t.Errorf("pod %s: %s = %q, cards left to allocate", pod.Name, toAllocate, a[toAllocate])
		}
		if annotator, ok := v.(devices.PodAnnotator); ok {
			extras, err := annotator.AssignmentExtras(pod, assignment, time.Now())
			if err != nil {
				t.Errorf("pod %s: %s extras: %v", pod.Name, v.Name(), err)
			}
			for k := range extras {
				if _, ok := a[k]; !ok {
					t.Errorf("pod %s: %s annotation %s missing", pod.Name, v.Name(), k)
				}
			}
		}
		for k, want := range end.flags {
			if a[k] != want {
				t.Errorf("pod %s: %s = %q, want %q (set by the device plugin)", pod.Name, k, a[k], want)
			}
		}
		if strings.HasPrefix(v.Name(), "Ascend") {
			// Huawei's plugin creates the template the memory rounds to,
			// or in hami-core the memory and cores asked.
			want := `"temp":"vir05_1c_8g"`
			if a[ascend.VNPUModeAnnotation] == ascend.ModeHAMiCore {
				want = `"memory":4000,"core":25`
			}
			if info := a[ascend.RuntimeInfoAnnotation(v.Name())]; !strings.Contains(info, want) {
				t.Errorf("pod %s: %s = %q, want it to contain %s", pod.Name, ascend.RuntimeInfoAnnotation(v.Name()), info, want)
			}
		}
	}
	slices.Sort(served)
	if len(served) == 0 {
		t.Errorf("pod %s asks no enabled vendor", pod.Name)
	}
	return served
}

package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// vendorsConfig is a HAMi device-config.yaml enabling NVIDIA, Hygon and
// one Ascend chip (the chart's names).
const vendorsConfig = `nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceCoreName: nvidia.com/gpucores
  defaultGPUNum: 1
hygon:
  resourceCountName: hygon.com/dcunum
  resourceMemoryName: hygon.com/dcumem
  resourceCoreName: hygon.com/dcucores
  memoryFactor: 1
vnpus:
  configs:
  - chipName: 910B3
    commonWord: Ascend910B3
    resourceName: huawei.com/Ascend910B3
    resourceMemoryName: huawei.com/Ascend910B3-memory
    resourceCoreName: huawei.com/Ascend910B3-core
    memoryAllocatable: 65536
    memoryCapacity: 65536
    memoryFactor: 1
    templates:
    - {name: vir05_1c_16g, memory: 16384, aiCore: 5, aiCPU: 1}
    - {name: vir10_3c_32g, memory: 32768, aiCore: 10, aiCPU: 3}
`

// vendorsHarness is a plugin reading vendorsConfig, Ascend switched on.
func vendorsHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "device-config.yaml")
	if err := os.WriteFile(path, []byte(vendorsConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return newHarness(t, &configv1.HAMiArgs{DeviceConfigFile: &path, EnableAscend: ptr.To(true)}, objs...)
}

// withHygon adds Hygon DCUs (legacy register, as Hygon's device plugin
// writes it) to a node: 4 shares, 100 cores each.
func withHygon(node *corev1.Node, memMiB []int, ids ...string) *corev1.Node {
	var b strings.Builder
	for i, id := range ids {
		b.WriteString(id + ",4," + itoa(memMiB[i]) + ",100,DCU-K100_AI,0,true:")
	}
	node.Annotations[hygon.RegisterAnnotation] = b.String()
	node.Status.Allocatable[hygon.DefaultCountName] = *resource.NewQuantity(int64(4*len(ids)), resource.DecimalSI)
	return node
}

// withAscend adds Ascend910B3 NPUs with the given NetworkIDs to a node.
func withAscend(node *corev1.Node, networkIDs ...int) *corev1.Node {
	var entries []string
	for i, id := range networkIDs {
		entries = append(entries, `{"id":"npu-`+itoa(i)+`","index":`+itoa(i)+`,"count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true,"custominfo":{"NetworkID":`+itoa(id)+`}}`)
	}
	node.Annotations[ascend.RegisterAnnotation("Ascend910B3")] = "[" + strings.Join(entries, ",") + "]"
	node.Status.Allocatable["huawei.com/Ascend910B3"] = *resource.NewQuantity(int64(4*len(networkIDs)), resource.DecimalSI)
	return node
}

func itoa(i int) string { return resource.NewQuantity(int64(i), resource.DecimalSI).String() }

func dcu(count, memMiB, cores int64) corev1.ResourceList {
	l := corev1.ResourceList{hygon.DefaultCountName: *resource.NewQuantity(count, resource.DecimalSI)}
	if memMiB > 0 {
		l[hygon.DefaultMemoryName] = *resource.NewQuantity(memMiB, resource.DecimalSI)
	}
	if cores > 0 {
		l[hygon.DefaultCoresName] = *resource.NewQuantity(cores, resource.DecimalSI)
	}
	return l
}

func npu(count, memMiB int64) corev1.ResourceList {
	l := corev1.ResourceList{"huawei.com/Ascend910B3": *resource.NewQuantity(count, resource.DecimalSI)}
	if memMiB > 0 {
		l["huawei.com/Ascend910B3-memory"] = *resource.NewQuantity(memMiB, resource.DecimalSI)
	}
	return l
}

// merge joins limits of several vendors for one container.
func merge(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		for k, v := range l {
			out[k] = v
		}
	}
	return out
}

// mixedNode has two NVIDIA cards and two Hygon DCUs of 16 GiB.
func mixedNode(name string) *corev1.Node {
	return withHygon(gpuNode(name, card("GPU-a", 15360), card("GPU-b", 15360)), []int{16384, 16384}, "DCU-a", "DCU-b")
}

// nodeLockPatches counts the node patches (lock and release) made so far.
func nodeLockPatches(h *harness) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	return n
}

// TestMultiVendorPodIsAnnotatedForEachVendor: a pod asking for NVIDIA and
// Hygon devices, in one container or in two, is fitted on both vendors'
// cards of one node and gets each vendor's own assignment keys, exactly,
// under one node lock.
func TestMultiVendorPodIsAnnotatedForEachVendor(t *testing.T) {
	tests := []struct {
		name       string
		containers []corev1.ResourceList
		wantNVIDIA string
		wantDCU    string
	}{{
		// HAMi walks each vendor's cards from the last registered one.
		name:       "two containers, one vendor each",
		containers: []corev1.ResourceList{gpu(1, 2000, 30), dcu(1, 4000, 50)},
		wantNVIDIA: "GPU-b,NVIDIA,2000,30:;;",
		wantDCU:    ";DCU-b,DCU,4000,50:;",
	}, {
		name:       "one container asking both",
		containers: []corev1.ResourceList{nil, merge(gpu(2, 1000, 0), dcu(1, 0, 0))},
		wantNVIDIA: ";GPU-b,NVIDIA,1000,0:GPU-a,NVIDIA,1000,0:;",
		// No memory is the whole DCU, no cores the whole DCU (HAMi's
		// Hygon default of 100).
		wantDCU: ";DCU-b,DCU,16384,100:;",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := gpuPod("p", tt.containers...)
			h := vendorsHarness(t, mixedNode("n1"), pod)
			state := h.schedule(pod, "n1")
			if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
				t.Fatalf("PreBind: %v", st)
			}
			got, err := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				nvidia.ToAllocateAnnotation: tt.wantNVIDIA,
				nvidia.AllocatedAnnotation:  tt.wantNVIDIA,
				hygon.ToAllocateAnnotation:  tt.wantDCU,
				hygon.AllocatedAnnotation:   tt.wantDCU,
				devices.AssignedNode:        "n1",
				devices.BindPhase:           devices.BindPhaseAllocating,
			}
			for key, w := range want {
				if got.Annotations[key] != w {
					t.Errorf("%s = %q, want %q", key, got.Annotations[key], w)
				}
			}
			// Nothing of a vendor the pod does not ask for.
			for key := range got.Annotations {
				if strings.Contains(key, "Ascend") || strings.HasPrefix(key, "huawei.com/") || key == ascend.PredicateTimeAnnotation {
					t.Errorf("unexpected annotation %s", key)
				}
			}
			node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			if lock := node.Annotations[devices.NodeLock]; !strings.HasSuffix(lock, ",default,p") {
				t.Errorf("node lock = %q, want one held by default/p", lock)
			}
			if n := nodeLockPatches(h); n != 1 {
				t.Errorf("%d node patches, want the lock taken once", n)
			}
		})
	}
}

// TestMultiVendorPodFailsWhole: when the Hygon part does not fit, the
// NVIDIA part is not kept either: Filter refuses the node, nothing is
// reserved and nothing is written.
func TestMultiVendorPodFailsWhole(t *testing.T) {
	pod := gpuPod("p", gpu(1, 2000, 0), dcu(1, 20000, 0)) // DCUs have 16 GiB
	h := vendorsHarness(t, mixedNode("n1"), pod)
	_, st := h.filter(pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "insufficient DCU devices") {
		t.Fatalf("Filter = %v, want the Hygon refusal", st)
	}
	if s := h.plugin.Cache().Stats(); s.Pods != 0 {
		t.Errorf("cache holds %d pods", s.Pods)
	}
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("API write %v for a pod that fits nowhere", a)
		}
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if len(got.Annotations) != 0 {
		t.Errorf("annotations %v written", got.Annotations)
	}
}

// TestMultiVendorUnreserveRollsBothBack: a failed PreBind patch undoes the
// reservation on both vendors' cards, and the lock.
func TestMultiVendorUnreserveRollsBothBack(t *testing.T) {
	pod := gpuPod("p", gpu(2, 15360, 100), dcu(2, 16384, 100))
	h := vendorsHarness(t, mixedNode("n1"), pod)
	state := h.schedule(pod, "n1")
	// Reserved: the same pod under another name fits neither vendor now.
	other := gpuPod("q", gpu(1, 1000, 0))
	if _, st := h.filter(other, "n1"); st.IsSuccess() {
		t.Fatal("NVIDIA cards not reserved")
	}
	other = gpuPod("q", dcu(1, 1000, 0))
	if _, st := h.filter(other, "n1"); st.IsSuccess() {
		t.Fatal("Hygon DCUs not reserved")
	}
	h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); st.IsSuccess() {
		t.Fatal("PreBind succeeded despite the failing patch")
	}
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	if s := h.plugin.Cache().Stats(); s.Pods != 0 {
		t.Errorf("cache still holds %d pods", s.Pods)
	}
	retry := gpuPod("r", gpu(2, 15360, 100), dcu(2, 16384, 100))
	if _, st := h.filter(retry, "n1"); !st.IsSuccess() {
		t.Errorf("after Unreserve the whole pod does not fit again: %v", st)
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := node.Annotations[devices.NodeLock]; held {
		t.Errorf("node lock %q left behind", lock)
	}
}

// TestAscendPreBindWritesItsExtras: an Ascend vendor's extra annotations
// (huawei.com/<chip>, predicate-time) go into the same patch as the
// assignments, next to the NVIDIA part of the same pod.
func TestAscendPreBindWritesItsExtras(t *testing.T) {
	pod := gpuPod("p", gpu(1, 2000, 0), npu(1, 16384))
	h := vendorsHarness(t, withAscend(gpuNode("n1", card("GPU-a", 15360)), 0, 0), pod)
	state := h.schedule(pod, "n1")
	before := time.Now().Unix()
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	want := map[string]string{
		nvidia.ToAllocateAnnotation:                 "GPU-a,NVIDIA,2000,0:;;",
		ascend.ToAllocateAnnotation("Ascend910B3"):  ";npu-1,Ascend910B3,16384,0:;",
		ascend.AllocatedAnnotation("Ascend910B3"):   ";npu-1,Ascend910B3,16384,0:;",
		ascend.RuntimeInfoAnnotation("Ascend910B3"): `[{"UUID":"npu-1","temp":"vir05_1c_16g","memory":16384}]`,
	}
	for key, w := range want {
		if got.Annotations[key] != w {
			t.Errorf("%s = %q, want %q", key, got.Annotations[key], w)
		}
	}
	if !isUnixAfter(got.Annotations[ascend.PredicateTimeAnnotation], before) {
		t.Errorf("predicate-time = %q", got.Annotations[ascend.PredicateTimeAnnotation])
	}
	if n := nodeLockPatches(h); n != 1 {
		t.Errorf("%d node patches, want the lock taken once for both vendors", n)
	}
}

// TestLockWhenOnlyInitContainersAsk: unlike HAMi's LockNode, which looks at
// the regular containers only, a pod whose devices are all in init
// containers takes the node lock, so that the node's plugin finds it as
// the lock's holder (AMD's refuses it otherwise).
func TestLockWhenOnlyInitContainersAsk(t *testing.T) {
	pod := gpuPod("p", nil)
	pod.Spec.InitContainers = []corev1.Container{{Name: "warmup", Resources: corev1.ResourceRequirements{Limits: dcu(1, 1000, 10)}}}
	h := vendorsHarness(t, mixedNode("n1"), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if a := got.Annotations[hygon.ToAllocateAnnotation]; a != "DCU-b,DCU,1000,10:;;" {
		t.Errorf("assignment = %q", a)
	}
	if n := nodeLockPatches(h); n != 1 {
		for _, a := range h.client.Actions() {
			if pa, ok := a.(k8stesting.PatchAction); ok {
				t.Logf("%s %s", pa.GetResource().Resource, pa.GetPatch())
			}
		}
		t.Errorf("%d node patches, want the lock taken once", n)
	}
}

// TestAscendTopologyScore: the Ascend NodeScorer term is added to HAMi's
// node score (two NPUs in one NetworkID group: 10 points, split across
// two: 5; equal load otherwise), and nodes rank by that sum as HAMi ranks
// them, unscaled and uncapped: the highest sum first under binpack, the
// lowest under spread (where HAMi's topology term counts against a node);
// nodeQueueLimit (20 by default) still comes first.
func TestAscendTopologyScore(t *testing.T) {
	tests := []struct {
		name   string
		policy devices.NodePolicy
		// queued pods in hand-over to "together".
		queued int
		// wantFirst is the node NormalizeScore puts on top.
		wantFirst string
	}{
		{name: "binpack", policy: devices.NodeBinpack, wantFirst: "together"},
		{name: "spread", policy: devices.NodeSpread, wantFirst: "apart"},
		{name: "binpack, 20 pods queued on together", policy: devices.NodeBinpack, queued: 20, wantFirst: "apart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := gpuPod("p", npu(2, 0))
			pod.Annotations = map[string]string{devices.NodePolicyAnnotation: string(tt.policy)}
			together := withAscend(gpuNode("together", card("GPU-a", 15360)), 0, 0, 1)
			apart := withAscend(gpuNode("apart", card("GPU-a", 15360)), 0, 1, 2)
			h := vendorsHarness(t, together, apart, pod)
			for i := range tt.queued {
				h.plugin.queues.Add(types.UID("queued-"+itoa(i)), "together", time.Now())
			}
			state, st := h.preFilter(pod, h.nodeInfo("together"), h.nodeInfo("apart"))
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			scores := h.scores(state, pod, h.nodeInfo("together"), h.nodeInfo("apart"))
			// HAMi's sums in hundredths of a point: 10 - 5 points apart.
			if d := scores[0].Score - scores[1].Score; d != 500 {
				t.Errorf("sums %v: together %d above apart, want 500", scores, d)
			}
			if st := h.plugin.NormalizeScore(h.ctx, state, pod, scores); !st.IsSuccess() {
				t.Fatal(st)
			}
			first := scores[0].Name
			if scores[1].Score > scores[0].Score {
				first = scores[1].Name
			}
			if first != tt.wantFirst || scores[0].Score == scores[1].Score {
				t.Errorf("normalized %v, want %s on top", scores, tt.wantFirst)
			}
		})
	}
}

// TestVendorsOnOneNodeAreIndependent: a node whose Hygon register cannot
// be read still takes NVIDIA pods; Hygon pods are refused there with the
// reason.
func TestVendorsOnOneNodeAreIndependent(t *testing.T) {
	node := mixedNode("n1")
	node.Annotations[hygon.RegisterAnnotation] = "not a register"
	h := vendorsHarness(t, node)
	if _, st := h.filter(gpuPod("g", gpu(2, 15360, 0)), "n1"); !st.IsSuccess() {
		t.Errorf("NVIDIA pod on a node with a broken Hygon register: %v", st)
	}
	_, st := h.filter(gpuPod("d", dcu(1, 1000, 0)), "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "DCU devices unusable") {
		t.Errorf("Hygon pod: %v, want the register error", st)
	}
}

package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/kunlun"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
)

// The vendors' policy-aware scores are the ones the plugin looks for.
var (
	_ devices.NodeAnnotationScorer = &metax.GPUVendor{}
	_ devices.PolicyNeutralScorer  = &metax.SGPUVendor{}
	_ devices.PlacementScorer      = &kunlun.Vendor{}
)

// metaxKunlunConfig is a HAMi device-config.yaml enabling NVIDIA, MetaX
// (GPU and sGPU) and Kunlunxin (XPU and vXPU) with the chart's names.
const metaxKunlunConfig = `nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceCoreName: nvidia.com/gpucores
  defaultGPUNum: 1
metax:
  resourceCountName: "metax-tech.com/gpu"
  resourceVCountName: metax-tech.com/sgpu
  resourceVMemoryName: metax-tech.com/vmemory
  resourceVCoreName: metax-tech.com/vcore
  sgpuTopologyAware: false
kunlun:
  resourceCountName: kunlunxin.com/xpu
  resourceVCountName: kunlunxin.com/vxpu
  resourceVMemoryName: kunlunxin.com/vxpu-memory
`

func metaxKunlunArgs(t *testing.T, policy devices.NodePolicy) *configv1.HAMiArgs {
	t.Helper()
	path := filepath.Join(t.TempDir(), "device-config.yaml")
	if err := os.WriteFile(path, []byte(metaxKunlunConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return &configv1.HAMiArgs{DeviceConfigFile: &path, NodeSchedulerPolicy: ptr.To(string(policy))}
}

// capacityNode is a node with the given capacities and annotations.
func capacityNode(name string, capacity corev1.ResourceList, annotations map[string]string) *corev1.Node {
	if annotations == nil {
		annotations = map[string]string{}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

func metaxGPUNode(name string, annotations map[string]string) *corev1.Node {
	return capacityNode(name, corev1.ResourceList{metax.DefaultGPUCountName: resource.MustParse("8")}, annotations)
}

func xpuNode(name string) *corev1.Node {
	return capacityNode(name, corev1.ResourceList{kunlun.DefaultCountName: resource.MustParse("8")}, nil)
}

// sgpuNode has four sGPUs in the given MetaLink zones.
func sgpuNode(name string, zones ...int) *corev1.Node {
	var entries []string
	for i, z := range zones {
		entries = append(entries, fmt.Sprintf(`{"uuid":"%s-sgpu-%d","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"numa":0,"healthy":true,"qosPolicy":"best-effort","linkZone":%d}`, name, i, z))
	}
	n := capacityNode(name, corev1.ResourceList{metax.DefaultSGPUCountName: resource.MustParse("64")}, nil)
	n.Annotations[metax.SGPURegisterAnnotation] = "[" + strings.Join(entries, ",") + "]"
	return n
}

func count(name corev1.ResourceName, n int64) corev1.ResourceList {
	return corev1.ResourceList{name: *resource.NewQuantity(n, resource.DecimalSI)}
}

// rank runs PreFilter, Filter, Score and NormalizeScore of pod on nodes and
// returns the node names, best first (ties by name), and their scores.
func (h *harness) rank(pod *corev1.Pod, nodes ...string) ([]string, map[string]int64) {
	h.t.Helper()
	var infos []fwk.NodeInfo
	for _, n := range nodes {
		infos = append(infos, h.nodeInfo(n))
	}
	state, st := h.preFilter(pod, infos...)
	if !st.IsSuccess() {
		h.t.Fatalf("PreFilter: %v", st)
	}
	var list fwk.NodeScoreList
	for _, ni := range infos {
		if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
			h.t.Fatalf("Filter on %s: %v", ni.Node().Name, explained(state, ni.Node().Name, st))
		}
		s, st := h.plugin.Score(h.ctx, state, pod, ni)
		if !st.IsSuccess() {
			h.t.Fatalf("Score on %s: %v", ni.Node().Name, st)
		}
		list = append(list, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if st := h.plugin.ScoreExtensions().NormalizeScore(h.ctx, state, pod, list); !st.IsSuccess() {
		h.t.Fatalf("NormalizeScore: %v", st)
	}
	scores := map[string]int64{}
	for _, ns := range list {
		if ns.Score < fwk.MinNodeScore || ns.Score > fwk.MaxNodeScore {
			h.t.Errorf("node %s scores %d, out of range", ns.Name, ns.Score)
		}
		scores[ns.Name] = ns.Score
	}
	slices.SortStableFunc(list, func(a, b fwk.NodeScore) int {
		if a.Score != b.Score {
			return int(b.Score - a.Score)
		}
		return strings.Compare(a.Name, b.Name)
	})
	order := make([]string, len(list))
	for i, ns := range list {
		order[i] = ns.Name
	}
	return order, scores
}

// TestPolicyAwareVendorNodeOrder: pods asking MetaX GPUs, MetaX sGPUs or
// Kunlunxin XPUs rank nodes by HAMi's sum of its node score and the
// vendor's ScoreNode, under binpack (highest first) and spread (lowest
// first). Each want is the order HAMi v2.10 gives (worked out in the
// comments); the vendor term overturns the order of usage alone.
func TestPolicyAwareVendorNodeOrder(t *testing.T) {
	losses := func(v string) map[string]string { return map[string]string{metax.LossAnnotation: v} }
	scores := func(v string) map[string]string { return map[string]string{metax.ScoreAnnotation: v} }
	both := func(l, s string) map[string]string {
		return map[string]string{metax.LossAnnotation: l, metax.ScoreAnnotation: s}
	}
	exclusiveSGPU := func(n int64) *corev1.Pod {
		pod := gpuPod("p", merge(count(metax.DefaultSGPUCountName, n), count(metax.DefaultSGPUCoresName, 100)))
		pod.Annotations[metax.TopologyAwareAnnotation] = "true"
		return pod
	}
	tests := []struct {
		name   string
		policy devices.NodePolicy
		nodes  []*corev1.Node
		// resident pods, scheduled (reserved) before pod, by node.
		resident map[string]*corev1.Pod
		pod      *corev1.Pod
		want     []string
	}{
		// MetaX GPU, 2 cards: binpack adds 2000 - losses["2"] (a: 1980,
		// b: 1900, c: no annotation, 0), spread adds 2000 - scores["2"]
		// (a: 1990, b: 1950, c: 0) and picks the lowest.
		{name: "metax gpu binpack: lowest loss first", policy: devices.NodeBinpack,
			nodes: []*corev1.Node{metaxGPUNode("a", both(`{"1":0,"2":20}`, `{"2":10}`)), metaxGPUNode("b", both(`{"2":100}`, `{"2":50}`)), metaxGPUNode("c", nil)},
			pod:   gpuPod("p", count(metax.DefaultGPUCountName, 2)), want: []string{"a", "b", "c"}},
		{name: "metax gpu spread: highest topology score first, a node without it before all", policy: devices.NodeSpread,
			nodes: []*corev1.Node{metaxGPUNode("a", both(`{"1":0,"2":20}`, `{"2":10}`)), metaxGPUNode("b", both(`{"2":100}`, `{"2":50}`)), metaxGPUNode("c", nil)},
			pod:   gpuPod("p", count(metax.DefaultGPUCountName, 2)), want: []string{"c", "b", "a"}},
		{name: "metax gpu: the entry of the pod's card count, missing = 0, unreadable = 0", policy: devices.NodeBinpack,
			nodes: []*corev1.Node{metaxGPUNode("a", losses(`{"1":300}`)), metaxGPUNode("b", losses(`{"1":100}`)), metaxGPUNode("c", losses(`not json`)), metaxGPUNode("d", scores(`{"1":0}`))},
			pod:   gpuPod("p", count(metax.DefaultGPUCountName, 1)), want: []string{"c", "b", "a", "d"}},
		{name: "metax gpu binpack: the loss outweighs usage", policy: devices.NodeBinpack,
			nodes:    []*corev1.Node{metaxGPUNode("busy", losses(`{"1":50}`)), metaxGPUNode("idle", losses(`{"1":0}`))},
			resident: map[string]*corev1.Pod{"busy": gpuPod("r", count(metax.DefaultGPUCountName, 4))},
			pod:      gpuPod("p", count(metax.DefaultGPUCountName, 1)), want: []string{"idle", "busy"}},

		// Kunlunxin XPU, 1 card. "full" has its left group (0-3) in use
		// (bubbles 1); the pod's card 4 makes 3 bubbles: +2, score 0.
		// "one" has card 0 in use (3 bubbles); the pod's card 1 keeps 3:
		// score 2000. Binpack: one (2000 + 3.75) before full (0 + 15);
		// spread: full first, the opposite of usage alone.
		{name: "kunlun binpack: the fragmentation score outweighs usage", policy: devices.NodeBinpack,
			nodes:    []*corev1.Node{xpuNode("full"), xpuNode("one")},
			resident: map[string]*corev1.Pod{"full": gpuPod("r1", count(kunlun.DefaultCountName, 4)), "one": gpuPod("r2", count(kunlun.DefaultCountName, 1))},
			pod:      gpuPod("p", count(kunlun.DefaultCountName, 1)), want: []string{"one", "full"}},
		{name: "kunlun spread: lowest sum first, as in HAMi", policy: devices.NodeSpread,
			nodes:    []*corev1.Node{xpuNode("full"), xpuNode("one")},
			resident: map[string]*corev1.Pod{"full": gpuPod("r1", count(kunlun.DefaultCountName, 4)), "one": gpuPod("r2", count(kunlun.DefaultCountName, 1))},
			pod:      gpuPod("p", count(kunlun.DefaultCountName, 1)), want: []string{"full", "one"}},
		// An idle node: no bubbles before (counted 1), the pod's card 0
		// makes 3: score 0; "one" scores 2000.
		{name: "kunlun binpack: idle node last", policy: devices.NodeBinpack,
			nodes:    []*corev1.Node{xpuNode("idle"), xpuNode("one")},
			resident: map[string]*corev1.Pod{"one": gpuPod("r", count(kunlun.DefaultCountName, 1))},
			pod:      gpuPod("p", count(kunlun.DefaultCountName, 1)), want: []string{"one", "idle"}},

		// MetaX sGPU, 2 exclusive cards, topology-aware: "linked" has
		// zones 1,1,2,2: the pod takes the zone-1 pair, A = 10, F = 20,
		// R = 10: 10A - (F - A - R) = 100; "apart" (zones 1,2,3,4) scores
		// 0. Policy neutral: "linked" first under both policies (HAMi:
		// x10000 under binpack, x-10000 under spread, lowest first).
		{name: "metax sgpu binpack: MetaLink pair first", policy: devices.NodeBinpack,
			nodes: []*corev1.Node{sgpuNode("apart", 1, 2, 3, 4), sgpuNode("linked", 1, 1, 2, 2)},
			pod:   exclusiveSGPU(2), want: []string{"linked", "apart"}},
		{name: "metax sgpu spread: MetaLink pair first too", policy: devices.NodeSpread,
			nodes: []*corev1.Node{sgpuNode("apart", 1, 2, 3, 4), sgpuNode("linked", 1, 1, 2, 2)},
			pod:   exclusiveSGPU(2), want: []string{"linked", "apart"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.pod}
			var names []string
			for _, n := range tt.nodes {
				objs = append(objs, n)
				names = append(names, n.Name)
			}
			for _, r := range tt.resident {
				objs = append(objs, r)
			}
			h := newHarness(t, metaxKunlunArgs(t, tt.policy), objs...)
			for node, r := range tt.resident {
				h.schedule(r, node)
			}
			got, scores := h.rank(tt.pod, names...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("node order %v (scores %v), want %v", got, scores, tt.want)
			}
			if best := scores[tt.want[0]]; best != fwk.MaxNodeScore {
				t.Errorf("HAMi's pick %s scores %d, want %d", tt.want[0], best, fwk.MaxNodeScore)
			}
		})
	}
}

// TestNormalizeScoreLeavesOtherPods: a pod asking no vendor with a
// policy-aware score keeps Score's absolute scale.
func TestNormalizeScoreLeavesOtherPods(t *testing.T) {
	h := newHarness(t, metaxKunlunArgs(t, devices.NodeBinpack), eightCardNode("busy"), eightCardNode("idle"))
	h.schedule(gpuPod("resident", gpu(4, 30000, 50)), "busy")
	pod := gpuPod("new", gpu(1, 1000, 10))
	busy, idle := h.nodeInfo("busy"), h.nodeInfo("idle")
	state, st := h.preFilter(pod, busy, idle)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	var list fwk.NodeScoreList
	for _, ni := range []fwk.NodeInfo{busy, idle} {
		if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
			t.Fatal(st)
		}
		s, _ := h.plugin.Score(h.ctx, state, pod, ni)
		list = append(list, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	before := slices.Clone(list)
	if st := h.plugin.NormalizeScore(h.ctx, state, pod, list); !st.IsSuccess() {
		t.Fatal(st)
	}
	if !slices.Equal(before, list) || list[0].Score <= list[1].Score {
		t.Errorf("scores %v, want %v unchanged with busy first", list, before)
	}
}

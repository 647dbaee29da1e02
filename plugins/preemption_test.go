package plugins

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// TestPreemptionSeesVictimsCards walks the calls default preemption makes:
// on a cloned state, RemovePod of a victim frees its cards for Filter, and
// AddPod (a reprieved victim) takes them back.
func TestPreemptionSeesVictimsCards(t *testing.T) {
	victim := gpuPod("victim", gpu(1, 8000, 0))
	victim.Spec.NodeName = "n1"
	victim.Annotations[nvidia.AllocatedAnnotation] = "only,NVIDIA,8000,0:;"
	victim.Annotations[devices.AssignedNode] = "n1"
	h := newHarness(t, nil, gpuNode("n1", card("only", 10000)), victim)
	waitForPods(t, h, 1)

	preemptor := gpuPod("preemptor", gpu(1, 8000, 0))
	ni := h.nodeInfo("n1")
	state, _ := h.preFilter(preemptor, ni)
	if st := h.plugin.Filter(h.ctx, state, preemptor, ni); st.Code() != fwk.Unschedulable {
		t.Fatalf("before preemption: code %v, want Unschedulable", st.Code())
	}
	victimInfo, err := framework.NewPodInfo(victim)
	if err != nil {
		t.Fatal(err)
	}
	sim := state.Clone()
	if st := h.plugin.RemovePod(h.ctx, sim, preemptor, victimInfo, ni); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := h.plugin.Filter(h.ctx, sim, preemptor, ni); !st.IsSuccess() {
		t.Fatalf("with the victim removed: %v", st)
	}
	// The original state is untouched by the simulation.
	if st := h.plugin.Filter(h.ctx, state, preemptor, ni); st.Code() != fwk.Unschedulable {
		t.Errorf("original state after simulation: code %v, want Unschedulable", st.Code())
	}
	if st := h.plugin.AddPod(h.ctx, sim, preemptor, victimInfo, ni); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := h.plugin.Filter(h.ctx, sim, preemptor, ni); st.Code() != fwk.Unschedulable {
		t.Errorf("victim added back: code %v, want Unschedulable", st.Code())
	}
}

func waitForPods(t *testing.T, h *harness, n int) {
	t.Helper()
	for i := 0; i < 1000 && h.plugin.Cache().Stats().Pods < n; i++ {
		if _, err := h.client.CoreV1().Pods("").List(h.ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.plugin.Cache().Stats().Pods; got < n {
		t.Fatalf("cache holds %d pods, want %d", got, n)
	}
}

// resident is a pod bound to n1 holding memMiB on card, as the informer
// feeds the cache.
func resident(name, card string, memMiB int) *corev1.Pod {
	p := gpuPod(name, gpu(1, int64(memMiB), 0))
	p.Spec.NodeName = "n1"
	p.Annotations[nvidia.AllocatedAnnotation] = fmt.Sprintf("%s,NVIDIA,%d,0:;", card, memMiB)
	p.Annotations[devices.AssignedNode] = "n1"
	return p
}

// TestAddPodCountsNominatedPods walks the calls the framework makes for
// pods nominated to a node (RunFilterPluginsWithNominatedPods, also inside
// preemption's victim selection): on a cloned state, AddPod of a nominated
// pod that holds no card yet must count what it would take, so a pod of
// lower or equal priority does not take the cards freed for it.
func TestAddPodCountsNominatedPods(t *testing.T) {
	assumed := gpuPod("assumed", gpu(1, 8000, 0))
	tests := []struct {
		name      string
		cards     []cardSpec
		residents []*corev1.Pod
		// victims are residents preemption removes first.
		victims []string
		// assume is Reserved on n1 before the cycle (not yet bound).
		assume    *corev1.Pod
		nominated []*corev1.Pod
		pod       *corev1.Pod
		wantCode  fwk.Code
		wantMsg   string
	}{
		{name: "no nominated pod: the card is free",
			cards: []cardSpec{card("c0", 10000)}, pod: gpuPod("p", gpu(1, 8000, 0))},
		{name: "nominated pod's share is not taken",
			cards:     []cardSpec{card("c0", 10000)},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(1, 8000, 0))},
			pod:       gpuPod("p", gpu(1, 8000, 0)), wantCode: fwk.Unschedulable, wantMsg: "insufficient memory"},
		{name: "room left beside the nominated pod",
			cards:     []cardSpec{card("c0", 10000)},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(1, 1000, 0))},
			pod:       gpuPod("p", gpu(1, 8000, 0))},
		{name: "two nominated pods add up",
			cards:     []cardSpec{card("c0", 10000)},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(1, 4000, 0)), gpuPod("nominated2", gpu(1, 4000, 0))},
			pod:       gpuPod("p", gpu(1, 4000, 0)), wantCode: fwk.Unschedulable, wantMsg: "insufficient memory"},
		{name: "nominated pod still waiting for its victims holds the vendor's cards",
			cards:     []cardSpec{card("c0", 10000)},
			residents: []*corev1.Pod{resident("victim", "c0", 8000)},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(1, 8000, 0))},
			pod:       gpuPod("p", gpu(1, 1000, 0)), wantCode: fwk.Unschedulable, wantMsg: "freed for nominated pod default/nominated"},
		{name: "nominated pod asking no device changes nothing",
			cards:     []cardSpec{card("c0", 10000)},
			nominated: []*corev1.Pod{gpuPod("nominated", nil)},
			pod:       gpuPod("p", gpu(1, 8000, 0))},
		{name: "a pod the cache already counts is not counted twice",
			cards:     []cardSpec{card("c0", 10000)},
			assume:    assumed,
			nominated: []*corev1.Pod{assumed},
			pod:       gpuPod("p", gpu(1, 1000, 0))},
		{name: "preemption: the nominated pod and the preemptor each get a freed card",
			cards:     []cardSpec{card("c0", 10000), card("c1", 10000)},
			residents: []*corev1.Pod{resident("v0", "c0", 8000), resident("v1", "c1", 8000)},
			victims:   []string{"v0", "v1"},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(1, 8000, 0))},
			pod:       gpuPod("p", gpu(1, 8000, 0))},
		{name: "preemption: the one freed card goes to the nominated pod",
			cards:     []cardSpec{card("c0", 10000), card("c1", 10000)},
			residents: []*corev1.Pod{resident("v0", "c0", 8000), resident("v1", "c1", 8000)},
			victims:   []string{"v0"},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(1, 8000, 0))},
			pod:       gpuPod("p", gpu(1, 8000, 0)), wantCode: fwk.Unschedulable, wantMsg: "insufficient memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{gpuNode("n1", tt.cards...)}
			for _, r := range tt.residents {
				objs = append(objs, r)
			}
			h := newHarness(t, nil, objs...)
			waitForPods(t, h, len(tt.residents))
			if tt.assume != nil {
				h.schedule(tt.assume, "n1")
			}
			ni := h.nodeInfo("n1")
			state, st := h.preFilter(tt.pod, ni)
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			sim := state.Clone()
			for _, v := range tt.victims {
				for _, r := range tt.residents {
					if r.Name == v {
						if st := h.plugin.RemovePod(h.ctx, sim, tt.pod, podInfo(t, r), ni); !st.IsSuccess() {
							t.Fatal(st)
						}
					}
				}
			}
			for _, n := range tt.nominated {
				if st := h.plugin.AddPod(h.ctx, sim, tt.pod, podInfo(t, n), ni); !st.IsSuccess() {
					t.Fatalf("AddPod %s: %v", n.Name, st)
				}
			}
			st = h.plugin.Filter(h.ctx, sim, tt.pod, ni)
			if msg := explained(state, "n1", st); st.Code() != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("Filter = %v %q, want %v %q", st.Code(), msg, tt.wantCode, tt.wantMsg)
			}
			// The simulation stays in the clone.
			if s, _ := readState(state); len(s.nominated) != 0 || len(s.removed) != 0 {
				t.Errorf("original state changed: nominated %v, removed %v", s.nominated, s.removed)
			}
		})
	}
}

func podInfo(t *testing.T, pod *corev1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// nominator is a fwk.PodNominator holding fixed nominations.
type nominator map[string][]fwk.PodInfo

func (n nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n nominator) DeleteNominatedPodIfExists(*corev1.Pod)                        {}
func (n nominator) UpdateNominatedPod(klog.Logger, *corev1.Pod, fwk.PodInfo)      {}
func (n nominator) NominatedPodsForNode(node string) []fwk.PodInfo                { return n[node] }

// TestFrameworkKeepsCardsForNominatedPods: the framework's Filter with
// nominated pods adds those of higher or equal priority through AddPod; a
// lower-priority pod must not get the cards a preemptor was nominated for,
// a higher-priority one may.
func TestFrameworkKeepsCardsForNominatedPods(t *testing.T) {
	withPriority := func(p *corev1.Pod, prio int32) *corev1.Pod {
		p.Spec.Priority = &prio
		return p
	}
	nominated := withPriority(gpuPod("preemptor", gpu(1, 8000, 0)), 100)
	nominated.Status.NominatedNodeName = "n1"
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantCode fwk.Code
	}{
		{name: "lower priority", pod: withPriority(gpuPod("low", gpu(1, 8000, 0)), 0), wantCode: fwk.Unschedulable},
		{name: "equal priority", pod: withPriority(gpuPod("same", gpu(1, 8000, 0)), 100), wantCode: fwk.Unschedulable},
		{name: "higher priority", pod: withPriority(gpuPod("high", gpu(1, 8000, 0)), 200), wantCode: fwk.Success},
		{name: "lower priority, small enough to share", pod: withPriority(gpuPod("small", gpu(1, 2000, 0)), 0), wantCode: fwk.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, gpuNode("n1", card("c0", 10000)))
			ni := h.nodeInfo("n1")
			f := h.framework([]fwk.NodeInfo{ni}, frameworkruntime.WithPodNominator(nominator{"n1": {podInfo(t, nominated)}}))
			state := framework.NewCycleState()
			if _, st, _ := f.RunPreFilterPlugins(h.ctx, state, tt.pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			if st := f.RunFilterPluginsWithNominatedPods(h.ctx, state, tt.pod, ni); st.Code() != tt.wantCode {
				t.Errorf("Filter with nominated pods = %v %q, want %v", st.Code(), st.Message(), tt.wantCode)
			}
		})
	}
}

package plugins

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// A pod-group cycle reserves each member, unreserves them all, then
// reserves those of a group that fits again before Permit: the cards end
// up counted once, as after one Reserve.
func TestReserveUnreserveReserve(t *testing.T) {
	h := newHarness(t, nil, gpuNode("n1", card("a", 10000), card("b", 10000)))
	pod := gpuPod("member", gpu(1, 6000, 0))
	state := h.schedule(pod, "n1")
	_, once, _ := h.plugin.Cache().Snapshot("n1", 0, nil)
	once = slices.Clone(once)
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	if st := h.plugin.Reserve(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve again: %v", st)
	}
	if st := h.plugin.Reserve(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve twice: %v", st)
	}
	_, again, _ := h.plugin.Cache().Snapshot("n1", 0, nil)
	if !slices.Equal(once, again) {
		t.Errorf("usage after Reserve, Unreserve, Reserve, Reserve = %v, want %v (one Reserve)", again, once)
	}
	// PreBindPreFlight (run before the Permit wait) writes nothing.
	before := len(h.client.Actions())
	if _, st := h.plugin.PreBindPreFlight(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBindPreFlight: %v", st)
	}
	for _, a := range h.client.Actions()[before:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("PreBindPreFlight made an API call: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// Cards a gang's waiting member releases retry the pods turned away for
// lack of cards, but the members of its own gang.
func TestUnreserveRetriesAllButTheGang(t *testing.T) {
	h := newHarness(t, nil, gpuNode("n1", card("only", 10000)))
	member := func(name string) *corev1.Pod {
		p := gpuPod(name, gpu(1, 8000, 0))
		p.Labels = map[string]string{podGroupLabel: "g"}
		return p
	}
	waiting := member("g-0")
	state := h.schedule(waiting, "n1")
	sibling, plain := member("g-1"), gpuPod("plain", gpu(1, 8000, 0))
	for _, p := range []*corev1.Pod{sibling, plain} {
		if _, st := h.filter(p, "n1"); st.Code() != fwk.Unschedulable {
			t.Fatalf("Filter %s: %v, want Unschedulable", p.Name, st)
		}
	}
	h.plugin.Unreserve(h.ctx, state, waiting, "n1")
	got := h.handle.activations()
	if !slices.Contains(got, klog.KObj(plain).String()) || slices.Contains(got, klog.KObj(sibling).String()) {
		t.Errorf("activated %v, want default/plain and not the gang's default/g-1", got)
	}
}

// In a pod-group cycle the pods workload-aware preemption simulates away
// are missing from the snapshot: their cards are free to the members,
// unless the holder's priority is not below the preemptor's, priorities
// being the PodGroups' (a pod's own when it has no group), as
// kube-scheduler ranks them. A hand-over this process resumed is never
// in the snapshot and never a victim.
func TestPodGroupCycleReadsVictimsFromTheSnapshot(t *testing.T) {
	const member, low, high = "member-group", "low-group", "high-group"
	groups := map[string]int32{member: 10, low: 5, high: 1000}
	holder := func(priority int32, group string) *corev1.Pod {
		p := gpuPod("victim", gpu(1, 8000, 0))
		p.Spec.NodeName = "n1"
		p.Spec.Priority = &priority
		p.Annotations[nvidia.AllocatedAnnotation] = "only,NVIDIA,8000,0:;"
		p.Annotations[devices.AssignedNode] = "n1"
		if group != "" {
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
		}
		return p
	}
	resumed := func(priority int32) *corev1.Pod {
		p := holder(priority, low)
		p.Spec.NodeName = ""
		return handedOverTo(p, "n1", "only", 0)
	}
	tests := []struct {
		name          string
		victim        *corev1.Pod
		inSnapshot    bool
		podGroupCycle bool
		// memberPriority is the member pod's own; its group's is 10.
		memberPriority int32
		wantFit        bool
	}{
		{"victim removed from the snapshot", holder(0, ""), false, true, 10, true},
		{"holder kept in the snapshot", holder(0, ""), true, true, 10, false},
		{"holder of the member's priority", holder(10, ""), false, true, 10, false},
		{"not a pod-group cycle", holder(0, ""), false, false, 10, false},
		{"the group's priority above its pods' own", holder(0, low), false, true, 0, true},
		{"a pod above the member's own priority in a group below", holder(100, low), false, true, 0, true},
		{"a pod below in a group above", holder(0, high), false, true, 100, false},
		{"a resumed hand-over is never a victim", resumed(0), false, true, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := gpuNode("n1", card("only", 10000))
			h := newHarness(t, nil, node, tt.victim)
			ni := framework.NewNodeInfo()
			ni.SetNode(node)
			if tt.inSnapshot {
				ni.AddPod(tt.victim)
			}
			h.handle.snapshot = fakeSnapshot{nodes: []fwk.NodeInfo{ni}, podGroups: groups}
			pod := gpuPod("member", gpu(1, 8000, 0))
			pod.Spec.Priority = &tt.memberPriority
			group := member
			pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
			state := framework.NewCycleState()
			if tt.podGroupCycle {
				state.SetPodGroupSchedulingCycle(framework.NewCycleState())
			}
			if _, st := h.plugin.PreFilter(h.ctx, state, pod, []fwk.NodeInfo{ni}); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			st := h.plugin.Filter(h.ctx, state, pod, ni)
			if st.IsSuccess() != tt.wantFit {
				t.Errorf("Filter: %v, want fit %v", st, tt.wantFit)
			}
		})
	}
}

// snapshotOf is a scheduler snapshot of the nodes.
func snapshotOf(nodes ...fwk.NodeInfo) fwk.SharedLister {
	return fakeSnapshot{nodes: nodes}
}

type fakeSnapshot struct {
	fwk.SharedLister
	nodes []fwk.NodeInfo
	// podGroups are the in-tree PodGroups (namespace default) by name,
	// with their priority.
	podGroups map[string]int32
}

func (s fakeSnapshot) NodeInfos() fwk.NodeInfoLister {
	return fakeNodeInfos{SharedLister: s.SharedLister, nodes: s.nodes}
}

func (s fakeSnapshot) PodGroups() fwk.PodGroupLister { return fakePodGroups(s.podGroups) }

func (s fakeSnapshot) CompositePodGroups() fwk.CompositePodGroupLister { return nil }

type fakePodGroups map[string]int32

func (g fakePodGroups) Get(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	priority, ok := g[name]
	if !ok || namespace != "default" {
		return nil, fmt.Errorf("PodGroup %s/%s not in the snapshot", namespace, name)
	}
	return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: schedulingv1beta1.PodGroupSpec{Priority: &priority}}, nil
}

type fakeNodeInfos struct {
	fwk.SharedLister
	nodes []fwk.NodeInfo
}

func (l fakeNodeInfos) List() ([]fwk.NodeInfo, error) { return l.nodes, nil }
func (l fakeNodeInfos) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	return nil, nil
}
func (l fakeNodeInfos) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	return nil, nil
}
func (l fakeNodeInfos) HavePodsWithRequiredNonHostScopedAntiAffinityList() ([]fwk.NodeInfo, error) {
	return nil, nil
}
func (l fakeNodeInfos) Get(name string) (fwk.NodeInfo, error) {
	for _, n := range l.nodes {
		if n.Node().Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("node %s not in the snapshot", name)
}

// GroupRoom counts only the nodes one of the pods may go to.
func TestGroupRoomCountsAdmittingNodes(t *testing.T) {
	labelled := gpuNode("n1", card("a", 40960))
	labelled.Labels = map[string]string{"pool": "train"}
	other := gpuNode("n2", card("b", 40960))
	h := newHarness(t, nil, []runtime.Object{labelled, other}...)
	pods := []*corev1.Pod{gpuPod("m0", gpu(1, 30000, 0)), gpuPod("m1", gpu(1, 30000, 0))}
	if short := h.plugin.GroupRoom(pods, 2); short != nil {
		t.Fatalf("two nodes for two members: %v", short)
	}
	for _, p := range pods {
		p.Spec.NodeSelector = map[string]string{"pool": "train"}
	}
	if short := h.plugin.GroupRoom(pods, 2); short == nil {
		t.Fatal("one admitting node for two members: room found")
	}
}

// A gang member another scheduler process handed over (PreBind wrote its
// assignment) and did not bind keeps its cards: no other pod takes them,
// the member itself fits them again. A plain pod's, or an expired
// hand-over's, are not kept.
func TestResumedHandOver(t *testing.T) {
	handedOver := func(name, gang string, age time.Duration) *corev1.Pod {
		p := gpuPod(name, gpu(1, 8000, 0))
		if gang != "" {
			p.Labels = map[string]string{podGroupLabel: gang}
		}
		return handedOverTo(p, "n1", "only", age)
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantKept bool
	}{
		{"gang member", handedOver("member", "g", time.Second), true},
		{"plain pod", handedOver("plain", "", time.Second), false},
		{"hand-over older than the lock expiry", handedOver("old", "g", 10*time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, gpuNode("n1", card("only", 10000)), tt.pod)
			_, held := h.plugin.Cache().Holding(tt.pod.UID)
			if held != tt.wantKept {
				t.Fatalf("cards held: %t, want %t", held, tt.wantKept)
			}
			other := gpuPod("other", gpu(1, 8000, 0))
			if _, st := h.filter(other, "n1"); st.IsSuccess() == tt.wantKept {
				t.Errorf("another pod's Filter: %v (cards kept: %t)", st, tt.wantKept)
			}
			if _, st := h.filter(tt.pod, "n1"); !st.IsSuccess() {
				t.Errorf("the member's own Filter: %v, want it to fit its cards again", st)
			}
		})
	}
}

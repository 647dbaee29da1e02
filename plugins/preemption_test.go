package plugins

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

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

package plugins

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

func TestReserveIsSeenByTheNextPodAndUnreserveRollsBack(t *testing.T) {
	h := newHarness(t, nil, gpuNode("n1", card("only", 10000)))
	first := gpuPod("first", gpu(1, 6000, 0))
	state := h.schedule(first, "n1")

	second := gpuPod("second", gpu(1, 6000, 0))
	ni := h.nodeInfo("n1")
	s2, _ := h.preFilter(second, ni)
	if st := h.plugin.Filter(h.ctx, s2, second, ni); st.Code() != fwk.Unschedulable {
		t.Fatalf("second pod after Reserve: code %v, want Unschedulable", st.Code())
	}

	h.plugin.Unreserve(h.ctx, state, first, "n1")
	// Unreserve is idempotent.
	h.plugin.Unreserve(h.ctx, state, first, "n1")
	s3, _ := h.preFilter(second, ni)
	if st := h.plugin.Filter(h.ctx, s3, second, ni); !st.IsSuccess() {
		t.Fatalf("second pod after Unreserve: %v", st)
	}
	_, used, _ := h.plugin.Cache().Snapshot("n1", 0, nil)
	if used[0] != (devices.Usage{}) {
		t.Errorf("usage after Unreserve = %v, want zero", used[0])
	}
}

// The framework may filter a node on a clone of the cycle state (the pass
// with nominated pods added); Reserve then fits the node itself rather than
// failing the cycle, and refuses a node the pod does not fit.
func TestReserveWithoutFilterFitsTheNode(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"), gpuNode("tiny", card("small", 500)))
	pod := gpuPod("a", gpu(1, 1000, 0))
	state, _ := h.preFilter(pod, h.nodeInfo("n1"))
	if st := h.plugin.Reserve(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve without Filter: %v, want the node fitted", st)
	}
	if held, ok := h.plugin.Cache().Holding(pod.UID); !ok || held.Node != "n1" {
		t.Errorf("holding %+v %v, want the pod assumed on n1", held, ok)
	}
	other := gpuPod("b", gpu(1, 1000, 0))
	state, _ = h.preFilter(other, h.nodeInfo("tiny"))
	if st := h.plugin.Reserve(h.ctx, state, other, "tiny"); st.Code() != fwk.Unschedulable {
		t.Errorf("Reserve on a node the pod does not fit: %v, want Unschedulable", st)
	}
}

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

func TestReserveWithoutFilterIsAnError(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"))
	pod := gpuPod("a", gpu(1, 1000, 0))
	state, _ := h.preFilter(pod, h.nodeInfo("n1"))
	if st := h.plugin.Reserve(h.ctx, state, pod, "n1"); st.Code() != fwk.Error {
		t.Errorf("code = %v, want Error", st.Code())
	}
}

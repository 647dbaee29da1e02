package plugins

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

func TestScoreFollowsNodePolicy(t *testing.T) {
	tests := []struct {
		name       string
		args       *configv1.HAMiArgs
		annotation string
		// wantBusyFirst: the busy node must outscore the idle one.
		wantBusyFirst bool
	}{
		{name: "default binpack", wantBusyFirst: true},
		{name: "spread by args", args: &configv1.HAMiArgs{NodeSchedulerPolicy: ptr.To(string(devices.NodeSpread))}, wantBusyFirst: false},
		{name: "spread by annotation", annotation: "spread", wantBusyFirst: false},
		{name: "unknown annotation value packs, as in HAMi", args: &configv1.HAMiArgs{NodeSchedulerPolicy: ptr.To(string(devices.NodeSpread))}, annotation: "fastest", wantBusyFirst: true},
		{name: "binpack annotation over spread args", args: &configv1.HAMiArgs{NodeSchedulerPolicy: ptr.To(string(devices.NodeSpread))}, annotation: "binpack", wantBusyFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.args, eightCardNode("busy"), eightCardNode("idle"))
			h.schedule(gpuPod("resident", gpu(4, 30000, 50)), "busy")
			pod := gpuPod("new", gpu(1, 1000, 10))
			if tt.annotation != "" {
				pod.Annotations[devices.NodePolicyAnnotation] = tt.annotation
			}
			busy, idle := h.nodeInfo("busy"), h.nodeInfo("idle")
			state, st := h.preFilter(pod, busy, idle)
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			scores := map[string]int64{}
			for _, s := range h.scores(state, pod, busy, idle) {
				if s.Score < 0 || s.Score > fwk.MaxNodeScore {
					t.Errorf("score %d out of range", s.Score)
				}
				scores[s.Name] = s.Score
			}
			if got := scores["busy"] > scores["idle"]; got != tt.wantBusyFirst {
				t.Errorf("scores %v: busy first = %v, want %v", scores, got, tt.wantBusyFirst)
			}
		})
	}
}

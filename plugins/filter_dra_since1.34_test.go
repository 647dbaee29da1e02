//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// A pod whose status names a claim for HAMi's card count (an earlier
// placement on a DRA node, not bound) is turned away from device-plugin
// nodes, where a kubelet would wait for that claim; a claim named for
// another resource keeps them.
func TestFilterStatusNamingAClaim(t *testing.T) {
	h := newHarness(t, nil, gpuNode("small", card("s0", 4000), card("s1", 4000)))
	tests := []struct {
		name     string
		resource string
		wantCode fwk.Code
		wantMsg  string
	}{
		{name: "HAMi's count mapped: DRA nodes only", resource: "nvidia.com/gpu",
			wantCode: fwk.UnschedulableAndUnresolvable, wantMsg: "the pod's status names ResourceClaim a-claim"},
		{name: "another resource mapped: device-plugin nodes kept", resource: "example.com/fpga", wantCode: fwk.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := gpuPod("a", gpu(1, 1000, 0))
			p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "a-claim",
				RequestMappings: []corev1.ContainerExtendedResourceRequest{{ContainerName: "c0", ResourceName: tt.resource, RequestName: "container-0-card-0"}}}
			ni := h.nodeInfo("small")
			state, st := h.preFilter(p, ni)
			if !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			st = h.plugin.Filter(h.ctx, state, p, ni)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), tt.wantCode)
			}
			if msg := explained(state, "small", st); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message and detail %q do not contain %q", msg, tt.wantMsg)
			}
		})
	}
}

package plugins

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

func TestPreFilter(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"))
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantCode fwk.Code
		wantMsg  string
	}{
		{name: "pod asking no device is skipped", pod: gpuPod("plain", nil), wantCode: fwk.Skip},
		{name: "gpu pod proceeds", pod: gpuPod("gpu", gpu(1, 1000, 10)), wantCode: fwk.Success},
		{
			// As in HAMi, an unreadable count asks for no card.
			name: "fractional count asks for nothing",
			pod: gpuPod("half", corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("500m"),
			}),
			wantCode: fwk.Skip,
		},
		{
			// HAMi: any node policy but exactly "spread" packs.
			name: "unknown node policy is not refused",
			pod: func() *corev1.Pod {
				p := gpuPod("policy", gpu(1, 1000, 10))
				p.Annotations[devices.NodePolicyAnnotation] = "random"
				return p
			}(),
			wantCode: fwk.Success,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, st := h.preFilter(tt.pod, h.nodeInfo("n1"))
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v (%v), want %v", st.Code(), st.Message(), tt.wantCode)
			}
			if !strings.Contains(st.Message(), tt.wantMsg) {
				t.Errorf("message %q does not contain %q", st.Message(), tt.wantMsg)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	unhealthy := card("sick", 10000)
	unhealthy.healthy = false
	garbage := gpuNode("garbage", card("g0", 10000))
	garbage.Annotations[nvidia.RegisterAnnotation] = "[{not json"
	noAllocatable := gpuNode("unserved", card("u0", 10000))
	noAllocatable.Status.Allocatable = nil
	cordoned := gpuNode("cordoned", card("c0", 10000), card("c1", 10000))
	cordoned.Annotations[devices.DeviceCordon] = "c0"
	h := newHarness(t, nil,
		gpuNode("small", card("s0", 4000), card("s1", 4000)),
		gpuNode("sick", unhealthy),
		garbage, noAllocatable, cordoned,
		eightCardNode("big"),
		&corev1.Node{},
	)
	tests := []struct {
		name     string
		pod      *corev1.Pod
		node     string
		wantCode fwk.Code
		// wantReason is the status message: the same on any node.
		wantReason string
		// wantMsg is in the node's detail.
		wantMsg string
		// wantCards is the number of grants per container on success.
		wantCards []int
	}{
		{name: "fits", pod: gpuPod("a", gpu(1, 3000, 20)), node: "small", wantCards: []int{1}},
		{name: "insufficient memory names the count of cards", pod: gpuPod("a", gpu(1, 5000, 20)), node: "small",
			wantCode: fwk.Unschedulable, wantReason: "insufficient NVIDIA devices: insufficient memory", wantMsg: "2/2 cards: insufficient memory"},
		{name: "two cards on two", pod: gpuPod("a", gpu(2, 1000, 0)), node: "small", wantCards: []int{2}},
		{name: "three cards on two", pod: gpuPod("a", gpu(3, 1000, 0)), node: "small",
			wantCode: fwk.Unschedulable, wantReason: "insufficient NVIDIA devices: fewer cards than wanted", wantMsg: "3 cards wanted, node has 2"},
		{name: "unhealthy card", pod: gpuPod("a", gpu(1, 1000, 0)), node: "sick",
			wantCode: fwk.Unschedulable, wantReason: "insufficient NVIDIA devices: unhealthy", wantMsg: "1/1 cards: unhealthy"},
		{name: "cordoned card is avoided", pod: gpuPod("a", gpu(2, 1000, 0)), node: "cordoned",
			wantCode: fwk.Unschedulable, wantReason: "insufficient NVIDIA devices: cordoned, not enough free cards", wantMsg: "1/2 cards: cordoned"},
		{name: "garbage register annotation", pod: gpuPod("a", gpu(1, 1000, 0)), node: "garbage",
			wantCode: fwk.UnschedulableAndUnresolvable, wantReason: "NVIDIA devices unusable", wantMsg: nvidia.RegisterAnnotation},
		{name: "device plugin not serving", pod: gpuPod("a", gpu(1, 1000, 0)), node: "unserved",
			wantCode: fwk.UnschedulableAndUnresolvable, wantReason: "NVIDIA devices unusable", wantMsg: "allocatable nvidia.com/gpu is 0"},
		{name: "multi-container pod on eight cards", node: "big",
			pod:       gpuPod("a", nil, gpu(2, 2000, 30), gpu(1, 0, 0), gpu(4, 1000, 10)),
			wantCards: []int{0, 2, 1, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := h.nodeInfo(tt.node)
			state, st := h.preFilter(tt.pod, ni)
			if !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			st = h.plugin.Filter(h.ctx, state, tt.pod, ni)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), tt.wantCode)
			}
			if tt.wantReason != "" && st.Message() != tt.wantReason {
				t.Errorf("message %q, want %q", st.Message(), tt.wantReason)
			}
			if msg := explained(state, tt.node, st); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message and detail %q do not contain %q", msg, tt.wantMsg)
			}
			if tt.wantCards == nil {
				return
			}
			s, _ := readState(state)
			fit, ok := s.fit(tt.node)
			if !ok {
				t.Fatal("no fit kept in the cycle state")
			}
			a := fit.assignments[0]
			if len(a) != len(tt.wantCards) {
				t.Fatalf("assignment has %d containers, want %d: %v", len(a), len(tt.wantCards), a)
			}
			for i, n := range tt.wantCards {
				if len(a[i]) != n {
					t.Errorf("container %d got %d cards, want %d", i, len(a[i]), n)
				}
			}
		})
	}
}

func TestFilterUnknownNodeIsRetried(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"))
	pod := gpuPod("a", gpu(1, 1000, 0))
	state, _ := h.preFilter(pod)
	ni := h.nodeInfo("n1")
	ni.Node().Name = "not-yet-seen"
	if st := h.plugin.Filter(h.ctx, state, pod, ni); st.Code() != fwk.Unschedulable {
		t.Errorf("code = %v, want Unschedulable so the pod is retried", st.Code())
	}
}

// The device cache's informer handler may lag the informer's store (and
// the framework) on a pod deletion; a fit that fails only because of such
// a deleted pod's cards does not fail. A pod still in the store keeps its
// cards.
func TestFilterIgnoresPodsGoneFromTheStore(t *testing.T) {
	bound := func(name string) *corev1.Pod {
		p := gpuPod(name, gpu(1, 8000, 0))
		p.Spec.NodeName = "n1"
		p.Annotations[nvidia.AllocatedAnnotation] = "only,NVIDIA,8000,0:;"
		p.Annotations[devices.AssignedNode] = "n1"
		return p
	}
	tests := []struct {
		name    string
		inStore bool
		wantFit bool
	}{
		{"holder deleted, cache not caught up", false, true},
		{"holder still in the store", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holder := bound("holder")
			objs := []runtime.Object{gpuNode("n1", card("only", 10000))}
			if tt.inStore {
				objs = append(objs, holder)
			}
			h := newHarness(t, nil, objs...)
			if err := h.plugin.Cache().SetPod(holder); err != nil {
				t.Fatal(err)
			}
			_, st := h.filter(gpuPod("waiter", gpu(1, 8000, 0)), "n1")
			if st.IsSuccess() != tt.wantFit {
				t.Errorf("Filter: %v, want fit %v", st, tt.wantFit)
			}
		})
	}
}

package plugins

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// TestPreBindWritesTheProtocolAnnotations checks the example of the
// protocol doc byte for byte: two containers, the first without a GPU, the
// second sharing two cards with 2000 MiB and 30 cores each.
func TestPreBindWritesTheProtocolAnnotations(t *testing.T) {
	pod := gpuPod("p", nil, gpu(2, 2000, 30))
	// HAMi walks the cards from the last registered one: register them in
	// reverse to get the doc's order.
	h := newHarness(t, nil, gpuNode("n1", card("GPU-0b", 15360), card("GPU-0a", 15360)), pod)
	state := h.schedule(pod, "n1")
	if _, st := h.plugin.PreBindPreFlight(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBindPreFlight: %v", st)
	}
	before := time.Now().Unix()
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	got, err := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = ";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;"
	for _, key := range []string{nvidia.ToAllocateAnnotation, nvidia.AllocatedAnnotation} {
		if got.Annotations[key] != want {
			t.Errorf("%s = %q, want %q", key, got.Annotations[key], want)
		}
	}
	for key, want := range map[string]string{devices.AssignedNode: "n1", devices.BindPhase: devices.BindPhaseAllocating} {
		if got.Annotations[key] != want {
			t.Errorf("%s = %q, want %q", key, got.Annotations[key], want)
		}
	}
	if got.Labels[devices.AssignedNode] != "n1" {
		t.Errorf("label %s = %q, want n1", devices.AssignedNode, got.Labels[devices.AssignedNode])
	}
	for _, key := range []string{devices.AssignedTime, devices.BindTime} {
		if !isUnixAfter(got.Annotations[key], before) {
			t.Errorf("%s = %q, want unix seconds >= %d", key, got.Annotations[key], before)
		}
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock := node.Annotations[devices.NodeLock]; !strings.HasSuffix(lock, ",default,p") {
		t.Errorf("node lock = %q, want one held by default/p", lock)
	}
}

func isUnixAfter(s string, min int64) bool {
	var v int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		v = v*10 + int64(r-'0')
	}
	return s != "" && v >= min
}

func TestPreBindFailureReleasesTheLock(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	st := h.plugin.PreBind(h.ctx, state, pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "apiserver unavailable") {
		t.Fatalf("PreBind status = %v, want the patch error", st)
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := node.Annotations[devices.NodeLock]; held {
		t.Errorf("node lock %q left behind after a failed PreBind", lock)
	}
}

func TestPreBindGivesUpOnABusyNode(t *testing.T) {
	holder := gpuPod("holder", gpu(1, 1000, 0))
	pod := gpuPod("p", gpu(1, 1000, 0))
	node := eightCardNode("n1")
	node.Annotations[devices.NodeLock] = time.Now().UTC().Format(time.RFC3339) + ",default,holder"
	h := newHarness(t, &Args{NodeLockWait: metav1.Duration{Duration: 200 * time.Millisecond}}, node, holder, pod)
	state := h.schedule(pod, "n1")
	st := h.plugin.PreBind(h.ctx, state, pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "held by another pod") {
		t.Fatalf("PreBind status = %v, want busy", st)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if _, ok := got.Annotations[nvidia.ToAllocateAnnotation]; ok {
		t.Error("pod got an assignment without the node lock")
	}
}

func TestPreBindPreFlightSkipsPodsWithoutDevices(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"))
	pod := gpuPod("plain", corev1.ResourceList{})
	state, _ := h.preFilter(pod)
	if _, st := h.plugin.PreBindPreFlight(h.ctx, state, pod, "n1"); st.Code() != fwk.Skip {
		t.Errorf("code = %v, want Skip", st.Code())
	}
}

// TestUnreserveAfterPreBindUndoesTheHandOver is the binding failing after
// PreBind: the cache forgets the cards, the pod's assignment is marked
// failed and the node lock is released, so the node is not blocked until
// the lock expires.
func TestUnreserveAfterPreBindUndoesTheHandOver(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	h.plugin.Unreserve(h.ctx, state, pod, "n1")

	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := node.Annotations[devices.NodeLock]; held {
		t.Errorf("node lock %q still held after Unreserve", lock)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if phase := got.Annotations[devices.BindPhase]; phase != devices.BindPhaseFailed {
		t.Errorf("bind-phase = %q, want %q", phase, devices.BindPhaseFailed)
	}
	if s := h.plugin.Cache().Stats(); s.Pods != 0 {
		t.Errorf("cache still holds %d pods", s.Pods)
	}
}

func TestUnreserveBeforePreBindMakesNoAPICall(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	before := len(h.client.Actions())
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	if after := h.client.Actions(); len(after) != before {
		t.Errorf("Unreserve before PreBind made API calls: %v", after[before:])
	}
}

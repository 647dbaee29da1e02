package plugins

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

func TestQueueingHints(t *testing.T) {
	h := newHarness(t, nil)
	pending := gpuPod("pending", gpu(1, 1000, 0))
	holding := gpuPod("holding", gpu(1, 1000, 0))
	holding.Annotations[nvidia.AllocatedAnnotation] = "GPU-0,NVIDIA,1000,0:;"
	plain := gpuPod("plain", nil)
	node := eightCardNode("n1")
	relabelled := node.DeepCopy()
	relabelled.Labels = map[string]string{"zone": "a"}
	resized := node.DeepCopy()
	resized.Annotations[nvidia.RegisterAnnotation] = eightCardNode("n2").Annotations[nvidia.RegisterAnnotation]
	cordoned := node.DeepCopy()
	cordoned.Annotations[devices.DeviceCordon] = "n1-gpu0"

	tests := []struct {
		name     string
		hint     func(klog.Logger, *corev1.Pod, any, any) (fwk.QueueingHint, error)
		old, new any
		want     fwk.QueueingHint
	}{
		{"deleted pod held cards", h.plugin.hintAfterPodDelete, holding, nil, fwk.Queue},
		{"deleted pod held nothing", h.plugin.hintAfterPodDelete, plain, nil, fwk.QueueSkip},
		{"new node", h.plugin.hintAfterNodeChange, nil, node, fwk.Queue},
		{"label change only", h.plugin.hintAfterNodeChange, node, relabelled, fwk.QueueSkip},
		{"inventory change", h.plugin.hintAfterNodeChange, node, resized, fwk.Queue},
		{"cordon change", h.plugin.hintAfterNodeChange, node, cordoned, fwk.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.hint(klog.Background(), pending, tt.old, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
	events, err := h.plugin.EventsToRegister(h.ctx)
	if err != nil || len(events) != 2 {
		t.Fatalf("EventsToRegister = %v, %v; want two events", events, err)
	}
}

// The hints only decide; they never write the device cache.
func TestHintsDoNotWriteTheCache(t *testing.T) {
	holder := gpuPod("holder", gpu(1, 8000, 0))
	holder.Spec.NodeName = "n1"
	holder.Annotations[nvidia.AllocatedAnnotation] = "only,NVIDIA,8000,0:;"
	holder.Annotations[devices.AssignedNode] = "n1"
	node := gpuNode("n1", card("only", 10000))
	h := newHarness(t, nil, node, holder)
	waitForPods(t, h, 1)
	waiter := gpuPod("waiter", gpu(1, 8000, 0))

	if hint, err := h.plugin.hintAfterPodDelete(klog.Background(), waiter, holder, nil); err != nil || hint != fwk.Queue {
		t.Fatalf("pod delete hint = %v, %v; want Queue", hint, err)
	}
	if _, used, _ := h.plugin.Cache().Snapshot("n1", 0, nil); used[0].MemoryMiB != 8000 {
		t.Errorf("usage after the hint = %+v, want the holder's 8000 MiB still held: only the informer releases it", used[0])
	}
	bigger := gpuNode("n1", card("only", 10000), card("second", 10000))
	if hint, err := h.plugin.hintAfterNodeChange(klog.Background(), waiter, node, bigger); err != nil || hint != fwk.Queue {
		t.Fatalf("node change hint = %v, %v; want Queue", hint, err)
	}
	if cards, _, _ := h.plugin.Cache().Snapshot("n1", 0, nil); len(cards) != 1 {
		t.Errorf("cache has %d cards after the hint, want 1: only the informer stores the new inventory", len(cards))
	}
}

// A pod that Filter rejected is activated once the cache's informer
// handler has released the cards of a deleted pod, so a retry that the
// hint allowed before the cache caught up is not lost.
func TestCacheHandlerActivatesRejectedPods(t *testing.T) {
	holder := gpuPod("holder", gpu(1, 8000, 0))
	holder.Spec.NodeName = "n1"
	holder.Annotations[nvidia.AllocatedAnnotation] = "only,NVIDIA,8000,0:;"
	holder.Annotations[devices.AssignedNode] = "n1"
	h := newHarness(t, nil, gpuNode("n1", card("only", 10000)), holder)
	waitForPods(t, h, 1)
	waiter := gpuPod("waiter", gpu(1, 8000, 0))
	if _, st := h.filter(waiter, "n1"); st.IsSuccess() {
		t.Fatal("waiter fits beside the holder; the test needs it rejected")
	}
	if got := h.handle.activations(); len(got) != 0 {
		t.Fatalf("activated %v before any card was freed", got)
	}
	if err := h.client.CoreV1().Pods(holder.Namespace).Delete(h.ctx, holder.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(h.handle.activations()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the rejected pod was never activated after the holder's cards were freed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := h.handle.activations(); got[0] != klog.KObj(waiter).String() {
		t.Errorf("activated %v, want %s", got, klog.KObj(waiter))
	}
	if _, st := h.filter(waiter, "n1"); !st.IsSuccess() {
		t.Errorf("waiter still rejected after activation: %v", st)
	}
}

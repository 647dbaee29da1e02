package plugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// TestPodDeleteHintReleasesCardsFirst: the scheduler retries the pod right
// after the hint says Queue, possibly before the cache's own informer
// handler has run, so the hint must leave the cache without the deleted
// pod's cards.
func TestPodDeleteHintReleasesCardsFirst(t *testing.T) {
	holder := gpuPod("holder", gpu(1, 8000, 0))
	holder.Spec.NodeName = "n1"
	holder.Annotations[nvidia.AllocatedAnnotation] = "only,NVIDIA,8000,0:;"
	holder.Annotations[devices.AssignedNode] = "n1"
	h := newHarness(t, nil, gpuNode("n1", card("only", 10000)), holder)
	waitForPods(t, h, 1)
	hint, err := h.plugin.hintAfterPodDelete(klog.Background(), gpuPod("waiter", gpu(1, 8000, 0)), holder, nil)
	if err != nil || hint != fwk.Queue {
		t.Fatalf("hint = %v, %v; want Queue", hint, err)
	}
	if _, used, _ := h.plugin.Cache().Snapshot("n1", 0, nil); used[0] != (devices.Usage{}) {
		t.Errorf("usage after the hint = %v, want the holder's cards released", used[0])
	}
}

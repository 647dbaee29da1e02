package plugins

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// TestStaleLocksReleased: a lock naming a pod that is bound to another
// node, or deleted, is released; one naming a pod that may still hand
// over on the node (unbound, or bound there) is kept.
func TestStaleLocksReleased(t *testing.T) {
	taken := time.Now()
	lockedBy := func(node string, pod *corev1.Pod) *corev1.Node {
		n := eightCardNode(node)
		n.Annotations[devices.NodeLock] = nodelock.Value(taken, pod)
		return n
	}
	boundTo := func(name, node string) *corev1.Pod {
		p := gpuPod(name, gpu(1, 1000, 0))
		p.Spec.NodeName = node
		return p
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		node     string
		then     func(h *harness, pod *corev1.Pod)
		released bool
	}{
		{name: "bound elsewhere before the scheduler saw the lock", pod: boundTo("elsewhere", "n2"), node: "n1", released: true},
		{name: "bound here", pod: boundTo("here", "n1"), node: "n1", released: false},
		{name: "unbound", pod: gpuPod("waiting", gpu(1, 1000, 0)), node: "n1", released: false},
		{name: "bound elsewhere later", pod: gpuPod("later", gpu(1, 1000, 0)), node: "n1", released: true,
			then: func(h *harness, pod *corev1.Pod) {
				bound := pod.DeepCopy()
				bound.Spec.NodeName = "n2"
				if _, err := h.client.CoreV1().Pods(pod.Namespace).Update(h.ctx, bound, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "deleted", pod: gpuPod("deleted", gpu(1, 1000, 0)), node: "n1", released: true,
			then: func(h *harness, pod *corev1.Pod) {
				if err := h.client.CoreV1().Pods(pod.Namespace).Delete(h.ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{lockedBy(tt.node, tt.pod), eightCardNode("n2"), tt.pod}
			h := newHarness(t, nil, objs...)
			if tt.then != nil {
				tt.then(h, tt.pod)
			}
			lockGone := func() bool {
				n, err := h.client.CoreV1().Nodes().Get(h.ctx, tt.node, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				_, held := n.Annotations[devices.NodeLock]
				return !held
			}
			if tt.released {
				h.eventually("the stale lock released", lockGone)
				return
			}
			// The plugin's handlers have seen the node and the pod (the
			// harness waits for them) and decide at once whether to
			// release; a release they started would be under way: wait
			// for it, then the lock must still be there.
			h.plugin.lockHolders.Wait()
			if lockGone() {
				t.Error("a lock whose pod may still hand over on the node was released")
			}
		})
	}
}

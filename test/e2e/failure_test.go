package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// When the device plugin's Allocate fails, it marks the pod
// bind-phase=failed and releases the node lock; the kubelet fails the pod,
// and its card is free again for the next pod.
func TestAllocationFailure(t *testing.T) {
	e := newEnv(t, "failure")
	nodes := e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)
	node := nodes[0].Name
	agent.FailPod(e.ns, "broken")
	e.create(e.pod("broken", gpu{cards: 1, cores: 100}))
	var failed *corev1.Pod
	e.eventually("pod broken failed", func() (bool, string) {
		failed = e.get("broken")
		return failed.Status.Phase == corev1.PodFailed, describe(failed)
	})
	if got := failed.Annotations[devices.BindPhase]; got != devices.BindPhaseFailed {
		t.Errorf("bind-phase = %q, want %q", got, devices.BindPhaseFailed)
	}
	if failed.Status.Reason != "UnexpectedAdmissionError" || !strings.Contains(failed.Status.Message, "simulated device failure") {
		t.Errorf("status reason %q message %q, want the kubelet's admission failure", failed.Status.Reason, failed.Status.Message)
	}
	e.checkNodeUnlocked(node)

	// The failed pod held the whole card; once it is terminated the card is
	// free for another exclusive pod.
	e.create(e.pod("next", gpu{cards: 1, cores: 100}))
	if p := e.waitRunning("next"); p.Spec.NodeName != node {
		t.Errorf("next on %q, want %q", p.Spec.NodeName, node)
	}
	e.checkAccounting()
}

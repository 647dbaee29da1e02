package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A high-priority pod preempts a low-priority one holding the card it
// needs, is nominated to that node and runs there; a low-priority pod
// created meanwhile (the card cannot hold both) does not take the cards
// freed for it.
func TestPreemptionKeepsFreedCardsForTheNominatedPod(t *testing.T) {
	e := newEnv(t, "preempt")
	node := e.addNodes("1 node x 1 card of NVIDIA A100 40 GiB, split 10", nil)[0].Name
	for name, value := range map[string]int32{"e2e-low": 10, "e2e-high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := controlPlane.Client.SchedulingV1().PriorityClasses().Create(e.ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	withPriority := func(p *corev1.Pod, class string) *corev1.Pod {
		p.Spec.PriorityClassName = class
		return p
	}
	e.create(withPriority(e.pod("victim", gpu{cards: 1, memory: 30000}), "e2e-low"))
	e.waitRunning("victim")

	e.create(withPriority(e.pod("preemptor", gpu{cards: 1, memory: 20000}), "e2e-high"))
	e.create(withPriority(e.pod("latecomer", gpu{cards: 1, memory: 21000}), "e2e-low"))
	if got := e.waitRunning("preemptor").Spec.NodeName; got != node {
		t.Fatalf("preemptor ran on %q, want %s", got, node)
	}
	e.eventually("victim gone", func() (bool, string) {
		_, err := controlPlane.Client.CoreV1().Pods(e.ns).Get(e.ctx, "victim", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "victim still there"
	})
	if late := e.get("latecomer"); late.Spec.NodeName != "" {
		t.Errorf("the low-priority latecomer was bound to %s; the card was freed for the preemptor", late.Spec.NodeName)
	}
	e.checkAccounting()
}

package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods created together each ask within the namespace's device quota, but
// together they exceed it: the scheduler runs as many as the quota holds
// and leaves the rest Pending with the reason (the webhook's admission check
// alone would let them all through).
func TestQuotaBurst(t *testing.T) {
	e := newEnv(t, "quota")
	e.addNodes("2 nodes x 2 cards of NVIDIA A100 40 GiB, split 10", nil)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: e.ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"limits.nvidia.com/gpumem": *resource.NewQuantity(10000, resource.DecimalSI),
		}},
	}
	if _, err := controlPlane.Client.CoreV1().ResourceQuotas(e.ns).Create(e.ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const pods = 6
	for i := 0; i < pods; i++ {
		e.create(e.pod(fmt.Sprintf("p%d", i), gpu{cards: 1, memory: 3000}))
	}
	e.eventually("3 pods running and 3 refused by quota", func() (bool, string) {
		running, refused := 0, 0
		for _, p := range e.pods() {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "exceeding resource quota") {
					refused++
				}
			}
		}
		return running == 3 && refused == pods-3, fmt.Sprintf("%d running, %d refused by quota", running, refused)
	})
	e.checkAccounting()
}

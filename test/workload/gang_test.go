package workload

import (
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The case with Kubernetes' own PodGroup: three members of 30,000
// MiB on two cards of 40 GiB place none and hold no card, a plain pod
// asking the same runs at once, a group of two runs on the two cards.
func TestInTreeGangAllOrNothing(t *testing.T) {
	c := newCluster(t, "in-tree-all-or-nothing", "2 nodes x 1 card of NVIDIA A100 40 GiB")
	c.podGroup("three", 3, "")
	three := c.gang("three", "", 3, 30000)
	c.eventually("PodGroup three unschedulable", func() (bool, string) {
		pg, err := controlPlane.Client.SchedulingV1beta1().PodGroups(c.ns).Get(c.ctx, "three", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
		if cond == nil {
			return false, "no condition"
		}
		return cond.Status == metav1.ConditionFalse && cond.Reason == schedulingv1beta1.PodGroupReasonUnschedulable, cond.Message
	})
	c.checkUnplaced(three)

	start := time.Now()
	c.pod("plain", "", "", 30000)
	c.waitRunning("plain")
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the plain pod ran after %s, want within a minute", took)
	}
	c.checkUnplaced(three)
	if err := controlPlane.Client.CoreV1().Pods(c.ns).Delete(c.ctx, "plain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone("plain")

	c.podGroup("two", 2, "")
	two := c.gang("two", "", 2, 30000)
	c.waitRunning(two...)
	pods := c.pods(two)
	if pods[two[0]].Spec.NodeName == pods[two[1]].Spec.NodeName {
		t.Errorf("the group of two shares node %s, want a card each on two nodes", pods[two[0]].Spec.NodeName)
	}
	c.checkUnplaced(three)
	c.checkAccounting()
}

// A higher-priority gang preempts a lower one whole (workload-aware
// preemption): the victims' cards, which only the HAMi plugin counts, are
// free in the simulation; the low gang's pods are all evicted, none is
// left running alone, and the high gang runs on the freed cards.
func TestInTreeGangPreemptsGang(t *testing.T) {
	priorityClass(t, "gang-low", 100)
	priorityClass(t, "gang-high", 1000)
	c := newCluster(t, "in-tree-preemption", "2 nodes x 1 card of NVIDIA A100 40 GiB")
	c.podGroup("low", 2, "gang-low")
	low := c.gang("low", "gang-low", 2, 30000)
	c.waitRunning(low...)

	c.podGroup("high", 2, "gang-high")
	high := c.gang("high", "gang-high", 2, 30000)
	c.waitGone(low...)
	c.waitRunning(high...)
	c.checkAccounting()
}

// Gangs and plain pods share cards; each card's sum stays within it.
func TestInTreeGangWithPlainPods(t *testing.T) {
	c := newCluster(t, "in-tree-mixed", "2 nodes x 2 cards of NVIDIA A100 40 GiB")
	c.podGroup("g", 4, "")
	gang := c.gang("g", "", 4, 20000)
	for _, name := range []string{"plain-0", "plain-1", "plain-2", "plain-3"} {
		c.pod(name, "", "", 20000)
	}
	c.waitRunning(append(gang, "plain-0", "plain-1", "plain-2", "plain-3")...)
	c.checkAccounting()
}

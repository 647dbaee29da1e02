package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hamiv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
)

// A scheduler restarted in the middle of a burst rebuilds its device usage
// from the pods' annotations: afterwards exactly as many pods are placed as
// the cards hold, and no card is over-committed.
func TestSchedulerRestartKeepsAccounting(t *testing.T) {
	e := newEnv(t, "restart")
	// 4 cards of 10 GiB; pods of 3000 MiB: 3 per card by memory, so 12 fit,
	// while the split count (4 per card, nvidia.com/gpu 8 per node) would
	// let 16 in if the restarted scheduler forgot what is placed.
	e.addNodes("2 nodes x 2 cards of Tesla T4 10 GiB, split 4", nil)
	const pods, fit = 20, 12
	for i := range pods {
		e.create(e.pod(fmt.Sprintf("p%02d", i), gpu{cards: 1, memory: 3000, cores: 5}))
	}
	e.eventually("a few pods bound before the restart", func() (bool, string) {
		bound := countBound(e.pods())
		return bound >= 3, fmt.Sprintf("%d bound", bound)
	})

	// A scheduler killed between taking a node's lock and binding leaves the
	// lock to expire (HAMiArgs.nodeLockExpiry, 5 minutes by default);
	// the restarted one takes such locks over after 10s.
	restartScheduler(t, &hamiv1.HAMiArgs{NodeLockExpiry: &metav1.Duration{Duration: 10 * time.Second}})
	restarted := time.Now()
	t.Cleanup(func() { restartScheduler(t, nil) })

	e.eventually(fmt.Sprintf("%d pods running and the rest refused by the restarted scheduler", fit), func() (bool, string) {
		list := e.pods()
		running, refused := 0, 0
		for i := range list {
			p := &list[i]
			switch {
			case p.Status.Phase == corev1.PodRunning:
				running++
			case p.Spec.NodeName == "" && e.refusedSince(p.Name, restarted):
				refused++
			}
		}
		return running == fit && refused == pods-fit, fmt.Sprintf("%d running, %d refused since the restart", running, refused)
	})
	if bound := countBound(e.pods()); bound != fit {
		t.Errorf("%d pods bound, want %d", bound, fit)
	}
	cards := e.checkAccounting()
	for _, c := range cards {
		if c.Used.Sharers != 3 {
			t.Errorf("card %s of %s holds %d pods, want 3", c.UUID, c.Node, c.Used.Sharers)
		}
	}
}

func countBound(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// refusedSince reports whether the scheduler recorded a FailedScheduling
// event for the pod after t.
func (e *env) refusedSince(name string, t time.Time) bool {
	list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling",
	})
	if err != nil {
		return false
	}
	for _, ev := range list.Items {
		last := ev.LastTimestamp.Time
		if ev.Series != nil {
			last = ev.Series.LastObservedTime.Time
		}
		if last.IsZero() {
			last = ev.EventTime.Time
		}
		if !last.Before(t.Truncate(time.Second)) && strings.Contains(ev.Message, "insufficient") {
			return true
		}
	}
	return false
}

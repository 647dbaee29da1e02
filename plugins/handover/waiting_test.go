package handover

import (
	"math"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pendingPod is a pod of the named scheduler, not bound yet.
func pendingPod(name, scheduler string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	p.Spec.SchedulerName = scheduler
	return p
}

// waitingFor is n pods of the named scheduler waiting to be placed.
func waitingFor(scheduler string, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, pendingPod("waiting-"+strconv.Itoa(i), scheduler))
	}
	return pods
}

// TestArrivalRate: a scheduler's rate counts the pods it placed, each from
// its arrival (when first seen) with a weight that falls by e every
// arrivalWindow; pods still waiting, pods of other schedulers and a pod
// placed again count for nothing.
func TestArrivalRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w Waiting
	pods := waitingFor("s", 3)
	for _, p := range pods {
		w.Set(p, t0)
	}
	other := waitingFor("other", 1)[0]
	other.UID = "other-uid"
	w.Set(other, t0)
	rate := func(at time.Time) float64 { return w.Arrivals(pods[2], at).perSecond }
	if got := rate(t0); got != 0 {
		t.Errorf("nothing placed: %v pods/s, want 0", got)
	}
	w.Reserve(pods[0].UID, true, t0)
	w.Reserve(pods[1].UID, true, t0.Add(arrivalWindow))
	w.Reserve(pods[1].UID, false, t0.Add(arrivalWindow))
	w.Reserve(pods[1].UID, true, t0.Add(arrivalWindow))
	w.Reserve(other.UID, true, t0)
	// At t0 + window: the first weighs 1/e, the second, arrived at t0, 1/e.
	want := 2 / math.E / arrivalWindow.Seconds()
	if got := rate(t0.Add(arrivalWindow)); math.Abs(got-want) > 1e-9 {
		t.Errorf("two placed: %v pods/s, want %v", got, want)
	}
	if got := rate(t0.Add(2 * arrivalWindow)); math.Abs(got-want/math.E) > 1e-9 {
		t.Errorf("a window later: %v pods/s, want %v", got, want/math.E)
	}
}

func TestWaitingPods(t *testing.T) {
	var w Waiting
	pods := waitingFor("s", 3)
	for _, p := range pods {
		w.Set(p, time.Now())
		w.Set(p, time.Now()) // an update
	}
	if got := w.Count("s"); got != 3 {
		t.Fatalf("%d waiting, want 3", got)
	}
	w.Reserve(pods[0].UID, true, time.Now())
	w.Reserve(pods[0].UID, true, time.Now())
	if got := w.Count("s"); got != 2 {
		t.Errorf("one reserved: %d waiting, want 2", got)
	}
	w.Reserve(pods[0].UID, false, time.Now())
	if got := w.Count("s"); got != 3 {
		t.Errorf("unreserved: %d waiting, want 3", got)
	}
	w.Reserve(pods[0].UID, true, time.Now())
	bound := pods[0].DeepCopy()
	bound.Spec.NodeName = "n"
	w.Set(bound, time.Now())
	w.Remove(pods[1].UID)
	if got := w.Count("s"); got != 1 {
		t.Errorf("one bound, one deleted: %d waiting, want 1", got)
	}
	w.Remove(pods[2].UID)
	if got := w.Count("s"); got != 0 || len(w.waiting) != 0 || len(w.pods) != 0 {
		t.Errorf("all gone: %d waiting, %v, %v", got, w.waiting, w.pods)
	}
}

// TestWaitingPodReservedBeforeSeen: a pod Reserve placed before the
// informer showed it is not counted as waiting when the informer does.
func TestWaitingPodReservedBeforeSeen(t *testing.T) {
	var w Waiting
	p := waitingFor("s", 1)[0]
	w.Reserve(p.UID, true, time.Now())
	w.Set(p, time.Now())
	if got := w.Count("s"); got != 0 {
		t.Errorf("%d waiting, want 0", got)
	}
	w.Reserve(p.UID, false, time.Now())
	if got := w.Count("s"); got != 1 {
		t.Errorf("unreserved: %d waiting, want 1", got)
	}
	w.Remove(p.UID)
	w.Reserve("never-seen", false, time.Now())
	if got := w.Count("s"); got != 0 || len(w.pods) != 0 {
		t.Errorf("after removal: %d waiting, %v", got, w.pods)
	}
}

func TestWaitingBehindLeavesThePodOut(t *testing.T) {
	var w Waiting
	pods := waitingFor("s", 3)
	for _, p := range pods {
		w.Set(p, time.Now())
	}
	if got := w.Arrivals(pods[0], time.Now()).behind; got != 2 {
		t.Errorf("behind %d, want 2", got)
	}
	other := pendingPod("other", "s")
	if got := w.Arrivals(other, time.Now()).behind; got != 3 {
		t.Errorf("a pod not followed: behind %d, want 3", got)
	}
}

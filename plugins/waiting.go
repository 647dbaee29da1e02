package plugins

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waitingPods counts, per scheduler name, the pods still waiting to be
// placed: not bound, not being deleted, not last found unschedulable, and
// not reserved on a node yet. A backlog is many such pods; a steady stream
// that the scheduler keeps up with is a few. nodeQueueWait lets a node's
// queue grow towards nodeQueueLimit by this count (queuelimit.go).
type waitingPods struct {
	mu      sync.Mutex
	pods    map[types.UID]waitingPod
	waiting map[string]int
}

type waitingPod struct {
	scheduler string
	// seen: the informer has shown the pod (Reserve may come first: the
	// scheduler's queue and this plugin's handler hear of a pod apart).
	seen     bool
	reserved bool
}

func (wp waitingPod) counts() bool { return wp.seen && !wp.reserved }

// set follows a pod from the informer.
func (w *waitingPods) set(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !waitsForScheduler(pod) {
		w.removeLocked(pod.UID)
		return
	}
	w.init()
	wp := w.pods[pod.UID]
	if wp.seen {
		return
	}
	wp.scheduler, wp.seen = pod.Spec.SchedulerName, true
	w.pods[pod.UID] = wp
	if wp.counts() {
		w.waiting[wp.scheduler]++
	}
}

func (w *waitingPods) init() {
	if w.pods == nil {
		w.pods, w.waiting = map[types.UID]waitingPod{}, map[string]int{}
	}
}

// remove forgets a pod (deleted, or no longer waiting).
func (w *waitingPods) remove(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(uid)
}

func (w *waitingPods) removeLocked(uid types.UID) {
	wp, ok := w.pods[uid]
	if !ok {
		return
	}
	delete(w.pods, uid)
	if wp.counts() {
		w.decrementLocked(wp.scheduler)
	}
}

func (w *waitingPods) decrementLocked(scheduler string) {
	if w.waiting[scheduler] <= 1 {
		delete(w.waiting, scheduler)
		return
	}
	w.waiting[scheduler]--
}

// reserve marks the pod placed on a node (Reserve) or, with false, waiting
// again (Unreserve). A pod reserved before the informer showed it is
// remembered as reserved.
func (w *waitingPods) reserve(uid types.UID, reserved bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.init()
	wp, ok := w.pods[uid]
	if (!ok && !reserved) || wp.reserved == reserved {
		return
	}
	before := wp.counts()
	wp.reserved = reserved
	w.pods[uid] = wp
	switch after := wp.counts(); {
	case before && !after:
		w.decrementLocked(wp.scheduler)
	case !before && after:
		w.waiting[wp.scheduler]++
	}
}

// behind is how many pods wait for the pod's scheduler, the pod itself
// (being scheduled) left out.
func (w *waitingPods) behind(pod *corev1.Pod) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.waiting[pod.Spec.SchedulerName]
	if wp, ok := w.pods[pod.UID]; ok && wp.counts() {
		n--
	}
	return n
}

// count is how many pods wait for the named scheduler.
func (w *waitingPods) count(scheduler string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting[scheduler]
}

// waitsForScheduler reports whether a pod is still to be placed: unbound,
// not being deleted, not finished, and not marked unschedulable by its
// last attempt (such a pod waits for the cluster to change, not for a
// node's queue).
func waitsForScheduler(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return false
		}
	}
	return true
}

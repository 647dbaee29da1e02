package handover

import (
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Waiting counts, per scheduler name, the pods still waiting to be
// placed: not bound, not being deleted, not last found unschedulable, and
// not reserved on a node yet. A backlog is many such pods; a steady stream
// that the scheduler keeps up with is a few. It also numbers the pods in
// the order the informer first showed them, so that a burst knows its own
// pods from those that came after it, and measures the rate at which the
// pods it placed had arrived: the stream the pods waiting now come on top
// of (limit.go).
type Waiting struct {
	mu      sync.Mutex
	pods    map[types.UID]waitingPod
	waiting map[string]int
	// lastSeq is the number given to the pod seen last.
	lastSeq uint64
	// rates are the arrival rates per scheduler.
	rates map[string]arrivalRate
}

// arrivalWindow is the time constant of the arrival rate: a pod counts for
// it, once placed, with a weight that falls by e every arrivalWindow from
// its arrival. A steady stream's rate is measured within a few windows; a
// burst adds nothing to it until its pods are placed, and then its pods
// over one window.
const arrivalWindow = 10 * time.Second

// arrivalRate is a scheduler's placed pods by their arrival, each counted
// with a weight that decays by arrivalWindow (count, as of at).
type arrivalRate struct {
	count float64
	at    time.Time
}

func (a arrivalRate) decayed(now time.Time) float64 {
	if a.at.IsZero() {
		return 0
	}
	return a.count * math.Exp(-max(now.Sub(a.at), 0).Seconds()/arrivalWindow.Seconds())
}

// perSecond is the arrival rate at now, pods per second.
func (a arrivalRate) perSecond(now time.Time) float64 {
	return a.decayed(now) / arrivalWindow.Seconds()
}

// add counts a pod that arrived at arrived.
func (a arrivalRate) add(arrived, now time.Time) arrivalRate {
	return arrivalRate{count: a.decayed(now) + arrivalRate{count: 1, at: arrived}.decayed(now), at: now}
}

type waitingPod struct {
	scheduler string
	// seen: the informer has shown the pod (Reserve may come first: the
	// scheduler's queue and this plugin's handler hear of a pod apart).
	seen     bool
	reserved bool
	// seq numbers the pod in the order pods were first seen (from 1),
	// at seenAt.
	seq    uint64
	seenAt time.Time
	// placed: the pod counted for its scheduler's arrival rate (on its
	// first Reserve).
	placed bool
}

func (wp waitingPod) counts() bool { return wp.seen && !wp.reserved }

// Set follows a pod from the informer; now is when it shows it.
func (w *Waiting) Set(pod *corev1.Pod, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !WaitsForScheduler(pod) {
		w.removeLocked(pod.UID)
		return
	}
	w.init()
	wp := w.pods[pod.UID]
	if wp.seen {
		return
	}
	w.lastSeq++
	wp.scheduler, wp.seen, wp.seq, wp.seenAt = pod.Spec.SchedulerName, true, w.lastSeq, now
	w.pods[pod.UID] = wp
	if wp.counts() {
		w.waiting[wp.scheduler]++
	}
}

func (w *Waiting) init() {
	if w.pods == nil {
		w.pods, w.waiting, w.rates = map[types.UID]waitingPod{}, map[string]int{}, map[string]arrivalRate{}
	}
}

// Remove forgets a pod (deleted, or no longer waiting).
func (w *Waiting) Remove(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(uid)
}

func (w *Waiting) removeLocked(uid types.UID) {
	wp, ok := w.pods[uid]
	if !ok {
		return
	}
	delete(w.pods, uid)
	if wp.counts() {
		w.decrementLocked(wp.scheduler)
	}
}

func (w *Waiting) decrementLocked(scheduler string) {
	if w.waiting[scheduler] <= 1 {
		delete(w.waiting, scheduler)
		return
	}
	w.waiting[scheduler]--
}

// Reserve marks the pod placed on a node (Reserve) at now or, with false,
// waiting again (Unreserve). A pod reserved before the informer showed it
// is remembered as reserved. A pod counts for its scheduler's arrival rate
// when first reserved, at the time it arrived.
func (w *Waiting) Reserve(uid types.UID, reserved bool, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.init()
	wp, ok := w.pods[uid]
	if (!ok && !reserved) || wp.reserved == reserved {
		return
	}
	before := wp.counts()
	wp.reserved = reserved
	if reserved && wp.seen && !wp.placed {
		wp.placed = true
		w.rates[wp.scheduler] = w.rates[wp.scheduler].add(wp.seenAt, now)
	}
	w.pods[uid] = wp
	switch after := wp.counts(); {
	case before && !after:
		w.decrementLocked(wp.scheduler)
	case !before && after:
		w.waiting[wp.scheduler]++
	}
}

// Arrivals is what a burst reads, at now, of the pods of the pod's
// scheduler.
func (w *Waiting) Arrivals(pod *corev1.Pod, now time.Time) Arrivals {
	w.mu.Lock()
	defer w.mu.Unlock()
	behind := w.waiting[pod.Spec.SchedulerName]
	wp, ok := w.pods[pod.UID]
	if ok && wp.counts() {
		behind--
	}
	return Arrivals{behind: behind, seq: wp.seq, last: w.lastSeq, perSecond: w.rates[pod.Spec.SchedulerName].perSecond(now)}
}

// Arrivals are the pods waiting for a scheduler as one of them sees them:
// how many wait besides it (behind), its place in the order pods were
// first seen (seq, 0 when not seen yet), the last place given (last), and
// the rate at which the scheduler's pods arrive (perSecond).
type Arrivals struct {
	behind    int
	seq, last uint64
	perSecond float64
}

// Count is how many pods wait for the named scheduler.
func (w *Waiting) Count(scheduler string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting[scheduler]
}

// WaitsForScheduler reports whether a pod is still to be placed: unbound,
// not being deleted, not finished, and not marked unschedulable by its
// last attempt (such a pod waits for the cluster to change, not for a
// node's queue).
func WaitsForScheduler(pod *corev1.Pod) bool {
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

package plugins

import (
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// resumedHandOvers keeps the cards of gang members whose hand-over another
// scheduler process began and did not finish: PreBind wrote their
// assignment (bind phase allocating) and then that process stopped, or
// lost its lease, before binding them, while some of their gang may be
// bound already. Members of one gang on one node take the node lock one
// after another, so a leader that stops mid-gang leaves such members for
// seconds, and their cards, reserved only in its memory, would go to the
// next pods in the queue and the gang stay partial. The cache counts them
// as reserved (assumed) on the node they were handed to until this
// process places the pod itself (Reserve), the pod is bound or deleted, or
// the hand-over is as old as nodeLockExpiry (its bind-time), as a node lock
// would be. A hand-over to a node that no longer exists is not resumed,
// and one whose node is deleted, or whose pod's next attempt fails, gives
// its cards back at once (releaseReservationsOn, releaseResumedHold).
type resumedHandOvers struct {
	mu sync.Mutex
	// timers forget each resumed pod's cards at its expiry.
	timers map[types.UID]*time.Timer
	// handled are the pods this process reserved: whatever their
	// annotations say is its own doing, never resumed.
	handled map[types.UID]struct{}
}

// handle marks the pod as this process's own and stops any resume.
func (r *resumedHandOvers) handle(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handled == nil {
		r.handled = map[types.UID]struct{}{}
	}
	r.handled[uid] = struct{}{}
	if t, ok := r.timers[uid]; ok {
		t.Stop()
		delete(r.timers, uid)
	}
}

// forget drops everything about a deleted pod.
func (r *resumedHandOvers) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.handled, uid)
	if t, ok := r.timers[uid]; ok {
		t.Stop()
		delete(r.timers, uid)
	}
}

// release stops keeping a resumed hand-over's cards and reports whether
// the pod had one; the pod is not resumed again (its attempt failed, or
// its node is gone: it is placed again from scratch).
func (r *resumedHandOvers) release(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.timers[uid]
	if !ok {
		return false
	}
	t.Stop()
	delete(r.timers, uid)
	if r.handled == nil {
		r.handled = map[types.UID]struct{}{}
	}
	r.handled[uid] = struct{}{}
	return true
}

// isResumed reports whether the pod's cards are held as a resumed
// hand-over.
func (r *resumedHandOvers) isResumed(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.timers[uid]
	return ok
}

// resumable reports whether the pod is a gang member in a hand-over this
// process did not begin, and until when it would be kept.
func (r *resumedHandOvers) resumable(pod *corev1.Pod, expiry time.Duration, now time.Time) (node string, until time.Time, ok bool) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || gangOf(pod) == "" || pod.Annotations[devices.BindPhase] != devices.BindPhaseAllocating {
		return "", time.Time{}, false
	}
	node = pod.Annotations[devices.AssignedNode]
	if node == "" {
		return "", time.Time{}, false
	}
	since, err := strconv.ParseInt(pod.Annotations[devices.BindTime], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	until = time.Unix(since, 0).Add(expiry)
	if !now.Before(until) {
		return "", time.Time{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, own := r.handled[pod.UID]; own {
		return "", time.Time{}, false
	}
	if _, resumed := r.timers[pod.UID]; resumed {
		return "", time.Time{}, false
	}
	return node, until, true
}

// nodeMayExist reports whether the node informer has the node, or has not
// listed every node yet.
func (p *Plugin) nodeMayExist(name string) bool {
	// Whether the informer had listed every node is read before the
	// lister: read after a miss, it could turn true in between (the list
	// landing meanwhile) and call a node that exists gone.
	listed := p.handle.SharedInformerFactory().Core().V1().Nodes().Informer().HasSynced()
	if _, err := p.nodes.Get(name); err == nil {
		return true
	}
	return !listed
}

// resumeHandOver keeps the cards of a gang member whose hand-over another
// process began (see resumedHandOvers).
func (p *Plugin) resumeHandOver(logger klog.Logger, pod *corev1.Pod) {
	now := time.Now()
	node, until, ok := p.resumed.resumable(pod, p.args.NodeLockExpiry.Duration, now)
	if !ok || !p.nodeMayExist(node) || !p.cache.ResumeHandOver(pod, node) {
		return
	}
	uid := pod.UID
	p.resumed.mu.Lock()
	if p.resumed.timers == nil {
		p.resumed.timers = map[types.UID]*time.Timer{}
	}
	p.resumed.timers[uid] = time.AfterFunc(until.Sub(now), func() { p.expireHandOver(logger, pod) })
	p.resumed.mu.Unlock()
	logger.V(2).Info("Keeping the cards of a gang member whose hand-over another scheduler began", "pod", klog.KObj(pod), "node", node, "until", until)
}

// releaseResumedHold gives back the cards kept for a resumed hand-over
// once the pod's attempt to be placed again failed: they are not waited
// out to the hand-over's expiry while the pod (and its gang) cannot run.
func (p *Plugin) releaseResumedHold(logger klog.Logger, pod *corev1.Pod) {
	if p.resumed.release(pod.UID) && p.cache.Forget(pod) {
		logger.V(2).Info("A gang member's resumed hand-over could not be placed again; its cards are free", "pod", klog.KObj(pod))
		p.retryRejected(logger, "a resumed hand-over's cards were given back")
	}
}

// expireHandOver forgets a resumed hand-over's cards at its expiry, unless
// this process has placed the pod since.
func (p *Plugin) expireHandOver(logger klog.Logger, pod *corev1.Pod) {
	p.resumed.mu.Lock()
	_, still := p.resumed.timers[pod.UID]
	delete(p.resumed.timers, pod.UID)
	p.resumed.mu.Unlock()
	if still && p.cache.Forget(pod) {
		logger.V(2).Info("A gang member's resumed hand-over expired; its cards are free", "pod", klog.KObj(pod))
		p.retryRejected(logger, "a resumed hand-over expired")
	}
}

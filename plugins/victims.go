package plugins

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// victimPriority is how kube-scheduler ranks a pod as a preemption victim:
// its own priority for default preemption, its PodGroup's for
// workload-aware preemption (gang_podgroupcycle_since1.34.go).
type victimPriority func(*corev1.Pod) int32

// mayBeVictim reports whether preemption could choose the pod holding h,
// of lower priority than below as priority ranks it: a pod the
// scheduler's snapshot lists, that is one bound to the node the cache
// holds its cards on or reserved there by this process. A hand-over this
// process resumed (gang_resume.go) is never one: it is not bound, the
// scheduler's cache does not hold it, and its cards are free only to
// itself. A pod the informer no longer has (deleted, the cache not caught
// up yet) holds nothing any more.
func (p *Plugin) mayBeVictim(h devicecache.PodHolding, below int32, priority victimPriority) bool {
	holder, err := p.pods.Pods(h.Namespace).Get(h.Name)
	if apierrors.IsNotFound(err) || (err == nil && holder.UID != h.UID) {
		return true
	}
	if err != nil {
		return false
	}
	listed := holder.Spec.NodeName == h.Node || (h.Assumed && !p.resumed.isResumed(h.UID))
	return listed && priority(holder) < below
}

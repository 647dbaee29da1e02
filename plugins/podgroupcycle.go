//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// snapshotRemovals is what a pod-group cycle's snapshot leaves out: the
// holdings of pods of lower priority than pod that the device cache counts
// on a node but the cycle's snapshot does not list there. Workload-aware
// preemption (Kubernetes 1.37) removes its victims from the snapshot before
// it runs the group's members through PreFilter and Filter, without
// calling RemovePod; their cards are free for the simulation, as their
// cpu and memory are. A deleted pod the cache has not let go of yet counts
// as removed too. Reprieved victims come back through AddPod.
func (p *Plugin) snapshotRemovals(pod *corev1.Pod) map[string]map[types.UID]devicecache.Holding {
	nodes := p.handle.SnapshotSharedLister().NodeInfos()
	priority := corev1helpers.PodPriority(pod)
	listed := map[string]sets.Set[types.UID]{}
	var removed map[string]map[types.UID]devicecache.Holding
	for _, h := range p.cache.AllHoldings() {
		if h.UID == pod.UID {
			continue
		}
		if holder, err := p.pods.Pods(h.Namespace).Get(h.Name); err == nil && holder.UID == h.UID && corev1helpers.PodPriority(holder) >= priority {
			continue
		}
		uids, ok := listed[h.Node]
		if !ok {
			info, err := nodes.Get(h.Node)
			if err != nil || info.Node() == nil {
				// Not a node of this cycle.
				listed[h.Node] = nil
				continue
			}
			uids = sets.New[types.UID]()
			for _, pi := range info.GetPods() {
				uids.Insert(pi.GetPod().UID)
			}
			listed[h.Node] = uids
		}
		if uids == nil || uids.Has(h.UID) {
			continue
		}
		if removed == nil {
			removed = map[string]map[types.UID]devicecache.Holding{}
		}
		if removed[h.Node] == nil {
			removed[h.Node] = map[types.UID]devicecache.Holding{}
		}
		removed[h.Node][h.UID] = h.Holding
	}
	return removed
}

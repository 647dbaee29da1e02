//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// snapshotRemovals is what a pod-group cycle's snapshot leaves out: the
// holdings that the device cache counts on a node but the cycle's
// snapshot does not list there, of pods workload-aware preemption
// (Kubernetes 1.37) may take as victims for the pod's group. It removes
// its victims from the snapshot before it runs the group's members
// through PreFilter and Filter, without calling RemovePod; their cards are
// free for the simulation, as their cpu and memory are. Victims are
// chosen as kube-scheduler chooses them: of lower priority than the
// preemptor, the priorities being the PodGroups' (a pod of no group its
// own, preemption.GetPodPriority), and among the pods its snapshot lists
// (mayBeVictim): a hand-over this process resumed is never one, since the
// snapshot never listed it. A deleted pod the cache has not let go of yet
// counts as removed too. Reprieved victims come back through AddPod.
func (p *Plugin) snapshotRemovals(pod *corev1.Pod) map[string]map[types.UID]devicecache.Holding {
	snapshot := p.handle.SnapshotSharedLister()
	priority := workloadPriority(snapshot)
	preemptor := priority(pod)
	nodes := snapshot.NodeInfos()
	listed := map[string]sets.Set[types.UID]{}
	var removed map[string]map[types.UID]devicecache.Holding
	for _, h := range p.cache.AllHoldings() {
		if h.UID == pod.UID || !p.mayBeVictim(h, preemptor, priority) {
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

// workloadPriority ranks pods as workload-aware preemption does: a
// member of an in-tree PodGroup by its group's priority (the top of its
// hierarchy with CompositePodGroup on), any other pod by its own.
func workloadPriority(snapshot fwk.SharedLister) victimPriority {
	groups := snapshot.PodGroups()
	var composites fwk.CompositePodGroupLister
	if utilfeature.DefaultFeatureGate.Enabled(features.CompositePodGroup) {
		composites = snapshot.CompositePodGroups()
	}
	return func(pod *corev1.Pod) int32 { return preemption.GetPodPriority(pod, groups, composites) }
}

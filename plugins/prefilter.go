package plugins

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// preFilter parses the pod's device requests once for the whole cycle
// (PreFilter, whose signature depends on the Kubernetes release, calls
// it); nodes is how many nodes the cycle may filter, 0 when unknown.
// Pods that ask for no managed device are skipped by this plugin.
func (p *Plugin) preFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes int) (*fwk.PreFilterResult, *fwk.Status) {
	requests, asks, err := p.podRequests(pod)
	if unservable, ok := errors.AsType[*devices.UnservableError](err); ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "device request no device plugin can serve: "+unservable.Error())
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "invalid device request: "+err.Error())
	}
	if !asks {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !p.synced() {
		return nil, fwk.NewStatus(fwk.Error, "device cache is still loading nodes and pods")
	}
	s := &cycleState{
		requests:   requests,
		nodePolicy: p.nodePolicy(pod),
		fits:       make(map[string]*nodeFit, fitsHint(nodes, p.args.CandidateNodes)),
		rejections: &nodeRejections{},
	}
	if p.dra != nil {
		if err := p.dra.dropStale(ctx, pod); err != nil {
			return nil, fwk.AsStatus(err)
		}
		if s.dra, err = p.dra.view(); err != nil {
			return nil, fwk.AsStatus(err)
		}
	}
	state.Write(stateKey, s)
	if fwk.IsPodGroupCycle(state) {
		// A member of an in-tree pod group: the cycle tries its members
		// on nodes of its own choosing (placements) and all at once, so it
		// is not narrowed to candidates, and the victims a workload-aware
		// preemption simulates away are read from its snapshot.
		s.removed = p.snapshotRemovals(pod)
		p.releaseOwnHold(s, pod)
		return nil, nil
	}
	p.releaseOwnHold(s, pod)
	return p.offerCandidates(klog.FromContext(ctx), s, pod), nil
}

// releaseOwnHold frees, for the pod's own cycle, the cards the cache
// counts it as holding while unbound: a hand-over another scheduler
// process began and this one resumed (gang_resume.go). The pod may take them
// again, or others; Reserve replaces the hold either way.
func (p *Plugin) releaseOwnHold(s *cycleState, pod *corev1.Pod) {
	held, ok := p.cache.Holding(pod.UID)
	if !ok || !held.Assumed {
		return
	}
	if s.removed == nil {
		s.removed = map[string]map[types.UID]devicecache.Holding{}
	}
	if s.removed[held.Node] == nil {
		s.removed[held.Node] = map[types.UID]devicecache.Holding{}
	}
	s.removed[held.Node][pod.UID] = held
}

// fitsHint is the room a cycle's fits are made with: every node the
// cycle may filter, or candidateNodes when that is fewer (the cycle is
// then usually narrowed to them; the map grows if it is not). A map sized
// for every node cost 7% of the scheduler's CPU at 2,000 nodes, its
// allocation and clearing included.
func fitsHint(nodes int, candidates int32) int {
	if c := int(candidates); c > 0 && c < nodes {
		return c
	}
	return nodes
}

// podRequests reads the pod's device requests, index-aligned with the
// registry's vendors, with the default card policy filled in; asks is false
// when the pod asks for no managed device.
func (p *Plugin) podRequests(pod *corev1.Pod) (requests []devices.PodRequest, asks bool, err error) {
	requests, asks, err = p.registry.ParsePod(pod)
	if err != nil || !asks {
		return requests, asks, err
	}
	for i := range requests {
		if requests[i].Preferences.Policy == "" {
			requests[i].Preferences.Policy = devices.CardPolicy(p.args.GPUSchedulerPolicy)
		}
	}
	return requests, true, nil
}

// nodePolicy is the pod's hami.io/node-scheduler-policy when present, else
// the default. As in HAMi, exactly "spread" spreads and any other value
// packs.
func (p *Plugin) nodePolicy(pod *corev1.Pod) devices.NodePolicy {
	policy, ok := pod.Annotations[devices.NodePolicyAnnotation]
	if !ok {
		policy = p.args.NodeSchedulerPolicy
	}
	if devices.NodePolicy(policy) == devices.NodeSpread {
		return devices.NodeSpread
	}
	return devices.NodeBinpack
}

// PreFilterExtensions lets preemption see the cards its victims would free.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

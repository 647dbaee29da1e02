package plugins

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// profiles finds the HAMi plugin of a scheduler profile from another
// plugin of the same profile: the framework hands every plugin of a
// profile the same Handle.
var profiles sync.Map // fwk.Handle -> *Plugin

// register keeps p findable by its handle until ctx ends.
func register(ctx context.Context, h fwk.Handle, p *Plugin) {
	profiles.Store(h, p)
	go func() {
		<-ctx.Done()
		profiles.CompareAndDelete(h, p)
	}()
}

// ForProfile returns the HAMi plugin of the profile whose plugins are
// given h, or nil when that profile does not run it (or not yet: plugins
// are built in no set order, so ask at scheduling time, not in New).
func ForProfile(h fwk.Handle) *Plugin {
	p, ok := profiles.Load(h)
	if !ok {
		return nil
	}
	return p.(*Plugin)
}

// GroupRoom reports whether the cards of the nodes the pods may go to, as
// the device cache holds them, could take the devices of need of the pods
// at once, for every vendor whose fit follows HAMi's standard rules
// (devices.StandardFitter; the others are not checked): nil when they
// might, else which vendor's cards run short, and of what
// (devices.GroupRoom, a necessary condition: a group it turns away cannot
// fit). A node counts when one of the pods may go there as far as its
// cordon, required node affinity and NoSchedule taints tell. The pods are
// the members of a group that are not placed yet; a pod whose requests
// cannot be read asks nothing here (its own cycle reports it). Nil, too,
// while the cache is still loading.
func (p *Plugin) GroupRoom(pods []*corev1.Pod, need int) *devices.GroupShortfall {
	return p.groupRoom(pods, need, p.ownHolds(pods))
}

// GroupRoomAfterPreemption is GroupRoom with the cards of the pods that
// default preemption could evict for a pod of the given priority counted
// free too (mayBeVictim, by each pod's own priority): nil when preemption
// might make room for the group, else what runs short even then.
func (p *Plugin) GroupRoomAfterPreemption(pods []*corev1.Pod, need int, priority int32) *devices.GroupShortfall {
	freed := p.ownHolds(pods)
	own := map[types.UID]bool{}
	for _, pod := range pods {
		own[pod.UID] = true
	}
	for _, h := range p.cache.AllHoldings() {
		if !own[h.UID] && p.mayBeVictim(h, priority, corev1helpers.PodPriority) {
			if freed == nil {
				freed = map[string][]devicecache.Holding{}
			}
			freed[h.Node] = append(freed[h.Node], h.Holding)
		}
	}
	return p.groupRoom(pods, need, freed)
}

// groupRoom is GroupRoom with the holdings freed counted free on their
// nodes.
func (p *Plugin) groupRoom(pods []*corev1.Pod, need int, freed map[string][]devicecache.Holding) *devices.GroupShortfall {
	if need <= 0 || !p.synced() {
		return nil
	}
	vendors := p.registry.Vendors()
	members := make([][]devices.PodRequest, len(vendors))
	asking := make([]bool, len(vendors))
	for _, pod := range pods {
		requests, asks, err := p.podRequests(pod)
		for vi := range vendors {
			var r devices.PodRequest
			if err == nil && asks {
				r = requests[vi]
				asking[vi] = asking[vi] || !r.IsZero()
			}
			members[vi] = append(members[vi], r)
		}
	}
	admitted := p.admittedByAny(pods)
	var scratch []devices.Usage
	var dra draView
	if p.dra != nil {
		// A read error leaves DRA nodes out: the check stays necessary,
		// only weaker.
		dra, _ = p.dra.view()
	}
	for vi, v := range vendors {
		if _, standard := v.(devices.StandardFitter); !standard || !asking[vi] {
			continue
		}
		visit := func(fn func([]devices.Card, []devices.Usage)) {
			p.cache.VisitCards(vi, func(node string, cards []devices.Card, used []devices.Usage) {
				if !admitted(node) {
					return
				}
				if held := freed[node]; len(held) > 0 {
					// The pods' own holds (resumed hand-overs) are theirs
					// to take again; victims' are free after preemption.
					scratch = append(scratch[:0], used...)
					for _, h := range held {
						h.Apply(cards, scratch, vi, false)
					}
					used = scratch
				}
				fn(cards, used)
			})
			p.visitDRACards(dra, vi, admitted, fn)
		}
		if short := devices.GroupRoom(v.Name(), members[vi], need, visit); short != nil {
			return short
		}
	}
	return nil
}

// visitDRACards calls fn with vendor vi's cards and usage on every DRA
// node the pods may go to, as Filter sees them there.
func (p *Plugin) visitDRACards(view draView, vi int, admitted func(string) bool, fn func([]devices.Card, []devices.Usage)) {
	if view == nil {
		return
	}
	for _, node := range view.nodes() {
		if !admitted(node) {
			continue
		}
		if cards, used, err := p.draCards(view, node, vi, nil); err == nil && len(cards) > 0 {
			fn(cards, used)
		}
	}
}

// ManagesResource reports whether name is a resource of a vendor the
// plugin serves (a card count, memory, cores, ...).
func (p *Plugin) ManagesResource(name corev1.ResourceName) bool {
	for _, v := range p.registry.Vendors() {
		for _, n := range v.Resources().All() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// Reserved returns what the pod with uid holds while reserved but not
// handed over yet (from Reserve until PreBind writes it, e.g. while it
// waits at Permit for its gang): its node and, per vendor, the allocated
// annotation key and the assignment encoded as that annotation carries
// it. ok is false when the cache holds no such reservation.
func (p *Plugin) Reserved(uid types.UID) (node string, allocated map[string]string, ok bool) {
	held, found := p.cache.Holding(uid)
	if !found || !held.Assumed {
		return "", nil, false
	}
	allocated = map[string]string{}
	for vi, v := range p.registry.Vendors() {
		if vi >= len(held.Assignments) || held.Assignments[vi].Empty() {
			continue
		}
		_, key := v.AssignmentAnnotations()
		allocated[key] = devices.EncodeAssignment(held.Assignments[vi])
	}
	return held.Node, allocated, true
}

// ownHolds are, per node, what the pods hold while unbound (resumed
// hand-overs, gang_resume.go).
func (p *Plugin) ownHolds(pods []*corev1.Pod) map[string][]devicecache.Holding {
	var out map[string][]devicecache.Holding
	for _, pod := range pods {
		if h, ok := p.cache.Holding(pod.UID); ok && h.Assumed {
			if out == nil {
				out = map[string][]devicecache.Holding{}
			}
			out[h.Node] = append(out[h.Node], h)
		}
	}
	return out
}

// admittedByAny returns whether one of the pods may go to a node, as far as
// its cordon, required node affinity and NoSchedule taints tell
// (candidates.go admits), remembering each node's answer.
func (p *Plugin) admittedByAny(pods []*corev1.Pod) func(node string) bool {
	logger := klog.Background()
	affinities := make([]nodeaffinity.RequiredNodeAffinity, len(pods))
	for i, pod := range pods {
		affinities[i] = nodeaffinity.GetRequiredNodeAffinity(pod)
	}
	known := map[string]bool{}
	return func(node string) bool {
		ok, seen := known[node]
		if !seen {
			for i, pod := range pods {
				if ok = p.admits(logger, pod, affinities[i], node); ok {
					break
				}
			}
			known[node] = ok
		}
		return ok
	}
}

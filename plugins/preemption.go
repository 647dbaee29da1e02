package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	devicecache "github.com/hami-scheduler/hami-scheduler/plugins/cache"
)

// RemovePod is called by preemption while it simulates evicting a victim:
// the cards the victim holds count as free for the pod being scheduled. A
// nominated pod AddPod counted is simply dropped again.
func (p *Plugin) RemovePod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, victim fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil {
		return nil
	}
	pod := fwk.PodOf(victim)
	nodeName := nodeInfo.Node().Name
	s.dropFit(nodeName)
	s.mu.Lock()
	if _, ok := s.nominated[nodeName][pod.UID]; ok {
		delete(s.nominated[nodeName], pod.UID)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	held, ok := p.cache.Holding(pod.UID)
	if !ok && s.dra != nil {
		// A pod placed on a DRA node holds its cards by claims.
		held, ok = s.dra.holding(pod, nodeName)
	}
	if !ok || held.Node != nodeName {
		return nil
	}
	node := held.Node
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed == nil {
		s.removed = map[string]map[types.UID]devicecache.Holding{}
	}
	if s.removed[node] == nil {
		s.removed[node] = map[types.UID]devicecache.Holding{}
	}
	s.removed[node][pod.UID] = held
	return nil
}

// AddPod is called with a pod the node should be seen holding in this
// cycle's state:
//   - a victim preemption removed and now reprieves: its removal is undone;
//   - a pod the cache already counts (placed or assumed): nothing to add;
//   - a pod nominated to the node with priority >= the pod being scheduled
//     (a preemptor waiting for its victims to leave), which holds no card
//     yet: it is fitted on the node's cards as Filter would fit it, and what
//     it would take is counted against them, so the pod being scheduled
//     cannot take the cards freed for it. When the cards cannot hold it yet,
//     its vendors' cards on the node count as taken.
func (p *Plugin) AddPod(ctx context.Context, state fwk.CycleState, podToSchedule *corev1.Pod, added fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil {
		return nil
	}
	pod := fwk.PodOf(added)
	node := nodeInfo.Node().Name
	s.dropFit(node)
	s.mu.Lock()
	if _, ok := s.removed[node][pod.UID]; ok {
		delete(s.removed[node], pod.UID)
		s.mu.Unlock()
		return nil
	}
	_, counted := s.nominated[node][pod.UID]
	s.mu.Unlock()
	if counted || pod.Spec.NodeName != "" {
		return nil
	}
	if _, ok := p.cache.Holding(pod.UID); ok {
		return nil
	}
	requests, asks, err := p.podRequests(pod)
	if err != nil {
		// It could not have been nominated with such a request.
		klog.FromContext(ctx).V(4).Info("Nominated pod's device request cannot be read; not counted", "pod", klog.KObj(pod), "err", err)
		return nil
	}
	if !asks {
		return nil
	}
	vendors := p.registry.Vendors()
	hold := &nominatedHold{
		pod:         klog.KObj(pod).String(),
		assignments: make([]devices.Assignment, len(vendors)),
		inits:       len(pod.Spec.InitContainers),
		blocked:     make([]bool, len(vendors)),
	}
	var usageBuf [16]devices.Usage
	for vi, v := range vendors {
		req := &requests[vi]
		if req.IsZero() {
			continue
		}
		cards, used, heldFor, onDRA, err := p.nodeCards(s, node, vi, usageBuf[:0])
		if err != nil || len(cards) == 0 {
			// Filter refuses the node to every pod asking this vendor.
			continue
		}
		if onDRA {
			req = claimedRequest(req)
		}
		if heldFor != "" {
			hold.blocked[vi] = true
			continue
		}
		a, rej := v.Fit(cards, used, req)
		if rej != nil {
			hold.blocked[vi] = true
			continue
		}
		hold.assignments[vi] = a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nominated == nil {
		s.nominated = map[string]map[types.UID]*nominatedHold{}
	}
	if s.nominated[node] == nil {
		s.nominated[node] = map[types.UID]*nominatedHold{}
	}
	s.nominated[node][pod.UID] = hold
	klog.FromContext(ctx).V(5).Info("Nominated pod's devices counted", "pod", klog.KObj(pod), "node", node, "blocked", hold.blocked)
	return nil
}

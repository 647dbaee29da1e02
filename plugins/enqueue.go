package plugins

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// events requeue a pod this plugin rejected as soon as cards may have
// freed up (a pod holding cards is deleted) or a node's inventory changes,
// instead of waiting for the periodic flush (EventsToRegister, whose
// signature depends on the Kubernetes release, returns them).
func (p *Plugin) events() []fwk.ClusterEventWithHint {
	return append([]fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: p.hintAfterPodDelete},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAnnotation | fwk.UpdateNodeAllocatable}, QueueingHintFn: p.hintAfterNodeChange},
	}, p.draEvents()...)
}

// The hints only read: the device cache is written by its informer
// handlers (and Reserve/Unreserve), which activate the rejected pods once
// they have applied the event (see rejectedPods), so a retry that the hint
// let through before the cache caught up is not lost.

// hintAfterPodDelete queues the pod when the deleted pod held cards.
func (p *Plugin) hintAfterPodDelete(logger klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	deleted, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if !p.cache.HasAssignment(deleted) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A pod holding devices was deleted", "pod", klog.KObj(pod), "deleted", klog.KObj(deleted))
	return fwk.Queue, nil
}

// hintAfterNodeChange queues the pod when a node's inventory appeared or
// changed.
func (p *Plugin) hintAfterNodeChange(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, nil
	}
	old, ok := oldObj.(*corev1.Node)
	if ok && old != nil && !p.cache.NodeChanged(old, node) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A node's devices changed", "pod", klog.KObj(pod), "node", klog.KObj(node))
	return fwk.Queue, nil
}

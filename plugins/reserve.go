package plugins

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// Reserve assumes the cards Filter chose on the node, so the next pod's
// Filter sees them taken before the API server knows of them.
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s, fit, st := p.chosenFit(ctx, state, pod, nodeName)
	if st != nil {
		return st
	}
	if s == nil {
		// PreFilter skipped the pod: it takes no card.
		return nil
	}
	p.resumed.handle(pod.UID)
	if fit.onDRA {
		return p.reserveClaim(ctx, s, pod, nodeName, fit)
	}
	if err := p.cache.Assume(pod, nodeName, fit.assignments); err != nil {
		return fwk.AsStatus(err)
	}
	if sharedLockAsks(p.registry.Vendors(), s.requests) {
		p.queues.Add(pod.UID, nodeName, time.Now())
	}
	klog.FromContext(ctx).V(4).Info("Devices assumed", "pod", klog.KObj(pod), "node", nodeName)
	p.reserved(s, pod, nodeName, false)
	return nil
}

// reserved is how Reserve ends on a node of either kind (reserveClaim on a
// DRA node): the pod no longer counts among those waiting for the
// scheduler, its gang holds its reservation for the binding round, and
// HAMi's FilteringSucceed is recorded.
func (p *Plugin) reserved(s *cycleState, pod *corev1.Pod, node string, onDRA bool) {
	p.waiting.Reserve(pod.UID, true, time.Now())
	if gang := gangOf(pod); gang != "" {
		p.gangs.reserve(gang, pod, node, onDRA)
	}
	p.filteringSucceeded(pod, s, node)
}

// Unreserve forgets the assumed cards when the pod does not get bound and,
// when PreBind already wrote the pod's assignment, marks it failed and
// releases the node lock PreBind took; vendor locks PreBind took
// (Cambricon's) are released either way. A gang member given back from
// its binding cycle aborts its round (gang_bind.go). A binding that reported an error but reached the
// API server (a timeout, a scheduler stopping mid-call) is left as it is:
// the pod is bound and its device plugin will serve it. Unreserve is
// idempotent and harmless for pods this plugin did not reserve, and does
// nothing for pods PreFilter skipped.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) {
	s, err := readState(state)
	if err != nil || s == nil {
		return
	}
	s.mu.Lock()
	handedOver, patched, binding, failure := s.handedOver, s.patched, s.binding, s.failure
	s.handedOver, s.patched, s.binding, s.failure = "", "", false, ""
	s.mu.Unlock()
	logger := klog.FromContext(ctx)
	if patched != "" && p.undoHandOver(ctx, pod, nodeName, patched, handedOver != "") {
		p.leaveGang(logger, pod, true, false, "")
		return
	}
	if failure == "" {
		failure = "the binding failed"
	}
	p.leaveGang(logger, pod, false, binding, fmt.Sprintf("member %s was not bound to node %s: %s", klog.KObj(pod), nodeName, failure))
	if p.releaseClaim(ctx, s, pod) {
		return
	}
	released := p.cache.Forget(pod)
	p.queues.Remove(pod.UID)
	p.waiting.Reserve(pod.UID, false, time.Now())
	p.releaseVendorLocks(ctx, state, pod)
	logger.V(4).Info("Devices forgotten", "pod", klog.KObj(pod), "node", nodeName)
	if released && !fwk.IsPodGroupCycle(state) {
		// Cards a pod held while it waited (at Permit, for the rest of its
		// gang) are free again: pods turned away meanwhile retry now, but
		// its own gang's (retryRejectedBut). A pod-group cycle's simulated
		// reservations lasted one cycle, in which no other pod was turned
		// away for them.
		p.retryRejectedBut(logger, "reserved devices released", gangOf(pod))
	}
}

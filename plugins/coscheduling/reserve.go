package coscheduling

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// Reserve implements fwk.ReservePlugin: nothing to reserve (the members'
// cards are the HAMi plugin's).
func (p *Plugin) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	return nil
}

// Unreserve runs when a placed member does not get bound: it timed out or
// was turned away at Permit, or binding failed. The whole group's waiting
// members are turned away with it, so that no partial group keeps cards
// reserved (each goes through Unreserve, which frees them); the group
// sorts behind the others in the queue until it is placed. A timeout is
// told to the PodGroup (GangTimeout).
func (p *Plugin) Unreserve(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeName string) {
	name := groupOf(pod)
	if name == "" {
		return
	}
	key := groupKey(pod.Namespace, name)
	p.permitted.remove(key, pod.UID)
	pg, err := p.groups.get(pod.Namespace, name)
	if err != nil {
		return
	}
	now := p.clock.Now()
	open, expired := p.waits.end(key, now)
	msg := fmt.Sprintf("PodGroup %s: member %s was not bound to %s; the group's waiting members are released", key, klog.KObj(pod), nodeName)
	if expired {
		msg = fmt.Sprintf("PodGroup %s: fewer than minMember %d members were placed within %s; the group's waiting members are released", key, minMember(pg), p.permitWait(pg.Spec.ScheduleTimeoutSeconds))
	}
	released := p.rejectWaiting(key, msg)
	p.failures.rejected(key, now, 0)
	p.reservations.changed(key)
	switch {
	case expired:
		p.recordGroupEvent(pg, corev1.EventTypeWarning, reasonGangTimeout, "Fewer than minMember %d members were placed within %s; %d placed members released their devices", minMember(pg), p.permitWait(pg.Spec.ScheduleTimeoutSeconds), released+1)
	case open && released > 0:
		p.recordGroupEvent(pg, corev1.EventTypeWarning, reasonGangRejected, "Member %s was not bound to %s; %d other placed members released their devices", klog.KObj(pod), nodeName, released)
	}
	klog.FromContext(ctx).V(4).Info("PodGroup member unreserved", "pod", klog.KObj(pod), "podGroup", key, "timeout", expired, "released", released)
}

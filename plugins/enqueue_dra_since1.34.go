//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	framework "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices/dra"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// draEvents requeue a pod this plugin rejected when DRA cards may have
// freed up or appeared: a claim on a known driver's device deallocated or
// deleted (its pod ended or was preempted), or a known driver's slice
// published or changed.
func (p *Plugin) draEvents() []fwk.ClusterEventWithHint {
	if p.dra == nil {
		return nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: framework.ResourceClaim, ActionType: framework.Update | framework.Delete}, QueueingHintFn: p.hintAfterClaimChange},
		{Event: fwk.ClusterEvent{Resource: framework.ResourceSlice, ActionType: framework.Add | framework.Update}, QueueingHintFn: p.hintAfterSliceChange},
	}
}

// hintAfterClaimChange queues the pod when a claim that held a known
// driver's device no longer does.
func (p *Plugin) hintAfterClaimChange(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	old, ok := oldObj.(*resourceapi.ResourceClaim)
	if !ok || !holdsDRACard(old) {
		return fwk.QueueSkip, nil
	}
	if claim, ok := newObj.(*resourceapi.ResourceClaim); ok && holdsDRACard(claim) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A claim on DRA cards was released", "pod", klog.KObj(pod), "claim", klog.KObj(old))
	return fwk.Queue, nil
}

// holdsDRACard reports whether the claim is allocated a device of a known
// driver.
func holdsDRACard(claim *resourceapi.ResourceClaim) bool {
	if claim == nil || claim.Status.Allocation == nil {
		return false
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if _, ok := dra.DriverNamed(r.Driver); ok {
			return true
		}
	}
	return false
}

// hintAfterSliceChange queues the pod when a known driver publishes or
// changes a slice.
func (p *Plugin) hintAfterSliceChange(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	slice, ok := newObj.(*resourceapi.ResourceSlice)
	if !ok {
		return fwk.Queue, nil
	}
	if _, known := dra.DriverNamed(slice.Spec.Driver); !known {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("DRA cards were published or changed", "pod", klog.KObj(pod), "slice", klog.KObj(slice))
	return fwk.Queue, nil
}

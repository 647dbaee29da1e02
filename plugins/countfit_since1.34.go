//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// countFits checks the card count of each vendor the pod asks as
// NodeResourcesFit would on a node that advertises it (its device plugin
// serves): the pods on the node (the scheduler's snapshot, assumed pods
// included) and this one ask no more than the node's allocatable. From
// 1.34 the shipped profile has NodeResourcesFit ignore the count
// resources of vendors with DRA drivers, which a DRA node does not
// advertise (the HAMi plugin places pods on its cards); on a node without
// the count resource this check passes, and Filter finds DRA cards there
// or none.
func (p *Plugin) countFits(pod *corev1.Pod, nodeInfo fwk.NodeInfo, requests []devices.PodRequest) *fwk.Status {
	var allocatable, requested map[corev1.ResourceName]int64
	var asked corev1.ResourceList
	for vi, v := range p.registry.Vendors() {
		if vi >= len(requests) || requests[vi].IsZero() {
			continue
		}
		if allocatable == nil {
			allocatable = nodeInfo.GetAllocatable().GetScalarResources()
			requested = nodeInfo.GetRequested().GetScalarResources()
			asked = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		}
		name := v.Resources().Count
		free, advertised := allocatable[name]
		if !advertised {
			continue
		}
		want := asked[name]
		if want.Value()+requested[name] > free {
			return fwk.NewStatus(fwk.Unschedulable, "Insufficient "+string(name))
		}
	}
	return nil
}

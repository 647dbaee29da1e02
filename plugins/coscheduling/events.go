package coscheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
)

// Reasons of the events recorded on PodGroups.
const (
	// reasonGangScheduled: minMember members are placed and go to binding.
	reasonGangScheduled = "GangScheduled"
	// reasonGangUnschedulable: the members' devices or minResources
	// cannot be had; no member is placed.
	reasonGangUnschedulable = "GangUnschedulable"
	// reasonGangRejected: a member fitted no node, or was not bound; the
	// placed members were released.
	reasonGangRejected = "GangRejected"
	// reasonGangTimeout: minMember members were not placed in time; the
	// placed members were released.
	reasonGangTimeout = "GangTimeout"
)

// recordGroupEvent records an event on the PodGroup.
func (p *Plugin) recordGroupEvent(pg *v1alpha1.PodGroup, eventType, reason, note string, args ...any) {
	recorder := p.handle.EventRecorder()
	if recorder == nil {
		return
	}
	recorder.Eventf(eventObject(pg), nil, eventType, reason, "Scheduling", note, args...)
}

// eventObject is the PodGroup with its kind set, as an event's regarding
// object needs it.
func eventObject(pg *v1alpha1.PodGroup) *v1alpha1.PodGroup {
	if pg.APIVersion != "" && pg.Kind != "" {
		return pg
	}
	obj := pg.DeepCopy()
	obj.APIVersion, obj.Kind = v1alpha1.SchemeGroupVersion.String(), "PodGroup"
	return obj
}

// groupObject is the PodGroup of the pod's group, for the HAMi plugin's
// events about the group's binding (plugins.RegisterGangObjects); nil when
// the pod is of no group or its PodGroup cannot be read.
func (p *Plugin) groupObject(pod *corev1.Pod) runtime.Object {
	name := groupOf(pod)
	if name == "" {
		return nil
	}
	pg, err := p.groups.get(pod.Namespace, name)
	if err != nil {
		return nil
	}
	return eventObject(pg)
}

package coscheduling

import (
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
	obj := pg
	if obj.APIVersion == "" || obj.Kind == "" {
		obj = pg.DeepCopy()
		obj.APIVersion, obj.Kind = v1alpha1.SchemeGroupVersion.String(), "PodGroup"
	}
	recorder.Eventf(obj, nil, eventType, reason, "Scheduling", note, args...)
}

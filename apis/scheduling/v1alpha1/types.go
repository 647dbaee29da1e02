package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupLabel is the pod label whose value names the PodGroup, in the
// pod's namespace, that the pod belongs to.
const PodGroupLabel = GroupName + "/pod-group"

// PodGroupPhase is where a PodGroup stands, as scheduler-plugins' PodGroup
// controller writes it (status.phase).
type PodGroupPhase string

// The phases of a PodGroup. Unknown is declared by the API and set by no
// one.
const (
	// PodGroupPending: fewer pods than minMember exist.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupScheduling: at least minMember pods exist, fewer than
	// minMember run or have succeeded.
	PodGroupScheduling PodGroupPhase = "Scheduling"
	// PodGroupRunning: at least minMember pods run or have succeeded.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupFinished: at least minMember pods have succeeded.
	PodGroupFinished PodGroupPhase = "Finished"
	// PodGroupFailed: a pod failed, and the failed, running and
	// succeeded pods together reach minMember.
	PodGroupFailed PodGroupPhase = "Failed"
	// PodGroupUnknown is never set.
	PodGroupUnknown PodGroupPhase = "Unknown"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodGroup is a set of pods placed all together or not at all.
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodGroupSpec   `json:"spec,omitempty"`
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupSpec is what the group asks of the scheduler.
type PodGroupSpec struct {
	// MinMember is how many of the group's pods must be placed before any
	// of them is bound.
	MinMember int32 `json:"minMember,omitempty"`
	// MinResources is what the group needs in the cluster as a whole
	// before its pods are tried.
	MinResources corev1.ResourceList `json:"minResources,omitempty"`
	// ScheduleTimeoutSeconds bounds how long placed members wait for the
	// rest of the group.
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// PodGroupStatus is what a PodGroup controller reports of the group.
type PodGroupStatus struct {
	// Phase is where the group stands.
	Phase PodGroupPhase `json:"phase,omitempty"`
	// OccupiedBy names the owners of the group's pods, as
	// "<namespace>/<owner name>", comma-separated.
	OccupiedBy string `json:"occupiedBy,omitempty"`
	// Running counts the group's running pods.
	Running int32 `json:"running,omitempty"`
	// Succeeded counts the group's succeeded pods.
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed counts the group's failed pods.
	Failed int32 `json:"failed,omitempty"`
	// ScheduleStartTime is when the group's scheduling began.
	ScheduleStartTime metav1.Time `json:"scheduleStartTime,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PodGroup `json:"items"`
}

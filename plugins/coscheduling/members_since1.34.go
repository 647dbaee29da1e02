//go:build !k8s1.33 && !k8s1.30

package coscheduling

import corev1 "k8s.io/api/core/v1"

// inTreeGroup reports whether the pod names an in-tree pod group
// (spec.schedulingGroup.podGroupName), as HAMi's IsPodGroupMember reads it.
func inTreeGroup(pod *corev1.Pod) bool {
	g := pod.Spec.SchedulingGroup
	return g != nil && g.PodGroupName != nil && *g.PodGroupName != ""
}

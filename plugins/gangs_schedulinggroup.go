//go:build !k8s1.33 && !k8s1.30

package plugins

import corev1 "k8s.io/api/core/v1"

// inTreeGroupName is the pod group spec.schedulingGroup names, "" for none.
func inTreeGroupName(pod *corev1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

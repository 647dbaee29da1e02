package plugins

import (
	corev1 "k8s.io/api/core/v1"
)

// podGroupLabel is scheduler-plugins' pod label naming a pod's PodGroup.
const podGroupLabel = "scheduling.x-k8s.io/pod-group"

// gangOf names the gang a pod belongs to, as namespace/name, "" for none:
// the PodGroup its scheduling.x-k8s.io/pod-group label names, or the
// in-tree pod group its spec.schedulingGroup names (Kubernetes 1.36 and
// later), the two ways HAMi's IsPodGroupMember reads membership.
func gangOf(pod *corev1.Pod) string {
	if name := inTreeGroupName(pod); name != "" {
		return pod.Namespace + "/" + name
	}
	if name := pod.Labels[podGroupLabel]; name != "" {
		return pod.Namespace + "/" + name
	}
	return ""
}

//go:build k8s1.30

package coscheduling

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/kubernetes/pkg/api/v1/resource"
)

// podRequests is what the pod requests of its node (init containers and
// overhead included).
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

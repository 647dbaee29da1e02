//go:build k8s1.33 || k8s1.30

package fwcompat

import corev1 "k8s.io/api/core/v1"

// NodePods lists the pods a snapshot's node info holds (bound and
// assumed).
func NodePods(info NodeInfo) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(info.Pods))
	for _, pi := range info.Pods {
		pods = append(pods, pi.Pod)
	}
	return pods
}

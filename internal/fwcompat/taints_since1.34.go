//go:build !k8s1.33 && !k8s1.30

package fwcompat

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// ToleratesNoSchedule reports whether the pod tolerates every NoSchedule
// and NoExecute taint of the node. Tolerations with comparison operators
// (a feature gate of 1.35 on) count as not tolerating: the caller treats
// the answer as a hint.
func ToleratesNoSchedule(logger klog.Logger, pod *corev1.Pod, node *corev1.Node) bool {
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, scheduleTaint, false)
	return !untolerated
}

func scheduleTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

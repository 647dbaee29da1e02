//go:build k8s1.33 || k8s1.30

package coscheduling

import corev1 "k8s.io/api/core/v1"

// inTreeGroup is false: pods have no spec.schedulingGroup before 1.36.
func inTreeGroup(*corev1.Pod) bool { return false }

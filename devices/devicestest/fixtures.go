// Package devicestest holds the pod and resource fixtures the vendor
// packages' tests share. Only tests import it.
package devicestest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resources builds a resource list from name, quantity pairs, e.g.
// Resources("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000"); a
// malformed quantity panics (a broken test fixture).
func Resources(kv ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// Limits is a container named name whose limits are Resources(kv...).
func Limits(name string, kv ...string) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: Resources(kv...)}}
}

// Pod is pod ns/p with the annotations and containers given.
func Pod(annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

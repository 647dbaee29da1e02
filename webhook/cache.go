package webhook

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// chargedPods selects the pods that can still be charged to a quota; a pod
// that reaches a terminal phase leaves the cache.
var chargedPods = fields.ParseSelectorOrDie("status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed))

// CacheOptions are the informer cache settings of the webhook's manager:
// it reads only ResourceQuotas and non-terminated pods, and keeps of each
// pod only what the quota rule reads, so that a webhook replica's memory
// grows with the cluster's pod count by a few hundred bytes per pod rather
// than by whole pod objects.
func CacheOptions(registry *devices.Registry) cache.Options {
	return cache.Options{
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:           {Field: chargedPods, Transform: podTransform(registry)},
			&corev1.ResourceQuota{}: {},
		},
	}
}

// podTransform keeps of a pod its identity, the vendors' allocated
// annotations, and the fields kube's quota scopes and charging rules read
// (deletion, phase, priority class, active deadline, QoS class, pod
// affinity). The QoS class is computed before the containers are dropped.
func podTransform(registry *devices.Registry) toolscache.TransformFunc {
	var keys []string
	for _, v := range registry.Vendors() {
		_, allocated := v.AssignmentAnnotations()
		keys = append(keys, allocated)
	}
	return func(obj any) (any, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		slim := &corev1.Pod{
			TypeMeta: pod.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name:                       pod.Name,
				Namespace:                  pod.Namespace,
				UID:                        pod.UID,
				ResourceVersion:            pod.ResourceVersion,
				DeletionTimestamp:          pod.DeletionTimestamp,
				DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds,
				Annotations:                keep(pod.Annotations, keys),
			},
			Spec: corev1.PodSpec{
				PriorityClassName:     pod.Spec.PriorityClassName,
				ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds,
				SchedulerName:         pod.Spec.SchedulerName,
				NodeName:              pod.Spec.NodeName,
			},
			Status: corev1.PodStatus{
				Phase:    pod.Status.Phase,
				QOSClass: qos.GetPodQOS(pod),
			},
		}
		if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
			slim.Spec.Affinity = &corev1.Affinity{PodAffinity: a.PodAffinity, PodAntiAffinity: a.PodAntiAffinity}
		}
		return slim, nil
	}
}

// keep returns the entries of m under keys, or nil when there are none.
func keep(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}

//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
)

// inTreeGroupName is the pod group spec.schedulingGroup names, "" for none.
func inTreeGroupName(pod *corev1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// inTreeGangObject is the in-tree PodGroup the pod's spec.schedulingGroup
// names, for an event: from the scheduler's PodGroup informer when
// GenericWorkload is on (kube-scheduler then watches them), else a
// reference by name. nil for a pod of no in-tree group.
func (p *Plugin) inTreeGangObject(pod *corev1.Pod) runtime.Object {
	name := inTreeGroupName(pod)
	if name == "" {
		return nil
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		if pg, err := p.handle.SharedInformerFactory().Scheduling().V1beta1().PodGroups().Lister().PodGroups(pod.Namespace).Get(name); err == nil {
			pg = pg.DeepCopy()
			pg.APIVersion, pg.Kind = schedulingv1beta1.SchemeGroupVersion.String(), "PodGroup"
			return pg
		}
	}
	return &corev1.ObjectReference{APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "PodGroup", Namespace: pod.Namespace, Name: name}
}

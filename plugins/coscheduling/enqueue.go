package coscheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// podGroupEvents names PodGroups as the framework watches custom resources
// (<plural>.<version>.<group>).
const podGroupEvents = "podgroups.v1alpha1.scheduling.x-k8s.io"

// podGroupLabel is the group label, for logs.
const podGroupLabel = v1alpha1.PodGroupLabel

// events requeue a member this plugin turned away when its group may now
// be placed: a pod of its group is created; its PodGroup is created or
// changed (watched by the framework only when the API served PodGroups at
// start, else the plugin's own informer activates the members); cards may
// have freed up or appeared (a pod is deleted, a node's inventory
// changes), or a node may now admit members (its labels or taints
// change), for groups whose devices did not fit together.
func (p *Plugin) events() []fwk.ClusterEventWithHint {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: hintAfterMemberAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: hintMember},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAnnotation | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: hintMember},
	}
	if p.served {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: podGroupEvents, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: hintAfterGroupChange})
	}
	return events
}

// hintAfterMemberAdded queues a member when a pod of its group appears.
func hintAfterMemberAdded(logger klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	name := groupOf(pod)
	if name == "" || added.Namespace != pod.Namespace || groupOf(added) != name {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("A pod of the PodGroup was added", "pod", klog.KObj(pod), "added", klog.KObj(added))
	return fwk.Queue, nil
}

// hintMember queues members only: the plugin turns nobody else away.
func hintMember(_ klog.Logger, pod *corev1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if groupOf(pod) == "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// hintAfterGroupChange queues a member when its own PodGroup is created or
// its spec changes (a new generation); not when its status or annotations
// do, which the scheduler writes itself.
func hintAfterGroupChange(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	name := groupOf(pod)
	if name == "" {
		return fwk.QueueSkip, nil
	}
	obj, err := meta.Accessor(newObj)
	if err != nil {
		return fwk.Queue, nil
	}
	if obj.GetNamespace() != pod.Namespace || obj.GetName() != name {
		return fwk.QueueSkip, nil
	}
	if !specChanged(oldObj, obj) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// specChanged reports whether a PodGroup is new (no old object) or its
// spec changed: the API server counts spec changes in its generation.
func specChanged(oldObj any, updated metav1.Object) bool {
	if oldObj == nil {
		return true
	}
	old, err := meta.Accessor(oldObj)
	if err != nil {
		return true
	}
	return old.GetGeneration() != updated.GetGeneration()
}

package coscheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// onMemberChange keeps the group's status current; a member now bound is
// counted from the informer, no longer from the permitted set. A member
// created, or freed of its scheduling gates, that completes its group's
// quorum sends the group's pending members to the active queue: those
// turned away for too few siblings would otherwise wait for an unrelated
// cluster event (kube-scheduler announces the creation of an unscheduled
// pod to the others only with GenericWorkload on).
func (p *Plugin) onMemberChange(logger klog.Logger, oldObj, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := groupOf(pod)
	if name == "" {
		return
	}
	key := groupKey(pod.Namespace, name)
	if bound(pod) {
		p.permitted.remove(key, pod.UID)
	}
	p.status.enqueue(key)
	old, _ := oldObj.(*corev1.Pod)
	joined := old == nil || (len(old.Spec.SchedulingGates) > 0 && len(pod.Spec.SchedulingGates) == 0)
	if joined && pod.Spec.NodeName == "" {
		p.activateOnQuorum(logger, pod.Namespace, name)
	}
}

// activateOnQuorum activates the group's pending members when it has
// minMember pods past their scheduling gates.
func (p *Plugin) activateOnQuorum(logger klog.Logger, namespace, name string) {
	pg, err := p.groups.get(namespace, name)
	if err != nil {
		return
	}
	if quorum(groupKey(namespace, name), pg, p.members.of(namespace, name)) == nil {
		p.activate(logger, namespace, name, "")
	}
}

func (p *Plugin) onMemberDelete(_ klog.Logger, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if name := groupOf(pod); name != "" {
		key := groupKey(pod.Namespace, name)
		p.permitted.remove(key, pod.UID)
		p.status.enqueue(key)
	}
}

// onGroupChange keeps the group's status current and, when the PodGroup is
// new or its spec changed, sends its pending members back to the active
// queue: the PodGroup they waited for may now exist or ask less. (The
// framework requeues them itself when it watches PodGroups; it does only
// when they were served at start.) Changes of its status and annotations,
// which the scheduler writes, requeue nothing.
func (p *Plugin) onGroupChange(logger klog.Logger, old, obj any) {
	pg, ok := obj.(*v1alpha1.PodGroup)
	if !ok {
		return
	}
	p.status.enqueue(groupKey(pg.Namespace, pg.Name))
	if specChanged(old, pg) {
		p.resourcesChecked.forget(groupKey(pg.Namespace, pg.Name))
		p.activate(logger, pg.Namespace, pg.Name, "")
	}
}

func (p *Plugin) onGroupDelete(_ klog.Logger, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, err := meta.Accessor(obj); err == nil {
		key := groupKey(m.GetNamespace(), m.GetName())
		p.failures.forget(key)
		p.waits.end(key, p.clock.Now())
	}
}

// pending returns the group's members that wait to be placed: not bound,
// not terminated, not past Permit, except the pod with UID except.
func (p *Plugin) pending(namespace, name string, except string) []*corev1.Pod {
	key := groupKey(namespace, name)
	var out []*corev1.Pod
	for _, pod := range p.members.of(namespace, name) {
		if pod.Spec.NodeName != "" || terminated(pod) || pod.DeletionTimestamp != nil || string(pod.UID) == except || p.permitted.has(key, pod.UID) {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// activate sends the group's pending members (but the pod with UID
// except) to the scheduler's active queue (a no-op in Kubernetes 1.30,
// whose framework cannot, and before the framework schedules: no pod
// waits then).
func (p *Plugin) activate(logger klog.Logger, namespace, name, except string) {
	if !p.scheduling.Load() {
		return
	}
	pods := p.pending(namespace, name, except)
	if len(pods) == 0 {
		return
	}
	keyed := make(map[string]*corev1.Pod, len(pods))
	for _, pod := range pods {
		keyed[klog.KObj(pod).String()] = pod
	}
	fwk.Activate(p.handle, logger, keyed)
}

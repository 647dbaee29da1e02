package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// PostFilter implements fwk.PostFilterPlugin. It makes no pod schedulable
// (preemption is DefaultPreemption's); when this plugin turned nodes away
// it records HAMi's FilteringFailed: the total, then the nodes per reason
// with each node's own detail. A resumed hand-over's cards are kept for
// the pod's next attempt only: one that fails gives them back.
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	p.releaseResumedHold(klog.FromContext(ctx), pod)
	s, err := readState(state)
	if err != nil || s == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if note := filteringFailedNote(s.rejections.snapshot()); note != "" {
		p.event(pod, corev1.EventTypeWarning, EventFilteringFailed, "Scheduling", note)
	}
	if s.narrowed {
		// Another plugin turned every candidate away: offer every node
		// on the next attempt, at once.
		p.fullPass.add(pod.UID)
		fwk.Activate(p.handle, klog.FromContext(ctx), map[string]*corev1.Pod{pod.Namespace + "/" + pod.Name: pod})
		klog.FromContext(ctx).V(3).Info("No candidate node fitted the pod; its next attempt sees every node", "pod", klog.KObj(pod))
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

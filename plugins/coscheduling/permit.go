package coscheduling

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// Permit holds a placed member until minMember of its group are placed
// (bound, or placed and waiting here), then lets every waiting member of
// the group go on to binding at once. A member waits at most the group's
// scheduleTimeoutSeconds, else permitWaitingTimeSeconds; the first member
// to wait sends its pending siblings to the active queue. Pods of no
// group pass.
func (p *Plugin) Permit(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	name := groupOf(pod)
	if name == "" {
		return nil, 0
	}
	logger := klog.FromContext(ctx)
	key := groupKey(pod.Namespace, name)
	pg, err := p.groups.get(pod.Namespace, name)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s: %v", key, err)), 0
	}
	p.permitted.add(key, pod.UID)
	placed := p.permitted.placed(key, p.members.of(pod.Namespace, name), "")
	want := minMember(pg)
	if placed >= want {
		p.failures.placed(key)
		released := p.allowWaiting(key)
		open, _ := p.waits.end(key, p.clock.Now())
		if open || released > 0 {
			p.recordGroupEvent(pg, corev1.EventTypeNormal, reasonGangScheduled, "%d members placed (minMember %d); binding them", placed, want)
			p.reservations.changed(key)
		}
		logger.V(3).Info("PodGroup placed", "podGroup", key, "placed", placed, "minMember", want, "released", released)
		return nil, 0
	}
	wait := p.permitWait(pg.Spec.ScheduleTimeoutSeconds)
	if p.waits.start(key, p.clock.Now().Add(wait)) {
		p.activateSiblings(state, pod, name)
	}
	p.reservations.changed(key)
	logger.V(4).Info("Member waits for its PodGroup", "pod", klog.KObj(pod), "node", nodeName, "podGroup", key, "placed", placed, "minMember", want, "timeout", wait)
	return fwk.NewStatus(fwk.Wait, fmt.Sprintf("waiting for %d more members of PodGroup %s", want-placed, key)), wait
}

// allowWaiting lets every member of the group waiting at Permit go on,
// and returns how many did.
func (p *Plugin) allowWaiting(key string) int {
	n := 0
	p.handle.IterateOverWaitingPods(func(w fwk.WaitingPod) {
		pod := w.GetPod()
		if name := groupOf(pod); name != "" && groupKey(pod.Namespace, name) == key {
			w.Allow(Name)
			n++
		}
	})
	return n
}

// rejectWaiting turns away every member of the group waiting at Permit
// with msg, and returns how many there were. Each then goes through
// Unreserve, which frees its cards.
func (p *Plugin) rejectWaiting(key, msg string) int {
	var waiting []fwk.WaitingPod
	p.handle.IterateOverWaitingPods(func(w fwk.WaitingPod) {
		pod := w.GetPod()
		if name := groupOf(pod); name != "" && groupKey(pod.Namespace, name) == key {
			waiting = append(waiting, w)
		}
	})
	// Rejected outside the iteration: a rejection runs Unreserve, which
	// iterates again.
	for _, w := range waiting {
		w.Reject(Name, msg)
	}
	return len(waiting)
}

// activateSiblings has the scheduler move the group's pending members to
// its active queue at the end of this cycle, so that they are tried now
// rather than after their backoff.
func (p *Plugin) activateSiblings(state fwk.CycleState, pod *corev1.Pod, name string) {
	pending := p.pending(pod.Namespace, name, string(pod.UID))
	if len(pending) == 0 {
		return
	}
	data, err := state.Read(schedframework.PodsToActivateKey)
	if err != nil {
		return
	}
	toActivate, ok := data.(*schedframework.PodsToActivate)
	if !ok {
		return
	}
	toActivate.Lock()
	defer toActivate.Unlock()
	for _, sibling := range pending {
		toActivate.Map[klog.KObj(sibling).String()] = sibling
	}
}

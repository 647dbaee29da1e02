package coscheduling

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// queued is what the queue order reads of an entry: its pod (nil for an
// entry that is not a single pod, such as an in-tree pod group), its
// priority and when it entered the queue.
type queued struct {
	pod       *corev1.Pod
	priority  int32
	timestamp time.Time
}

func queuedPod(pod *corev1.Pod, timestamp time.Time) queued {
	return queued{pod: pod, priority: corev1helpers.PodPriority(pod), timestamp: timestamp}
}

// less orders the scheduling queue: higher priority first; then the
// earlier time, which for a member of a PodGroup is its group's (the time
// of the group's last rejection, else the PodGroup's creation), so that a
// group's members come one after another and a group that was just
// rejected goes behind the others; for any other entry its time in the
// queue, as kube-scheduler's PrioritySort orders; then by group and pod
// name, so that members of groups created in the same second do not
// interleave.
func (p *Plugin) less(a, b queued) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	ta, ga := p.sortTime(a)
	tb, gb := p.sortTime(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ga != gb {
		return ga < gb
	}
	return podKey(a.pod) < podKey(b.pod)
}

// sortTime is the entry's time in the order and its group's key ("" for
// entries of no group).
func (p *Plugin) sortTime(q queued) (time.Time, string) {
	name := groupOf(q.pod)
	if name == "" {
		return q.timestamp, ""
	}
	key := groupKey(q.pod.Namespace, name)
	if t, ok := p.failures.lastRejection(key); ok {
		return t, key
	}
	if t, ok := p.groups.creationTime(q.pod.Namespace, name); ok {
		return t, key
	}
	return q.timestamp, key
}

func podKey(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Namespace + "/" + pod.Name
}

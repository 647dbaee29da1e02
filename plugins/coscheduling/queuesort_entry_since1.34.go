//go:build !k8s1.33 && !k8s1.30

package coscheduling

import (
	kubefwk "k8s.io/kube-scheduler/framework"
)

// Less implements fwk.QueueSortPlugin. From 1.35 the queue holds pods and,
// with GenericWorkload, whole in-tree pod groups; the latter are ordered by
// priority and time only.
func (p *Plugin) Less(a, b kubefwk.QueuedEntityInfo) bool {
	return p.less(entry(a), entry(b))
}

func entry(e kubefwk.QueuedEntityInfo) queued {
	if pi, ok := e.(interface{ GetPodInfo() kubefwk.PodInfo }); ok && e.Type() == kubefwk.PodKeyType {
		if info := pi.GetPodInfo(); info != nil && info.GetPod() != nil {
			return queuedPod(info.GetPod(), e.GetTimestamp())
		}
	}
	return queued{priority: e.GetPriority(), timestamp: e.GetTimestamp()}
}

//go:build k8s1.33 || k8s1.30

package coscheduling

import (
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Less implements fwk.QueueSortPlugin (before 1.35, of queued pods).
func (p *Plugin) Less(a, b *framework.QueuedPodInfo) bool {
	return p.less(queuedPod(a.Pod, a.Timestamp), queuedPod(b.Pod, b.Timestamp))
}

//go:build k8s1.30

package coscheduling

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// PostFilter implements fwk.PostFilterPlugin (postFilter); 1.30 passes the
// map of every node's filter status.
func (p *Plugin) PostFilter(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if groupOf(pod) == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	return p.postFilter(ctx, pod, nodeReasons(p.nodeNames(), func(n string) *fwk.Status { return statuses[n] }))
}

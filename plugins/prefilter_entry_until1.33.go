//go:build k8s1.33 || k8s1.30

package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// PreFilter parses the pod's device requests once for the whole cycle
// (preFilter); before 1.34 the framework passes no node list.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod) (*fwk.PreFilterResult, *fwk.Status) {
	return p.preFilter(ctx, state, pod, 0)
}

//go:build !k8s1.33 && !k8s1.30

package coscheduling

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// PreFilter implements fwk.PreFilterPlugin (preFilter).
func (p *Plugin) PreFilter(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return p.preFilter(ctx, pod)
}

// PreFilterExtensions implements fwk.PreFilterPlugin: none.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

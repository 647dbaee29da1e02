//go:build !k8s1.33 && !k8s1.30

package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kubefwk "k8s.io/kube-scheduler/framework"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// PreBindPreFlight implements fwk.PreBindPlugin (1.34 and later; 1.33's
// framework calls PreBind alone): only pods this plugin placed have
// anything to write.
func (p *Plugin) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) (*kubefwk.PreBindPreFlightResult, *fwk.Status) {
	if s, err := readState(state); err != nil || s == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &kubefwk.PreBindPreFlightResult{AllowParallel: false}, nil
}

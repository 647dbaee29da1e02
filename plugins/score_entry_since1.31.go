//go:build !k8s1.30

package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// Score ranks the node (score).
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	return p.score(state, nodeInfo.Node())
}

//go:build k8s1.30

package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// Score ranks the node (score); in 1.30 the framework passes its name,
// and the node comes from the cycle's snapshot.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) (int64, *fwk.Status) {
	nodeInfo, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	return p.score(state, nodeInfo.Node())
}

package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

var _ fwk.PreScorePlugin = &Plugin{}

// PreScore returns Skip for a pod PreFilter skipped (it asks for no managed
// device), so the framework does not call Score for it.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score ranks a node by how loaded its cards would be with the pod:
// binpack favours the fullest nodes, spread the emptiest. The load was
// computed by Filter; scores span 0 to fwk.MaxNodeScore. A pod PreFilter
// skipped scores 0 everywhere (PreScore normally spares it the call).
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := readState(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if s == nil {
		return 0, nil
	}
	fit, ok := s.fit(nodeInfo.Node().Name)
	if !ok {
		return 0, fwk.NewStatus(fwk.Error, "node was not filtered by "+Name)
	}
	load := fit.load * fwk.MaxNodeScore / 100
	if s.nodePolicy == devices.NodeSpread {
		return fwk.MaxNodeScore - load, nil
	}
	return load, nil
}

// ScoreExtensions implements fwk.ScorePlugin; scores are already in range.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

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
// computed by Filter; scores span 0 to fwk.MaxNodeScore. Vendor scores
// (devices.NodeScorer, e.g. Ascend's NetworkID topology) are added to the
// load before the policy applies, as HAMi adds ScoreNode to its node score
// under either policy, converted from HAMi's points (base 0-30) to load
// percent and capped at 100. A pod PreFilter skipped scores 0 everywhere
// (PreScore normally spares it the call).
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
	load := nodeScore(fit) * fwk.MaxNodeScore / 100
	if s.nodePolicy == devices.NodeSpread {
		return fwk.MaxNodeScore - load, nil
	}
	return load, nil
}

// hamiBaseScoreMax is HAMi's node score for fully used cards: 10 times
// three ratios (shares, cores, memory).
const hamiBaseScoreMax = 30

// nodeScore is the node's load in percent plus the vendors' scores in the
// same units, within 0-100.
func nodeScore(fit *nodeFit) int64 {
	if fit.vendorScore == 0 {
		return fit.load
	}
	total := float64(fit.load) + fit.vendorScore*100/hamiBaseScoreMax
	return int64(min(max(total, 0), 100))
}

// ScoreExtensions implements fwk.ScorePlugin; scores are already in range.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

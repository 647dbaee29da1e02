package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	"github.com/hami-scheduler/hami-scheduler/plugins/handover"
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

// Score ranks a node by HAMi's node score, how used its cards are before
// the pod (computed by Filter): binpack favours the fullest nodes, spread
// the emptiest. HAMi's points (0-30) are scaled onto 0 to
// fwk.MaxNodeScore. A pod asking a vendor with a node score of its own
// (Ascend, Vastai, MetaX, Kunlunxin), which HAMi adds to its points, is
// scored by that sum instead, for NormalizeScore to rank (vendorscore.go).
// A pod PreFilter skipped scores 0 everywhere (PreScore normally spares it
// the call).
// Score (whose signature depends on the Kubernetes release) calls score
// with the node.
func (p *Plugin) score(state fwk.CycleState, node *corev1.Node) (int64, *fwk.Status) {
	s, err := readState(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if s == nil {
		return 0, nil
	}
	fit, ok := s.fit(node.Name)
	if !ok {
		return 0, fwk.NewStatus(fwk.Error, "node was not filtered by "+Name)
	}
	if p.policyScored(s) {
		// HAMi's sum, ranked by NormalizeScore.
		return p.policyScore(s, fit, node), nil
	}
	score := int64(fit.score*float32(fwk.MaxNodeScore)/devices.MaxNodeScore + 0.5)
	score = min(max(score, 0), fwk.MaxNodeScore)
	if s.nodePolicy == devices.NodeSpread {
		score = fwk.MaxNodeScore - score
	}
	return score, nil
}

// ScoreExtensions implements fwk.ScorePlugin.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

var _ fwk.ScoreExtensions = &Plugin{}

// NormalizeScore implements fwk.ScoreExtensions: a pod asking a vendor
// with a vendor node score is ranked by HAMi's sum (vendorscore.go), other
// scores are in range already; then, with nodeQueueWait or
// nodeQueueLimit, nodes rank by their queue first (plugins/handover,
// handover.go).
func (p *Plugin) NormalizeScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if s == nil || len(scores) == 0 {
		return nil
	}
	if p.policyScored(s) {
		normalizePolicyScores(s.nodePolicy, scores)
	}
	if rounds := p.queueRounds(pod); rounds != nil {
		handover.RankByQueue(scores, rounds)
	}
	return nil
}

package plugins

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// Vendor node scores (devices.NodeScorer: Ascend's NetworkID topology,
// Vastai's die mode; devices.NodeAnnotationScorer, devices.PlacementScorer,
// devices.PolicyNeutralScorer: MetaX GPU and sGPU, Kunlunxin XPU). HAMi
// adds them to its node score (0-30 points), where some are worth
// thousands of points and others push the sum past 30, and picks the node
// with the highest sum under binpack, the lowest under spread. For a pod
// asking such a vendor, Score returns that sum (in hundredths of a point)
// and NormalizeScore maps the nodes' sums onto 0-100, the node HAMi would
// pick getting 100 and the one it would pick last 0; a scaled, capped
// score would tie nodes whose sums pass 30. Other pods keep the absolute
// scale of Score.

// placementScore is the part of vendor v's policy-aware score that needs
// the cards' use before the pod (Filter adds it to the node's score):
// PlacementScorer as is, PolicyNeutralScorer weighted by policy.
func placementScore(policy devices.NodePolicy, pod *corev1.Pod, v devices.Vendor, cards []devices.Card, used []devices.Usage, a devices.Assignment) float64 {
	var score float64
	if ps, ok := v.(devices.PlacementScorer); ok {
		score += ps.ScorePlacement(cards, used, a)
	}
	if ns, ok := v.(devices.PolicyNeutralScorer); ok {
		weight := float64(devices.PolicyNeutralWeight)
		if policy == devices.NodeSpread {
			weight = -weight
		}
		score += weight * ns.ScorePlacement(pod, cards, used, a)
	}
	return score
}

// policyScored reports whether the pod asks a vendor with a node score of
// its own, whose nodes Score and NormalizeScore rank by HAMi's sum.
func (p *Plugin) policyScored(s *cycleState) bool {
	for vi, v := range p.registry.Vendors() {
		if vi >= len(s.requests) || s.requests[vi].IsZero() {
			continue
		}
		switch v.(type) {
		case devices.NodeAnnotationScorer, devices.PlacementScorer, devices.PolicyNeutralScorer, devices.NodeScorer:
			return true
		}
	}
	return false
}

// policyScore is the node's score for a pod policyScored: HAMi's sum
// (Filter's score, with the vendors' placement scores, plus the node
// annotation scores) in hundredths of a point, for NormalizeScore. A node
// whose annotations cannot be read scores as if they were absent.
func (p *Plugin) policyScore(s *cycleState, fit *nodeFit, node *corev1.Node) int64 {
	sum := float64(fit.score)
	for vi, v := range p.registry.Vendors() {
		as, ok := v.(devices.NodeAnnotationScorer)
		if !ok || vi >= len(fit.assignments) || fit.assignments[vi].Empty() {
			continue
		}
		sum += as.ScoreNode(node, s.nodePolicy, fit.assignments[vi])
	}
	const limit = 1 << 50
	return int64(math.Round(min(max(sum*100, -limit), limit)))
}

// normalizePolicyScores maps the nodes' sums of a pod policyScored
// linearly onto 0 to fwk.MaxNodeScore, HAMi's pick (the highest sum under
// binpack, the lowest under spread) getting the most; nodes with equal sums
// all get 0.
func normalizePolicyScores(policy devices.NodePolicy, scores fwk.NodeScoreList) {
	lo, hi := scores[0].Score, scores[0].Score
	for _, ns := range scores {
		lo, hi = min(lo, ns.Score), max(hi, ns.Score)
	}
	span := float64(hi) - float64(lo)
	for i := range scores {
		if span == 0 {
			scores[i].Score = 0
			continue
		}
		better := float64(scores[i].Score) - float64(lo)
		if policy == devices.NodeSpread {
			better = float64(hi) - float64(scores[i].Score)
		}
		scores[i].Score = int64(math.Round(better * float64(fwk.MaxNodeScore) / span))
	}
}

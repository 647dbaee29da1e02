package plugins

import (
	fwk "k8s.io/kube-scheduler/framework"
)

// With nodeQueueLimit, nodes rank first by their queue's rounds (the pods
// being handed over to the node, divided by the limit: fewer is better),
// then by the node policy's score. Score returns both in one number,
// policy score minus rounds x (fwk.MaxNodeScore+1), and NormalizeScore
// maps the nodes of the fewest rounds onto the top half of the range, in
// policy order, and every other node below them, so the weighted HAMi
// score keeps that order ahead of the default plugins' small differences.

// roundWidth separates rounds in Score's combined value.
const roundWidth = fwk.MaxNodeScore + 1

// queuedScore combines a policy score in [0, fwk.MaxNodeScore] with the
// node's queue rounds.
func queuedScore(policy int64, rounds int) int64 {
	return policy - int64(rounds)*roundWidth
}

// splitQueuedScore undoes queuedScore.
func splitQueuedScore(v int64) (policy int64, rounds int64) {
	rounds = (fwk.MaxNodeScore - v) / roundWidth
	return v + rounds*roundWidth, rounds
}

// normalizeQueuedScores brings Score's combined values (nodeQueueLimit)
// into range. When every node is in the same round, which is always so
// unless a burst has queued the limit on a node, each node scores its
// policy score, as without a limit. Otherwise nodes of the fewest rounds
// score 50 to 100 by policy; a node k rounds behind scores at most
// 50/(k+1), also by policy. scores is not empty.
func normalizeQueuedScores(scores fwk.NodeScoreList) {
	fewest, most := int64(-1), int64(-1)
	for _, s := range scores {
		_, r := splitQueuedScore(s.Score)
		if fewest < 0 || r < fewest {
			fewest = r
		}
		most = max(most, r)
	}
	if fewest == most {
		for i := range scores {
			scores[i].Score, _ = splitQueuedScore(scores[i].Score)
		}
		return
	}
	const half = fwk.MaxNodeScore / 2
	for i := range scores {
		policy, r := splitQueuedScore(scores[i].Score)
		if r == fewest {
			scores[i].Score = half + policy/2
			continue
		}
		scores[i].Score = policy / 2 / (r - fewest + 1)
	}
}

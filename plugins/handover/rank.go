package handover

import (
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
)

// RankByQueue applies nodeQueueLimit to scores NormalizeScore has brought
// into range: nodes rank first by their queue's rounds (the pods being
// handed over to the node divided by the limit, fewer first), then by
// their score. When every node is in the same round, which is always so
// unless a burst has queued the limit on a node, the scores stay as they
// are. Otherwise nodes of the fewest rounds score 50 to 100 by their score
// and a node k rounds behind at most 50/(k+1), so that the weighted HAMi
// score keeps that order ahead of the default plugins' small differences.
func RankByQueue(scores fwk.NodeScoreList, rounds func(node string) int) {
	behind := make([]int, len(scores))
	fewest, most := -1, -1
	for i := range scores {
		r := rounds(scores[i].Name)
		behind[i] = r
		if fewest < 0 || r < fewest {
			fewest = r
		}
		most = max(most, r)
	}
	if fewest == most {
		return
	}
	const half = fwk.MaxNodeScore / 2
	for i := range scores {
		k := int64(behind[i] - fewest)
		if k == 0 {
			scores[i].Score = half + scores[i].Score/2
			continue
		}
		scores[i].Score = scores[i].Score / 2 / (k + 1)
	}
}

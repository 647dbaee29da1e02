package devices

// NodeTally sums a node's cards and what is used of them, over every
// vendor, for HAMi's node score.
type NodeTally struct {
	Sharers, Split  int64
	Cores, CoresCap int64
	Memory, MemCap  int64
}

// Add counts cards and their usage (index-aligned).
func (t *NodeTally) Add(cards []Card, used []Usage) {
	for i := range cards {
		t.Split += int64(cards[i].Split)
		t.CoresCap += int64(cards[i].Cores)
		t.MemCap += int64(cards[i].MemoryMiB)
		t.Sharers += int64(used[i].Sharers)
		t.Cores += used[i].Cores
		t.Memory += used[i].MemoryMiB
	}
}

// MaxNodeScore is the highest Score: every share, core and MiB in use.
const MaxNodeScore = 30

// Score is HAMi's node score from the node's use before the pod is placed:
// 10 x (shares used / shares + cores used / cores + memory used / memory),
// 0 when any total is 0 (HAMi's ComputeDefaultScore, float32 as there).
// Binpack prefers the highest, spread the lowest.
func (t *NodeTally) Score() float32 {
	if t.Split == 0 || t.CoresCap == 0 || t.MemCap == 0 {
		return 0
	}
	return 10 * (float32(t.Sharers)/float32(t.Split) + float32(t.Cores)/float32(t.CoresCap) + float32(t.Memory)/float32(t.MemCap))
}

package devices

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ScoringWeights weigh the three parts of a card's score
// (hami.io/device-scoring-weights). The zero value stands for HAMi's
// default, 1 each.
type ScoringWeights struct {
	Slot, Core, Memory int64
}

// orDefault returns w, or 1,1,1 for the zero value.
func (w ScoringWeights) orDefault() ScoringWeights {
	if w == (ScoringWeights{}) {
		return ScoringWeights{Slot: 1, Core: 1, Memory: 1}
	}
	return w
}

// ParseScoringWeights reads a hami.io/device-scoring-weights value such as
// "slot=1,core=1,memory=3": exactly three comma-separated key=integer items
// (spaces around keys and values allowed), each of slot, core and memory
// once, none negative and not all zero. The error says what is wrong.
func ParseScoringWeights(value string) (ScoringWeights, error) {
	var w ScoringWeights
	items := strings.Split(value, ",")
	if len(items) != 3 {
		return ScoringWeights{}, fmt.Errorf("annotation %s=%q: want slot=N,core=N,memory=N", ScoringWeightsAnnotation, value)
	}
	var seen [3]bool
	for _, item := range items {
		key, num, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return ScoringWeights{}, fmt.Errorf("annotation %s=%q: item %q is not key=value", ScoringWeightsAnnotation, value, strings.TrimSpace(item))
		}
		key = strings.TrimSpace(key)
		slot := -1
		switch key {
		case "slot":
			slot = 0
		case "core":
			slot = 1
		case "memory":
			slot = 2
		}
		if slot >= 0 && seen[slot] {
			return ScoringWeights{}, fmt.Errorf("annotation %s=%q: %q is given twice", ScoringWeightsAnnotation, value, key)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil {
			return ScoringWeights{}, fmt.Errorf("annotation %s=%q: %q weight is not an integer", ScoringWeightsAnnotation, value, key)
		}
		if n < 0 {
			return ScoringWeights{}, fmt.Errorf("annotation %s=%q: %q weight is negative", ScoringWeightsAnnotation, value, key)
		}
		switch slot {
		case 0:
			w.Slot = n
		case 1:
			w.Core = n
		case 2:
			w.Memory = n
		default:
			return ScoringWeights{}, fmt.Errorf("annotation %s=%q: unknown weight %q (want slot, core, memory)", ScoringWeightsAnnotation, value, key)
		}
		seen[slot] = true
	}
	if w == (ScoringWeights{}) {
		return ScoringWeights{}, fmt.Errorf("annotation %s=%q: every weight is 0", ScoringWeightsAnnotation, value)
	}
	return w, nil
}

// sortKey is one key of a policy chain.
type sortKey uint8

const (
	keyBinpack sortKey = iota + 1 // higher score first
	keySpread                     // lower score first
	keyNUMA                       // higher NUMA node first
)

// singleOrder is how a policy without a comma (other than "numa") orders
// cards.
type singleOrder uint8

const (
	singleSpread singleOrder = iota
	singleBinpack
	singleMutex
)

// cardPolicy is a parsed hami.io/gpu-scheduler-policy.
type cardPolicy struct {
	// chained is set for a value with a comma, or exactly "numa": cards are
	// ordered by keys[:nkeys], then by index.
	chained bool
	keys    [3]sortKey
	nkeys   int
	// single applies when chained is false.
	single    singleOrder
	numaBind  bool
	exclusive bool
	topology  bool
}

// parseCardPolicy reads a policy the way HAMi v2.10 does: items are trimmed
// and compared exactly; binpack, spread and numa are sort keys in written
// order (later duplicates and other words ignored, none: spread); mutex and
// topology-aware anywhere are filters. A single word is compared without
// trimming; anything but binpack or mutex orders as spread.
func parseCardPolicy(policy string, numaBind bool) cardPolicy {
	p := cardPolicy{numaBind: numaBind}
	switch CardPolicy(policy) {
	case "", CardSpread:
		return p
	case CardBinpack:
		p.single = singleBinpack
		return p
	}
	rest := policy
	for {
		item, tail, more := strings.Cut(rest, ",")
		item = strings.TrimSpace(item)
		var key sortKey
		switch CardPolicy(item) {
		case CardMutex:
			p.exclusive = true
		case CardTopologyAware:
			p.topology = true
		case CardBinpack:
			key = keyBinpack
		case CardSpread:
			key = keySpread
		case CardNUMA:
			key = keyNUMA
		}
		if key != 0 && !p.hasKey(key) {
			p.keys[p.nkeys] = key
			p.nkeys++
		}
		if !more {
			break
		}
		rest = tail
	}
	p.chained = strings.Contains(policy, ",") || policy == string(CardNUMA)
	if !p.chained {
		p.keys, p.nkeys = [3]sortKey{}, 0
		switch CardPolicy(policy) {
		case CardBinpack:
			p.single = singleBinpack
		case CardMutex:
			p.single = singleMutex
		}
		return p
	}
	if p.nkeys == 0 {
		p.keys[0], p.nkeys = keySpread, 1
	}
	// numa-bind needs NUMA groups contiguous: numa becomes the first key.
	if numaBind && p.keys[0] != keyNUMA {
		var keys [3]sortKey
		keys[0] = keyNUMA
		n := 1
		for _, k := range p.keys[:p.nkeys] {
			if k != keyNUMA {
				keys[n] = k
				n++
			}
		}
		p.keys, p.nkeys = keys, n
	}
	return p
}

func (p *cardPolicy) hasKey(k sortKey) bool {
	return slices.Contains(p.keys[:p.nkeys], k)
}

// cardScore is HAMi's card score before a container is placed:
// 10 x (ws x (r+sharers)/split + wc x (c+cores)/capacity + wm x (m+memory)/capacity),
// 0 when a capacity is 0, in float32 as HAMi computes it. The container's
// own request (r, c, m) counts only when the card's type is exactly the
// vendor word, which is never true for cards registered under a model name.
func cardScore(vendor string, c *Card, u Usage, r *Request, w ScoringWeights) float32 {
	if c.Split == 0 || c.Cores == 0 || c.MemoryMiB == 0 {
		return 0
	}
	var asked, cores, mem int64
	if c.Model == vendor {
		asked = 1
		cores = int64(r.Cores)
		if r.MemoryPercent != 0 {
			mem = int64(c.MemoryMiB) * int64(r.MemoryPercent) / 100
		} else {
			mem = int64(r.MemoryMiB)
		}
	}
	shares := float32(asked+int64(u.Sharers)) / float32(c.Split)
	core := float32(cores+u.Cores) / float32(c.Cores)
	memory := float32(mem+u.MemoryMiB) / float32(c.MemoryMiB)
	return float32(10) * (float32(w.Slot)*shares + float32(w.Core)*core + float32(w.Memory)*memory)
}

// cardKey is a card's sort key: HAMi's DeviceUsageList.Less(i, j) is
// true exactly when key(i) is lexicographically below key(j) over the
// policy's keyLen components. Scores are float32, NUMA nodes, indexes and
// sharer counts are integers: float64 holds them all exactly.
type cardKey [4]float64

// keyLen is how many components of a cardKey the policy uses.
func (p *cardPolicy) keyLen() int {
	if p.chained {
		return p.nkeys + 1
	}
	return 2
}

// key is the sort key of a card with the given usage and score. Sorting
// ascending and walking from the last card backwards tries, for spread
// (the default), the lowest score first, ties on the higher NUMA node; for
// binpack the highest score; for mutex the fewest sharers; with numa-bind
// whole NUMA nodes one after another (binpack: lowest node first, highest
// score inside; otherwise highest node first, lowest score inside); for a
// chain its keys in order, then the higher index.
func (p *cardPolicy) key(c *Card, u Usage, score float32) cardKey {
	s, numa := float64(score), float64(c.NUMA)
	if p.chained {
		var k cardKey
		for i, key := range p.keys[:p.nkeys] {
			switch key {
			case keyBinpack:
				k[i] = s
			case keySpread:
				k[i] = -s
			case keyNUMA:
				k[i] = numa
			}
		}
		k[p.nkeys] = float64(c.Index)
		return k
	}
	switch {
	case p.single == singleMutex:
		return cardKey{-float64(u.Sharers), numa}
	case p.numaBind && p.single == singleBinpack:
		return cardKey{-numa, s}
	case p.numaBind:
		return cardKey{numa, -s}
	case p.single == singleBinpack:
		return cardKey{s, numa}
	default:
		return cardKey{-s, numa}
	}
}

// keyLess compares two keys over their first n components.
func keyLess(a, b *cardKey, n int) bool {
	for k := range n {
		if a[k] != b[k] {
			return a[k] < b[k]
		}
	}
	return false
}

// sortCards orders the card indexes in order by their keys exactly as Go's
// sort.Sort would (HAMi sorts with it), ties included: insertion sort up to
// 12 elements, done here without allocating, and sort.Sort itself above.
func sortCards(order []int, keys []cardKey, n int) {
	if len(order) > 12 {
		sortLarge(order, keys, n)
		return
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && keyLess(&keys[order[j]], &keys[order[j-1]], n); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
}

// keySorter is sort.Interface over card indexes.
type keySorter struct {
	order []int
	keys  []cardKey
	n     int
}

func (s *keySorter) Len() int      { return len(s.order) }
func (s *keySorter) Swap(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] }
func (s *keySorter) Less(i, j int) bool {
	return keyLess(&s.keys[s.order[i]], &s.keys[s.order[j]], s.n)
}

// sortLarge runs sort.Sort on copies, so that the caller's (stack) buffers
// do not escape through the sort.Interface.
func sortLarge(order []int, keys []cardKey, n int) {
	s := &keySorter{order: slices.Clone(order), keys: slices.Clone(keys), n: n}
	sort.Sort(s)
	copy(order, s.order)
}

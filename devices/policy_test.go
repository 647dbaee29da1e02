package devices

import (
	"math"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func withIndex(n int) cardOpt    { return func(c *Card) { c.Index = n } }
func withCores(n int32) cardOpt  { return func(c *Card) { c.Cores = n } }
func withLinks(s string) cardOpt { return func(c *Card) { c.Links = s } }
func load(sharers int32, mem, cores int64) Usage {
	return Usage{Sharers: sharers, MemoryMiB: mem, Cores: cores}
}

// TestFitPodPolicies covers HAMi v2.10's card order (score, sort, walk from
// the last card backwards), policy chains, numa-bind, mutex, topology-aware,
// scoring weights and init containers. testCard scores
// 10 x (sharers/10 + cores/100 + memory/16000).
func TestFitPodPolicies(t *testing.T) {
	mem1000 := Request{Count: 1, MemoryMiB: 1000}
	two := Request{Count: 2, MemoryMiB: 1000}
	withPolicy := func(r Request, policy CardPolicy) PodRequest {
		return PodRequest{Containers: []Request{r}, Preferences: Preferences{Policy: policy}}
	}
	numaBound := func(r Request, policy CardPolicy) PodRequest {
		return PodRequest{Containers: []Request{r}, Preferences: Preferences{Policy: policy, NUMABind: true}}
	}
	// score 6 on NUMA 0, score 3 on NUMA 1.
	busyOn0 := []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1))}
	busyOn0Used := []Usage{load(2, 3200, 20), load(1, 1600, 10)}
	// four idle cards on one NUMA node: the walk meets GPU-3 first.
	topo := func(links ...string) []Card {
		cards := make([]Card, 4)
		for i := range cards {
			cards[i] = testCard("GPU-"+strconv.Itoa(i), withLinks(links[i]))
		}
		return cards
	}
	tests := []struct {
		name          string
		cards         []Card
		used          []Usage
		req           PodRequest
		want          Assignment
		wantReason    string
		wantContainer int
	}{
		// Ties of single policies: higher NUMA, then later position.
		{
			name:  "spread ties: higher NUMA first, then later position",
			cards: []Card{testCard("GPU-0", onNUMA(1)), testCard("GPU-1", onNUMA(0)), testCard("GPU-2", onNUMA(0))},
			req:   withPolicy(two, CardSpread),
			want:  Assignment{{nv("GPU-0", 1000, 0), nv("GPU-2", 1000, 0)}},
		},
		{
			name:  "binpack ties: higher NUMA first, then later position",
			cards: []Card{testCard("GPU-0", onNUMA(1)), testCard("GPU-1", onNUMA(0)), testCard("GPU-2", onNUMA(0))},
			req:   withPolicy(two, CardBinpack),
			want:  Assignment{{nv("GPU-0", 1000, 0), nv("GPU-2", 1000, 0)}},
		},
		{
			name:  "binpack: score before NUMA",
			cards: []Card{testCard("GPU-0", onNUMA(1)), testCard("GPU-1", onNUMA(0))},
			used:  []Usage{{}, load(1, 1600, 10)},
			req:   withPolicy(mem1000, CardBinpack),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "unknown policy orders as spread",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{{}, load(1, 1600, 10)},
			req:   withPolicy(mem1000, "packed"),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "a single word is compared untrimmed: ' binpack' orders as spread",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{{}, load(1, 1600, 10)},
			req:   withPolicy(mem1000, " binpack"),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		// mutex.
		{
			name:  "mutex alone tries the fewest users first, whatever the score",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{{}, load(0, 8000, 0)},
			req:   withPolicy(mem1000, CardMutex),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "mutex alone, ties: higher NUMA first",
			cards: []Card{testCard("GPU-0", onNUMA(1)), testCard("GPU-1", onNUMA(0))},
			req:   withPolicy(mem1000, CardMutex),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "mutex anywhere in a chain refuses cards with users",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{load(1, 1000, 0), {}},
			req:   withPolicy(mem1000, "binpack, mutex"),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:       "mutex with every card used",
			cards:      []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:       []Usage{load(1, 1000, 0), load(2, 1000, 0)},
			req:        withPolicy(mem1000, CardMutex),
			wantReason: "2/2 cards: exclusive use conflict",
		},
		{
			name:  "Preferences.Exclusive alone refuses cards with users",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{{}, load(1, 1000, 0)},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Policy: CardBinpack, Exclusive: true}},
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		// Chains.
		{
			name:  "chain binpack,numa: score first",
			cards: busyOn0, used: busyOn0Used,
			req:  withPolicy(mem1000, "binpack,numa"),
			want: Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "chain numa,binpack: NUMA first",
			cards: busyOn0, used: busyOn0Used,
			req:  withPolicy(mem1000, "numa,binpack"),
			want: Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "numa alone is a chain and a sort key, not a binding",
			cards: []Card{testCard("GPU-0", onNUMA(1)), testCard("GPU-1", onNUMA(0))},
			used:  []Usage{load(2, 3200, 20), {}},
			req:   withPolicy(two, CardNUMA),
			want:  Assignment{{nv("GPU-0", 1000, 0), nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "chain ties go to the higher index",
			cards: []Card{testCard("GPU-0", withIndex(3)), testCard("GPU-1", withIndex(1)), testCard("GPU-2", withIndex(2))},
			req:   withPolicy(mem1000, "spread,"),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "chain: other words and duplicates are ignored",
			cards: busyOn0, used: busyOn0Used,
			req:  withPolicy(mem1000, "foo, binpack,binpack,spread,binpack,numa"),
			want: Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "chain without a sort key orders as spread",
			cards: []Card{testCard("GPU-0", withIndex(0)), testCard("GPU-1", withIndex(1))},
			used:  []Usage{{}, load(1, 1600, 10)},
			req:   withPolicy(mem1000, "foo,bar"),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		// numa-bind.
		{
			name: "numa-bind puts numa first in a chain",
			cards: []Card{
				testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1), withIndex(1)), testCard("GPU-2", onNUMA(1), withIndex(2)),
			},
			used: []Usage{load(2, 3200, 20), {}, {}},
			req:  numaBound(mem1000, "binpack,spread"),
			want: Assignment{{nv("GPU-2", 1000, 0)}},
		},
		{
			name:  "binpack + numa-bind: lowest NUMA node first, highest score inside",
			cards: []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(0)), testCard("GPU-2", onNUMA(1))},
			used:  []Usage{{}, load(1, 1600, 10), load(2, 3200, 20)},
			req:   numaBound(mem1000, CardBinpack),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "spread + numa-bind: highest NUMA node first, lowest score inside",
			cards: []Card{testCard("GPU-0", onNUMA(1)), testCard("GPU-1", onNUMA(1)), testCard("GPU-2", onNUMA(0))},
			used:  []Usage{load(2, 3200, 20), load(1, 1600, 10), {}},
			req:   numaBound(mem1000, CardSpread),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "numa-bind not a chain word: numa-bind true with policy numa stays one chain key",
			cards: []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1)), testCard("GPU-2", onNUMA(1))},
			req:   numaBound(two, CardNUMA),
			want:  Assignment{{nv("GPU-2", 1000, 0), nv("GPU-1", 1000, 0)}},
		},
		// Score.
		{
			name:  "weights change the score",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{load(5, 0, 0), load(0, 4000, 0)},
			req: PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{
				Policy: CardBinpack, Weights: ScoringWeights{Slot: 1, Core: 1, Memory: 3},
			}},
			want: Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "default weights",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{load(5, 0, 0), load(0, 4000, 0)},
			req:   withPolicy(mem1000, CardBinpack),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "the request counts in the score of cards typed exactly NVIDIA",
			cards: []Card{testCard("GPU-0", withModel("NVIDIA"), withSplit(2)), testCard("GPU-1", withModel("NVIDIA"))},
			req:   withPolicy(mem1000, CardBinpack),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "the request does not count in the score of model-named cards",
			cards: []Card{testCard("GPU-0", withSplit(2)), testCard("GPU-1")},
			req:   withPolicy(mem1000, CardBinpack),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "a card with a capacity of 0 scores 0",
			cards: []Card{testCard("GPU-0", withCores(0)), testCard("GPU-1")},
			used:  []Usage{load(5, 8000, 0), load(1, 1600, 0)},
			req:   withPolicy(mem1000, CardBinpack),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:          "invalid preferences fail the pod on every node",
			cards:         []Card{testCard("GPU-0")},
			req:           PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Invalid: "bad weights"}},
			wantReason:    "bad weights",
			wantContainer: -1,
		},
		// Init and regular containers.
		{
			name:  "each init container is fitted alone",
			cards: []Card{testCard("GPU-0")},
			req:   PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 10000}, {Count: 1, MemoryMiB: 10000}}, Inits: 2},
			want:  Assignment{{nv("GPU-0", 10000, 0)}, {nv("GPU-0", 10000, 0)}},
		},
		{
			name:  "regular containers do not see the init containers' usage",
			cards: []Card{testCard("GPU-0")},
			req:   PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 10000}, {Count: 1, MemoryMiB: 10000}}, Inits: 1},
			want:  Assignment{{nv("GPU-0", 10000, 0)}, {nv("GPU-0", 10000, 0)}},
		},
		{
			name:  "init containers see the node's usage",
			cards: []Card{testCard("GPU-0")},
			used:  []Usage{load(1, 8000, 0)},
			req:   PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 10000}, {}}, Inits: 1},
			// 8000 used + 10000 > 16000.
			wantReason: "1/1 cards: insufficient memory",
		},
		{
			name:  "regular containers are fitted one after another",
			cards: []Card{testCard("GPU-0")},
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryMiB: 1000}, {Count: 1, MemoryMiB: 10000}, {Count: 1, MemoryMiB: 10000},
			}, Inits: 1},
			wantReason:    "1/1 cards: insufficient memory",
			wantContainer: 2,
		},
		{
			name:  "regular containers sort from the previous container's order",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1"), testCard("GPU-2")},
			req:   PodRequest{Containers: []Request{mem1000, mem1000, mem1000, mem1000}},
			want: Assignment{
				{nv("GPU-2", 1000, 0)}, {nv("GPU-1", 1000, 0)}, {nv("GPU-0", 1000, 0)}, {nv("GPU-0", 1000, 0)},
			},
		},
		// topology-aware.
		{
			name:  "topology: as many cards as asked: all, in walk order",
			cards: topo("", "", "", ""),
			req:   withPolicy(Request{Count: 4, MemoryMiB: 1000}, CardTopologyAware),
			want:  Assignment{{nv("GPU-3", 1000, 0), nv("GPU-2", 1000, 0), nv("GPU-1", 1000, 0), nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "topology: one card: the lowest summed score to the others",
			cards: topo("GPU-1=100", "GPU-0=10", "", "GPU-0=50"),
			req:   withPolicy(mem1000, "spread,topology-aware"),
			want:  Assignment{{nv("GPU-2", 1000, 0)}},
		},
		{
			name:  "topology: one card, ties: first in walk order",
			cards: topo("GPU-1=100", "GPU-0=10", "", ""),
			req:   withPolicy(mem1000, CardTopologyAware),
			want:  Assignment{{nv("GPU-3", 1000, 0)}},
		},
		{
			name: "topology: several cards: highest pair sum, first combination on ties, scores read from the earlier card",
			// Walk order GPU-3, GPU-2, GPU-1, GPU-0: (GPU-2,GPU-1) and
			// (GPU-1,GPU-0) both score 60; GPU-0's 500 to GPU-1 is never read.
			cards: topo("GPU-1=500", "GPU-0=60", "GPU-1=60", ""),
			req:   withPolicy(two, CardTopologyAware),
			want:  Assignment{{nv("GPU-2", 1000, 0), nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "topology: fewer cards than asked",
			cards: []Card{testCard("GPU-0", unhealthy), testCard("GPU-1")},
			req:   withPolicy(two, CardTopologyAware),
			// The walk collects every card that passes; none is dropped.
			wantReason: "1/2 cards: unhealthy, 1/2 cards free, 2 wanted",
		},
		{
			name:       "topology + numa-bind: only the last NUMA node walked survives (HAMi quirk)",
			cards:      []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1)), testCard("GPU-2", onNUMA(1))},
			req:        numaBound(two, CardTopologyAware),
			wantReason: "1/3 cards free on one NUMA node, 2 wanted",
		},
		{
			name: "topology + numa-bind: one card chosen from the last NUMA node walked",
			cards: []Card{
				testCard("GPU-0", onNUMA(0), withLinks("GPU-1=20")), testCard("GPU-1", onNUMA(0), withLinks("GPU-0=10")),
				testCard("GPU-2", onNUMA(1)),
			},
			req:  numaBound(mem1000, CardTopologyAware),
			want: Assignment{{nv("GPU-1", 1000, 0)}},
		},
		// Robustness.
		{
			name:       "more cards than the node has: rejected before fitting",
			cards:      []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:        one(Request{Count: math.MaxInt32, MemoryMiB: 1}),
			wantReason: "2147483647 cards wanted, node has 2",
		},
		{
			name:       "usage beyond 32 bits is compared in 64 bits",
			cards:      []Card{testCard("GPU-0", withMemory(math.MaxInt32))},
			used:       []Usage{load(1, 5_000_000_000, 0)},
			req:        one(Request{Count: 1, MemoryMiB: 1}),
			wantReason: "1/1 cards: insufficient memory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := tt.used
			if used == nil {
				used = make([]Usage, len(tt.cards))
			}
			before := slices.Clone(used)
			got, rej := FitPod("NVIDIA", tt.cards, used, &tt.req)
			if !slices.Equal(before, used) {
				t.Errorf("FitPod modified used: %v, was %v", used, before)
			}
			if tt.wantReason != "" {
				if rej == nil {
					t.Fatalf("FitPod() = %v, want rejection %q", got, tt.wantReason)
				}
				if r := rej.Reason(); r != tt.wantReason {
					t.Errorf("Reason() = %q, want %q", r, tt.wantReason)
				}
				if rej.Container != tt.wantContainer {
					t.Errorf("rejection for container %d, want %d", rej.Container, tt.wantContainer)
				}
				if rej.Unresolvable != (tt.wantContainer < 0) {
					t.Errorf("Unresolvable = %v", rej.Unresolvable)
				}
				return
			}
			if rej != nil {
				t.Fatalf("FitPod() rejected: %s (container %d)", rej.Reason(), rej.Container)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FitPod()\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestCardScore(t *testing.T) {
	card := Card{Split: 10, Cores: 100, MemoryMiB: 1000, Model: "NVIDIA-Tesla T4"}
	typed := card
	typed.Model = "NVIDIA"
	used := load(2, 500, 30)
	r := Request{Count: 1, MemoryMiB: 100, Cores: 10}
	tests := []struct {
		name string
		card Card
		used Usage
		r    Request
		w    ScoringWeights
		want float32
	}{
		{name: "default weights", card: card, used: used, r: r, want: 10},
		{name: "zero weights mean the default", card: card, used: used, r: r, w: ScoringWeights{}, want: 10},
		{name: "weights", card: card, used: used, r: r, w: ScoringWeights{Slot: 1, Core: 1, Memory: 3}, want: 20},
		{name: "slot weight only", card: card, used: used, r: r, w: ScoringWeights{Slot: 2}, want: 4},
		{name: "request counted on a card typed NVIDIA", card: typed, used: used, r: r, want: 13},
		{name: "percentage request on a card typed NVIDIA", card: typed, used: used, r: Request{Count: 1, MemoryPercent: 50}, want: 10 * (0.3 + 0.3 + 1)},
		{name: "no split count", card: Card{Cores: 100, MemoryMiB: 1000}, used: used, r: r, want: 0},
		{name: "no cores", card: Card{Split: 10, MemoryMiB: 1000}, used: used, r: r, want: 0},
		{name: "no memory", card: Card{Split: 10, Cores: 100}, used: used, r: r, want: 0},
		{name: "usage above 32 bits", card: Card{Split: 1, Cores: 1, MemoryMiB: 1}, used: load(0, 1<<33, 0), r: r, want: 10 * float32(1<<33)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cardScore("NVIDIA", &tt.card, tt.used, &tt.r, tt.w.orDefault())
			if math.Abs(float64(got-tt.want)) > 1e-4*math.Max(1, float64(tt.want)) {
				t.Errorf("cardScore() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseScoringWeights(t *testing.T) {
	tests := []struct {
		in      string
		want    ScoringWeights
		wantErr string
	}{
		{in: "slot=1,core=1,memory=3", want: ScoringWeights{1, 1, 3}},
		{in: " memory = 3 , slot=0,core= 2 ", want: ScoringWeights{0, 2, 3}},
		{in: "slot=+4,core=0,memory=0", want: ScoringWeights{4, 0, 0}},
		{in: "", wantErr: "want slot=N,core=N,memory=N"},
		{in: "slot=1,core=1", wantErr: "want slot=N,core=N,memory=N"},
		{in: "slot=1,core=1,memory=1,extra=1", wantErr: "want slot=N,core=N,memory=N"},
		{in: "slot=1,core,memory=1", wantErr: `item "core" is not key=value`},
		{in: "slot=1,slot=2,memory=1", wantErr: `"slot" is given twice`},
		{in: "slot=1,core=x,memory=1", wantErr: `"core" weight is not an integer`},
		{in: "slot=1,core=1.5,memory=1", wantErr: `"core" weight is not an integer`},
		{in: "slot=1,core=-1,memory=1", wantErr: `"core" weight is negative`},
		{in: "slot=1,gpu=1,memory=1", wantErr: `unknown weight "gpu"`},
		{in: "Slot=1,core=1,memory=1", wantErr: `unknown weight "Slot"`},
		{in: "slot=0,core=0,memory=0", wantErr: "every weight is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseScoringWeights(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), ScoringWeightsAnnotation) {
					t.Fatalf("error = %v, want one naming %s and containing %q", err, ScoringWeightsAnnotation, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseScoringWeights() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestParseCardPolicy(t *testing.T) {
	tests := []struct {
		policy   string
		numaBind bool
		want     cardPolicy
	}{
		{policy: "", want: cardPolicy{single: singleSpread}},
		{policy: "binpack", want: cardPolicy{single: singleBinpack}},
		{policy: "mutex", want: cardPolicy{single: singleMutex, exclusive: true}},
		{policy: " mutex", want: cardPolicy{single: singleSpread, exclusive: true}},
		{policy: "topology-aware", want: cardPolicy{topology: true}},
		{policy: "numa", want: cardPolicy{chained: true, keys: [3]sortKey{keyNUMA}, nkeys: 1}},
		{policy: "binpack,", want: cardPolicy{chained: true, keys: [3]sortKey{keyBinpack}, nkeys: 1}},
		{policy: "mutex,topology-aware", want: cardPolicy{chained: true, keys: [3]sortKey{keySpread}, nkeys: 1, exclusive: true, topology: true}},
		{policy: "spread, numa ,binpack,numa", want: cardPolicy{chained: true, keys: [3]sortKey{keySpread, keyNUMA, keyBinpack}, nkeys: 3}},
		{policy: "binpack,spread", numaBind: true, want: cardPolicy{chained: true, keys: [3]sortKey{keyNUMA, keyBinpack, keySpread}, nkeys: 3, numaBind: true}},
		{policy: "binpack,numa", numaBind: true, want: cardPolicy{chained: true, keys: [3]sortKey{keyNUMA, keyBinpack}, nkeys: 2, numaBind: true}},
		{policy: "binpack", numaBind: true, want: cardPolicy{single: singleBinpack, numaBind: true}},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			if got := parseCardPolicy(tt.policy, tt.numaBind); got != tt.want {
				t.Errorf("parseCardPolicy(%q, %v) = %+v, want %+v", tt.policy, tt.numaBind, got, tt.want)
			}
		})
	}
}

// cardSorter is the reference for cardPolicy.key: a sort.Interface whose
// Less follows HAMi v2.10's DeviceUsageList.Less rule for rule.
type cardSorter struct {
	order  []int
	cards  []Card
	used   []Usage
	scores []float32
	policy cardPolicy
}

func (s *cardSorter) Len() int      { return len(s.order) }
func (s *cardSorter) Swap(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] }

// Less reports whether card order[i] sorts before order[j], i.e. is tried
// after it.
func (s *cardSorter) Less(i, j int) bool {
	a, b := s.order[i], s.order[j]
	p := &s.policy
	if p.chained {
		return s.lessByChain(a, b)
	}
	sa, sb := s.scores[a], s.scores[b]
	na, nb := s.cards[a].NUMA, s.cards[b].NUMA
	switch {
	case p.single == singleMutex:
		if ua, ub := s.used[a].Sharers, s.used[b].Sharers; ua != ub {
			return ua > ub
		}
		return na < nb
	case p.numaBind:
		if na != nb {
			if p.single == singleBinpack {
				return na > nb
			}
			return na < nb
		}
		if p.single == singleBinpack {
			return sa < sb
		}
		return sa > sb
	case sa != sb:
		if p.single == singleBinpack {
			return sa < sb
		}
		return sa > sb
	default:
		return na < nb
	}
}

// lessByChain compares cards a and b by the chain's keys, then by index.
func (s *cardSorter) lessByChain(a, b int) bool {
	p := &s.policy
	for _, k := range p.keys[:p.nkeys] {
		switch k {
		case keyBinpack:
			if sa, sb := s.scores[a], s.scores[b]; sa != sb {
				return sa < sb
			}
		case keySpread:
			if sa, sb := s.scores[a], s.scores[b]; sa != sb {
				return sa > sb
			}
		case keyNUMA:
			if na, nb := s.cards[a].NUMA, s.cards[b].NUMA; na != nb {
				return na < nb
			}
		}
	}
	return s.cards[a].Index < s.cards[b].Index
}

// TestSortCardsMatchesHAMi checks that sorting by cardPolicy.key gives
// exactly the order HAMi's sort.Sort with its Less gives, ties included,
// below and above 12 cards, for every kind of policy.
func TestSortCardsMatchesHAMi(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	policies := []string{"", "spread", "binpack", "mutex", "numa", "binpack,numa", "numa,spread", "spread,binpack,numa", "x", "mutex,binpack"}
	for range 5000 {
		n := 1 + rng.Intn(24)
		cards := make([]Card, n)
		used := make([]Usage, n)
		scores := make([]float32, n)
		keys := make([]cardKey, n)
		pol := parseCardPolicy(policies[rng.Intn(len(policies))], rng.Intn(2) == 0)
		for i := range cards {
			cards[i] = Card{NUMA: rng.Intn(3) - 1, Index: rng.Intn(4)}
			used[i] = Usage{Sharers: int32(rng.Intn(3))}
			scores[i] = float32(rng.Intn(3)) / 3
			keys[i] = pol.key(&cards[i], used[i], scores[i])
		}
		order := rng.Perm(n) // any starting order will do
		got := slices.Clone(order)
		sortCards(got, keys, pol.keyLen())
		want := &cardSorter{order: slices.Clone(order), cards: cards, used: used, scores: scores, policy: pol}
		sort.Sort(want)
		if !slices.Equal(got, want.order) {
			t.Fatalf("n=%d policy %+v: order %v, HAMi's sort gives %v", n, pol, got, want.order)
		}
	}
}

func TestFitPodManyCardsUsesSortSort(t *testing.T) {
	cards := make([]Card, 16)
	used := make([]Usage, 16)
	for i := range cards {
		cards[i] = testCard("GPU-"+strconv.Itoa(i), onNUMA(i%2))
	}
	used[4] = load(1, 1000, 0)
	a, rej := FitPod("NVIDIA", cards, used, &PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 1}}, Preferences: Preferences{Policy: CardBinpack}})
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if a[0][0].UUID != "GPU-4" {
		t.Errorf("binpack picked %s, want the only used card GPU-4", a[0][0].UUID)
	}
}

func TestCombinations(t *testing.T) {
	for _, tt := range []struct{ n, k, want int }{
		{4, 2, 6}, {8, 4, 70}, {16, 8, 12870}, {5, 5, 1}, {5, 0, 1}, {64, 32, maxTopologyCombinations + 1},
	} {
		if got := combinations(tt.n, tt.k); got != tt.want {
			t.Errorf("combinations(%d, %d) = %d, want %d", tt.n, tt.k, got, tt.want)
		}
	}
}

func TestChooseByTopologyBoundsTheSearch(t *testing.T) {
	cards := make([]Card, 64)
	grants := make([]Grant, 64)
	picked := make([]int, 64)
	for i := range cards {
		cards[i] = testCard("GPU-" + strconv.Itoa(i))
		grants[i] = Grant{UUID: cards[i].UUID}
		picked[i] = i
	}
	cards[63].Links = "GPU-62=100"
	got := chooseByTopology(cards, grants, picked, 32)
	if len(got) != 32 || got[0].UUID != "GPU-0" || got[31].UUID != "GPU-31" {
		t.Errorf("got %v, want the first 32 cards walked", got)
	}
}

package devices

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	modelT4   = "NVIDIA-Tesla T4"
	modelA100 = "NVIDIA-A100-SXM4-40GB"
)

type cardOpt func(*Card)

// testCard is a healthy hami-core T4 with 16000 MiB, 100 cores and 10 shares.
func testCard(id string, opts ...cardOpt) Card {
	c := Card{UUID: id, Split: 10, MemoryMiB: 16000, Cores: 100, Model: modelT4, Mode: DefaultMode, Healthy: true}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func onNUMA(n int) cardOpt       { return func(c *Card) { c.NUMA = n } }
func withModel(m string) cardOpt { return func(c *Card) { c.Model = m } }
func withMode(m string) cardOpt  { return func(c *Card) { c.Mode = m } }
func withSplit(n int32) cardOpt  { return func(c *Card) { c.Split = n } }
func withMemory(n int32) cardOpt { return func(c *Card) { c.MemoryMiB = n } }
func unhealthy(c *Card)          { c.Healthy = false }
func cordoned(c *Card)           { c.Cordoned = true }

func one(r Request) PodRequest { return PodRequest{Containers: []Request{r}} }

func TestFitPod(t *testing.T) {
	mem1000 := Request{Count: 1, MemoryMiB: 1000}
	threeCards := []Card{testCard("GPU-0"), testCard("GPU-1"), testCard("GPU-2")}
	threeLoads := []Usage{{Sharers: 1, MemoryMiB: 4000, Cores: 20}, {}, {Sharers: 2, MemoryMiB: 8000, Cores: 40}}

	tests := []struct {
		name  string
		cards []Card
		used  []Usage // nil: nothing used
		req   PodRequest
		// want is the assignment when the pod fits.
		want Assignment
		// wantReason is the rejection's Reason() when it does not fit.
		wantReason    string
		wantContainer int
		wantNUMABind  bool
	}{
		{
			name:  "memory fits",
			cards: []Card{testCard("GPU-0")},
			req:   one(Request{Count: 1, MemoryMiB: 4000, Cores: 30}),
			want:  Assignment{{nv("GPU-0", 4000, 30)}},
		},
		{
			name:  "memory fits exactly what is left",
			cards: []Card{testCard("GPU-0")},
			used:  []Usage{{Sharers: 1, MemoryMiB: 12000}},
			req:   one(Request{Count: 1, MemoryMiB: 4000}),
			want:  Assignment{{nv("GPU-0", 4000, 0)}},
		},
		{
			name:       "insufficient memory",
			cards:      []Card{testCard("GPU-0")},
			used:       []Usage{{Sharers: 1, MemoryMiB: 12001}},
			req:        one(Request{Count: 1, MemoryMiB: 4000}),
			wantReason: "1/1 cards: insufficient memory",
		},
		{
			name:  "mutex policy takes only unused cards",
			cards: threeCards,
			used:  threeLoads,
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Exclusive: true, Policy: CardBinpack}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:       "mutex policy on shared cards only",
			cards:      []Card{testCard("GPU-0")},
			used:       []Usage{{Sharers: 1, MemoryMiB: 100}},
			req:        PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Exclusive: true}},
			wantReason: "1/1 cards: exclusive use conflict",
		},
		{
			name:  "percentage of the card's memory",
			cards: []Card{testCard("GPU-0", withMemory(15360))},
			req:   one(Request{Count: 1, MemoryPercent: 50}),
			want:  Assignment{{nv("GPU-0", 7680, 0)}},
		},
		{
			name:  "percentage resolved per card",
			cards: []Card{testCard("GPU-0", withMemory(16000)), testCard("GPU-1", withMemory(8000))},
			req:   one(Request{Count: 2, MemoryPercent: 25, Cores: 10}),
			want:  Assignment{{nv("GPU-1", 2000, 10), nv("GPU-0", 4000, 10)}},
		},
		{
			name:       "whole card's memory on a card already used",
			cards:      []Card{testCard("GPU-0")},
			used:       []Usage{{Sharers: 1, MemoryMiB: 1}},
			req:        one(Request{Count: 1, MemoryPercent: 100}),
			wantReason: "1/1 cards: insufficient memory",
		},
		{
			name:       "insufficient cores",
			cards:      []Card{testCard("GPU-0")},
			used:       []Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 80}},
			req:        one(Request{Count: 1, MemoryMiB: 1000, Cores: 30}),
			wantReason: "1/1 cards: insufficient cores",
		},
		{
			name:  "cores above 100 are granted as 100",
			cards: []Card{testCard("GPU-0")},
			req:   one(Request{Count: 1, MemoryMiB: 1000, Cores: 150}),
			want:  Assignment{{nv("GPU-0", 1000, 100)}},
		},
		{
			name:       "exclusive refused on a card with a sharer",
			cards:      []Card{testCard("GPU-0")},
			used:       []Usage{{Sharers: 1, MemoryMiB: 1000}},
			req:        one(Request{Count: 1, MemoryMiB: 1000, Cores: 100}),
			wantReason: "1/1 cards: exclusive use conflict",
		},
		{
			name:  "exclusive accepted on an empty card",
			cards: []Card{testCard("GPU-0")},
			req:   one(Request{Count: 1, MemoryPercent: 100, Cores: 100}),
			want:  Assignment{{nv("GPU-0", 16000, 100)}},
		},
		{
			name:  "exclusive skips the shared card for the empty one",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			used:  []Usage{{Sharers: 1, MemoryMiB: 1000}, {}},
			req:   one(Request{Count: 1, MemoryMiB: 1000, Cores: 100}),
			want:  Assignment{{nv("GPU-1", 1000, 100)}},
		},
		{
			name:       "zero cores refused on a card whose cores are fully used",
			cards:      []Card{testCard("GPU-0")},
			used:       []Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 100}},
			req:        one(mem1000),
			wantReason: "1/1 cards: cores fully used",
		},
		{
			name:  "zero cores accepted on a card with cores left",
			cards: []Card{testCard("GPU-0")},
			used:  []Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 99}},
			req:   one(mem1000),
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:  "two cards for one container are distinct",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:   one(Request{Count: 2, MemoryMiB: 1000}),
			want:  Assignment{{nv("GPU-1", 1000, 0), nv("GPU-0", 1000, 0)}},
		},
		{
			name:       "three cards wanted, two on the node",
			cards:      []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:        one(Request{Count: 3, MemoryMiB: 1000}),
			wantReason: "3 cards wanted, node has 2",
		},
		{
			name:  "second container sees the first one's memory",
			cards: []Card{testCard("GPU-0")},
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryPercent: 60},
				{Count: 1, MemoryPercent: 60},
			}},
			wantReason:    "1/1 cards: insufficient memory",
			wantContainer: 1,
		},
		{
			name:  "second container goes to the card the first left free",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryMiB: 10000},
				{Count: 1, MemoryMiB: 10000},
			}},
			want: Assignment{{nv("GPU-1", 10000, 0)}, {nv("GPU-0", 10000, 0)}},
		},
		{
			name:  "second container sees the first one's share",
			cards: []Card{testCard("GPU-0", withSplit(1))},
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryMiB: 100},
				{Count: 1, MemoryMiB: 100},
			}},
			wantReason:    "1/1 cards: all shares in use",
			wantContainer: 1,
		},
		{
			name:  "second container sees the first one's exclusive cores",
			cards: []Card{testCard("GPU-0")},
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryMiB: 100, Cores: 100},
				{Count: 1, MemoryMiB: 100},
			}},
			wantReason:    "1/1 cards: cores fully used",
			wantContainer: 1,
		},
		{
			name:  "containers sharing one card",
			cards: []Card{testCard("GPU-0")},
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryMiB: 8000, Cores: 50},
				{Count: 1, MemoryMiB: 8000, Cores: 50},
			}},
			want: Assignment{{nv("GPU-0", 8000, 50)}, {nv("GPU-0", 8000, 50)}},
		},
		{
			name:  "empty entries keep indexes aligned with containers",
			cards: []Card{testCard("GPU-0")},
			req:   PodRequest{Containers: []Request{{}, mem1000, {}}},
			want:  Assignment{nil, {nv("GPU-0", 1000, 0)}, nil},
		},
		{
			name:  "init container and main container both placed",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:   PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 2000}, {}, {Count: 1, MemoryMiB: 3000}}, Inits: 1},
			want:  Assignment{{nv("GPU-1", 2000, 0)}, nil, {nv("GPU-1", 3000, 0)}},
		},
		{
			name:          "rejection names the failing container",
			cards:         []Card{testCard("GPU-0")},
			req:           PodRequest{Containers: []Request{{}, mem1000, {Count: 1, MemoryMiB: 20000}}},
			wantReason:    "1/1 cards: insufficient memory",
			wantContainer: 2,
		},
		{
			name:  "pod asking nothing gets only empty entries",
			cards: []Card{testCard("GPU-0")},
			req:   PodRequest{Containers: []Request{{}, {}}},
			want:  Assignment{nil, nil},
		},
		{
			name:  "unhealthy card skipped",
			cards: []Card{testCard("GPU-0", unhealthy), testCard("GPU-1")},
			req:   one(mem1000),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:       "only card unhealthy",
			cards:      []Card{testCard("GPU-0", unhealthy)},
			req:        one(mem1000),
			wantReason: "1/1 cards: unhealthy",
		},
		{
			name:  "cordoned card skipped",
			cards: []Card{testCard("GPU-0", cordoned), testCard("GPU-1")},
			req:   one(mem1000),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:       "only card cordoned",
			cards:      []Card{testCard("GPU-0", cordoned)},
			req:        one(mem1000),
			wantReason: "1/1 cards: cordoned",
		},
		{
			name:       "split count exhausted",
			cards:      []Card{testCard("GPU-0", withSplit(2))},
			used:       []Usage{{Sharers: 2, MemoryMiB: 2000}},
			req:        one(mem1000),
			wantReason: "1/1 cards: all shares in use",
		},
		{
			name:       "card registered without a split count takes nothing",
			cards:      []Card{testCard("GPU-0", withSplit(0))},
			req:        one(mem1000),
			wantReason: "1/1 cards: all shares in use",
		},
		{
			name:  "use model",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1", withModel(modelA100))},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseModels: []string{"A100"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "use model matches a substring of the upper-cased model",
			cards: []Card{testCard("GPU-0", withModel(modelA100)), testCard("GPU-1")},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseModels: []string{"TESLA T4"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "any of several wanted models",
			cards: []Card{testCard("GPU-0", withModel("NVIDIA-H100")), testCard("GPU-1")},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseModels: []string{"A100", "T4"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "avoid model",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1", withModel(modelA100))},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{AvoidModels: []string{"T4"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "use and avoid model together",
			cards: []Card{testCard("GPU-0", withModel(modelA100)), testCard("GPU-1")},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseModels: []string{"NVIDIA"}, AvoidModels: []string{"A100"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:       "no card of the wanted model",
			cards:      []Card{testCard("GPU-0"), testCard("GPU-1", withModel(modelA100))},
			req:        PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseModels: []string{"H100"}}},
			wantReason: "2/2 cards: card type not wanted",
		},
		{
			name:  "use uuid",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseUUIDs: []string{"GPU-1"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "avoid uuid",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{AvoidUUIDs: []string{"GPU-0"}}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:       "uuid must match exactly",
			cards:      []Card{testCard("GPU-0"), testCard("GPU-1")},
			req:        PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{UseUUIDs: []string{"GPU"}}},
			wantReason: "2/2 cards: card uuid not wanted",
		},
		{
			name:       "sharing mode not wanted",
			cards:      []Card{testCard("GPU-0")},
			req:        PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Mode: "mig"}},
			wantReason: "1/1 cards: sharing mode not wanted",
		},
		{
			name:  "sharing mode wanted",
			cards: []Card{testCard("GPU-0"), testCard("GPU-1", withMode("mps"))},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Mode: "mps"}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "NUMA bind puts both cards on one NUMA node",
			cards: []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1)), testCard("GPU-2", onNUMA(1))},
			req:   PodRequest{Containers: []Request{{Count: 2, MemoryMiB: 1000}}, Preferences: Preferences{NUMABind: true}},
			want:  Assignment{{nv("GPU-2", 1000, 0), nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "without NUMA bind the cards may span NUMA nodes",
			cards: []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1))},
			req:   one(Request{Count: 2, MemoryMiB: 1000}),
			want:  Assignment{{nv("GPU-1", 1000, 0), nv("GPU-0", 1000, 0)}},
		},
		{
			name: "NUMA bind drops the picks of a NUMA node with a refused card",
			cards: []Card{
				testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(0)),
				testCard("GPU-2", onNUMA(1)), testCard("GPU-3", onNUMA(1), unhealthy),
			},
			req:  PodRequest{Containers: []Request{{Count: 2, MemoryMiB: 1000}}, Preferences: Preferences{NUMABind: true}},
			want: Assignment{{nv("GPU-1", 1000, 0), nv("GPU-0", 1000, 0)}},
		},
		{
			name:         "NUMA bind fails when no NUMA node has two free cards",
			cards:        []Card{testCard("GPU-0", onNUMA(0)), testCard("GPU-1", onNUMA(1))},
			req:          PodRequest{Containers: []Request{{Count: 2, MemoryMiB: 1000}}, Preferences: Preferences{NUMABind: true}},
			wantReason:   "1/2 cards: dropped for another NUMA node, 1/2 cards free on one NUMA node, 2 wanted",
			wantNUMABind: true,
		},
		{
			name:  "spread picks the least loaded card",
			cards: threeCards,
			used:  threeLoads,
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Policy: CardSpread}},
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "binpack picks the most loaded card",
			cards: threeCards,
			used:  threeLoads,
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Policy: CardBinpack}},
			want:  Assignment{{nv("GPU-2", 1000, 0)}},
		},
		{
			name:  "no policy means spread",
			cards: threeCards,
			used:  threeLoads,
			req:   one(mem1000),
			want:  Assignment{{nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "spread orders several cards by rising load",
			cards: threeCards,
			used:  threeLoads,
			req:   PodRequest{Containers: []Request{{Count: 3, MemoryMiB: 1000}}, Preferences: Preferences{Policy: CardSpread}},
			want:  Assignment{{nv("GPU-1", 1000, 0), nv("GPU-0", 1000, 0), nv("GPU-2", 1000, 0)}},
		},
		{
			name:  "binpack orders several cards by falling load",
			cards: threeCards,
			used:  threeLoads,
			req:   PodRequest{Containers: []Request{{Count: 3, MemoryMiB: 1000}}, Preferences: Preferences{Policy: CardBinpack}},
			want:  Assignment{{nv("GPU-2", 1000, 0), nv("GPU-0", 1000, 0), nv("GPU-1", 1000, 0)}},
		},
		{
			name:  "binpack falls back to a less loaded card when the busiest refuses",
			cards: threeCards,
			used:  []Usage{{Sharers: 1, MemoryMiB: 4000, Cores: 20}, {}, {Sharers: 2, MemoryMiB: 15500, Cores: 40}},
			req:   PodRequest{Containers: []Request{mem1000}, Preferences: Preferences{Policy: CardBinpack}},
			want:  Assignment{{nv("GPU-0", 1000, 0)}},
		},
		{
			name:       "reasons are counted per card",
			cards:      []Card{testCard("GPU-0", unhealthy), testCard("GPU-1"), testCard("GPU-2")},
			used:       []Usage{{}, {Sharers: 1, MemoryMiB: 15000}, {}},
			req:        one(Request{Count: 2, MemoryMiB: 4000}),
			wantReason: "1/3 cards: unhealthy, 1/3 cards: insufficient memory, 1/3 cards free, 2 wanted",
		},
		{
			name:       "node without cards",
			cards:      nil,
			req:        one(mem1000),
			wantReason: "1 cards wanted, node has 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := tt.used
			if used == nil {
				used = make([]Usage, len(tt.cards))
			}
			got, rej := FitPod("NVIDIA", tt.cards, used, &tt.req)
			if tt.wantReason != "" {
				if rej == nil {
					t.Fatalf("FitPod() = %v, want rejection %q", got, tt.wantReason)
				}
				if got != nil {
					t.Errorf("FitPod() returned assignment %v along with a rejection", got)
				}
				if r := rej.Reason(); r != tt.wantReason {
					t.Errorf("Reason() = %q, want %q", r, tt.wantReason)
				}
				if rej.Container != tt.wantContainer {
					t.Errorf("rejection for container %d, want %d", rej.Container, tt.wantContainer)
				}
				if rej.Cards != len(tt.cards) {
					t.Errorf("rejection counts %d cards, node has %d", rej.Cards, len(tt.cards))
				}
				if want := tt.req.Containers[tt.wantContainer].Count; rej.Wanted != want {
					t.Errorf("rejection wanted %d cards, container asked %d", rej.Wanted, want)
				}
				if rej.NUMABind != tt.wantNUMABind {
					t.Errorf("rejection NUMABind = %v, want %v", rej.NUMABind, tt.wantNUMABind)
				}
				return
			}
			if rej != nil {
				t.Fatalf("FitPod() rejected: %s (container %d)", rej.Reason(), rej.Container)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FitPod()\n got %v\nwant %v", got, tt.want)
			}
			if len(got) != len(tt.req.Containers) {
				t.Errorf("assignment has %d entries for %d containers", len(got), len(tt.req.Containers))
			}
			for i, grants := range got {
				if n := int(tt.req.Containers[i].Count); len(grants) != n {
					t.Errorf("container %d got %d cards, asked %d", i, len(grants), n)
				}
				uuids := map[string]bool{}
				for _, g := range grants {
					if uuids[g.UUID] {
						t.Errorf("container %d got card %s twice", i, g.UUID)
					}
					uuids[g.UUID] = true
				}
			}
		})
	}
}

func TestFitPodVendorWord(t *testing.T) {
	tests := []struct {
		name   string
		vendor string
	}{
		{name: "NVIDIA", vendor: "NVIDIA"},
		{name: "other vendor", vendor: "DCU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := one(Request{Count: 2, MemoryMiB: 1})
			a, rej := FitPod(tt.vendor, []Card{testCard("A"), testCard("B")}, make([]Usage, 2), &req)
			if rej != nil {
				t.Fatalf("rejected: %s", rej.Reason())
			}
			a.Grants(func(g Grant) {
				if g.Vendor != tt.vendor {
					t.Errorf("grant %s has vendor %q, want %q", g.UUID, g.Vendor, tt.vendor)
				}
			})
		})
	}
}

func TestFitPodDoesNotModifyUsed(t *testing.T) {
	cards := []Card{testCard("GPU-0"), testCard("GPU-1", withSplit(2)), testCard("GPU-2")}
	tests := []struct {
		name string
		req  PodRequest
		fits bool
	}{
		{name: "one container", req: one(Request{Count: 2, MemoryMiB: 1000, Cores: 10}), fits: true},
		{
			name: "several containers",
			req: PodRequest{Containers: []Request{
				{Count: 1, MemoryMiB: 1000, Cores: 10},
				{},
				{Count: 3, MemoryMiB: 1000, Cores: 10},
				{Count: 2, MemoryMiB: 2000},
			}},
			fits: true,
		},
		{
			name: "several containers, the last does not fit",
			req: PodRequest{Containers: []Request{
				{Count: 3, MemoryMiB: 1000},
				{Count: 3, MemoryMiB: 1000},
				{Count: 3, MemoryMiB: 20000},
			}},
			fits: false,
		},
		{
			name: "NUMA bind, binpack",
			req: PodRequest{
				Containers:  []Request{{Count: 2, MemoryMiB: 1000}, {Count: 1, MemoryMiB: 1000}},
				Preferences: Preferences{NUMABind: true, Policy: CardBinpack},
			},
			fits: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := []Usage{{Sharers: 1, MemoryMiB: 500, Cores: 5}, {}, {Sharers: 3, MemoryMiB: 3000, Cores: 30}}
			before := slices.Clone(used)
			cardsBefore := slices.Clone(cards)
			_, rej := FitPod("NVIDIA", cards, used, &tt.req)
			if (rej == nil) != tt.fits {
				t.Fatalf("fits = %v, want %v (rejection %v)", rej == nil, tt.fits, rej)
			}
			if !reflect.DeepEqual(used, before) {
				t.Errorf("FitPod modified used: %+v, was %+v", used, before)
			}
			if !reflect.DeepEqual(cards, cardsBefore) {
				t.Errorf("FitPod modified cards: %+v, was %+v", cards, cardsBefore)
			}
		})
	}
}

func TestFitPodManyCards(t *testing.T) {
	// More cards than cardOrder's stack buffers hold.
	tests := []struct {
		name   string
		policy CardPolicy
		want   string
	}{
		{name: "spread", policy: CardSpread, want: "GPU-20"},
		{name: "binpack", policy: CardBinpack, want: "GPU-07"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cards []Card
			var used []Usage
			for i := range 24 {
				cards = append(cards, testCard(fmt.Sprintf("GPU-%02d", i)))
				// Every card but GPU-20 has a sharer; GPU-07 is the busiest.
				u := Usage{Sharers: 1, MemoryMiB: 1000}
				switch i {
				case 20:
					u = Usage{}
				case 7:
					u.MemoryMiB = 9000
				}
				used = append(used, u)
			}
			req := PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 100}}, Preferences: Preferences{Policy: tt.policy}}
			a, rej := FitPod("NVIDIA", cards, used, &req)
			if rej != nil {
				t.Fatalf("rejected: %s", rej.Reason())
			}
			if got := a[0][0].UUID; got != tt.want {
				t.Errorf("picked %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRejectionReason(t *testing.T) {
	tests := []struct {
		name string
		rej  Rejection
		want string
	}{
		{name: "nothing known", rej: Rejection{Cards: 3}, want: "no card"},
		{
			name: "reasons in a fixed order",
			rej:  Rejection{Cards: 8, counts: [numRefusals]int32{RefuseMemory: 2, RefuseShares: 6}},
			want: "6/8 cards: all shares in use, 2/8 cards: insufficient memory",
		},
		{
			name: "every reason",
			rej: Rejection{Cards: 10, counts: [numRefusals]int32{
				refuseUnhealthy: 1, refuseCordoned: 1, refuseModel: 1, RefuseUUID: 1, refuseMode: 1,
				RefuseShares: 1, RefuseMemory: 1, RefuseCores: 1, RefuseExclusive: 1, RefuseCoresFull: 1,
			}},
			want: "1/10 cards: unhealthy, 1/10 cards: cordoned, 1/10 cards: card type not wanted, " +
				"1/10 cards: card uuid not wanted, 1/10 cards: sharing mode not wanted, 1/10 cards: all shares in use, " +
				"1/10 cards: insufficient memory, 1/10 cards: insufficient cores, 1/10 cards: exclusive use conflict, " +
				"1/10 cards: cores fully used",
		},
		{
			name: "free cards on one NUMA node",
			rej:  Rejection{Cards: 4, Wanted: 3, Fitting: 2, NUMABind: true, counts: [numRefusals]int32{refuseCordoned: 1}},
			want: "1/4 cards: cordoned, 2/4 cards free on one NUMA node, 3 wanted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rej.Reason(); got != tt.want {
				t.Errorf("Reason() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRejectionSummary: the summary names the reasons without card counts,
// so the same cause reads the same on nodes of different sizes.
func TestRejectionSummary(t *testing.T) {
	tests := []struct {
		name string
		rej  Rejection
		want string
	}{
		{name: "nothing known", rej: Rejection{Cards: 3}, want: "no card"},
		{name: "more cards wanted than the node has", rej: Rejection{Cards: 2, Wanted: 3}, want: "fewer cards than wanted"},
		{
			name: "reasons in a fixed order, no counts",
			rej:  Rejection{Cards: 8, counts: [numRefusals]int32{RefuseMemory: 2, RefuseShares: 6}},
			want: "all shares in use, insufficient memory",
		},
		{
			name: "free cards on one NUMA node",
			rej:  Rejection{Cards: 4, Wanted: 3, Fitting: 2, NUMABind: true, counts: [numRefusals]int32{refuseCordoned: 1}},
			want: "cordoned, not enough free cards on one NUMA node",
		},
		{name: "free cards", rej: Rejection{Cards: 4, Wanted: 3, Fitting: 2}, want: "not enough free cards"},
		{name: "invalid pod", rej: Rejection{Container: -1, Unresolvable: true, invalid: "bad annotation"}, want: "bad annotation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rej.Summary(); got != tt.want {
				t.Errorf("Summary() = %q, want %q", got, tt.want)
			}
		})
	}
	small := Rejection{Cards: 2, counts: [numRefusals]int32{RefuseMemory: 2}}
	big := Rejection{Cards: 8, counts: [numRefusals]int32{RefuseMemory: 5}}
	if small.Summary() != big.Summary() {
		t.Errorf("the same cause on nodes of 2 and 8 cards reads %q and %q", small.Summary(), big.Summary())
	}
}

// TestFitPodWith: a GroupPicker sees every card that passed, in walk order
// with its card index, only for containers asking more than one card; a
// pick of the wrong size refuses; CoreTotal changes the checks, not the
// card order.
func TestFitPodWith(t *testing.T) {
	cards := []Card{testCard("GPU-0"), testCard("GPU-1"), testCard("GPU-2", unhealthy), testCard("GPU-3")}
	used := make([]Usage, len(cards))
	var seen []string
	var seenIdx []int
	pickLast := func(cards []Card, grants []Grant, picked []int, n int) []Grant {
		seen, seenIdx = nil, append([]int(nil), picked...)
		for _, g := range grants {
			seen = append(seen, g.UUID)
		}
		return grants[len(grants)-n:]
	}
	req := one(Request{Count: 2, MemoryMiB: 1000})
	a, rej := FitPodWith("NVIDIA", cards, used, &req, FitOptions{Pick: pickLast})
	if rej != nil {
		t.Fatalf("rejected: %s", rej.Reason())
	}
	// The walk tries the last card first; GPU-2 is unhealthy.
	if want := []string{"GPU-3", "GPU-1", "GPU-0"}; !reflect.DeepEqual(seen, want) || !reflect.DeepEqual(seenIdx, []int{3, 1, 0}) {
		t.Errorf("picker saw %v %v, want %v [3 1 0]", seen, seenIdx, want)
	}
	if got := EncodeAssignment(a); got != "GPU-1,NVIDIA,1000,0:GPU-0,NVIDIA,1000,0:;" {
		t.Errorf("assignment %q", got)
	}

	// One card: the picker is not asked.
	seen = nil
	req = one(Request{Count: 1, MemoryMiB: 1000})
	if a, rej = FitPodWith("NVIDIA", cards, used, &req, FitOptions{Pick: pickLast}); rej != nil || seen != nil {
		t.Errorf("one card: %v, picker saw %v", rej, seen)
	}

	// PickAll: one card is picked too.
	req = one(Request{Count: 1, MemoryMiB: 1000})
	if a, rej = FitPodWith("NVIDIA", cards, used, &req, FitOptions{Pick: pickLast, PickAll: true}); rej != nil ||
		!reflect.DeepEqual(seen, []string{"GPU-3", "GPU-1", "GPU-0"}) || EncodeAssignment(a) != "GPU-0,NVIDIA,1000,0:;" {
		t.Errorf("PickAll, one card: %v, %v, picker saw %v", EncodeAssignment(a), rej, seen)
	}

	// Fewer cards pass than asked: refused before picking, with the counts.
	req = one(Request{Count: 4, MemoryMiB: 1000})
	if _, rej = FitPodWith("NVIDIA", cards, used, &req, FitOptions{Pick: pickLast}); rej == nil || rej.Reason() != "1/4 cards: unhealthy, 3/4 cards free, 4 wanted" {
		t.Errorf("too few: %v", rej)
	}

	// A pick of the wrong size refuses.
	none := func([]Card, []Grant, []int, int) []Grant { return nil }
	req = one(Request{Count: 2, MemoryMiB: 1000})
	if _, rej = FitPodWith("NVIDIA", cards, used, &req, FitOptions{Pick: none}); rej == nil || rej.Reason() != "no card" {
		t.Errorf("empty pick: %v", rej)
	}

	// CoreTotal: cards of 20 cores checked as 100.
	small := []Card{testCard("NPU-0"), testCard("NPU-1")}
	for i := range small {
		small[i].Cores = 20
	}
	req = one(Request{Count: 1, MemoryMiB: 1000, Cores: 50})
	if _, rej = FitPodWith("NVIDIA", small, make([]Usage, 2), &req, FitOptions{}); rej == nil {
		t.Error("50 cores fit a 20-core card")
	}
	if _, rej = FitPodWith("NVIDIA", small, make([]Usage, 2), &req, FitOptions{CoreTotal: 100}); rej != nil {
		t.Errorf("CoreTotal 100: %s", rej.Reason())
	}
}

// TestFitPodWithCheck: a vendor's Check replaces the shared per-card rules,
// makes the grant, sees the earlier containers of the phase, and its
// refusals show in the rejection.
func TestFitPodWithCheck(t *testing.T) {
	cards := []Card{
		{UUID: "a", Split: 1, MemoryMiB: 100, Cores: 100, Model: "X", Healthy: true},
		{UUID: "b", Split: 1, MemoryMiB: 100, Cores: 100, Model: "X", Healthy: true},
	}
	used := make([]Usage, 2)
	var seen []int
	check := func(ci int, c *Card, u Usage, r Request, placed Assignment) (Grant, Refusal, bool) {
		seen = append(seen, len(placed))
		for _, ctr := range placed {
			for _, g := range ctr {
				if g.UUID != c.UUID {
					return Grant{}, RefuseVendor, false
				}
			}
		}
		return Grant{UUID: c.UUID, Vendor: c.Model + "-typed", MemoryMiB: 7, Cores: 1}, 0, true
	}
	one := Request{Count: 1}
	// Split 1 would refuse the second container on the shared rules; the
	// check lets it share card b (the last card walked).
	req := PodRequest{Containers: []Request{one, one}}
	a, rej := FitPodWith("V", cards, used, &req, FitOptions{Check: check})
	if rej != nil {
		t.Fatalf("rejected: %s", rej.Reason())
	}
	want := Assignment{{{UUID: "b", Vendor: "X-typed", MemoryMiB: 7, Cores: 1}}, {{UUID: "b", Vendor: "X-typed", MemoryMiB: 7, Cores: 1}}}
	if EncodeAssignment(a) != EncodeAssignment(want) {
		t.Fatalf("got %s, want %s", EncodeAssignment(a), EncodeAssignment(want))
	}
	if seen[0] != 0 || seen[len(seen)-1] != 1 {
		t.Fatalf("placed lengths seen %v, want 0 then 1", seen)
	}
	two := PodRequest{Containers: []Request{one, {Count: 2}}}
	_, rej = FitPodWith("V", cards, used, &two, FitOptions{Check: check})
	if rej == nil || !strings.Contains(rej.Reason(), "vendor rule") {
		t.Fatalf("want a vendor-rule rejection, got %+v", rej)
	}
	if r, ok := StandardRefusal(&cards[0], Usage{Sharers: 1}, &one, &Preferences{}); !ok || r != RefuseShares {
		t.Fatalf("StandardRefusal = %v, %v; want shares", r, ok)
	}
}

// TestFitPodWithCheckUnknownRefusal: a refusal a vendor's Check makes up
// is counted as a vendor rule.
func TestFitPodWithCheckUnknownRefusal(t *testing.T) {
	cards := []Card{
		{UUID: "a", Split: 1, MemoryMiB: 100, Cores: 100, Healthy: true},
		{UUID: "b", Split: 1, MemoryMiB: 100, Cores: 100, Healthy: true},
	}
	req := PodRequest{Containers: []Request{{Count: 1}}}
	for _, why := range []Refusal{-1, numRefusals, 99} {
		t.Run(fmt.Sprint(int(why)), func(t *testing.T) {
			check := func(int, *Card, Usage, Request, Assignment) (Grant, Refusal, bool) { return Grant{}, why, false }
			_, rej := FitPodWith("V", cards, make([]Usage, 2), &req, FitOptions{Check: check})
			if rej == nil || rej.Reason() != "2/2 cards: vendor rule" {
				t.Fatalf("want 2/2 cards refused by a vendor rule, got %+v", rej)
			}
		})
	}
}

func TestRefusalString(t *testing.T) {
	tests := []struct {
		r    Refusal
		want string
	}{
		{r: RefuseMemory, want: "insufficient memory"},
		{r: refuseNUMA, want: "dropped for another NUMA node"},
		{r: -1, want: "unknown"},
		{r: numRefusals, want: "unknown"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Refusal(%d).String() = %q, want %q", int(tt.r), got, tt.want)
		}
	}
}

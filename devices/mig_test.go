package devices

import (
	"reflect"
	"strings"
	"testing"
)

// a100Profiles are the migProfiles HAMi's device plugin registers for an
// NVIDIA A100-SXM4-40GB with the chart's allowlist (1g.5gb, 2g.10gb,
// 3g.20gb, 7g.40gb), in allowlist order.
func a100Profiles() []MIGProfile {
	var ones []MIGPlacement
	for s := range uint32(7) {
		ones = append(ones, MIGPlacement{Start: s, Size: 1})
	}
	return []MIGProfile{
		{Name: "1g.5gb", MemoryMiB: 4864, Cores: 15, SliceCount: 1, Placements: ones},
		{Name: "2g.10gb", MemoryMiB: 9856, Cores: 29, SliceCount: 2, Placements: []MIGPlacement{{0, 2}, {2, 2}, {4, 2}}},
		{Name: "3g.20gb", MemoryMiB: 19968, Cores: 43, SliceCount: 3, Placements: []MIGPlacement{{0, 4}, {4, 4}}},
		{Name: "7g.40gb", MemoryMiB: 40192, Cores: 100, SliceCount: 7, Placements: []MIGPlacement{{0, 8}}},
	}
}

func migCard(id string, opts ...cardOpt) Card {
	c := Card{UUID: id, Split: 7, MemoryMiB: 40960, Cores: 100, Model: "NVIDIA A100-SXM4-40GB", Mode: ModeMIG, Healthy: true, MIG: normalizeMIGProfiles(a100Profiles())}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// slicesUsed is the usage of a mig card whose listed placements are taken.
func slicesUsed(pls ...MIGPlacement) Usage {
	var u Usage
	for _, p := range pls {
		m, _ := p.mask()
		u.reserve(m, true)
	}
	return u
}

func migGrant(id string, mem, cores int32, profile string, start, size uint32) Grant {
	return Grant{UUID: id, Vendor: "NVIDIA", MemoryMiB: mem, Cores: cores, MIG: &MIGSlice{Profile: profile, Placement: MIGPlacement{start, size}}}
}

func TestFitPodMIG(t *testing.T) {
	g1 := func(start uint32) Grant { return migGrant("M", 4864, 15, "1g.5gb", start, 1) }
	tests := []struct {
		name   string
		cards  []Card
		used   []Usage
		req    PodRequest
		want   Assignment
		reason string // substring of the rejection when want is nil
	}{
		{
			name:  "smallest profile with enough memory, physical uuid, profile's memory and cores",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  one(Request{Count: 1, MemoryMiB: 4000}),
			want: Assignment{{g1(6)}},
		},
		{
			name:  "memory above 1g.5gb takes 2g.10gb, lowest placement first",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  one(Request{Count: 1, MemoryMiB: 5000}),
			want: Assignment{{migGrant("M", 9856, 29, "2g.10gb", 0, 2)}},
		},
		{
			name:  "3g.* placements are tried from the highest start",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  one(Request{Count: 1, MemoryMiB: 15000}),
			want: Assignment{{migGrant("M", 19968, 43, "3g.20gb", 4, 4)}},
		},
		{
			name:  "occupied slices are skipped: no overlap",
			cards: []Card{migCard("M")}, used: []Usage{slicesUsed(MIGPlacement{6, 1}, MIGPlacement{4, 2})},
			req:  one(Request{Count: 1, MemoryMiB: 4000}),
			want: Assignment{{g1(3)}},
		},
		{
			name:  "a bigger profile when the small one has no free placement",
			cards: []Card{migCard("M")}, used: []Usage{slicesUsed(MIGPlacement{0, 1}, MIGPlacement{1, 1}, MIGPlacement{2, 1}, MIGPlacement{3, 1}, MIGPlacement{5, 1}, MIGPlacement{6, 1})},
			req:  one(Request{Count: 1, MemoryMiB: 4000}),
			want: Assignment{{migGrant("M", 4864, 15, "1g.5gb", 4, 1)}},
		},
		{
			name:  "no free placement: refused with its reason",
			cards: []Card{migCard("M")}, used: []Usage{slicesUsed(MIGPlacement{0, 1}, MIGPlacement{4, 4})},
			req:    one(Request{Count: 1, MemoryMiB: 15000}),
			reason: "1/1 cards: no free MIG slice for the memory",
		},
		{
			name:  "no profile big enough (no gpumem: the whole card)",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:    one(Request{Count: 1, MemoryPercent: 100}),
			reason: "no free MIG slice",
		},
		{
			name:  "a mig card without profiles gives nothing",
			cards: []Card{migCard("M", func(c *Card) { c.MIG = nil })}, used: []Usage{{}},
			req:    one(Request{Count: 1, MemoryMiB: 1000}),
			reason: "no free MIG slice",
		},
		{
			name:  "several cards from one mig card, more than the node has",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  one(Request{Count: 3, MemoryMiB: 4000}),
			want: Assignment{{g1(6), g1(5), g1(4)}},
		},
		{
			name:  "more cards than the node has with vgpu-mode mig",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  PodRequest{Containers: []Request{{Count: 2, MemoryMiB: 4000}}, Preferences: Preferences{Mode: "hami-core,mig"}},
			want: Assignment{{g1(6), g1(5)}},
		},
		{
			name:  "more cards than the node has, vgpu-mode without mig",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:    PodRequest{Containers: []Request{{Count: 2, MemoryMiB: 4000}}, Preferences: Preferences{Mode: "hami-core"}},
			reason: "2 cards wanted, node has 1",
		},
		{
			name:  "more cards than the node has without a mig card",
			cards: []Card{testCard("A")}, used: []Usage{{}},
			req:    one(Request{Count: 2, MemoryMiB: 1000}),
			reason: "2 cards wanted, node has 1",
		},
		{
			name:  "the retry on the same card sees the usage before the container (shares)",
			cards: []Card{migCard("M", withSplit(1))}, used: []Usage{{}},
			req:  one(Request{Count: 2, MemoryMiB: 4000}),
			want: Assignment{{g1(6), g1(5)}},
		},
		{
			name:  "the retry stops when the card is out of slices, then the next card",
			cards: []Card{migCard("N"), migCard("M")}, used: []Usage{{}, slicesUsed(MIGPlacement{0, 4}, MIGPlacement{6, 1})},
			req:  one(Request{Count: 2, MemoryMiB: 8000}),
			want: Assignment{{migGrant("M", 9856, 29, "2g.10gb", 4, 2), migGrant("N", 9856, 29, "2g.10gb", 0, 2)}},
		},
		{
			name:  "later regular containers see the slices of earlier ones",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 4000}, {Count: 1, MemoryMiB: 4000}}},
			want: Assignment{{g1(6)}, {g1(5)}},
		},
		{
			name:  "every container sees the slices of the pod's earlier ones, init containers' too",
			cards: []Card{migCard("M")}, used: []Usage{{}},
			req:  PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 15000}, {Count: 1, MemoryMiB: 4000}, {Count: 1, MemoryMiB: 4000}}, Inits: 2},
			want: Assignment{{migGrant("M", 19968, 43, "3g.20gb", 4, 4)}, {g1(3)}, {g1(2)}},
		},
		{
			name:  "a faulty mig card takes nothing",
			cards: []Card{migCard("M")}, used: []Usage{{Faults: 1}},
			req:    one(Request{Count: 1, MemoryMiB: 4000}),
			reason: "1/1 cards: unhealthy",
		},
		{
			name:  "vgpu-mode mig skips hami-core cards",
			cards: []Card{testCard("A"), migCard("M")}, used: []Usage{{}, {}},
			req:  PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 4000}}, Preferences: Preferences{Mode: "mig"}},
			want: Assignment{{g1(6)}},
		},
		{
			name:  "vgpu-mode hami-core skips mig cards",
			cards: []Card{testCard("A"), migCard("M")}, used: []Usage{{}, {}},
			req:  PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 4000}}, Preferences: Preferences{Mode: "hami-core"}},
			want: Assignment{{nv("A", 4000, 0)}},
		},
		{
			name:  "vgpu-mode mps takes mps cards only, shared like hami-core",
			cards: []Card{testCard("P", withMode(ModeMPS)), migCard("M"), testCard("A")}, used: []Usage{{}, {}, {}},
			req:  PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 4000}}, Preferences: Preferences{Mode: "mps"}},
			want: Assignment{{nv("P", 4000, 0)}},
		},
		{
			name:  "the mig card's memory and cores checks still apply",
			cards: []Card{migCard("M")}, used: []Usage{{Sharers: 1, MemoryMiB: 38000, Cores: 15}},
			req:    one(Request{Count: 1, MemoryMiB: 4000}),
			reason: "insufficient memory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rej := FitPod("NVIDIA", tt.cards, tt.used, &tt.req)
			if tt.want == nil {
				if rej == nil {
					t.Fatalf("fit %v, want a rejection with %q", got, tt.reason)
				}
				if !strings.Contains(rej.Reason(), tt.reason) {
					t.Fatalf("reason %q, want it to contain %q", rej.Reason(), tt.reason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %s", rej.Reason())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestFitPodMIGTopologyResettles(t *testing.T) {
	// Topology-aware collects every slice of the card, then keeps one; it
	// gets the slice HAMi's AddResourceUsage gives: the first free one.
	cards := []Card{migCard("M")}
	req := PodRequest{Containers: []Request{{Count: 1, MemoryMiB: 4000}}, Preferences: Preferences{Policy: CardTopologyAware}}
	got, rej := FitPod("NVIDIA", cards, []Usage{{}}, &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if want := (Assignment{{migGrant("M", 4864, 15, "1g.5gb", 6, 1)}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	two := PodRequest{Containers: []Request{{Count: 2, MemoryMiB: 15000}}, Preferences: Preferences{Policy: CardTopologyAware}}
	got, rej = FitPod("NVIDIA", cards, []Usage{{}}, &two)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if want := (Assignment{{migGrant("M", 19968, 43, "3g.20gb", 4, 4), migGrant("M", 19968, 43, "3g.20gb", 0, 4)}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestNormalizeMIGProfiles(t *testing.T) {
	in := []MIGProfile{
		{Name: "7g.40gb", MemoryMiB: 40192, SliceCount: 7, Placements: []MIGPlacement{{0, 8}}},
		{Name: "4g.20gb", MemoryMiB: 19968, SliceCount: 4, Placements: []MIGPlacement{{0, 4}}},
		{Name: "3g.20gb", MemoryMiB: 19968, SliceCount: 3, Placements: []MIGPlacement{{0, 4}, {4, 4}}},
		{Name: "1g.5gb", MemoryMiB: 4864, SliceCount: 1, Placements: []MIGPlacement{{0, 1}, {7, 2}, {3, 0}, {6, 1}}},
		{Name: "1g.5gb", MemoryMiB: 1, SliceCount: 1, Placements: []MIGPlacement{{0, 1}}},
		{Name: "2g.10gb", MemoryMiB: 9856, SliceCount: 2, Placements: []MIGPlacement{{4, 2}, {0, 2}}},
	}
	want := []MIGProfile{
		// sorted by memory, then slice count; later duplicate names dropped;
		// placements beyond MaxSlices or of size 0 dropped; 1g/3g from the
		// highest start, the others from the lowest.
		{Name: "1g.5gb", MemoryMiB: 4864, SliceCount: 1, Placements: []MIGPlacement{{6, 1}, {0, 1}}},
		{Name: "2g.10gb", MemoryMiB: 9856, SliceCount: 2, Placements: []MIGPlacement{{0, 2}, {4, 2}}},
		{Name: "3g.20gb", MemoryMiB: 19968, SliceCount: 3, Placements: []MIGPlacement{{4, 4}, {0, 4}}},
		{Name: "4g.20gb", MemoryMiB: 19968, SliceCount: 4, Placements: []MIGPlacement{{0, 4}}},
		{Name: "7g.40gb", MemoryMiB: 40192, SliceCount: 7, Placements: []MIGPlacement{{0, 8}}},
	}
	if got := normalizeMIGProfiles(in); !reflect.DeepEqual(got.List, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestApplyReservations(t *testing.T) {
	cards := []Card{migCard("M"), migCard("N"), testCard("A"), testCard("P", withMode(ModeMPS))}
	res := func(uuid string, start, size uint32) SliceReservation {
		return SliceReservation{UUID: uuid, Profile: "1g.5gb", Placement: MIGPlacement{start, size}}
	}
	onM := Assignment{{migGrant("M", 4864, 15, "1g.5gb", 6, 1)}}
	tests := []struct {
		name       string
		a          Assignment
		res        []SliceReservation
		wantFaults []int32
		wantSlices map[int]uint8 // card -> occupied mask
	}{
		{name: "a reservation occupies its slices", a: onM, res: []SliceReservation{res("M", 6, 1)}, wantFaults: []int32{0, 0, 0, 0}, wantSlices: map[int]uint8{0: 1 << 6}},
		{name: "reservations of init containers count too", a: Assignment{{}, {migGrant("M", 4864, 15, "1g.5gb", 6, 1)}}, res: []SliceReservation{res("M", 6, 1), res("M", 0, 2)}, wantFaults: []int32{0, 0, 0, 0}, wantSlices: map[int]uint8{0: 1<<6 | 3}},
		{name: "a reservation on a hami-core card faults it", a: onM, res: []SliceReservation{res("M", 6, 1), res("A", 0, 1)}, wantFaults: []int32{0, 0, 1, 0}, wantSlices: map[int]uint8{0: 1 << 6}},
		{name: "a reservation on an mps card faults it", a: onM, res: []SliceReservation{res("M", 6, 1), res("P", 0, 1)}, wantFaults: []int32{0, 0, 0, 1}, wantSlices: map[int]uint8{0: 1 << 6}},
		{name: "a reservation on an unknown card faults every mig card", a: onM, res: []SliceReservation{res("M", 6, 1), res("X", 0, 1)}, wantFaults: []int32{1, 1, 0, 0}, wantSlices: map[int]uint8{0: 1 << 6}},
		{name: "a mig card granted without a reservation faults", a: onM, res: nil, wantFaults: []int32{1, 0, 0, 0}},
		{name: "a reservation beyond MaxSlices faults its card", a: onM, res: []SliceReservation{res("M", 7, 2)}, wantFaults: []int32{1, 0, 0, 0}},
		{name: "hami-core grants need no reservation", a: Assignment{{nv("A", 1000, 0)}}, res: nil, wantFaults: []int32{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := make([]Usage, len(cards))
			ApplyReservations(cards, used, tt.a, tt.res, true)
			for i := range cards {
				if used[i].Faults != tt.wantFaults[i] {
					t.Errorf("card %s faults %d, want %d", cards[i].UUID, used[i].Faults, tt.wantFaults[i])
				}
				if got := used[i].occupied(); got != tt.wantSlices[i] {
					t.Errorf("card %s slices %08b, want %08b", cards[i].UUID, got, tt.wantSlices[i])
				}
			}
			ApplyReservations(cards, used, tt.a, tt.res, false)
			if !reflect.DeepEqual(used, make([]Usage, len(cards))) {
				t.Errorf("add then remove left %+v", used)
			}
		})
	}
}

func TestApplyReservationsOverlapCounts(t *testing.T) {
	// Two overlapping reservations: releasing one keeps the other's slices.
	cards := []Card{migCard("M")}
	used := make([]Usage, 1)
	a := Assignment{{migGrant("M", 4864, 15, "1g.5gb", 6, 1)}}
	r1 := []SliceReservation{{UUID: "M", Profile: "1g.5gb", Placement: MIGPlacement{6, 1}}}
	r2 := []SliceReservation{{UUID: "M", Profile: "2g.10gb", Placement: MIGPlacement{6, 2}}}
	ApplyReservations(cards, used, a, r1, true)
	ApplyReservations(cards, used, a, r2, true)
	ApplyReservations(cards, used, a, r1, false)
	if got := used[0].occupied(); got != 3<<6 {
		t.Fatalf("slices %08b, want %08b", got, 3<<6)
	}
}

func TestReservations(t *testing.T) {
	a := Assignment{{}, {nv("A", 1, 0), migGrant("M", 4864, 15, "1g.5gb", 6, 1)}, {migGrant("M", 9856, 29, "2g.10gb", 0, 2)}}
	want := []SliceReservation{
		{Container: 1, Device: 1, UUID: "M", Profile: "1g.5gb", Placement: MIGPlacement{6, 1}},
		{Container: 2, Device: 0, UUID: "M", Profile: "2g.10gb", Placement: MIGPlacement{0, 2}},
	}
	if got := Reservations(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := Reservations(Assignment{{nv("A", 1, 0)}}); got != nil {
		t.Fatalf("hami-core only: got %+v, want nil", got)
	}
}

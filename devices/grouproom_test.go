package devices

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// roomCards is a cluster for GroupRoom: cards per node with their usage.
type roomCards struct {
	cards [][]Card
	used  [][]Usage
}

func (r roomCards) visit(fn func([]Card, []Usage)) {
	for i := range r.cards {
		fn(r.cards[i], r.used[i])
	}
}

// cluster has nodes nodes of one healthy card each, of memMiB memory, 100
// cores and split 10, all free.
func cluster(nodes int, memMiB int32) roomCards {
	var r roomCards
	for i := range nodes {
		r.cards = append(r.cards, []Card{{UUID: "GPU-" + string(rune('a'+i)), Split: 10, MemoryMiB: memMiB, Cores: 100, Healthy: true}})
		r.used = append(r.used, []Usage{{}})
	}
	return r
}

func member(containers ...Request) PodRequest { return PodRequest{Containers: containers} }

func TestGroupRoom(t *testing.T) {
	mem30 := Request{Count: 1, MemoryMiB: 30000}
	tests := []struct {
		name    string
		cluster roomCards
		members []PodRequest
		need    int
		want    string // "" when the members may fit, else a part of the shortfall
	}{
		{"three of 30 GiB on two cards of 40 GiB", cluster(2, 40960), []PodRequest{member(mem30), member(mem30), member(mem30)}, 3, "3 members need 3 card shares of 30000 MiB"},
		{"two of 30 GiB on two cards of 40 GiB", cluster(2, 40960), []PodRequest{member(mem30), member(mem30)}, 2, ""},
		{"two of three needed", cluster(2, 40960), []PodRequest{member(mem30), member(mem30), member(mem30)}, 2, ""},
		{"need 0", cluster(0, 0), []PodRequest{member(mem30)}, 0, ""},
		{"members asking nothing fit anywhere", cluster(1, 40960), []PodRequest{member(), member(mem30), member(mem30)}, 2, ""},
		{"members asking nothing do not make room", cluster(1, 40960), []PodRequest{member(), member(mem30), member(mem30)}, 3, "2 card shares"},
		{"four of 10 GiB share one card", cluster(1, 40960), []PodRequest{member(Request{Count: 1, MemoryMiB: 10240}), member(Request{Count: 1, MemoryMiB: 10240}), member(Request{Count: 1, MemoryMiB: 10240}), member(Request{Count: 1, MemoryMiB: 10240})}, 4, ""},
		{"split limits sharers", func() roomCards { r := cluster(1, 40960); r.cards[0][0].Split = 2; return r }(), []PodRequest{member(Request{Count: 1, MemoryMiB: 100}), member(Request{Count: 1, MemoryMiB: 100}), member(Request{Count: 1, MemoryMiB: 100})}, 3, "need 3 card shares"},
		{"exclusive cores take the card alone", cluster(2, 40960), []PodRequest{member(Request{Count: 1, MemoryMiB: 100, Cores: 100}), member(Request{Count: 1, MemoryMiB: 100, Cores: 100}), member(Request{Count: 1, MemoryMiB: 100, Cores: 100})}, 3, "100% cores"},
		{"a used card takes no exclusive grant", func() roomCards { r := cluster(2, 40960); r.used[0][0] = Usage{Sharers: 1, MemoryMiB: 10}; return r }(), []PodRequest{member(Request{Count: 1, Cores: 100, MemoryPercent: 10}), member(Request{Count: 1, Cores: 100, MemoryPercent: 10})}, 2, "need 2"},
		{"unhealthy and cordoned cards count nothing", func() roomCards {
			r := cluster(3, 40960)
			r.cards[0][0].Healthy = false
			r.cards[1][0].Cordoned = true
			return r
		}(), []PodRequest{member(mem30), member(mem30)}, 2, "the cluster has 1 free"},
		{"used memory counts", func() roomCards { r := cluster(2, 40960); r.used[1][0] = Usage{Sharers: 1, MemoryMiB: 20000}; return r }(), []PodRequest{member(mem30), member(mem30)}, 2, "has 1 free"},
		{"a member asking two cards", cluster(2, 40960), []PodRequest{member(Request{Count: 2, MemoryMiB: 30000}), member(mem30)}, 2, "need 3"},
		{"percent of memory", cluster(2, 40960), []PodRequest{member(Request{Count: 1, MemoryPercent: 60}), member(Request{Count: 1, MemoryPercent: 60}), member(Request{Count: 1, MemoryPercent: 60})}, 3, "60% memory"},
		{"init containers alone ask their largest", cluster(1, 40960), []PodRequest{{Containers: []Request{mem30, {Count: 1, MemoryMiB: 100}, {}}, Inits: 2}, {Containers: []Request{mem30, {}}, Inits: 1}}, 2, "need 2 card shares of 30000 MiB"},
		{"mixed shapes that fit in total", cluster(2, 40960), []PodRequest{member(Request{Count: 1, MemoryMiB: 20000}), member(Request{Count: 1, MemoryMiB: 30000})}, 2, ""},
		{"mixed shapes short of memory", cluster(2, 40960), []PodRequest{member(Request{Count: 1, MemoryMiB: 40000}), member(Request{Count: 1, MemoryMiB: 30000}), member(Request{Count: 1, MemoryMiB: 20000})}, 3, "MiB of memory"},
		{"mixed shapes, the smallest needed", cluster(2, 40960), []PodRequest{member(Request{Count: 1, MemoryMiB: 40000}), member(Request{Count: 1, MemoryMiB: 30000}), member(Request{Count: 1, MemoryMiB: 20000})}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GroupRoom("NVIDIA", tt.members, tt.need, tt.cluster.visit)
			switch {
			case tt.want == "" && got != nil:
				t.Fatalf("GroupRoom = %v, want room", got)
			case tt.want != "" && got == nil:
				t.Fatalf("GroupRoom found room, want %q", tt.want)
			case tt.want != "" && !strings.Contains(got.Error(), tt.want):
				t.Fatalf("GroupRoom = %q, want it to contain %q", got.Error(), tt.want)
			}
		})
	}
}

// TestGroupRoomNeverTurnsAwayAPlacement places members one by one with
// FitPod on random clusters (each member on the first node that takes it);
// whenever need of them were placed so, GroupRoom must have found room:
// it may let through groups that cannot fit, never turn away one that can.
func TestGroupRoomNeverTurnsAwayAPlacement(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	shapes := []Request{
		{Count: 1, MemoryMiB: 10000}, {Count: 1, MemoryMiB: 30000}, {Count: 2, MemoryMiB: 8000},
		{Count: 1, MemoryPercent: 50}, {Count: 1, MemoryMiB: 1000, Cores: 30}, {Count: 1, MemoryMiB: 1000, Cores: 100},
		{Count: 1, Cores: 0, MemoryMiB: 0, MemoryPercent: 100},
	}
	placedRuns := 0
	for run := range 3000 {
		nodes := 1 + rng.IntN(4)
		var r roomCards
		for n := range nodes {
			cards := make([]Card, 1+rng.IntN(3))
			used := make([]Usage, len(cards))
			for i := range cards {
				cards[i] = Card{UUID: fmt.Sprintf("GPU-%d-%d", n, i), Split: int32(1 + rng.IntN(4)), MemoryMiB: int32(16384 * (1 + rng.IntN(3))), Cores: 100, Healthy: rng.IntN(10) > 0}
				if rng.IntN(3) == 0 {
					used[i] = Usage{Sharers: 1, MemoryMiB: int64(rng.IntN(int(cards[i].MemoryMiB))), Cores: int64(rng.IntN(60))}
				}
			}
			r.cards, r.used = append(r.cards, cards), append(r.used, used)
		}
		uniform := rng.IntN(2) == 0
		first := shapes[rng.IntN(len(shapes))]
		members := make([]PodRequest, 1+rng.IntN(5))
		for i := range members {
			s := first
			if !uniform {
				s = shapes[rng.IntN(len(shapes))]
			}
			members[i] = member(s)
		}
		need := 1 + rng.IntN(len(members))
		// Place greedily on a copy of the usage.
		used := make([][]Usage, len(r.used))
		for i := range r.used {
			used[i] = append([]Usage(nil), r.used[i]...)
		}
		placed := 0
		for i := range members {
			for n := range r.cards {
				if a, rej := FitPod("NVIDIA", r.cards[n], used[n], &members[i]); rej == nil {
					ApplyGrants(r.cards[n], used[n], a, 0, true)
					placed++
					break
				}
			}
		}
		if placed < need {
			continue
		}
		placedRuns++
		if got := GroupRoom("NVIDIA", members, need, r.visit); got != nil {
			t.Fatalf("run %d: %d of %d members were placed (%d needed), but GroupRoom says %v", run, placed, len(members), need, got)
		}
	}
	if placedRuns < 500 {
		t.Fatalf("only %d runs placed enough members; the test checks too little", placedRuns)
	}
}

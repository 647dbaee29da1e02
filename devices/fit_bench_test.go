package devices

import (
	"fmt"
	"testing"
)

func BenchmarkFitPod(b *testing.B) {
	// An 8-card node, half of it already shared.
	cards := make([]Card, 8)
	used := make([]Usage, 8)
	for i := range cards {
		cards[i] = testCard(fmt.Sprintf("GPU-%d", i), onNUMA(i/4))
		if i%2 == 0 {
			used[i] = Usage{Sharers: int32(i/2 + 1), MemoryMiB: int64(1000 * (i + 1)), Cores: int64(5 * i)}
		}
	}
	card := Request{Count: 1, MemoryMiB: 2000, Cores: 10}
	benchmarks := []struct {
		name string
		req  PodRequest
	}{
		{name: "one container one card", req: PodRequest{Containers: []Request{card}}},
		{name: "four containers one card each", req: PodRequest{Containers: []Request{card, card, card, card}}},
		{
			name: "four containers binpack NUMA bind",
			req:  PodRequest{Containers: []Request{card, card, card, card}, Preferences: Preferences{Policy: CardBinpack, NUMABind: true}},
		},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := FitPod("NVIDIA", cards, used, &bm.req); rej != nil {
					b.Fatalf("rejected: %s", rej.Reason())
				}
			}
		})
	}
}

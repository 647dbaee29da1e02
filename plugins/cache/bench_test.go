package cache

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkCacheMemory reports the heap a cache of 5,000 and of 10,000
// nodes with 8 cards each holds, with 4 pods accounted per node: it grows
// linearly with the inventory, nothing else.
func BenchmarkCacheMemory(b *testing.B) {
	for _, nodes := range []int{2000, 5000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchmarkCacheMemory(b, nodes) })
	}
}

func benchmarkCacheMemory(b *testing.B, nodes int) {
	const cardsPerNode, podsPerNode = 8, 4
	names := make([]string, 0, nodes)
	for i := 0; i < nodes; i++ {
		names = append(names, fmt.Sprintf("node-%05d", i))
	}
	b.ResetTimer()
	var heap uint64
	for n := 0; n < b.N; n++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		c := newCache(b)
		for i, node := range names {
			c.SetNode(gpuNode(node, cardsPerNode))
			for p := 0; p < podsPerNode; p++ {
				card := fmt.Sprintf("%s-gpu%d", node, p)
				if err := c.SetPod(boundPod(fmt.Sprintf("%d-%d", i, p), node, card+",NVIDIA,1000,10:;")); err != nil {
					b.Fatal(err)
				}
			}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(c)
	}
	b.ReportMetric(float64(heap)/(1<<20), "MiB")
	b.ReportMetric(float64(nodes*cardsPerNode), "cards")
}

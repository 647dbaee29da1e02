package plugins

import (
	"fmt"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// benchPods are the pod shapes of the benchmarks: one container with one
// shared card, and four containers with one card each.
var benchPods = []struct {
	name string
	pod  func() *corev1.Pod
}{
	{"1card", func() *corev1.Pod { return gpuPod("bench", gpu(1, 4000, 20)) }},
	{"4containers", func() *corev1.Pod {
		return gpuPod("bench", gpu(1, 4000, 20), gpu(1, 4000, 20), gpu(1, 4000, 20), gpu(1, 4000, 20))
	}},
}

// benchHarness is a plugin over one node with 8 cards of 40 GiB, three of
// them already shared by resident pods.
func benchHarness(b *testing.B) (*harness, fwk.NodeInfo) {
	h := newHarness(b, nil, eightCardNode("n1"))
	for i := 0; i < 3; i++ {
		h.schedule(gpuPod(fmt.Sprintf("resident-%d", i), gpu(1, 10000, 30)), "n1")
	}
	return h, h.nodeInfo("n1")
}

func BenchmarkPreFilter(b *testing.B) {
	for _, bp := range benchPods {
		b.Run(bp.name, func(b *testing.B) {
			h, ni := benchHarness(b)
			pod := bp.pod()
			nodes := []fwk.NodeInfo{ni}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, st := h.preFilter(pod, nodes...); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}

func BenchmarkFilter(b *testing.B) {
	for _, bp := range benchPods {
		b.Run(bp.name, func(b *testing.B) {
			h, ni := benchHarness(b)
			pod := bp.pod()
			state, _ := h.preFilter(pod, ni)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}

func BenchmarkScore(b *testing.B) {
	for _, bp := range benchPods {
		b.Run(bp.name, func(b *testing.B) {
			h, ni := benchHarness(b)
			pod := bp.pod()
			state, _ := h.preFilter(pod, ni)
			if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
				b.Fatal(st)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, st := h.plugin.Score(h.ctx, state, pod, ni); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}

// BenchmarkReserve assumes the pod's cards; re-assuming the same pod
// replaces its previous entry, so the cache stays the same size.
func BenchmarkReserve(b *testing.B) {
	for _, bp := range benchPods {
		b.Run(bp.name, func(b *testing.B) {
			h, ni := benchHarness(b)
			pod := bp.pod()
			state, _ := h.preFilter(pod, ni)
			if st := h.plugin.Filter(h.ctx, state, pod, ni); !st.IsSuccess() {
				b.Fatal(st)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if st := h.plugin.Reserve(h.ctx, state, pod, "n1"); !st.IsSuccess() {
					b.Fatal(st)
				}
			}
		})
	}
}

// BenchmarkPreFilterCandidates is PreFilter choosing the candidateNodes
// (100) nodes of a 2,000-node cluster for a 1-card pod: a quarter of the
// nodes partly used, 150 full (every share taken; binpack tries them
// first).
func BenchmarkPreFilterCandidates(b *testing.B) {
	for _, policy := range []devices.NodePolicy{devices.NodeBinpack, devices.NodeSpread} {
		b.Run(string(policy), func(b *testing.B) {
			objs := make([]runtime.Object, 2000)
			for i := range objs {
				objs[i] = eightCardNode(fmt.Sprintf("n%04d", i))
			}
			h := newHarness(b, nil, objs...)
			for i := 0; i < 500; i++ {
				h.schedule(gpuPod(fmt.Sprintf("resident-%d", i), gpu(1, 10000, 30)), fmt.Sprintf("n%04d", i*4))
			}
			// 150 full nodes, which binpack ranks first: 80 sharers each.
			for n := 1; n <= 150; n++ {
				for i := 0; i < 80; i++ {
					h.schedule(gpuPod(fmt.Sprintf("full-%d-%d", n, i), gpu(1, 500, 1)), fmt.Sprintf("n%04d", n*4+1))
				}
			}
			pod := gpuPod("bench", gpu(1, 4000, 20))
			pod.Annotations[devices.NodePolicyAnnotation] = string(policy)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, st := h.plugin.PreFilter(h.ctx, framework.NewCycleState(), pod, nil)
				if !st.IsSuccess() || res.AllNodes() || len(res.NodeNames) != 100 {
					b.Fatalf("%v, %v", res, st)
				}
			}
		})
	}
}

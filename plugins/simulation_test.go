package plugins

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// The simulation places pods as Filter would, on the cards as the cache
// holds them, one after another, and says in Filter's words why a pod
// fits nowhere; a fork leaves the original as it was.
func TestSimulationPlaces(t *testing.T) {
	// Two cards of 40 GiB, each holding 20,960 MiB: 20,000 MiB free on each.
	node := gpuNode("n1", card("a", 40960), card("b", 40960))
	var objs []runtime.Object
	objs = append(objs, node)
	for _, id := range []string{"a", "b"} {
		p := gpuPod("filler-"+id, gpu(1, 20960, 0))
		p.Spec.NodeName = "n1"
		p.Annotations[nvidia.AllocatedAnnotation] = id + ",NVIDIA,20960,0:;"
		p.Annotations[devices.AssignedNode] = "n1"
		objs = append(objs, p)
	}
	h := newHarness(t, nil, objs...)
	sim, ok := h.plugin.Simulate()
	if !ok {
		t.Fatal("cache not synced")
	}
	if node, why, ok := sim.Fork().Place(gpuPod("big", gpu(1, 30000, 0))); ok {
		t.Fatalf("30000 MiB placed on %s", node)
	} else if !strings.Contains(why, "1 insufficient NVIDIA devices: insufficient memory") {
		t.Errorf("why: %q", why)
	}
	for i := range 2 {
		if _, why, ok := sim.Place(gpuPod("small", gpu(1, 20000, 0))); !ok {
			t.Fatalf("small pod %d: %s", i, why)
		}
	}
	if _, _, ok := sim.Place(gpuPod("small", gpu(1, 20000, 0))); ok {
		t.Fatal("a third 20000 MiB pod fits on two cards with 20000 MiB free")
	}
	if got := h.plugin.Describe(gpuPod("big", gpu(1, 30000, 0))); got != "1 NVIDIA card of 30000 MiB and 0% cores" {
		t.Errorf("Describe: %q", got)
	}
	// The pod's node selector keeps it off a node it may not go to.
	p := gpuPod("elsewhere", gpu(1, 1000, 0))
	p.Spec.NodeSelector = map[string]string{"pool": "other"}
	if _, why, ok := sim.Fork().Place(p); ok || !strings.Contains(why, "may not go to") {
		t.Errorf("pod with a node selector no node matches: ok %v, %q", ok, why)
	}
}

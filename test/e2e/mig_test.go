package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// TestMigSlices runs pods on a node whose device plugin is in mig mode (an
// A100-SXM4-40GB with the chart's allowlist: 1g.5gb, 2g.10gb, 3g.20gb,
// 7g.40gb): each pod gets the smallest profile that holds its gpumem at a
// free placement, never a hami-core share, and the scheduler writes the
// exact assignment and hami.io/vgpu-mig-allocations the device plugin
// reads. A pod that finds no free placement stays Pending and says why;
// it runs once the slices it needs are freed. A restarted scheduler sees
// the same slices taken.
func TestMigSlices(t *testing.T) {
	e := newEnv(t, "mig-slices")
	nodes := e.addNodes("1 node x 1 card of NVIDIA A100-SXM4-40GB 40 GiB, mig", nil)
	gpuID := simnode.CardUUID(nodes[0].Name, 0)
	slice := func(ci, di int, profile string, start, size int) string {
		return fmt.Sprintf(`{"containerIndex":%d,"deviceIndex":%d,"gpuUUID":%q,"profile":%q,"placement":{"start":%d,"size":%d}}`, ci, di, gpuID, profile, start, size)
	}
	entry := func(mem, cores int) string { return fmt.Sprintf("%s,NVIDIA,%d,%d:", gpuID, mem, cores) }
	steps := []struct {
		pod        string
		request    gpu
		assignment string
		slices     string
	}{
		// 15000 MiB: 3g.20gb, whose placements are tried from the top.
		{"big", gpu{cards: 1, memory: 15000}, entry(19968, 43) + ";", "[" + slice(0, 0, "3g.20gb", 4, 4) + "]"},
		// 4000 MiB: 1g.5gb, at the highest free slice.
		{"small", gpu{cards: 1, memory: 4000}, entry(4864, 15) + ";", "[" + slice(0, 0, "1g.5gb", 3, 1) + "]"},
		// Two slices of the one card (more cards than the node has).
		{"pair", gpu{cards: 2, memory: 4000}, entry(4864, 15) + entry(4864, 15) + ";",
			"[" + slice(0, 0, "1g.5gb", 2, 1) + "," + slice(0, 1, "1g.5gb", 1, 1) + "]"},
	}
	for _, s := range steps {
		e.create(e.pod(s.pod, s.request))
		p := e.waitRunning(s.pod)
		for _, key := range []string{nvidia.AllocatedAnnotation} {
			if got := p.Annotations[key]; got != s.assignment {
				t.Errorf("%s: %s = %q, want %q", s.pod, key, got, s.assignment)
			}
		}
		if got := p.Annotations[nvidia.MIGAllocationsAnnotation]; got != s.slices {
			t.Errorf("%s: %s = %s\nwant %s", s.pod, nvidia.MIGAllocationsAnnotation, got, s.slices)
		}
	}
	checkNoOverlap(e)

	// 5000 MiB fits the memory left (6400 MiB) but no 2g.10gb or bigger
	// placement is free (slices 1-7 are taken).
	e.create(e.pod("mid", gpu{cards: 1, memory: 5000}))
	if msg := e.waitUnschedulable("mid"); !strings.Contains(msg, "no free MIG slice") {
		t.Errorf("mid: FailedScheduling %q does not say no free MIG slice", msg)
	}
	// A pod that wants hami-core cards finds none.
	hamiCore := e.pod("hami-core", gpu{cards: 1, memory: 1000})
	hamiCore.Annotations = map[string]string{nvidia.ModeAnnotation: "hami-core"}
	e.create(hamiCore)
	if msg := e.waitUnschedulable("hami-core"); !strings.Contains(msg, "sharing mode not wanted") {
		t.Errorf("hami-core: FailedScheduling %q does not say sharing mode not wanted", msg)
	}

	// Freeing slices 1 and 2 lets mid run on 2g.10gb at {0, 2}.
	e.deletePod("pair")
	p := e.waitRunning("mid")
	if got, want := p.Annotations[nvidia.MIGAllocationsAnnotation], "["+slice(0, 0, "2g.10gb", 0, 2)+"]"; got != want {
		t.Errorf("mid: %s = %s\nwant %s", nvidia.MIGAllocationsAnnotation, got, want)
	}
	if got, want := p.Annotations[nvidia.AllocatedAnnotation], entry(9856, 29)+";"; got != want {
		t.Errorf("mid: assignment %q, want %q", got, want)
	}
	checkNoOverlap(e)
	e.checkAccounting()

	// A restarted scheduler rebuilds the slices from the pods' annotations:
	// slice 2 alone is free.
	restartScheduler(t, nil)
	e.create(e.pod("after-restart", gpu{cards: 1, memory: 4000}))
	p = e.waitRunning("after-restart")
	if got, want := p.Annotations[nvidia.MIGAllocationsAnnotation], "["+slice(0, 0, "1g.5gb", 2, 1)+"]"; got != want {
		t.Errorf("after-restart: %s = %s\nwant %s", nvidia.MIGAllocationsAnnotation, got, want)
	}
	// The profiles' cores are rounded up (ceil(SMs x 100 / 98)), so the
	// card's slices now hold 43+15+29+15 = 102 cores: as in HAMi, nothing
	// more fits, for want of cores before slices.
	e.create(e.pod("full", gpu{cards: 1, memory: 1000}))
	if msg := e.waitUnschedulable("full"); !strings.Contains(msg, "insufficient cores") {
		t.Errorf("full: FailedScheduling %q does not say insufficient cores", msg)
	}
	checkNoOverlap(e)
	e.checkNodeUnlocked(nodes[0].Name)
}

// checkNoOverlap fails the test if two live slices of the test's pods
// overlap on one card.
func checkNoOverlap(e *env) {
	e.t.Helper()
	type held struct {
		pod        string
		start, end int
	}
	byCard := map[string][]held{}
	for _, p := range e.pods() {
		raw, ok := p.Annotations[nvidia.MIGAllocationsAnnotation]
		if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		var slices []struct {
			GPU       string `json:"gpuUUID"`
			Placement struct {
				Start, Size int
			} `json:"placement"`
		}
		if err := json.Unmarshal([]byte(raw), &slices); err != nil {
			e.t.Errorf("pod %s: %s: %v", p.Name, nvidia.MIGAllocationsAnnotation, err)
			continue
		}
		for _, s := range slices {
			h := held{pod: p.Name, start: s.Placement.Start, end: s.Placement.Start + s.Placement.Size}
			for _, o := range byCard[s.GPU] {
				if h.start < o.end && o.start < h.end {
					e.t.Errorf("card %s: %s [%d,%d) overlaps %s [%d,%d)", s.GPU, h.pod, h.start, h.end, o.pod, o.start, o.end)
				}
			}
			byCard[s.GPU] = append(byCard[s.GPU], h)
		}
	}
}

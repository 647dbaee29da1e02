package cache

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// migNode is a node whose n A100-40GB cards (name-m0, ...) are in mig
// mode, as HAMi's device plugin registers them with the chart's allowlist.
func migNode(name string, n int) *corev1.Node {
	const profiles = `"migProfiles":[` +
		`{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1},{"start":1,"size":1},{"start":2,"size":1},{"start":3,"size":1},{"start":4,"size":1},{"start":5,"size":1},{"start":6,"size":1}]},` +
		`{"name":"2g.10gb","memoryMB":9856,"core":29,"sliceCount":2,"placements":[{"start":0,"size":2},{"start":2,"size":2},{"start":4,"size":2}]},` +
		`{"name":"3g.20gb","memoryMB":19968,"core":43,"sliceCount":3,"placements":[{"start":0,"size":4},{"start":4,"size":4}]},` +
		`{"name":"7g.40gb","memoryMB":40192,"core":100,"sliceCount":7,"placements":[{"start":0,"size":8}]}]`
	var cards []string
	for i := 0; i < n; i++ {
		cards = append(cards, fmt.Sprintf(`{"id":"%s-m%d","index":%d,"count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"mig","health":true,%s}`, name, i, i, profiles))
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			nvidia.RegisterAnnotation: "[" + strings.Join(cards, ",") + "]",
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			"nvidia.com/gpu": *resource.NewQuantity(int64(n*7), resource.DecimalSI),
		}},
	}
}

func migPod(uid, node, assignment, allocations string) *corev1.Pod {
	p := boundPod(uid, node, assignment)
	if allocations != "" {
		p.Annotations[nvidia.MIGAllocationsAnnotation] = allocations
	}
	return p
}

func reservation(ci, di int, uuid, profile string, start, size uint32) string {
	return fmt.Sprintf(`{"containerIndex":%d,"deviceIndex":%d,"gpuUUID":%q,"profile":%q,"placement":{"start":%d,"size":%d}}`, ci, di, uuid, profile, start, size)
}

// slices renders which MIG slices of a card are taken, e.g. "......xx".
func takenSlices(u devices.Usage) string {
	var b strings.Builder
	for _, n := range u.Slices {
		if n > 0 {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func TestMIGReservationsAccounting(t *testing.T) {
	oneG := reservation(0, 0, "n1-m0", "1g.5gb", 6, 1)
	tests := []struct {
		name       string
		node       *corev1.Node
		pod        *corev1.Pod
		wantSlices []string
		wantFaults []int32
	}{
		{
			name:       "a reservation takes its slices",
			node:       migNode("n1", 2),
			pod:        migPod("p", "n1", "n1-m0,NVIDIA,4864,15:;", "["+oneG+"]"),
			wantSlices: []string{"......x.", "........"}, wantFaults: []int32{0, 0},
		},
		{
			name: "every reservation counts, including those no card entry matches",
			node: migNode("n1", 2),
			pod: migPod("p", "n1", "n1-m0,NVIDIA,4864,15:;", "["+oneG+","+
				reservation(1, 0, "n1-m1", "2g.10gb", 0, 2)+"]"),
			wantSlices: []string{"......x.", "xx......"}, wantFaults: []int32{0, 0},
		},
		{
			name:       "a mig card entry without a reservation faults the card",
			node:       migNode("n1", 2),
			pod:        migPod("p", "n1", "n1-m0,NVIDIA,4864,15:;", ""),
			wantSlices: []string{"........", "........"}, wantFaults: []int32{1, 0},
		},
		{
			name:       "an undecodable value is ignored: the card faults",
			node:       migNode("n1", 2),
			pod:        migPod("p", "n1", "n1-m0,NVIDIA,4864,15:;", `[{"containerIndex":0}]`),
			wantSlices: []string{"........", "........"}, wantFaults: []int32{1, 0},
		},
		{
			name:       "a reservation on an unknown card faults every mig card",
			node:       migNode("n1", 2),
			pod:        migPod("p", "n1", "n1-m0,NVIDIA,4864,15:;", "["+oneG+","+reservation(0, 1, "GPU-gone", "1g.5gb", 0, 1)+"]"),
			wantSlices: []string{"......x.", "........"}, wantFaults: []int32{1, 1},
		},
		{
			name:       "a reservation on a hami-core card faults it",
			node:       gpuNode("n1", 2),
			pod:        migPod("p", "n1", "n1-gpu0,NVIDIA,4864,15:;", "["+reservation(0, 0, "n1-gpu0", "1g.5gb", 6, 1)+"]"),
			wantSlices: []string{"........", "........"}, wantFaults: []int32{1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t)
			c.SetNode(tt.node)
			mustSetPod(t, c, tt.pod)
			check := func(when string) {
				for i, u := range usage(t, c, "n1") {
					if got := takenSlices(u); got != tt.wantSlices[i] {
						t.Errorf("%s: card %d slices %s, want %s", when, i, got, tt.wantSlices[i])
					}
					if u.Faults != tt.wantFaults[i] {
						t.Errorf("%s: card %d faults %d, want %d", when, i, u.Faults, tt.wantFaults[i])
					}
				}
			}
			check("after SetPod")
			// A new inventory recomputes the same usage.
			c.SetNode(tt.node)
			check("after SetNode")
			c.RemovePod(tt.pod)
			for i, u := range usage(t, c, "n1") {
				if u != (devices.Usage{}) {
					t.Errorf("card %d after removal: %+v, want nothing", i, u)
				}
			}
		})
	}
}

func TestMIGAssumeConfirmForget(t *testing.T) {
	g := devices.Grant{UUID: "n1-m0", Vendor: nvidia.VendorWord, MemoryMiB: 4864, Cores: 15, MIG: &devices.MIGSlice{Profile: "1g.5gb", Placement: devices.MIGPlacement{Start: 6, Size: 1}}}
	c := newCache(t)
	c.SetNode(migNode("n1", 1))
	p := migPod("p", "", "", "")
	if err := c.Assume(p, "n1", assignment(g)); err != nil {
		t.Fatal(err)
	}
	if got := takenSlices(usage(t, c, "n1")[0]); got != "......x." {
		t.Fatalf("assumed slices %s, want ......x.", got)
	}
	if h, _ := c.Holding(p.UID); len(h.Slices) != 1 || len(h.Slices[0]) != 1 {
		t.Fatalf("holding slices %+v, want the one reservation", h.Slices)
	}
	c.Forget(p)
	if got := usage(t, c, "n1")[0]; got != (devices.Usage{}) {
		t.Fatalf("after Forget %+v, want nothing", got)
	}
	// Assumed, then the informer sees the annotations: counted once.
	if err := c.Assume(p, "n1", assignment(g)); err != nil {
		t.Fatal(err)
	}
	bound := migPod("p", "n1", "n1-m0,NVIDIA,4864,15:;", "["+reservation(0, 0, "n1-m0", "1g.5gb", 6, 1)+"]")
	mustSetPod(t, c, bound)
	got := usage(t, c, "n1")[0]
	if takenSlices(got) != "......x." || got.Sharers != 1 || got.Faults != 0 {
		t.Fatalf("confirmed usage %+v (slices %s), want one sharer on ......x.", got, takenSlices(got))
	}
	c.RemovePod(bound)
	if got := usage(t, c, "n1")[0]; got != (devices.Usage{}) {
		t.Fatalf("after removal %+v, want nothing", got)
	}
}

func TestMIGInitReservationsOutliveInitContainers(t *testing.T) {
	// HAMi charges every reservation of a counted pod: the init container's
	// instance stays (its pod is alive) after the init container succeeded.
	p := migPod("p", "n1", "n1-m0,NVIDIA,19968,43:;n1-m0,NVIDIA,4864,15:;",
		"["+reservation(0, 0, "n1-m0", "3g.20gb", 4, 4)+","+reservation(1, 0, "n1-m0", "1g.5gb", 3, 1)+"]")
	p.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	p.Spec.Containers = []corev1.Container{{Name: "main"}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	c := newCache(t)
	c.SetNode(migNode("n1", 1))
	mustSetPod(t, c, p)
	got := usage(t, c, "n1")[0]
	if takenSlices(got) != "...xxxxx" || got.Faults != 0 || got.MemoryMiB != 4864 {
		t.Fatalf("usage %+v (slices %s), want the regular grant's memory on ...xxxxx", got, takenSlices(got))
	}
}

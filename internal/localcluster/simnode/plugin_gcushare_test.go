package simnode

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/enflame"
)

// gcuContainer asks n DRS slices.
func gcuContainer(name, n string) corev1.Container {
	return vpContainer(name, map[corev1.ResourceName]string{enflame.DefaultDRSName: n})
}

// gcuPod is a DRS pod as HAMi assigns it, assigned at the time (UnixNano),
// with a record per container (init containers included, as HAMi writes
// them), changed by change ("-" deletes).
func gcuPod(name, assignedTime string, change map[string]string, init []corev1.Container, containers ...corev1.Container) *corev1.Pod {
	records := map[string]map[string]any{}
	for _, c := range append(slices.Clone(init), containers...) {
		records[c.Name] = map[string]any{"allocated": false, "request": quantity(&c, enflame.DefaultDRSName)}
	}
	data, _ := json.Marshal(records)
	p := vpPod(name, map[string]string{
		enflame.AssignedTimeAnnotation:     assignedTime,
		enflame.AssignedAnnotation:         "false",
		enflame.AssignedIndexAnnotation:    "0",
		enflame.AssignedIDAnnotation:       "0",
		enflame.AssignedMinorAnnotation:    "0",
		enflame.AssignedContainersAnnotion: string(data),
		enflame.DRSAllocatedAnnotation:     "n1-enflame-0,Enflame,0,0:;",
	}, containers...)
	p.Spec.InitContainers = init
	for k, v := range change {
		if v == "-" {
			delete(p.Annotations, k)
		} else {
			p.Annotations[k] = v
		}
	}
	return p
}

// gcuAllocated lists the containers whose record is allocated.
func gcuAllocated(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	var records map[string]map[string]any
	if err := json.Unmarshal([]byte(p.Annotations[enflame.AssignedContainersAnnotion]), &records); err != nil {
		t.Fatalf("pod %s: %s: %v", p.Name, enflame.AssignedContainersAnnotion, err)
	}
	var out []string
	for name, r := range records {
		if done, _ := r["allocated"].(bool); done {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// gcuStep is one kubelet call, and what it leaves on pod check.
type gcuStep struct {
	admitted, check string
	container, n    int
	wantErr         string
	wantCalls       string
	wantFlag        string // enflame.com/gcu-assigned of check
	wantAllocated   string // its allocated records, comma-separated
}

// The gcushare model follows EnflameTechnology/gcushare ee04a65 (DRS): it
// LISTs the node's Pending pods, serves the oldest gcu-assigned-time first,
// matches the container by its drs-gcu count, flips gcu-assigned once the
// last regular container is served, serves no init container, and never
// sets bind-phase nor touches the node. dp.check shows which pod it found.
func TestGCUShareAllocate(t *testing.T) {
	const served = "list pods|patch pods "
	tests := []struct {
		name           string
		pods           []*corev1.Pod
		steps          []gcuStep
		wantMismatched int64
	}{
		{name: "one container: served, flag true",
			pods: []*corev1.Pod{gcuPod("p", "100", nil, nil, gcuContainer("c0", "3"))},
			steps: []gcuStep{{admitted: "p", check: "p", n: 3,
				wantCalls: served + "p", wantFlag: "true", wantAllocated: "c0"}}},
		{name: "two containers of one count: spec order, the flag after the last",
			pods: []*corev1.Pod{gcuPod("p", "100", nil, nil, gcuContainer("c0", "3"), gcuContainer("c1", "3"))},
			steps: []gcuStep{
				{admitted: "p", check: "p", n: 3, wantCalls: served + "p", wantFlag: "false", wantAllocated: "c0"},
				{admitted: "p", check: "p", container: 1, n: 3, wantCalls: served + "p", wantFlag: "true", wantAllocated: "c0,c1"},
			}},
		{name: "matched by count, not position",
			pods: []*corev1.Pod{gcuPod("p", "100", nil, nil, gcuContainer("c0", "3"), gcuContainer("c1", "1"))},
			steps: []gcuStep{{admitted: "p", check: "p", container: 1, n: 1,
				wantCalls: served + "p", wantFlag: "false", wantAllocated: "c1"}}},
		{name: "the older assigned-time is served while the newer pod is admitted",
			pods: []*corev1.Pod{
				gcuPod("new", "200", nil, nil, gcuContainer("c0", "2")),
				gcuPod("old", "100", nil, nil, gcuContainer("c0", "2")),
			},
			steps: []gcuStep{
				{admitted: "new", check: "old", n: 2, wantErr: "device plugin found pod ns/old on node n1, not ns/new",
					wantCalls: "list pods", wantFlag: "false", wantAllocated: ""},
				{admitted: "old", check: "old", n: 2, wantCalls: served + "old", wantFlag: "true", wantAllocated: "c0"},
				{admitted: "new", check: "new", n: 2, wantCalls: served + "new", wantFlag: "true", wantAllocated: "c0"},
			},
			wantMismatched: 1},
		{name: "another count passes the older pod by",
			pods: []*corev1.Pod{
				gcuPod("new", "200", nil, nil, gcuContainer("c0", "1")),
				gcuPod("old", "100", nil, nil, gcuContainer("c0", "2")),
			},
			steps: []gcuStep{{admitted: "new", check: "new", n: 1, wantCalls: served + "new", wantFlag: "true", wantAllocated: "c0"}}},
		{name: "the init container's call takes the regular container's record",
			pods: []*corev1.Pod{gcuPod("p", "100", nil, []corev1.Container{gcuContainer("i0", "2")}, gcuContainer("c0", "2"))},
			steps: []gcuStep{
				{admitted: "p", check: "p", n: 2, wantCalls: served + "p", wantFlag: "true", wantAllocated: "c0"},
				{admitted: "p", check: "p", container: 1, n: 2,
					wantErr:   "invalid allocation request: unable to find pod request enflame.com/drs-gcu: 2",
					wantCalls: "list pods", wantFlag: "true", wantAllocated: "c0"},
			}},
		{name: "no gcu-assigned-time: never a candidate",
			pods: []*corev1.Pod{gcuPod("p", "100", map[string]string{enflame.AssignedTimeAnnotation: "-"}, nil, gcuContainer("c0", "3"))},
			steps: []gcuStep{{admitted: "p", check: "p", n: 3,
				wantErr: "invalid allocation request: unable to find pod request enflame.com/drs-gcu: 3", wantCalls: "list pods", wantFlag: "false"}}},
		{name: "gcu-assigned true with a container left: still served",
			pods:  []*corev1.Pod{gcuPod("p", "100", map[string]string{enflame.AssignedAnnotation: "true"}, nil, gcuContainer("c0", "3"), gcuContainer("c1", "3"))},
			steps: []gcuStep{{admitted: "p", check: "p", n: 3, wantCalls: served + "p", wantFlag: "true", wantAllocated: "c0"}}},
		{name: "no assigned minor: the error comes after the patch",
			pods: []*corev1.Pod{gcuPod("p", "100", map[string]string{enflame.AssignedMinorAnnotation: "-"}, nil, gcuContainer("c0", "3"))},
			steps: []gcuStep{{admitted: "p", check: "p", n: 3, wantErr: "pod(name: p, uuid: uid-p) has not been assigned device",
				wantCalls: served + "p", wantFlag: "true", wantAllocated: "c0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{testNode("")}
			pods := map[string]*corev1.Pod{}
			for _, p := range tt.pods {
				objects = append(objects, p)
				pods[p.Name] = p
			}
			h := newVPHarness(t, objects...)
			for i, s := range tt.steps {
				vpWantErr(t, h.allocate(enflame.DefaultDRSName, pods[s.admitted], s.container, s.n), s.wantErr)
				h.wantCalls(s.wantCalls)
				after := h.pod(s.check)
				if got := after.Annotations[enflame.AssignedAnnotation]; got != s.wantFlag {
					t.Errorf("step %d: %s gcu-assigned = %q, want %q", i, s.check, got, s.wantFlag)
				}
				if got := gcuAllocated(t, after); got != s.wantAllocated {
					t.Errorf("step %d: %s allocated = %q, want %q", i, s.check, got, s.wantAllocated)
				}
				h.wantAnnotations(s.check, map[string]string{
					devices.BindPhase: devices.BindPhaseAllocating, enflame.DRSAllocatedAnnotation: "n1-enflame-0,Enflame,0,0:;",
				})
			}
			if got := h.mismatched.Load(); got != tt.wantMismatched {
				t.Errorf("mismatched = %d, want %d", got, tt.wantMismatched)
			}
		})
	}
}

// A candidate whose assigned-containers is not JSON fails every call that
// reaches it in the age order, even one a later pod would match.
func TestGCUShareBadRecords(t *testing.T) {
	bad := gcuPod("old", "100", map[string]string{enflame.AssignedContainersAnnotion: "{"}, nil, gcuContainer("c0", "2"))
	next := gcuPod("new", "200", nil, nil, gcuContainer("c0", "1"))
	h := newVPHarness(t, testNode(""), bad, next)
	vpWantErr(t, h.allocate(enflame.DefaultDRSName, next, 0, 1), "annotation assigned-containers")
	h.wantCalls("list pods")
}

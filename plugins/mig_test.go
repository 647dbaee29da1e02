package plugins

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

// a100MIGNode is a node with one A100-SXM4-40GB in mig mode, registered
// with the chart's allowlist (1g.5gb, 2g.10gb, 3g.20gb, 7g.40gb).
func a100MIGNode(name, uuid string) *corev1.Node {
	register := `[{"id":"` + uuid + `","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"mig","health":true,"migProfiles":[` +
		`{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":0,"size":1},{"start":1,"size":1},{"start":2,"size":1},{"start":3,"size":1},{"start":4,"size":1},{"start":5,"size":1},{"start":6,"size":1}]},` +
		`{"name":"2g.10gb","memoryMB":9856,"core":29,"sliceCount":2,"placements":[{"start":0,"size":2},{"start":2,"size":2},{"start":4,"size":2}]},` +
		`{"name":"3g.20gb","memoryMB":19968,"core":43,"sliceCount":3,"placements":[{"start":0,"size":4},{"start":4,"size":4}]},` +
		`{"name":"7g.40gb","memoryMB":40192,"core":100,"sliceCount":7,"placements":[{"start":0,"size":8}]}]}]`
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{nvidia.RegisterAnnotation: register}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			"nvidia.com/gpu": *resource.NewQuantity(7, resource.DecimalSI),
		}},
	}
}

// TestMIGPodsGetDisjointSlices schedules MIG pods one after another on one
// card: each is assumed at Reserve, so the next gets a free placement, and
// PreBind writes the slice next to the assignment.
func TestMIGPodsGetDisjointSlices(t *testing.T) {
	pods := []*corev1.Pod{
		gpuPod("big", gpu(1, 15000, 0)),
		gpuPod("small", gpu(1, 4000, 0)),
		gpuPod("mid", gpu(1, 8000, 0)),
		gpuPod("mid2", gpu(1, 5000, 0)),
	}
	want := []struct{ assignment, slices string }{
		{"GPU-m,NVIDIA,19968,43:;", `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"3g.20gb","placement":{"start":4,"size":4}}]`},
		{"GPU-m,NVIDIA,4864,15:;", `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":3,"size":1}}]`},
		{"GPU-m,NVIDIA,9856,29:;", `[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"2g.10gb","placement":{"start":0,"size":2}}]`},
	}
	h := newHarness(t, nil, a100MIGNode("n1", "GPU-m"), pods[0], pods[1], pods[2], pods[3])
	for i, w := range want {
		pod := pods[i]
		state := h.schedule(pod, "n1")
		if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
			t.Fatalf("PreBind %s: %v", pod.Name, st)
		}
		// The device plugin releases the lock once it served the pod.
		h.releaseLock("n1")
		got, err := h.client.CoreV1().Pods("default").Get(h.ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[nvidia.AllocatedAnnotation] != w.assignment || got.Annotations[nvidia.ToAllocateAnnotation] != w.assignment {
			t.Errorf("%s: assignment %q, want %q", pod.Name, got.Annotations[nvidia.AllocatedAnnotation], w.assignment)
		}
		if got.Annotations[nvidia.MIGAllocationsAnnotation] != w.slices {
			t.Errorf("%s: %s = %s\nwant %s", pod.Name, nvidia.MIGAllocationsAnnotation, got.Annotations[nvidia.MIGAllocationsAnnotation], w.slices)
		}
	}
	// Slices 0-1, 3 and 4-7 are taken: 5000 MiB fits the memory left but
	// no 2g.10gb (or bigger) placement is free.
	_, st := h.filter(pods[3], "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "no free MIG slice") {
		t.Fatalf("Filter mid2: %v, want unschedulable for lack of a MIG slice", st)
	}
}

func TestMIGHAMiCorePodHasNoExtras(t *testing.T) {
	pod := gpuPod("p", gpu(1, 2000, 30))
	h := newHarness(t, nil, gpuNode("n1", card("GPU-0a", 15360)), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if v, ok := got.Annotations[nvidia.MIGAllocationsAnnotation]; ok {
		t.Fatalf("%s = %q on a hami-core assignment", nvidia.MIGAllocationsAnnotation, v)
	}
}

// releaseLock deletes the node lock, as the device plugin does.
func (h *harness) releaseLock(node string) {
	h.t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, "hami.io/mutex.lock"))
	if _, err := h.client.CoreV1().Nodes().Patch(h.ctx, node, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// migResident is a pod bound to n1 holding one slice of GPU-m.
func migResident(name, profile string, mem, cores, start, size int) *corev1.Pod {
	p := gpuPod(name, gpu(1, int64(mem), 0))
	p.Spec.NodeName = "n1"
	p.Annotations[nvidia.AllocatedAnnotation] = fmt.Sprintf("GPU-m,NVIDIA,%d,%d:;", mem, cores)
	p.Annotations[nvidia.MIGAllocationsAnnotation] = fmt.Sprintf(`[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-m","profile":%q,"placement":{"start":%d,"size":%d}}]`, profile, start, size)
	p.Annotations[devices.AssignedNode] = "n1"
	return p
}

// TestMIGPreemptionSlices: the slices of a victim preemption removes are
// free for the preemptor, and those a nominated pod would take are not.
func TestMIGPreemptionSlices(t *testing.T) {
	tests := []struct {
		name      string
		residents []*corev1.Pod
		victims   []string
		nominated []*corev1.Pod
		pod       *corev1.Pod
		wantCode  fwk.Code
		wantMsg   string
	}{
		{name: "both 3g.20gb placements taken",
			residents: []*corev1.Pod{migResident("v0", "3g.20gb", 19968, 43, 0, 4), migResident("v1", "3g.20gb", 19968, 43, 4, 4)},
			pod:       gpuPod("p", gpu(1, 15000, 0)), wantCode: fwk.Unschedulable, wantMsg: "insufficient memory"},
		{name: "a removed victim's slices are free",
			residents: []*corev1.Pod{migResident("v0", "3g.20gb", 19968, 43, 0, 4), migResident("v1", "3g.20gb", 19968, 43, 4, 4)},
			victims:   []string{"v1"},
			pod:       gpuPod("p", gpu(1, 15000, 0))},
		{name: "room for a 2g.10gb beside the resident",
			residents: []*corev1.Pod{migResident("r", "2g.10gb", 9856, 29, 4, 2)},
			pod:       gpuPod("p", gpu(1, 8000, 0))},
		{name: "a nominated pod's slices are not taken",
			residents: []*corev1.Pod{migResident("r", "2g.10gb", 9856, 29, 4, 2)},
			nominated: []*corev1.Pod{gpuPod("nominated", gpu(2, 8000, 0))},
			pod:       gpuPod("p", gpu(1, 8000, 0)), wantCode: fwk.Unschedulable, wantMsg: "no free MIG slice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{a100MIGNode("n1", "GPU-m")}
			for _, r := range tt.residents {
				objs = append(objs, r)
			}
			h := newHarness(t, nil, objs...)
			waitForPods(t, h, len(tt.residents))
			ni := h.nodeInfo("n1")
			state, st := h.preFilter(tt.pod, ni)
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			sim := state.Clone()
			for _, v := range tt.victims {
				for _, r := range tt.residents {
					if r.Name == v {
						if st := h.plugin.RemovePod(h.ctx, sim, tt.pod, podInfo(t, r), ni); !st.IsSuccess() {
							t.Fatal(st)
						}
					}
				}
			}
			for _, n := range tt.nominated {
				if st := h.plugin.AddPod(h.ctx, sim, tt.pod, podInfo(t, n), ni); !st.IsSuccess() {
					t.Fatalf("AddPod %s: %v", n.Name, st)
				}
			}
			st = h.plugin.Filter(h.ctx, sim, tt.pod, ni)
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantMsg) {
				t.Errorf("Filter = %v %q, want %v %q", st.Code(), st.Message(), tt.wantCode, tt.wantMsg)
			}
		})
	}
}

package simnode

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/cambricon"
)

// cambriconContainer asks one MLU share: vcore, vmemory and HAMi's vmlu.
func cambriconContainer(name string) corev1.Container {
	return vpContainer(name, map[corev1.ResourceName]string{
		cambricon.DefaultCountName: "1", cambricon.DefaultCoresName: "10", cambricon.DefaultMemoryName: "8",
	})
}

// cambriconPod is a pod as HAMi assigns it, with both spellings of the
// served flag "false" (the plugin's CAMBRICON_DSMLU_ASSIGHED and HAMi
// v2.10's CAMBRICON_DSMLU_ASSIGNED) and the profile, changed by change
// ("-" deletes).
func cambriconPod(name string, change map[string]string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{cambriconContainer("c0")}
	}
	p := vpPod(name, map[string]string{
		cambricon.PluginAssignedAnnotation: "false",
		cambricon.AssignedAnnotation:       "false",
		cambricon.ProfileAnnotation:        "0_10_8",
		cambricon.ToAllocateAnnotation:     "n1-cambricon-mlu-0,MLU,2048,10:;",
		cambricon.AllocatedAnnotation:      "n1-cambricon-mlu-0,MLU,2048,10:;",
	}, containers...)
	for k, v := range change {
		if v == "-" {
			delete(p.Annotations, k)
		} else {
			p.Annotations[k] = v
		}
	}
	return p
}

// cambriconHarness is node n1 holding Cambricon's own lock, with the pods.
func cambriconHarness(t *testing.T, pods ...*corev1.Pod) *vpHarness {
	objects := []runtime.Object{vpNode(map[string]string{cambricon.LockAnnotation: testLockTime})}
	for _, p := range pods {
		objects = append(objects, p)
	}
	return newVPHarness(t, objects...)
}

// The kubelet calls vcore then vmemory (both ignored as to content): the
// first call remembers the pod and writes nothing; the second PATCHes
// ASSIGHED=true and the profile instance, then removes
// cambricon.com/dsmlu.lock with a JSON patch. HAMi's keys, bind-phase and
// hami.io/mutex.lock are never touched; a third call finds no candidate.
func TestCambriconTwoCalls(t *testing.T) {
	pod := cambriconPod("p", nil)
	h := cambriconHarness(t, pod)
	calls := kubeletCalls(pod)
	var got []corev1.ResourceName
	for _, kc := range calls {
		got = append(got, kc.call.resource)
	}
	if len(got) != 2 || got[0] != cambricon.DefaultCoresName || got[1] != cambricon.DefaultMemoryName {
		t.Fatalf("kubelet calls %v, want vcore then vmemory (vmlu is no plugin's)", got)
	}
	untouched := map[string]string{
		devices.BindPhase:              devices.BindPhaseAllocating,
		cambricon.AssignedAnnotation:   "false",
		cambricon.ToAllocateAnnotation: "n1-cambricon-mlu-0,MLU,2048,10:;",
		cambricon.AllocatedAnnotation:  "n1-cambricon-mlu-0,MLU,2048,10:;",
	}

	vpWantErr(t, h.dp.Allocate(context.Background(), calls[0].plugin, calls[0].call), "")
	h.wantCalls("list pods")
	h.wantAnnotations("p", map[string]string{cambricon.PluginAssignedAnnotation: "false", cambriconProfileInstanceAnnotation: ""})
	h.wantAnnotations("p", untouched)
	h.wantLock(cambricon.LockAnnotation, true)
	if h.dp.dsmlu.pod != "p" {
		t.Errorf("record = %+v, want pod p", h.dp.dsmlu)
	}

	vpWantErr(t, h.dp.Allocate(context.Background(), calls[1].plugin, calls[1].call), "")
	h.wantCalls("list pods|patch pods p|get nodes n1|patch nodes n1")
	h.wantAnnotations("p", map[string]string{cambricon.PluginAssignedAnnotation: "true", cambriconProfileInstanceAnnotation: "1_256_0_1"})
	h.wantAnnotations("p", untouched)
	h.wantLock(cambricon.LockAnnotation, false)
	if h.dp.dsmlu != (dsmluRecord{}) {
		t.Errorf("record = %+v, want none", h.dp.dsmlu)
	}

	vpWantErr(t, h.allocate(cambriconRealCountsName, pod, 0, 1), "failed to get dynamic smlu candidate pods, err no dynamic smlu candidate pod found")
	h.wantCalls("list pods")
}

// One call each: how the plugin picks its candidate, and what refuses it.
// Every refusal is a plain error with no API write, the lock kept and the
// record cleared.
func TestCambriconCandidate(t *testing.T) {
	const prefix = "failed to get dynamic smlu candidate pods, err "
	tests := []struct {
		name    string
		pod     *corev1.Pod
		others  []*corev1.Pod
		wantErr string
	}{
		{name: "HAMi v2.10's CAMBRICON_DSMLU_ASSIGNED only: no candidate",
			pod:     cambriconPod("p", map[string]string{cambricon.PluginAssignedAnnotation: "-"}),
			wantErr: prefix + "no dynamic smlu candidate pod found"},
		{name: "two candidate pods",
			pod: cambriconPod("p", nil), others: []*corev1.Pod{cambriconPod("q", nil)},
			wantErr: prefix + "number of dynamic smlu candidate pods large than one"},
		{name: "two MLU containers",
			pod:     cambriconPod("p", nil, cambriconContainer("c0"), cambriconContainer("c1")),
			wantErr: prefix + "number of containers of dynamic smlu candidate pod large than one"},
		{name: "no profile",
			pod:     cambriconPod("p", map[string]string{cambricon.ProfileAnnotation: "-"}),
			wantErr: "get profile from annotation pod annotation CAMBRICON_DSMLU_PROFILE not found"},
		{name: "a profile of two parts",
			pod:     cambriconPod("p", map[string]string{cambricon.ProfileAnnotation: "1_2"}),
			wantErr: "get profile from annotation invalid pod annotation 1_2"},
		{name: "a served pod is no candidate",
			pod:     cambriconPod("p", map[string]string{cambricon.PluginAssignedAnnotation: "true"}),
			wantErr: prefix + "no dynamic smlu candidate pod found"},
		{name: "MLUs in an init container only: no candidate",
			pod: func() *corev1.Pod {
				p := cambriconPod("p", nil, corev1.Container{Name: "main"})
				p.Spec.InitContainers = []corev1.Container{cambriconContainer("init")}
				return p
			}(),
			wantErr: prefix + "no dynamic smlu candidate pod found"},
		{name: "a pending pod asking no MLU is no candidate: the pod is served",
			pod: cambriconPod("p", nil), others: []*corev1.Pod{cambriconPod("q", nil, corev1.Container{Name: "cpu"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := cambriconHarness(t, append([]*corev1.Pod{tt.pod}, tt.others...)...)
			h.dp.dsmlu = dsmluRecord{pod: "stale", instance: "1_257_1_1"}
			vpWantErr(t, h.allocate(cambricon.DefaultCoresName, tt.pod, 0, 10), tt.wantErr)
			h.wantCalls("list pods")
			h.wantLock(cambricon.LockAnnotation, true)
			h.wantAnnotations("p", map[string]string{cambricon.PluginAssignedAnnotation: tt.pod.Annotations[cambricon.PluginAssignedAnnotation]})
			want := dsmluRecord{pod: "p", instance: "1_256_0_1"}
			if tt.wantErr != "" {
				want = dsmluRecord{}
				if tt.pod.Annotations[cambricon.ProfileAnnotation] != "0_10_8" {
					want = dsmluRecord{pod: "stale", instance: "1_257_1_1"} // a profile error keeps the record
				}
			}
			if h.dp.dsmlu != want {
				t.Errorf("record = %+v, want %+v", h.dp.dsmlu, want)
			}
		})
	}
}

// On a pod's deletion the plugin (fixNodeLock) gives its lock back for a
// pod with a profile it never served (ASSIGHED still "false") that was
// Pending or Failed: GET the node, UPDATE it without the lock.
func TestCambriconPodDeleted(t *testing.T) {
	tests := []struct {
		name      string
		phase     corev1.PodPhase
		change    map[string]string
		noLock    bool
		wantCalls string
		wantLock  bool
	}{
		{name: "Pending, never served", phase: corev1.PodPending, wantCalls: "get nodes n1|update nodes"},
		{name: "Failed, never served", phase: corev1.PodFailed, wantCalls: "get nodes n1|update nodes"},
		{name: "Running: the lock stays", phase: corev1.PodRunning, wantLock: true},
		{name: "served already", phase: corev1.PodPending, change: map[string]string{cambricon.PluginAssignedAnnotation: "true"}, wantLock: true},
		{name: "no profile", phase: corev1.PodPending, change: map[string]string{cambricon.ProfileAnnotation: "-"}, wantLock: true},
		{name: "HAMi's spelling only", phase: corev1.PodPending, change: map[string]string{cambricon.PluginAssignedAnnotation: "-"}, wantLock: true},
		{name: "no lock to give back", phase: corev1.PodPending, noLock: true, wantCalls: "get nodes n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := cambriconPod("p", tt.change)
			pod.Status.Phase = tt.phase
			h := cambriconHarness(t)
			if tt.noLock {
				h = newVPHarness(t, testNode(""))
			}
			if err := cambriconPodDeleted(context.Background(), h.dp, pod); err != nil {
				t.Fatal(err)
			}
			h.wantCalls(tt.wantCalls)
			h.wantLock(cambricon.LockAnnotation, tt.wantLock)
		})
	}
}

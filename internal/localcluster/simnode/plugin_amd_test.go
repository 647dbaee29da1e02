package simnode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/amd"
)

// amdRegister is a node's hami.io/node-amd-register: card GPU-a with 8
// compute units (devcore).
const amdRegister = `[{"id":"GPU-a","index":1,"count":10,"devmem":196608,"devcore":8,"type":"AMD Instinct MI300X VF","health":true}]`

// amdEntry is an entry card of GPU-a asking cores compute units.
func amdEntry(cores string) string { return "GPU-a,AMD Instinct MI300X VF,16384," + cores + ":" }

// amdPod is an AMD pod with one container per entry, HAMi's two keys
// holding the same value.
func amdPod(name, toAllocate string, containers int) *corev1.Pod {
	var ctrs []corev1.Container
	for i := range containers {
		ctrs = append(ctrs, vpContainer("c"+string(rune('0'+i)), map[corev1.ResourceName]string{amd.DefaultCountName: "1"}))
	}
	return vpPod(name, map[string]string{amd.ToAllocateAnnotation: toAllocate, amd.AllocatedAnnotation: toAllocate}, ctrs...)
}

// amdHolder is a pod of the node that holds compute units of GPU-a.
func amdHolder(name string, phase corev1.PodPhase, cus string) *corev1.Pod {
	p := vpPod(name, map[string]string{amdCUAnnotation: `{"GPU-a":"` + cus + `"}`})
	p.Status.Phase = phase
	return p
}

// amdHarness is node n1 with the card registered, the lock as given, and
// the pods.
func amdHarness(t *testing.T, lock string, pods ...*corev1.Pod) *vpHarness {
	node := testNode(lock)
	node.Annotations[amd.RegisterAnnotation] = amdRegister
	objects := []runtime.Object{node}
	for _, p := range pods {
		objects = append(objects, p)
	}
	h := newVPHarness(t, objects...)
	h.knowCards(map[string]string{amd.RegisterAnnotation: amdRegister})
	return h
}

// The AMD model follows amd-device-plugin 808784f: the list accepts
// allocating only; compute units are taken first-fit from the node-wide
// map rebuilt from every live pod's hami.io/amd-cu-allocated; the lock must
// be the pod's own at the commit; the pod is done after its first
// container; the release leaves a lock not ending with the pod's name.
func TestAMDAllocate(t *testing.T) {
	const (
		commit = "get nodes n1|patch pods p|get pods p"
		done   = "|patch pods p|" + vpRelease
		failed = "|patch pods p|" + vpRelease
	)
	one := amdEntry("4") + ";"
	tests := []struct {
		name       string
		lock       string
		phase      string
		change     map[string]string // pod annotations ("-" deletes)
		others     []*corev1.Pod
		devices    int
		wantErr    string
		wantCalls  string
		wantPhase  string
		wantTA     string
		wantCU     string
		wantLock   bool
		mismatched int64
	}{
		{name: "lock names the pod: erase, lock check, CUs, success, release",
			lock: vpLockedP, devices: 1,
			wantCalls: vpFindLock + "|list pods|patch pods p|" + commit + done,
			wantPhase: devices.BindPhaseSuccess, wantTA: ";", wantCU: `{"GPU-a":"0-3"}`},
		{name: "a second pod on the card gets the CUs after the first's; ended pods hold none",
			lock: vpLockedP, devices: 1,
			others:    []*corev1.Pod{amdHolder("q", corev1.PodRunning, "0-3"), amdHolder("r", corev1.PodSucceeded, "4-7")},
			wantCalls: vpFindLock + "|list pods|patch pods p|" + commit + done,
			wantPhase: devices.BindPhaseSuccess, wantTA: ";", wantCU: `{"GPU-a":"4-7"}`},
		{name: "no lock: found on the list, refused at the commit, the entry stays erased",
			devices: 1, wantErr: "node n1 lock is missing before CU allocation commit",
			wantCalls: vpFindList + "|list pods|patch pods p|get nodes n1|patch pods p|get nodes n1",
			wantPhase: devices.BindPhaseFailed, wantTA: ";"},
		{name: "legacy lock (a bare time): owned by nobody, and not released",
			lock: testLockTime, devices: 1, wantErr: "node n1 lock is owned by /, not ns/p",
			wantCalls: vpFindList + "|list pods|patch pods p|get nodes n1|patch pods p|get nodes n1",
			wantPhase: devices.BindPhaseFailed, wantTA: ";", wantLock: true},
		{name: "count not matched: failed, released, to-allocate kept",
			lock: vpLockedP, devices: 2, wantErr: "device number not matched",
			wantCalls: vpFindLock + "|list pods" + failed, wantPhase: devices.BindPhaseFailed, wantTA: one},
		{name: "a card not the node's: refused before the erase",
			lock: vpLockedP, devices: 1, change: map[string]string{amd.ToAllocateAnnotation: "GPU-z,AMD,16384,4:;"},
			wantErr:   `no local GPU topology entry for AMD SMI UUID "GPU-z"`,
			wantCalls: vpFindLock + "|list pods" + failed, wantPhase: devices.BindPhaseFailed, wantTA: "GPU-z,AMD,16384,4:;"},
		{name: "compute units exhausted: failed after the erase",
			lock: vpLockedP, devices: 1, others: []*corev1.Pod{amdHolder("q", corev1.PodPending, "0-5")},
			wantErr:   "allocate cu for GPU-a: insufficient free CUs: need=4 free=2",
			wantCalls: vpFindLock + "|list pods|patch pods p" + failed, wantPhase: devices.BindPhaseFailed, wantTA: ";"},
		{name: "the pod's own record is not JSON: failed before the list",
			lock: vpLockedP, devices: 1, change: map[string]string{amdCUAnnotation: "{"},
			wantErr:   "parse existing hami.io/amd-cu-allocated",
			wantCalls: vpFindLock + failed, wantPhase: devices.BindPhaseFailed, wantTA: one, wantCU: "{"},
		{name: "no allocated key: never done, the lock stays",
			lock: vpLockedP, devices: 1, change: map[string]string{amd.AllocatedAnnotation: "-"},
			wantCalls: vpFindLock + "|list pods|patch pods p|" + commit,
			wantPhase: devices.BindPhaseAllocating, wantTA: ";", wantCU: `{"GPU-a":"0-3"}`, wantLock: true},
		{name: "no lock, the pod in success: not found, no write",
			phase: devices.BindPhaseSuccess, devices: 1, wantErr: "no binding pod found on node n1",
			wantCalls: vpFindList, wantPhase: devices.BindPhaseSuccess, wantTA: one},
		{name: "the lock holder is another pod: the model finds it, a mismatch",
			lock: testLockTime + ",ns,q", devices: 1, others: []*corev1.Pod{amdPod("q", one, 1)},
			wantErr: "device plugin found pod ns/q on node n1, not ns/p", wantCalls: "get nodes n1|get pods q",
			wantPhase: devices.BindPhaseAllocating, wantTA: one, wantLock: true, mismatched: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := amdPod("p", one, 1)
			for k, v := range tt.change {
				if v == "-" {
					delete(pod.Annotations, k)
				} else {
					pod.Annotations[k] = v
				}
			}
			if tt.phase != "" {
				pod.Annotations[devices.BindPhase] = tt.phase
			}
			h := amdHarness(t, tt.lock, append([]*corev1.Pod{pod}, tt.others...)...)
			vpWantErr(t, h.allocate(amd.DefaultCountName, pod, 0, tt.devices), tt.wantErr)
			h.wantCalls(tt.wantCalls)
			want := map[string]string{devices.BindPhase: tt.wantPhase, amd.ToAllocateAnnotation: tt.wantTA, amdCUAnnotation: tt.wantCU}
			if _, ok := tt.change[amd.AllocatedAnnotation]; !ok {
				want[amd.AllocatedAnnotation] = one
			}
			h.wantAnnotations("p", want)
			h.wantLock(devices.NodeLock, tt.wantLock)
			if got := h.mismatched.Load(); got != tt.mismatched {
				t.Errorf("mismatched = %d, want %d", got, tt.mismatched)
			}
		})
	}
}

// The lock changes hands between the lookup (no lock: the list) and the
// commit: the owner check refuses, the pod is failed, and the release
// leaves the other pod's lock.
func TestAMDLockOwnedByAnotherPod(t *testing.T) {
	pod := amdPod("p", amdEntry("4")+";", 1)
	h := amdHarness(t, "", pod)
	gets := 0
	h.client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if gets++; gets > 1 {
			n := testNode(testLockTime + ",ns,q")
			n.Annotations[amd.RegisterAnnotation] = amdRegister
			return true, n, nil
		}
		return false, nil, nil
	})
	h.calls = recordCalls(h.client)
	vpWantErr(t, h.allocate(amd.DefaultCountName, pod, 0, 1), "node n1 lock is owned by ns/q, not ns/p")
	h.wantCalls(vpFindList + "|list pods|patch pods p|get nodes n1|patch pods p|get nodes n1")
	h.wantAnnotations("p", map[string]string{devices.BindPhase: devices.BindPhaseFailed, amd.ToAllocateAnnotation: ";", amdCUAnnotation: ""})
}

// A two-container pod is done after its first container, which releases
// the lock; the second finds no pod (the list wants allocating) and fails.
func TestAMDTwoContainers(t *testing.T) {
	pod := amdPod("p", amdEntry("4")+";"+amdEntry("2")+";", 2)
	h := amdHarness(t, vpLockedP, pod)

	vpWantErr(t, h.allocate(amd.DefaultCountName, pod, 0, 1), "")
	h.wantCalls(vpFindLock + "|list pods|patch pods p|get nodes n1|patch pods p|get pods p|patch pods p|" + vpRelease)
	h.wantAnnotations("p", map[string]string{
		devices.BindPhase: devices.BindPhaseSuccess, amd.ToAllocateAnnotation: ";" + amdEntry("2") + ";", amdCUAnnotation: `{"GPU-a":"0-3"}`,
	})
	h.wantLock(devices.NodeLock, false)

	vpWantErr(t, h.allocate(amd.DefaultCountName, pod, 1, 1), "no binding pod found on node n1")
	h.wantCalls(vpFindList)
	h.wantAnnotations("p", map[string]string{devices.BindPhase: devices.BindPhaseSuccess, amd.ToAllocateAnnotation: ";" + amdEntry("2") + ";"})
}

// Without the allocated key the pod is never done and keeps the lock, so
// its second container is served too: its compute units are ORed into the
// pod's record of the card, as the plugin merges bitmaps ("0-5", not
// "0-3,4-5").
func TestAMDMergesThePodsRecord(t *testing.T) {
	pod := amdPod("p", amdEntry("4")+";"+amdEntry("2")+";", 2)
	delete(pod.Annotations, amd.AllocatedAnnotation)
	h := amdHarness(t, vpLockedP, pod)
	for i := range 2 {
		vpWantErr(t, h.allocate(amd.DefaultCountName, pod, i, 1), "")
	}
	h.wantAnnotations("p", map[string]string{
		devices.BindPhase: devices.BindPhaseAllocating, amd.ToAllocateAnnotation: ";", amdCUAnnotation: `{"GPU-a":"0-5"}`,
	})
	h.wantLock(devices.NodeLock, true)
}

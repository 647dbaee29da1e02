package simnode

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/hygon"
)

// hygonRelease is the lock release of the HAMi commit the plugin vendors:
// GET the node, UPDATE it without the lock (an update call names no
// object).
const hygonRelease = "get nodes n1|update nodes"

// hygonPod is a Hygon pod with one container per entry of to-allocate
// ("-" for no key).
func hygonPod(name, toAllocate string, containers int) *corev1.Pod {
	a := map[string]string{}
	if toAllocate != "-" {
		a[hygon.ToAllocateAnnotation] = toAllocate
		a[hygon.AllocatedAnnotation] = toAllocate
	}
	var ctrs []corev1.Container
	for i := range containers {
		ctrs = append(ctrs, vpContainer("c"+string(rune('0'+i)), map[corev1.ResourceName]string{hygon.DefaultCountName: "1"}))
	}
	return vpPod(name, a, ctrs...)
}

// The Hygon model follows dcu-vgpu-device-plugin 8160fc0 on HAMi ab547e4:
// the list accepts allocating only, the count is checked, the served entry
// is erased before the card check, and success waits until no DCU entry is
// left.
func TestHygonAllocate(t *testing.T) {
	const (
		one  = "DCU-a,DCU-K100,2000,60:;"
		done = "get pods p|patch pods p|"
	)
	tests := []struct {
		name       string
		lock       string
		phase      string
		toAllocate string
		register   string
		devices    int
		wantErr    string
		wantCalls  string
		wantPhase  string
		wantTA     string
		wantLock   bool
	}{
		{name: "lock names the pod: erase, re-read, success, release by UPDATE",
			lock: vpLockedP, toAllocate: one, devices: 1,
			wantCalls: vpFindLock + "|patch pods p|" + done + hygonRelease, wantPhase: devices.BindPhaseSuccess, wantTA: ";"},
		{name: "empty entries before the first are skipped",
			lock: vpLockedP, toAllocate: ";;" + one, devices: 1,
			wantCalls: vpFindLock + "|patch pods p|" + done + hygonRelease, wantPhase: devices.BindPhaseSuccess, wantTA: ";"},
		{name: "count not matched: failed, released, to-allocate kept",
			lock: vpLockedP, toAllocate: one, devices: 2, wantErr: "device number not matched",
			wantCalls: vpFindLock + "|patch pods p|" + hygonRelease, wantPhase: devices.BindPhaseFailed, wantTA: one},
		{name: "no to-allocate key",
			lock: vpLockedP, toAllocate: "-", devices: 1, wantErr: "device request not found",
			wantCalls: vpFindLock + "|patch pods p|" + hygonRelease, wantPhase: devices.BindPhaseFailed},
		{name: "a serial not on the node: the entry is already erased",
			lock: vpLockedP, toAllocate: "DCU-z,DCU-K100,2000,60:;", devices: 1,
			register:  "DCU-a,4,65520,100,DCU-K100,0,true,0,hami:",
			wantErr:   "device serial number z not found in mapper",
			wantCalls: vpFindLock + "|patch pods p|patch pods p|" + hygonRelease, wantPhase: devices.BindPhaseFailed, wantTA: ";"},
		{name: "no lock: the list finds the allocating pod; nothing to release",
			toAllocate: one, devices: 1,
			wantCalls: vpFindList + "|patch pods p|" + done + "get nodes n1", wantPhase: devices.BindPhaseSuccess, wantTA: ";"},
		{name: "no lock: a pod in success is not found, no write",
			phase: devices.BindPhaseSuccess, toAllocate: one, devices: 1, wantErr: "no binding pod found on node n1",
			wantCalls: vpFindList, wantPhase: devices.BindPhaseSuccess, wantTA: one},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := hygonPod("p", tt.toAllocate, 1)
			if tt.phase != "" {
				pod.Annotations[devices.BindPhase] = tt.phase
			}
			h := newVPHarness(t, testNode(tt.lock), pod)
			if tt.register != "" {
				h.knowCards(map[string]string{hygon.RegisterAnnotation: tt.register})
			}
			vpWantErr(t, h.allocate(hygon.DefaultCountName, pod, 0, tt.devices), tt.wantErr)
			h.wantCalls(tt.wantCalls)
			h.wantAnnotations("p", map[string]string{devices.BindPhase: tt.wantPhase, hygon.ToAllocateAnnotation: tt.wantTA})
			h.wantLock(devices.NodeLock, tt.wantLock)
		})
	}
}

// Two DCU containers: the first leaves a DCU entry, so the pod stays
// allocating and the lock stays; the second is found through the lock
// again and finishes the pod. A stray third call finds no pod: the list
// accepts allocating only.
func TestHygonTwoContainers(t *testing.T) {
	pod := hygonPod("p", "DCU-a,DCU-K100,2000,60:;DCU-b,DCU-K100,1000,30:DCU-c,DCU-K100,1000,30:;", 2)
	h := newVPHarness(t, testNode(vpLockedP), pod)

	vpWantErr(t, h.allocate(hygon.DefaultCountName, pod, 0, 1), "")
	h.wantCalls(vpFindLock + "|patch pods p|get pods p")
	h.wantAnnotations("p", map[string]string{
		devices.BindPhase: devices.BindPhaseAllocating, hygon.ToAllocateAnnotation: ";DCU-b,DCU-K100,1000,30:DCU-c,DCU-K100,1000,30:;",
	})
	h.wantLock(devices.NodeLock, true)

	vpWantErr(t, h.allocate(hygon.DefaultCountName, pod, 1, 2), "")
	h.wantCalls(vpFindLock + "|patch pods p|get pods p|patch pods p|" + hygonRelease)
	h.wantAnnotations("p", map[string]string{devices.BindPhase: devices.BindPhaseSuccess, hygon.ToAllocateAnnotation: ";"})
	h.wantLock(devices.NodeLock, false)

	vpWantErr(t, h.allocate(hygon.DefaultCountName, pod, 1, 1), "no binding pod found on node n1")
	h.wantCalls(vpFindList)
}

// PodAllocationTrySuccess only logs a failed re-read: the call succeeds,
// bind-phase stays allocating and the lock stays.
func TestHygonRereadFails(t *testing.T) {
	pod := hygonPod("p", "DCU-a,DCU-K100,2000,60:;", 1)
	h := newVPHarness(t, testNode(vpLockedP), pod)
	gets := 0
	h.client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if gets++; gets == 2 {
			return true, nil, errors.New("API server unavailable")
		}
		return false, nil, nil
	})
	h.calls = recordCalls(h.client)
	vpWantErr(t, h.allocate(hygon.DefaultCountName, pod, 0, 1), "")
	h.wantCalls(vpFindLock + "|patch pods p|get pods p")
	h.wantAnnotations("p", map[string]string{devices.BindPhase: devices.BindPhaseAllocating, hygon.ToAllocateAnnotation: ";"})
	h.wantLock(devices.NodeLock, true)
}

// HAMi ab547e4's release compares the pod's name as a substring of the
// lock value, namespace ignored, and UPDATEs the node.
func TestHygonReleaseLock(t *testing.T) {
	tests := []struct {
		name      string
		lock      string
		wantCalls string
		wantLock  bool
	}{
		{"held by the pod", vpLockedP, hygonRelease, false},
		{"same name in another namespace", testLockTime + ",other,p", hygonRelease, false},
		{"a name containing the pod's", testLockTime + ",ns,pq", hygonRelease, false},
		{"legacy lock without the name", testLockTime, "get nodes n1", true},
		{"held by another pod", testLockTime + ",ns,q", "get nodes n1", true},
		{"no lock", "", "get nodes n1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := hygonPod("p", "", 1)
			h := newVPHarness(t, testNode(tt.lock), pod)
			if err := hygonReleaseLock(context.Background(), h.dp, pod); err != nil {
				t.Fatal(err)
			}
			h.wantCalls(tt.wantCalls)
			h.wantLock(devices.NodeLock, tt.wantLock)
		})
	}
}

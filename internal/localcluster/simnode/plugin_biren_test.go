package simnode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/biren"
)

// birenPod is a Biren pod with one container per entry, HAMi's two keys
// holding the same value ("-" for no allocated key).
func birenPod(name, allocated, toAllocate string, containers int) *corev1.Pod {
	a := map[string]string{biren.ToAllocateAnnotation: toAllocate}
	if allocated != "-" {
		a[biren.AllocatedAnnotation] = allocated
	}
	var ctrs []corev1.Container
	for i := range containers {
		ctrs = append(ctrs, vpContainer("c"+string(rune('0'+i)), map[corev1.ResourceName]string{biren.DefaultCountName: "1"}))
	}
	return vpPod(name, a, ctrs...)
}

// The Biren model follows biren-device-plugin 331ee2b: it consumes
// hami.io/Biren-devices-allocated (never the to-allocate key), never sets
// bind-phase=success, releases the lock only once no entry is left (and
// only a lock ending with the pod's namespace and name), and a lookup
// error crashes the plugin.
func TestBirenAllocate(t *testing.T) {
	const one = "card_0,Biren,0,0:;"
	tests := []struct {
		name      string
		lock      string
		phase     string
		allocated string
		register  string
		devices   int
		wantErr   string
		wantCalls string
		wantPhase string
		wantAlloc string
		wantLock  bool
	}{
		{name: "lock names the pod: allocated erased, to-allocate untouched, still allocating, released",
			lock: vpLockedP, allocated: one, devices: 1,
			wantCalls: vpFindLock + "|patch pods p|get pods p|" + vpRelease, wantPhase: devices.BindPhaseAllocating, wantAlloc: ";"},
		{name: "count not matched: failed, the entry stays, so does the lock",
			lock: vpLockedP, allocated: one, devices: 2, wantErr: "device number not matched",
			wantCalls: vpFindLock + "|patch pods p|get pods p", wantPhase: devices.BindPhaseFailed, wantAlloc: one, wantLock: true},
		{name: "only to-allocate: request not found, failed, nothing left so released",
			lock: vpLockedP, allocated: "-", devices: 1, wantErr: "device request not found",
			wantCalls: vpFindLock + "|patch pods p|get pods p|" + vpRelease, wantPhase: devices.BindPhaseFailed},
		{name: "a card the endpoint does not have: no patch, the lock stays",
			lock: vpLockedP, allocated: "card_9,Biren,0,0:;", devices: 1,
			register:  `[{"id":"card_0","count":1,"devmem":32768,"type":"BR104","health":true}]`,
			wantErr:   "invalid allocation request for : unknown device card_9",
			wantCalls: vpFindLock + "|get pods p", wantPhase: devices.BindPhaseAllocating, wantAlloc: "card_9,Biren,0,0:;", wantLock: true},
		{name: "no lock: the list finds the allocating pod",
			allocated: one, devices: 1,
			wantCalls: vpFindList + "|patch pods p|get pods p|get nodes n1", wantPhase: devices.BindPhaseAllocating, wantAlloc: ";"},
		{name: "no lock, the pod in success: not found, the plugin crashes",
			phase: devices.BindPhaseSuccess, allocated: one, devices: 1,
			wantErr:   "code = Unavailable desc = error reading from server: EOF (the Biren device plugin crashed on get pending pod error: no binding pod found on node n1)",
			wantCalls: vpFindList, wantPhase: devices.BindPhaseSuccess, wantAlloc: one},
		{name: "legacy lock (a bare time): served from the list, the lock is not the pod's and stays",
			lock: testLockTime, allocated: one, devices: 1,
			wantCalls: vpFindList + "|patch pods p|get pods p|get nodes n1", wantPhase: devices.BindPhaseAllocating, wantAlloc: ";", wantLock: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := birenPod("p", tt.allocated, one, 1)
			if tt.phase != "" {
				pod.Annotations[devices.BindPhase] = tt.phase
			}
			h := newVPHarness(t, testNode(tt.lock), pod)
			if tt.register != "" {
				h.knowCards(map[string]string{biren.RegisterAnnotation: tt.register})
			}
			vpWantErr(t, h.allocate(biren.DefaultCountName, pod, 0, tt.devices), tt.wantErr)
			h.wantCalls(tt.wantCalls)
			h.wantAnnotations("p", map[string]string{
				devices.BindPhase: tt.wantPhase, biren.AllocatedAnnotation: tt.wantAlloc, biren.ToAllocateAnnotation: one,
			})
			h.wantLock(devices.NodeLock, tt.wantLock)
		})
	}
}

// Two Biren containers: the lock is released after the second only, the
// allocated key goes A;B; -> ;B; -> ;, bind-phase stays allocating and
// to-allocate is never touched.
func TestBirenTwoContainers(t *testing.T) {
	const both = "card_0,Biren,0,0:;card_1,Biren,0,0:;"
	pod := birenPod("p", both, both, 2)
	h := newVPHarness(t, testNode(vpLockedP), pod)

	vpWantErr(t, h.allocate(biren.DefaultCountName, pod, 0, 1), "")
	h.wantCalls(vpFindLock + "|patch pods p|get pods p")
	h.wantAnnotations("p", map[string]string{
		devices.BindPhase: devices.BindPhaseAllocating, biren.AllocatedAnnotation: ";card_1,Biren,0,0:;", biren.ToAllocateAnnotation: both,
	})
	h.wantLock(devices.NodeLock, true)

	vpWantErr(t, h.allocate(biren.DefaultCountName, pod, 1, 1), "")
	h.wantCalls(vpFindLock + "|patch pods p|get pods p|" + vpRelease)
	h.wantAnnotations("p", map[string]string{
		devices.BindPhase: devices.BindPhaseAllocating, biren.AllocatedAnnotation: ";", biren.ToAllocateAnnotation: both,
	})
	h.wantLock(devices.NodeLock, false)
}

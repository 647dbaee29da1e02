package simnode

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
)

const testLockTime = "2026-11-30T01:00:00Z"

func testNode(lock string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{}}}
	if lock != "" {
		n.Annotations[devices.NodeLock] = lock
	}
	return n
}

func testPod(name, toAllocate string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{
			devices.AssignedNode:        "n1",
			devices.BindTime:            "1700000000",
			devices.BindPhase:           devices.BindPhaseAllocating,
			nvidia.ToAllocateAnnotation: toAllocate,
		}},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// nvidiaCall is the kubelet's call of the NVIDIA plugin for container ctr
// of pod, with n device ids.
func nvidiaCall(pod *corev1.Pod, ctr, n int) allocateCall {
	return allocateCall{admitted: pod, container: ctr, resource: nvidia.DefaultCountName, devices: n}
}

// recordCalls makes client note every API call as "verb resource name".
func recordCalls(client *fake.Clientset) *[]string {
	var calls []string
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		call := a.GetVerb() + " " + a.GetResource().Resource
		if named, ok := a.(interface{ GetName() string }); ok && named.GetName() != "" {
			call += " " + named.GetName()
		}
		calls = append(calls, call)
		return false, nil, nil
	})
	return &calls
}

// The device plugin makes HAMi v2.10's calls in HAMi's order.
func TestAllocateCallOrder(t *testing.T) {
	const (
		oneCard  = "GPU-a,NVIDIA,2000,30:;"
		twoCtrs  = "GPU-a,NVIDIA,2000,30:;GPU-b,NVIDIA,1000,0:;"
		lockedP  = testLockTime + ",ns,p"
		lockedQ  = testLockTime + ",ns,q"
		findLock = "get nodes n1|get pods p"
		findList = "get nodes n1|list pods"
		release  = "get nodes n1|get nodes n1|patch nodes n1"
	)
	tests := []struct {
		name       string
		lock       string
		toAllocate string
		others     []*corev1.Pod
		// notHanded drops the pod's bind-phase: bound, but not handed to
		// HAMi's device plugin.
		notHanded  bool
		want       int
		fail       bool
		wantCalls  string
		wantErr    string
		wantPhase  string
		wantLock   bool
		wantRest   string
		mismatched int64
	}{
		{name: "lock names the pod: find, erase, re-read, success, release",
			lock: lockedP, toAllocate: oneCard, want: 1,
			wantCalls: findLock + "|patch pods p|get pods p|patch pods p|" + release,
			wantPhase: devices.BindPhaseSuccess, wantRest: ";;"},
		{name: "no lock: the fallback list finds the pod; nothing to release",
			toAllocate: oneCard, want: 1,
			wantCalls: findList + "|patch pods p|get pods p|patch pods p|get nodes n1",
			wantPhase: devices.BindPhaseSuccess, wantRest: ";;"},
		{name: "legacy lock without holder: fallback list, and the lock is released",
			lock: testLockTime, toAllocate: oneCard, want: 1,
			wantCalls: findList + "|patch pods p|get pods p|patch pods p|" + release,
			wantPhase: devices.BindPhaseSuccess, wantRest: ";;"},
		{name: "first of two containers: cards left, the lock stays",
			lock: lockedP, toAllocate: twoCtrs, want: 1,
			wantCalls: findLock + "|patch pods p|get pods p",
			wantPhase: devices.BindPhaseAllocating, wantLock: true, wantRest: ";GPU-b,NVIDIA,1000,0:;;"},
		{name: "card count not matched: failed and released",
			lock: lockedP, toAllocate: oneCard, want: 2,
			wantCalls: findLock + "|patch pods p|" + release, wantErr: "device number not matched",
			wantPhase: devices.BindPhaseFailed, wantRest: oneCard},
		{name: "simulated device failure: failed and released",
			lock: lockedP, toAllocate: oneCard, want: 1, fail: true,
			wantCalls: findLock + "|patch pods p|" + release, wantErr: "simulated device failure",
			wantPhase: devices.BindPhaseFailed, wantRest: oneCard},
		{name: "lock held by another pod: refused without a write",
			lock: lockedQ, toAllocate: oneCard, want: 1, others: []*corev1.Pod{testPod("q", oneCard)},
			wantCalls: "get nodes n1|get pods q", wantErr: "found pod ns/q",
			wantPhase: devices.BindPhaseAllocating, wantLock: true, wantRest: oneCard, mismatched: 1},
		{name: "no pending pod: refused without a write",
			toAllocate: oneCard, want: 1, notHanded: true,
			wantCalls: findList, wantErr: "no binding pod found on node n1",
			wantPhase: "", wantRest: oneCard},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("p", tt.toAllocate)
			if tt.notHanded {
				delete(pod.Annotations, devices.BindPhase)
			}
			objects := []runtime.Object{testNode(tt.lock), pod}
			for _, o := range tt.others {
				objects = append(objects, o)
			}
			client := fake.NewClientset(objects...)
			calls := recordCalls(client)
			var mismatched atomic.Int64
			dp := &devicePlugin{node: "n1", client: client.CoreV1(), mismatched: &mismatched,
				failing: func(string, string) bool { return tt.fail }}

			err := dp.Allocate(context.Background(), nvidiaKind.plugins[0], nvidiaCall(pod, 0, tt.want))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Allocate() error = %v, want %q", err, tt.wantErr)
			}
			if got := strings.Join(*calls, "|"); got != tt.wantCalls {
				t.Errorf("calls:\n got %s\nwant %s", strings.ReplaceAll(got, "|", " | "), strings.ReplaceAll(tt.wantCalls, "|", " | "))
			}
			if got := mismatched.Load(); got != tt.mismatched {
				t.Errorf("mismatched = %d, want %d", got, tt.mismatched)
			}
			after, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "p")
			if err != nil {
				t.Fatal(err)
			}
			annotations := after.(*corev1.Pod).Annotations
			if got := annotations[devices.BindPhase]; got != tt.wantPhase {
				t.Errorf("bind-phase = %q, want %q", got, tt.wantPhase)
			}
			if got := annotations[nvidia.ToAllocateAnnotation]; got != tt.wantRest {
				t.Errorf("to-allocate = %q, want %q", got, tt.wantRest)
			}
			node, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
			if err != nil {
				t.Fatal(err)
			}
			if _, held := node.(*corev1.Node).Annotations[devices.NodeLock]; held != tt.wantLock {
				t.Errorf("lock held = %v, want %v", held, tt.wantLock)
			}
		})
	}
}

// Both containers of a pod served, one Allocate each: the lock is released
// after the second only.
func TestAllocateTwoContainers(t *testing.T) {
	pod := testPod("p", "GPU-a,NVIDIA,2000,30:;GPU-b,NVIDIA,1000,0:GPU-c,NVIDIA,1000,0:;")
	client := fake.NewClientset(testNode(testLockTime+",ns,p"), pod)
	calls := recordCalls(client)
	dp := &devicePlugin{node: "n1", client: client.CoreV1(), mismatched: &atomic.Int64{}}
	for _, want := range []int{1, 2} {
		if err := dp.Allocate(context.Background(), nvidiaKind.plugins[0], nvidiaCall(pod, want-1, want)); err != nil {
			t.Fatalf("Allocate(%d cards): %v", want, err)
		}
	}
	want := "get nodes n1|get pods p|patch pods p|get pods p|" +
		"get nodes n1|get pods p|patch pods p|get pods p|patch pods p|get nodes n1|get nodes n1|patch nodes n1"
	if got := strings.Join(*calls, "|"); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
}

// A lock taken over by another pod between the release's two reads is
// left alone.
func TestReleaseLockChangedHands(t *testing.T) {
	pod := testPod("p", "")
	client := fake.NewClientset(testNode(testLockTime+",ns,p"), pod)
	gets := 0
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets == 2 {
			return true, testNode(testLockTime + ",ns,q"), nil
		}
		return false, nil, nil
	})
	calls := recordCalls(client)
	dp := &devicePlugin{node: "n1", client: client.CoreV1(), mismatched: &atomic.Int64{}}
	if err := dp.releaseLock(context.Background(), pod, devices.NodeLock); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(*calls, "|"), "get nodes n1|get nodes n1"; got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
}

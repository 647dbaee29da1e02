package simnode

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
)

// Helpers shared by the tests of the public vendors' plugin models
// (plugin_<vendor>_test.go): a "vp" harness around one node's devicePlugin
// over a fake clientset that records every API call.

// The call sequences every GetPendingPod and HAMi-style lock release make.
const (
	vpFindLock = "get nodes n1|get pods p"
	vpFindList = "get nodes n1|list pods"
	vpRelease  = "get nodes n1|get nodes n1|patch nodes n1"
	vpLockedP  = testLockTime + ",ns,p"
)

// vpPod is pod ns/<name>, Pending on n1 as HAMi binds it (bind-time,
// bind-phase allocating, hami.io/vgpu-node n1), with the annotations and
// the containers.
func vpPod(name string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	a := map[string]string{
		devices.AssignedNode: "n1",
		devices.BindTime:     "1700000000",
		devices.BindPhase:    devices.BindPhaseAllocating,
	}
	for k, v := range annotations {
		a[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: a},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: containers},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// vpContainer is a container with the limits.
func vpContainer(name string, limits map[corev1.ResourceName]string) corev1.Container {
	l := corev1.ResourceList{}
	for r, q := range limits {
		l[r] = resource.MustParse(q)
	}
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: l}}
}

// vpNode is node n1 with the annotations.
func vpNode(annotations map[string]string) *corev1.Node {
	n := testNode("")
	for k, v := range annotations {
		n.Annotations[k] = v
	}
	return n
}

// vpHarness is node n1's devicePlugin over a fake clientset.
type vpHarness struct {
	t          *testing.T
	client     *fake.Clientset
	calls      *[]string
	mismatched *atomic.Int64
	dp         *devicePlugin
}

func newVPHarness(t *testing.T, objects ...runtime.Object) *vpHarness {
	t.Helper()
	client := fake.NewClientset(objects...)
	h := &vpHarness{t: t, client: client, mismatched: &atomic.Int64{}}
	h.calls = recordCalls(client)
	h.dp = &devicePlugin{node: "n1", client: client.CoreV1(), mismatched: h.mismatched}
	return h
}

// knowCards gives the plugin the hardware of the node: its informer holds
// node n1 with the annotations (the register annotation).
func (h *vpHarness) knowCards(annotations map[string]string) {
	h.t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(vpNode(annotations)); err != nil {
		h.t.Fatal(err)
	}
	h.dp.nodes = corelisters.NewNodeLister(indexer)
}

// allocate is the kubelet's Allocate of the endpoint registering the
// resource, for container ctr of the admitted pod, with n device ids.
func (h *vpHarness) allocate(res corev1.ResourceName, admitted *corev1.Pod, ctr, n int) error {
	h.t.Helper()
	p, ok := pluginFor(res)
	if !ok {
		h.t.Fatalf("no plugin serves %s", res)
	}
	return h.dp.Allocate(context.Background(), p, allocateCall{admitted: admitted, container: ctr, resource: res, devices: n})
}

// takeCalls returns the calls made since the last take.
func (h *vpHarness) takeCalls() string {
	got := strings.Join(*h.calls, "|")
	*h.calls = nil
	return got
}

// wantCalls checks the calls made since the last take.
func (h *vpHarness) wantCalls(want string) {
	h.t.Helper()
	if got := h.takeCalls(); got != want {
		h.t.Errorf("calls:\n got %s\nwant %s", strings.ReplaceAll(got, "|", " | "), strings.ReplaceAll(want, "|", " | "))
	}
}

// pod is pod ns/<name> as the API server holds it.
func (h *vpHarness) pod(name string) *corev1.Pod {
	h.t.Helper()
	o, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", name)
	if err != nil {
		h.t.Fatal(err)
	}
	return o.(*corev1.Pod)
}

// node is node n1 as the API server holds it.
func (h *vpHarness) node() *corev1.Node {
	h.t.Helper()
	o, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
	if err != nil {
		h.t.Fatal(err)
	}
	return o.(*corev1.Node)
}

// wantAnnotations checks annotations of pod ns/<name> ("" = absent).
func (h *vpHarness) wantAnnotations(name string, want map[string]string) {
	h.t.Helper()
	got := h.pod(name).Annotations
	for k, v := range want {
		if got[k] != v {
			h.t.Errorf("pod %s: %s = %q, want %q", name, k, got[k], v)
		}
	}
}

// wantLock checks whether node n1 holds the lock key.
func (h *vpHarness) wantLock(key string, held bool) {
	h.t.Helper()
	if _, ok := h.node().Annotations[key]; ok != held {
		h.t.Errorf("node lock %s held = %v, want %v", key, ok, held)
	}
}

// vpWantErr checks an error against the substring want ("" = no error).
func vpWantErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

const ascendTestChip = "Ascend910B3"

var (
	ascendResource   = corev1.ResourceName("huawei.com/" + ascendTestChip)
	ascendToAllocate = ascend.ToAllocateAnnotation(ascendTestChip)
	ascendRuntime    = ascend.RuntimeInfoAnnotation(ascendTestChip)
)

// ascendPod is a one-container Ascend pod with the to-allocate value
// ("-" for none) and HAMi's huawei.com/<chip> runtime JSON.
func ascendPod(name, toAllocate string) *corev1.Pod {
	a := map[string]string{ascendRuntime: `[{"UUID":"npu-0","temp":"vir05_1c_16g"},{"UUID":"npu-1"}]`}
	if toAllocate != "-" {
		a[ascendToAllocate] = toAllocate
	}
	return vpPod(name, a, vpContainer("c0", map[corev1.ResourceName]string{ascendResource: "1"}))
}

// The Ascend model follows ascend-device-plugin v1.4.0 on HAMi 5f0adaa:
// the lookup accepts allocating or success, the count check names both
// numbers, huawei.com/<chip> is required, and every failure marks the pod
// failed and releases hami.io/mutex.lock with to-allocate left as it was.
func TestAscendAllocate(t *testing.T) {
	const (
		one  = "npu-0,Ascend910B3,16384,0:;"
		done = "get pods p|patch pods p|"
	)
	tests := []struct {
		name     string
		lock     string
		phase    string            // the pod's bind-phase ("-" for none)
		change   map[string]string // pod annotations to set ("-" deletes)
		register string            // the node's register annotation (the plugin's hardware)
		devices  int
		wantErr  string
		wantCall string
		wantPh   string
		wantTA   string
		wantLock bool
	}{
		{name: "lock names the pod: erase, re-read, success, release",
			lock: vpLockedP, devices: 1,
			wantCall: vpFindLock + "|patch pods p|" + done + vpRelease, wantPh: devices.BindPhaseSuccess, wantTA: ";;"},
		{name: "count not matched: both numbers, failed, released, to-allocate kept",
			lock: vpLockedP, devices: 2, wantErr: "device number not matched: annotation has 1, request has 2",
			wantCall: vpFindLock + "|patch pods p|" + vpRelease, wantPh: devices.BindPhaseFailed, wantTA: one},
		{name: "no huawei.com/<chip> JSON: failed before to-allocate is read",
			lock: vpLockedP, devices: 1, change: map[string]string{ascendRuntime: "-"},
			wantErr:  "build runtimeInfo lookup: annotation huawei.com/Ascend910B3 not set",
			wantCall: vpFindLock + "|patch pods p|" + vpRelease, wantPh: devices.BindPhaseFailed, wantTA: one},
		{name: "huawei.com/<chip> not JSON",
			lock: vpLockedP, devices: 1, change: map[string]string{ascendRuntime: "{"},
			wantErr:  "build runtimeInfo lookup: annotation huawei.com/Ascend910B3 value { invalid",
			wantCall: vpFindLock + "|patch pods p|" + vpRelease, wantPh: devices.BindPhaseFailed, wantTA: one},
		{name: "no to-allocate key",
			lock: vpLockedP, devices: 1, change: map[string]string{ascendToAllocate: "-"},
			wantErr:  "decode device annotations: device Ascend910B3 not found in pod annotations",
			wantCall: vpFindLock + "|patch pods p|" + vpRelease, wantPh: devices.BindPhaseFailed},
		{name: "every entry served already",
			lock: vpLockedP, devices: 1, change: map[string]string{ascendToAllocate: ";;"},
			wantErr:  "get next container devices: no pending device allocation found",
			wantCall: vpFindLock + "|patch pods p|" + vpRelease, wantPh: devices.BindPhaseFailed, wantTA: ";;"},
		{name: "a card the plugin does not know",
			lock: vpLockedP, devices: 1, change: map[string]string{ascendToAllocate: "npu-9,Ascend910B3,16384,0:;"},
			register: `[{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true}]`,
			wantErr:  "build container allocate response: unknown uuid: npu-9",
			wantCall: vpFindLock + "|patch pods p|" + vpRelease, wantPh: devices.BindPhaseFailed, wantTA: "npu-9,Ascend910B3,16384,0:;"},
		{name: "no lock: the list accepts a pod already in success",
			phase: devices.BindPhaseSuccess, devices: 1,
			wantCall: vpFindList + "|patch pods p|" + done + "get nodes n1", wantPh: devices.BindPhaseSuccess, wantTA: ";;"},
		{name: "legacy lock (a bare time): the list finds the pod, the lock is released",
			lock: testLockTime, devices: 1,
			wantCall: vpFindList + "|patch pods p|" + done + vpRelease, wantPh: devices.BindPhaseSuccess, wantTA: ";;"},
		{name: "no lock, no pod handed over: no write",
			phase: "-", devices: 1, wantErr: "get pending pod error: no binding pod found on node n1",
			wantCall: vpFindList, wantTA: one},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := ascendPod("p", one)
			for k, v := range tt.change {
				if v == "-" {
					delete(pod.Annotations, k)
				} else {
					pod.Annotations[k] = v
				}
			}
			switch tt.phase {
			case "":
			case "-":
				delete(pod.Annotations, devices.BindPhase)
			default:
				pod.Annotations[devices.BindPhase] = tt.phase
			}
			h := newVPHarness(t, testNode(tt.lock), pod)
			if tt.register != "" {
				h.knowCards(map[string]string{ascend.RegisterAnnotation(ascendTestChip): tt.register})
			}
			vpWantErr(t, h.allocate(ascendResource, pod, 0, tt.devices), tt.wantErr)
			h.wantCalls(tt.wantCall)
			h.wantAnnotations("p", map[string]string{devices.BindPhase: tt.wantPh, ascendToAllocate: tt.wantTA})
			h.wantLock(devices.NodeLock, tt.wantLock)
			if got := h.mismatched.Load(); got != 0 {
				t.Errorf("mismatched = %d", got)
			}
		})
	}
}

// The plugin never fills HAMi's DevicesToHandle: a two-container pod is
// marked success and its lock released after the FIRST container; the
// second finds the pod again on the list (which accepts success), and one
// more ";" is added by every rewrite.
func TestAscendTwoContainers(t *testing.T) {
	pod := ascendPod("p", "npu-0,Ascend910B3,16384,0:;npu-1,Ascend910B3,16384,0:;")
	pod.Spec.Containers = append(pod.Spec.Containers, vpContainer("c1", map[corev1.ResourceName]string{ascendResource: "1"}))
	h := newVPHarness(t, testNode(vpLockedP), pod)

	vpWantErr(t, h.allocate(ascendResource, pod, 0, 1), "")
	h.wantCalls(vpFindLock + "|patch pods p|get pods p|patch pods p|" + vpRelease)
	h.wantAnnotations("p", map[string]string{devices.BindPhase: devices.BindPhaseSuccess, ascendToAllocate: ";npu-1,Ascend910B3,16384,0:;;"})
	h.wantLock(devices.NodeLock, false)

	vpWantErr(t, h.allocate(ascendResource, pod, 1, 1), "")
	h.wantCalls(vpFindList + "|patch pods p|get pods p|patch pods p|get nodes n1")
	h.wantAnnotations("p", map[string]string{devices.BindPhase: devices.BindPhaseSuccess, ascendToAllocate: ";;;;"})
}

// Once the first container released the lock, the scheduler may lock the
// node for the next pod: the plugin then serves the second container with
// that pod's entry. dp.check shows it as a mismatch, and nothing is written.
func TestAscendSecondContainerFindsNextLockHolder(t *testing.T) {
	pod := ascendPod("p", "npu-0,Ascend910B3,16384,0:;npu-1,Ascend910B3,16384,0:;")
	pod.Spec.Containers = append(pod.Spec.Containers, vpContainer("c1", map[corev1.ResourceName]string{ascendResource: "1"}))
	next := ascendPod("b", "npu-1,Ascend910B3,16384,0:;")
	h := newVPHarness(t, testNode(vpLockedP), pod, next)
	vpWantErr(t, h.allocate(ascendResource, pod, 0, 1), "")
	h.takeCalls()

	if err := h.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), testNode(testLockTime+",ns,b"), ""); err != nil {
		t.Fatal(err)
	}
	vpWantErr(t, h.allocate(ascendResource, pod, 1, 1), "device plugin found pod ns/b on node n1, not ns/p")
	h.wantCalls("get nodes n1|get pods b")
	if got := h.mismatched.Load(); got != 1 {
		t.Errorf("mismatched = %d, want 1", got)
	}
	h.wantAnnotations("b", map[string]string{devices.BindPhase: devices.BindPhaseAllocating, ascendToAllocate: "npu-1,Ascend910B3,16384,0:;"})
	h.wantLock(devices.NodeLock, true)
}

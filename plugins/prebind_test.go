package plugins

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// TestPreBindWritesTheProtocolAnnotations checks the example of the
// protocol doc byte for byte: two containers, the first without a GPU, the
// second sharing two cards with 2000 MiB and 30 cores each.
func TestPreBindWritesTheProtocolAnnotations(t *testing.T) {
	pod := gpuPod("p", nil, gpu(2, 2000, 30))
	// HAMi walks the cards from the last registered one: register them in
	// reverse to get the doc's order.
	h := newHarness(t, nil, gpuNode("n1", card("GPU-0b", 15360), card("GPU-0a", 15360)), pod)
	state := h.schedule(pod, "n1")
	if _, st := h.plugin.PreBindPreFlight(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBindPreFlight: %v", st)
	}
	before := time.Now().Unix()
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	got, err := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = ";GPU-0a,NVIDIA,2000,30:GPU-0b,NVIDIA,2000,30:;"
	for _, key := range []string{nvidia.ToAllocateAnnotation, nvidia.AllocatedAnnotation} {
		if got.Annotations[key] != want {
			t.Errorf("%s = %q, want %q", key, got.Annotations[key], want)
		}
	}
	for key, want := range map[string]string{devices.AssignedNode: "n1", devices.BindPhase: devices.BindPhaseAllocating} {
		if got.Annotations[key] != want {
			t.Errorf("%s = %q, want %q", key, got.Annotations[key], want)
		}
	}
	if got.Labels[devices.AssignedNode] != "n1" {
		t.Errorf("label %s = %q, want n1", devices.AssignedNode, got.Labels[devices.AssignedNode])
	}
	for _, key := range []string{devices.AssignedTime, devices.BindTime} {
		if !isUnixAfter(got.Annotations[key], before) {
			t.Errorf("%s = %q, want unix seconds >= %d", key, got.Annotations[key], before)
		}
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock := node.Annotations[devices.NodeLock]; !strings.HasSuffix(lock, ",default,p") {
		t.Errorf("node lock = %q, want one held by default/p", lock)
	}
}

func isUnixAfter(s string, min int64) bool {
	var v int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		v = v*10 + int64(r-'0')
	}
	return s != "" && v >= min
}

func TestPreBindFailureReleasesTheLock(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	h.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	st := h.plugin.PreBind(h.ctx, state, pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "apiserver unavailable") {
		t.Fatalf("PreBind status = %v, want the patch error", st)
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := node.Annotations[devices.NodeLock]; held {
		t.Errorf("node lock %q left behind after a failed PreBind", lock)
	}
}

func TestPreBindGivesUpOnABusyNode(t *testing.T) {
	// The assignment is written before the lock, as HAMi writes it in Filter.
	holder := gpuPod("holder", gpu(1, 1000, 0))
	pod := gpuPod("p", gpu(1, 1000, 0))
	node := eightCardNode("n1")
	node.Annotations[devices.NodeLock] = time.Now().UTC().Format(time.RFC3339) + ",default,holder"
	h := newHarness(t, &configv1.HAMiArgs{NodeLockWait: &metav1.Duration{Duration: 200 * time.Millisecond}}, node, holder, pod)
	state := h.schedule(pod, "n1")
	st := h.plugin.PreBind(h.ctx, state, pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "held by another pod") {
		t.Fatalf("PreBind status = %v, want busy", st)
	}
	// The framework calls Unreserve after a failed PreBind. The pod never
	// held the lock: its assignment is marked failed, so that no scheduler
	// restarted meanwhile takes it for a hand-over under way (gang_resume.go);
	// the holder keeps its lock.
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if phase := got.Annotations[devices.BindPhase]; phase != devices.BindPhaseFailed || got.Spec.NodeName != "" {
		t.Errorf("bind phase %q, node %q after the lock was not had; want the assignment marked failed, unbound", phase, got.Spec.NodeName)
	}
	n, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock := n.Annotations[devices.NodeLock]; !strings.HasSuffix(lock, ",default,holder") {
		t.Errorf("lock %q after Unreserve, want the holder's kept", lock)
	}
}

func TestPreBindPreFlightSkipsPodsWithoutDevices(t *testing.T) {
	h := newHarness(t, nil, eightCardNode("n1"))
	pod := gpuPod("plain", corev1.ResourceList{})
	state, _ := h.preFilter(pod)
	if _, st := h.plugin.PreBindPreFlight(h.ctx, state, pod, "n1"); st.Code() != fwk.Skip {
		t.Errorf("code = %v, want Skip", st.Code())
	}
}

// TestUnreserveAfterPreBindUndoesTheHandOver is the binding failing after
// PreBind: the cache forgets the cards, the pod's assignment is marked
// failed and the node lock is released, so the node is not blocked until
// the lock expires.
func TestUnreserveAfterPreBindUndoesTheHandOver(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	h.plugin.Unreserve(h.ctx, state, pod, "n1")

	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := node.Annotations[devices.NodeLock]; held {
		t.Errorf("node lock %q still held after Unreserve", lock)
	}
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if phase := got.Annotations[devices.BindPhase]; phase != devices.BindPhaseFailed {
		t.Errorf("bind-phase = %q, want %q", phase, devices.BindPhaseFailed)
	}
	if s := h.plugin.Cache().Stats(); s.Pods != 0 {
		t.Errorf("cache still holds %d pods", s.Pods)
	}
}

// TestUnreserveLeavesABindingThatWasStored is a binding whose caller saw an
// error (a timeout, a scheduler stopping mid-call) although the API server
// stored it: the pod is bound and its device plugin will look for it, so
// Unreserve neither fails its assignment nor releases the lock, and its
// cards stay taken.
func TestUnreserveLeavesABindingThatWasStored(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	bound, err := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound.Spec.NodeName = "n1"
	if _, err := h.client.CoreV1().Pods("default").Update(h.ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.plugin.Unreserve(h.ctx, state, pod, "n1")

	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if phase := got.Annotations[devices.BindPhase]; phase != devices.BindPhaseAllocating {
		t.Errorf("bind-phase = %q, want %q left for the device plugin", phase, devices.BindPhaseAllocating)
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if _, held := node.Annotations[devices.NodeLock]; !held {
		t.Error("node lock released, want it left for the device plugin")
	}
	if s := h.plugin.Cache().Stats(); s.Pods != 1 {
		t.Errorf("cache holds %d pods, want the bound pod's cards kept", s.Pods)
	}
}

func TestUnreserveBeforePreBindMakesNoAPICall(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	before := len(h.client.Actions())
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	if after := h.client.Actions(); len(after) != before {
		t.Errorf("Unreserve before PreBind made API calls: %v", after[before:])
	}
}

// TestPreBindPatchesOnlyThePodItScheduled: the assignment patch carries a
// precondition on the pod's UID, so a pod deleted and recreated under the
// same name (a StatefulSet's) between scheduling and PreBind does not get
// an assignment computed for its predecessor.
func TestPreBindPatchesOnlyThePodItScheduled(t *testing.T) {
	tests := []struct {
		name string
		// inAPI changes the API server's copy of the scheduled pod.
		inAPI func(p *corev1.Pod)
		// scheduled changes the scheduler's copy.
		scheduled func(p *corev1.Pod)
		wantErr   bool
		// wantKept are annotations of the API server's copy that must stay.
		wantKept map[string]string
	}{
		{name: "pod without annotations or labels"},
		{name: "pod with annotations and labels keeps them",
			inAPI: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"team": "a/b", "x~y": "1"}
				p.Labels = map[string]string{"app": "train"}
			},
			scheduled: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"team": "a/b", "x~y": "1"}
				p.Labels = map[string]string{"app": "train"}
			},
			wantKept: map[string]string{"team": "a/b", "x~y": "1"}},
		{name: "pod recreated under the same name is not patched",
			inAPI:   func(p *corev1.Pod) { p.UID = "uid-recreated" },
			wantErr: true},
		{name: "annotations added since the scheduler's copy: refused, tried again later",
			inAPI:    func(p *corev1.Pod) { p.Annotations = map[string]string{"late": "1"} },
			wantErr:  true,
			wantKept: map[string]string{"late": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := gpuPod("p", gpu(1, 1000, 0))
			api.Annotations = nil
			if tt.inAPI != nil {
				tt.inAPI(api)
			}
			pod := gpuPod("p", gpu(1, 1000, 0))
			pod.Annotations = nil
			if tt.scheduled != nil {
				tt.scheduled(pod)
			}
			h := newHarness(t, nil, eightCardNode("n1"), api)
			state := h.schedule(pod, "n1")
			st := h.plugin.PreBind(h.ctx, state, pod, "n1")
			if st.IsSuccess() == tt.wantErr {
				t.Fatalf("PreBind = %v, want error %v", st, tt.wantErr)
			}
			got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
			_, assigned := got.Annotations[nvidia.ToAllocateAnnotation]
			if assigned == tt.wantErr || (got.Labels[devices.AssignedNode] == "n1") == tt.wantErr {
				t.Errorf("API pod (UID %s) annotations %v, labels %v: assigned = %v, want %v", got.UID, got.Annotations, got.Labels, assigned, !tt.wantErr)
			}
			for k, v := range tt.wantKept {
				if got.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q kept", k, got.Annotations[k], v)
				}
			}
			if !tt.wantErr && tt.scheduled != nil && got.Labels["app"] != "train" {
				t.Errorf("labels %v lost app=train", got.Labels)
			}
			node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
			if lock, held := node.Annotations[devices.NodeLock]; held == tt.wantErr {
				t.Errorf("node lock %q held = %v after PreBind, want %v", lock, held, !tt.wantErr)
			}
		})
	}
}

// TestUnreserveDoesNotFailANamesake: when binding fails after PreBind and
// the pod has meanwhile been replaced by another of the same name, the
// bind-phase=failed patch must not reach the new pod.
func TestUnreserveDoesNotFailANamesake(t *testing.T) {
	pod := gpuPod("p", gpu(1, 1000, 0))
	h := newHarness(t, nil, eightCardNode("n1"), pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	namesake := gpuPod("p", gpu(1, 1000, 0))
	namesake.UID = "uid-recreated"
	namesake.Annotations = map[string]string{devices.BindPhase: devices.BindPhaseAllocating}
	if _, err := h.client.CoreV1().Pods("default").Create(h.ctx, namesake, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if phase := got.Annotations[devices.BindPhase]; phase != devices.BindPhaseAllocating {
		t.Errorf("namesake's bind-phase = %q, want it untouched (%q)", phase, devices.BindPhaseAllocating)
	}
	node, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := node.Annotations[devices.NodeLock]; held {
		t.Errorf("node lock %q, taken for the unbound pod, still held", lock)
	}
}

// A PreBind that failed before the lock marks only its own assignment
// failed: one another replica wrote since, for the pod's next attempt, is
// left to that attempt.
func TestUnreserveLeavesAnotherAttemptsAssignment(t *testing.T) {
	holder := gpuPod("holder", gpu(1, 1000, 0))
	pod := gpuPod("p", gpu(1, 1000, 0))
	node := eightCardNode("n1")
	node.Annotations[devices.NodeLock] = nodelock.Value(time.Now(), holder)
	h := newHarness(t, &configv1.HAMiArgs{NodeLockWait: &metav1.Duration{Duration: 50 * time.Millisecond}}, node, eightCardNode("n2"), holder, pod)
	state := h.schedule(pod, "n1")
	if st := h.plugin.PreBind(h.ctx, state, pod, "n1"); st.IsSuccess() {
		t.Fatal("PreBind on a busy node succeeded")
	}
	next, err := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next.Annotations[devices.AssignedNode] = "n2"
	next.Annotations[devices.BindTime] = strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
	if _, err := h.client.CoreV1().Pods("default").Update(h.ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.plugin.Unreserve(h.ctx, state, pod, "n1")
	got, _ := h.client.CoreV1().Pods("default").Get(h.ctx, "p", metav1.GetOptions{})
	if phase := got.Annotations[devices.BindPhase]; phase != devices.BindPhaseAllocating {
		t.Errorf("bind-phase of the next attempt's assignment = %q, want it untouched (%q)", phase, devices.BindPhaseAllocating)
	}
}

func TestPodPatch(t *testing.T) {
	tests := []struct {
		name            string
		haveAnnotations bool
		annotations     map[string]string
		haveLabels      bool
		labels          map[string]string
		want            string
	}{
		{name: "keys added to existing maps, escaped", haveAnnotations: true,
			annotations: map[string]string{devices.BindPhase: "failed", "a~b": "1"},
			want: `[{"op":"test","path":"/metadata/uid","value":"uid-p"},` +
				`{"op":"add","path":"/metadata/annotations/a~0b","value":"1"},` +
				`{"op":"add","path":"/metadata/annotations/hami.io~1bind-phase","value":"failed"}]`},
		{name: "absent maps are tested absent and added whole",
			annotations: map[string]string{"k": "v"}, labels: map[string]string{"l": "w"},
			want: `[{"op":"test","path":"/metadata/uid","value":"uid-p"},` +
				`{"op":"test","path":"/metadata/annotations","value":null},{"op":"add","path":"/metadata/annotations","value":{"k":"v"}},` +
				`{"op":"test","path":"/metadata/labels","value":null},{"op":"add","path":"/metadata/labels","value":{"l":"w"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podPatch("uid-p", tt.haveAnnotations, tt.annotations, tt.haveLabels, tt.labels)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("patch\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

package plugins

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	configv1 "github.com/hami-scheduler/hami-scheduler/apis/config/v1"
	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/nvidia"
	"github.com/hami-scheduler/hami-scheduler/plugins/nodelock"
)

// gangMemberPod is a member of the scheduler-plugins gang g asking one
// card.
func gangMemberPod(name string) *corev1.Pod {
	p := gpuPod(name, gpu(1, 8000, 0))
	p.Labels = map[string]string{podGroupLabel: "g"}
	return p
}

// handedOverTo gives p an assignment of 8000 MiB on card of node with
// bind phase allocating, written age ago: a hand-over under way, as
// another scheduler process's PreBind leaves it.
func handedOverTo(p *corev1.Pod, node, card string, age time.Duration) *corev1.Pod {
	p.Annotations[nvidia.AllocatedAnnotation] = card + ",NVIDIA,8000,0:;"
	p.Annotations[nvidia.ToAllocateAnnotation] = p.Annotations[nvidia.AllocatedAnnotation]
	p.Annotations[devices.AssignedNode] = node
	p.Annotations[devices.BindPhase] = devices.BindPhaseAllocating
	p.Annotations[devices.BindTime] = strconv.FormatInt(time.Now().Add(-age).Unix(), 10)
	return p
}

// gangHarness is a harness whose gang events land on the PodGroup
// default/g, as Coscheduling registers it, with nodeLockWait wait.
func gangHarness(t *testing.T, wait time.Duration, objs ...runtime.Object) *harness {
	t.Helper()
	h := newHarness(t, &configv1.HAMiArgs{NodeLockWait: &metav1.Duration{Duration: wait}}, objs...)
	RegisterGangObjects(h.ctx, h.handle, func(pod *corev1.Pod) runtime.Object {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Labels[podGroupLabel]}}
	})
	return h
}

// lockedBy is the node with its lock held by pod, taken now.
func lockedBy(node *corev1.Node, pod *corev1.Pod) *corev1.Node {
	node.Annotations[devices.NodeLock] = nodelock.Value(time.Now(), pod)
	return node
}

// bind binds the pod to node in the API, as the default binder does.
func (h *harness) bind(pod *corev1.Pod, node string) {
	h.t.Helper()
	got, err := h.client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	got.Spec.NodeName = node
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Update(h.ctx, got, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// eventually polls cond for up to 10 s.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gangEvent waits for the GangBindingFailed event on default/g and
// returns its note.
func (h *harness) gangEvent() string {
	h.t.Helper()
	var note string
	h.eventually("a GangBindingFailed event on default/g", func() bool {
		for _, e := range h.handle.recorder.take() {
			if e.reason == reasonGangBindingFailed && e.object == "default/g" {
				note = e.note
				return true
			}
		}
		return false
	})
	return note
}

// waitActivated waits until every named pod was sent to the active queue.
func (h *harness) waitActivated(names ...string) {
	h.t.Helper()
	h.eventually("activated "+strings.Join(names, ", "), func() bool {
		got := h.handle.activations()
		for _, n := range names {
			if !slices.Contains(got, "default/"+n) {
				return false
			}
		}
		return true
	})
}

// checkGaveBack fails the test when the cache holds cards of the pod or
// the pod carries an assignment still allocating.
func (h *harness) checkGaveBack(pod *corev1.Pod) {
	h.t.Helper()
	if held, ok := h.plugin.Cache().Holding(pod.UID); ok {
		h.t.Errorf("%s still holds cards on %s", pod.Name, held.Node)
	}
	got, err := h.client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if phase, ok := got.Annotations[devices.BindPhase]; ok && phase != devices.BindPhaseFailed {
		h.t.Errorf("%s's assignment is %q, want it marked failed or none written", pod.Name, phase)
	}
}

// Before the first member binds, the round checks every member's node
// lock: one held by another pod that is not released within nodeLockWait
// binds none of the gang (no lock taken, nothing written), and the gang is
// placed again.
func TestGangPreflightBindsNoneWhileALockIsHeld(t *testing.T) {
	blocker := gpuPod("blocker", gpu(1, 1000, 0))
	g0, g1 := gangMemberPod("g-0"), gangMemberPod("g-1")
	h := gangHarness(t, 200*time.Millisecond, eightCardNode("n1"), lockedBy(eightCardNode("n2"), blocker), blocker, g0, g1)
	s0, s1 := h.schedule(g0, "n1"), h.schedule(g1, "n2")
	st := h.plugin.PreBind(h.ctx, s0, g0, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "node n2's lock") {
		t.Fatalf("PreBind of the member on the free node = %v, want the round refused for n2's lock", st)
	}
	if st := h.plugin.PreBind(h.ctx, s1, g1, "n2"); st.IsSuccess() {
		t.Fatal("PreBind of the member on the locked node succeeded")
	}
	n1, _ := h.client.CoreV1().Nodes().Get(h.ctx, "n1", metav1.GetOptions{})
	if lock, held := n1.Annotations[devices.NodeLock]; held {
		t.Errorf("n1 locked (%q) for a gang that binds none", lock)
	}
	h.plugin.Unreserve(h.ctx, s0, g0, "n1")
	h.plugin.Unreserve(h.ctx, s1, g1, "n2")
	for _, p := range []*corev1.Pod{g0, g1} {
		h.checkGaveBack(p)
	}
	if note := h.gangEvent(); !strings.Contains(note, "none of its members is bound") {
		t.Errorf("event %q does not say none is bound", note)
	}
	h.waitActivated("g-0", "g-1")
}

// The preflight also finds a member whose node is gone: none binds.
func TestGangPreflightFindsANodeGone(t *testing.T) {
	g0, g1 := gangMemberPod("g-0"), gangMemberPod("g-1")
	h := gangHarness(t, time.Second, eightCardNode("n1"), eightCardNode("n2"), g0, g1)
	s0, s1 := h.schedule(g0, "n1"), h.schedule(g1, "n2")
	if err := h.client.CoreV1().Nodes().Delete(h.ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("n2 gone from the informer", func() bool {
		_, err := h.plugin.nodes.Get("n2")
		return err != nil
	})
	if st := h.plugin.PreBind(h.ctx, s0, g0, "n1"); st.IsSuccess() || !strings.Contains(st.Message(), "n2") {
		t.Fatalf("PreBind of the member on n1 = %v, want the round refused for n2", st)
	}
	h.plugin.Unreserve(h.ctx, s0, g0, "n1")
	h.plugin.Unreserve(h.ctx, s1, g1, "n2")
	h.checkGaveBack(g0)
	h.checkGaveBack(g1)
}

// preBindAsync runs PreBind in the background and returns its status
// when asked.
func (h *harness) preBindAsync(state fwk.CycleState, pod *corev1.Pod, node string) func() *fwk.Status {
	done := make(chan *fwk.Status, 1)
	go func() { done <- h.plugin.PreBind(h.ctx, state, pod, node) }()
	return func() *fwk.Status {
		select {
		case st := <-done:
			return st
		case <-time.After(30 * time.Second):
			h.t.Fatalf("PreBind of %s did not return", pod.Name)
			return nil
		}
	}
}

// A member whose Bind is refused once another is bound aborts the round:
// a member still waiting for its node's lock gives back at once (its wait
// ends with the failure's account, not at nodeLockWait), and the members
// not bound are placed again, the PodGroup told which member is bound.
func TestGangBindRefusedGivesBackTheRest(t *testing.T) {
	g0, g1, g2 := gangMemberPod("g-0"), gangMemberPod("g-1"), gangMemberPod("g-2")
	h := gangHarness(t, 20*time.Second, eightCardNode("n1"), eightCardNode("n2"), g0, g1, g2)
	s0, s1, s2 := h.schedule(g0, "n1"), h.schedule(g1, "n2"), h.schedule(g2, "n1")
	if st := h.plugin.PreBind(h.ctx, s0, g0, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind g-0: %v", st)
	}
	h.bind(g0, "n1")
	if st := h.plugin.PreBind(h.ctx, s1, g1, "n2"); !st.IsSuccess() {
		t.Fatalf("PreBind g-1: %v", st)
	}
	// g-2 waits for n1's lock, which g-0's device plugin never releases.
	result := h.preBindAsync(s2, g2, "n1")
	// g-1's Bind is refused: the framework unreserves it.
	h.plugin.Unreserve(h.ctx, s1, g1, "n2")
	st := result()
	if st.IsSuccess() || !strings.Contains(st.Message(), "member default/g-1 was not bound to node n2") {
		t.Fatalf("PreBind g-2 = %v, want it ended by g-1's failure", st)
	}
	h.plugin.Unreserve(h.ctx, s2, g2, "n1")
	h.checkGaveBack(g1)
	h.checkGaveBack(g2)
	if note := h.gangEvent(); !strings.Contains(note, "bound: g-0") || !strings.Contains(note, "g-1, g-2 gave back") {
		t.Errorf("event %q, want g-0 bound and g-1, g-2 given back", note)
	}
	h.waitActivated("g-1", "g-2")
}

// The last member of a gang on a node waits for the lock the member
// before it holds until its device plugin serves it; when that never
// comes within nodeLockWait, the member gives back and is placed again
// at once, and the PodGroup is told which members are bound.
func TestGangLastMemberLockTimesOut(t *testing.T) {
	g0, g1 := gangMemberPod("g-0"), gangMemberPod("g-1")
	h := gangHarness(t, 300*time.Millisecond, eightCardNode("n1"), g0, g1)
	s0, s1 := h.schedule(g0, "n1"), h.schedule(g1, "n1")
	if st := h.plugin.PreBind(h.ctx, s0, g0, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind g-0: %v", st)
	}
	h.bind(g0, "n1")
	if st := h.plugin.PreBind(h.ctx, s1, g1, "n1"); st.IsSuccess() || !strings.Contains(st.Message(), "held by another pod") {
		t.Fatalf("PreBind g-1 = %v, want the lock busy", st)
	}
	h.plugin.Unreserve(h.ctx, s1, g1, "n1")
	h.checkGaveBack(g1)
	if note := h.gangEvent(); !strings.Contains(note, "bound: g-0") || !strings.Contains(note, "g-1 gave back") {
		t.Errorf("event %q, want g-0 bound and g-1 given back", note)
	}
	h.waitActivated("g-1")
}

// What is reserved on a node that is deleted is given back at once: a
// resumed hand-over's cards, a pod waiting at Permit (turned away), and
// a gang round binding a member there (its lock wait ends).
func TestReservationsOnADeletedNodeReleased(t *testing.T) {
	resumed := handedOverTo(gangMemberPod("resumed"), "n2", "n2-gpu0", 0)
	waiting := gpuPod("waiting", gpu(1, 8000, 0))
	blocker := gpuPod("blocker", gpu(1, 1000, 0))
	g0, g1 := gangMemberPod("g-0"), gangMemberPod("g-1")
	h := gangHarness(t, 20*time.Second, eightCardNode("n1"), lockedBy(eightCardNode("n2"), blocker), blocker, resumed, waiting, g0, g1)
	if _, held := h.plugin.Cache().Holding(resumed.UID); !held {
		t.Fatal("the resumed hand-over holds no cards")
	}
	h.schedule(waiting, "n2")
	w := h.handle.wait(waiting)
	s0, s1 := h.schedule(g0, "n1"), h.schedule(g1, "n2")
	first := h.preBindAsync(s0, g0, "n1")
	second := h.preBindAsync(s1, g1, "n2")
	// Both wait in the preflight for the blocker's lock on n2; the node
	// goes.
	if err := h.client.CoreV1().Nodes().Delete(h.ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*fwk.Status{first(), second()} {
		if st.IsSuccess() || !strings.Contains(st.Message(), "n2") {
			t.Errorf("PreBind = %v, want the round ended by n2's deletion", st)
		}
	}
	h.eventually("the resumed hand-over's cards released", func() bool {
		_, held := h.plugin.Cache().Holding(resumed.UID)
		return !held
	})
	if why := w.rejection(); !strings.Contains(why, "node n2 was deleted") {
		t.Errorf("pod waiting at Permit on n2: rejection %q, want it turned away", why)
	}
}

// A resumed hand-over's cards are kept for the pod's next attempt only:
// an attempt that fails (PostFilter) gives them back.
func TestResumedHoldReleasedWhenItsAttemptFails(t *testing.T) {
	pod := handedOverTo(gangMemberPod("member"), "n1", "only", 0)
	h := newHarness(t, nil, gpuNode("n1", card("only", 10000)), pod)
	if _, held := h.plugin.Cache().Holding(pod.UID); !held {
		t.Fatal("the resumed hand-over holds no cards")
	}
	state, _ := h.preFilter(pod, h.nodeInfo("n1"))
	h.plugin.PostFilter(h.ctx, state, pod, nil)
	if _, held := h.plugin.Cache().Holding(pod.UID); held {
		t.Error("the resumed hand-over still holds cards after its attempt failed")
	}
	// It is not resumed again by its next update.
	h.plugin.onPodSet(klog.Background(), pod)
	if _, held := h.plugin.Cache().Holding(pod.UID); held {
		t.Error("the hand-over was resumed again")
	}
}

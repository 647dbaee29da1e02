package e2e

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

// podGroups is the dynamic client of scheduler-plugins' PodGroups.
func (e *env) podGroups() dynamic.ResourceInterface {
	e.t.Helper()
	client, err := dynamic.NewForConfig(controlPlane.Config)
	if err != nil {
		e.t.Fatal(err)
	}
	return client.Resource(v1alpha1.Resource).Namespace(e.ns)
}

// createPodGroup creates a PodGroup of minMember in the test's namespace;
// timeout, when positive, is its scheduleTimeoutSeconds.
func (e *env) createPodGroup(name string, minMember, timeout int32) {
	e.t.Helper()
	pg := &v1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember},
	}
	if timeout > 0 {
		pg.Spec.ScheduleTimeoutSeconds = &timeout
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		e.t.Fatal(err)
	}
	delete(obj, "status")
	if _, err := e.podGroups().Create(e.ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create PodGroup %s: %v", name, err)
	}
}

// getPodGroup reads a PodGroup.
func (e *env) getPodGroup(name string) *v1alpha1.PodGroup {
	e.t.Helper()
	u, err := e.podGroups().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get PodGroup %s: %v", name, err)
	}
	var pg v1alpha1.PodGroup
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pg); err != nil {
		e.t.Fatal(err)
	}
	return &pg
}

// member makes p a member of the PodGroup group.
func member(p *corev1.Pod, group string) *corev1.Pod {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[v1alpha1.PodGroupLabel] = group
	return p
}

// createGang creates n members of group, named <group>-<i>, each asking
// request.
func (e *env) createGang(group string, n int, request gpu) []string {
	e.t.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", group, i)
		e.create(member(e.pod(names[i], request), group))
	}
	return names
}

// states describes the named pods.
func (e *env) states(names []string) (running, bound int, desc string) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var parts []string
	for _, p := range e.pods() {
		if !want[p.Name] {
			continue
		}
		if p.Spec.NodeName != "" {
			bound++
		}
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
		parts = append(parts, describe(&p))
	}
	sort.Strings(parts)
	return running, bound, strings.Join(parts, "; ")
}

// waitAllRunning waits until every named pod runs.
func (e *env) waitAllRunning(names []string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("all %d pods running", len(names)), func() (bool, string) {
		running, _, desc := e.states(names)
		return running == len(names), desc
	})
}

// checkNoneBound fails the test if any named pod is bound or carries an
// assignment.
func (e *env) checkNoneBound(names []string) {
	e.t.Helper()
	for _, n := range names {
		p := e.get(n)
		if p.Spec.NodeName != "" {
			e.t.Errorf("pod %s is bound to %s", n, p.Spec.NodeName)
		}
		if _, ok := p.Annotations[devices.BindPhase]; ok {
			e.t.Errorf("pod %s carries a device assignment: %s", n, describe(p))
		}
	}
}

// checkNothingHeld fails the test if the scheduler's device cache counts
// a card of any named pod, assumed or placed.
func (e *env) checkNothingHeld(names []string) {
	e.t.Helper()
	held := map[string]bool{}
	for _, h := range sched.Plugin().Cache().AllHoldings() {
		held[h.Namespace+"/"+h.Name] = true
	}
	for _, n := range names {
		if held[e.ns+"/"+n] {
			e.t.Errorf("the device cache counts cards held by %s", n)
		}
	}
}

// podGroupEvents returns the reasons and messages of the events on the
// PodGroup.
func (e *env) podGroupEvents(name string) []string {
	e.t.Helper()
	list, err := controlPlane.Client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PodGroup,involvedObject.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}

// gangWaitingForALateMember creates the PodGroup group of minMember 10
// (scheduleTimeoutSeconds timeout) and its ten members of one card and
// 1000 MiB, the tenth selecting nodes labelled late=yes: on nodes with
// room for nine and no such label, nine are placed and wait at Permit
// (one missing member is within podGroupRejectPercentage, so they are not
// rejected at once), until a node is labelled.
func (e *env) gangWaitingForALateMember(group string, timeout int32) []string {
	e.t.Helper()
	e.createPodGroup(group, 10, timeout)
	var names []string
	for i := range 10 {
		p := member(e.pod(fmt.Sprintf("%s-%d", group, i), gpu{cards: 1, memory: 1000}), group)
		if i == 9 {
			p.Spec.NodeSelector["late"] = "yes"
		}
		e.create(p)
		names = append(names, p.Name)
	}
	return names
}

// waitReserved waits until the scheduler publishes n members of the
// group waiting at Permit on the PodGroup.
func (e *env) waitReserved(group string, n int) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%d members waiting at Permit", n), func() (bool, string) {
		value, ok := e.getPodGroup(group).Annotations[devices.GangReservationsAnnotation]
		if !ok {
			return false, "no reservations published"
		}
		r, err := devices.ParseGangReservations(value)
		if err != nil {
			return false, err.Error()
		}
		return len(r.Members) == n, fmt.Sprintf("%d members reserved", len(r.Members))
	})
}

package coscheduling

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
	fwk "github.com/hami-scheduler/hami-scheduler/internal/fwcompat"
	"github.com/hami-scheduler/hami-scheduler/internal/localcluster/simnode"
)

// nodes builds simulated GPU nodes from a simnode spec.
func nodes(t *testing.T, spec string) []runtime.Object {
	t.Helper()
	specs, err := simnode.ParseSpecs(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for _, s := range specs {
		for _, n := range s.Build("node", len(out)) {
			out = append(out, n)
		}
	}
	return out
}

func objects(nodes []runtime.Object, pods ...*corev1.Pod) []runtime.Object {
	out := slices.Clone(nodes)
	for _, p := range pods {
		out = append(out, p)
	}
	return out
}

func TestPreFilter(t *testing.T) {
	twoCards := "2 nodes x 1 card of NVIDIA A100 40 GiB"
	gated := memberPod("g-2", "g", 30000)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	done := memberPod("g-2", "g", 30000)
	done.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		name   string
		groups []*v1alpha1.PodGroup
		pods   []*corev1.Pod
		// pod is scheduled: the first of pods.
		wantCode fwk.Code
		want     string
	}{
		{name: "no group", pods: []*corev1.Pod{memberPod("plain", "", 30000)}, wantCode: fwk.Skip},
		{name: "group missing", pods: []*corev1.Pod{memberPod("g-0", "g", 1000)}, wantCode: fwk.UnschedulableAndUnresolvable, want: "PodGroup ns/g not found"},
		{name: "too few pods", groups: []*v1alpha1.PodGroup{podGroup("g", 3)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 1000), memberPod("g-1", "g", 1000)},
			wantCode: fwk.UnschedulableAndUnresolvable, want: "PodGroup ns/g has 2 of its minMember 3 pods"},
		{name: "a terminated pod does not count", groups: []*v1alpha1.PodGroup{podGroup("g", 3)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 1000), memberPod("g-1", "g", 1000), done},
			wantCode: fwk.UnschedulableAndUnresolvable, want: "2 of its minMember 3 pods"},
		{name: "gated pods", groups: []*v1alpha1.PodGroup{podGroup("g", 3)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 1000), memberPod("g-1", "g", 1000), gated},
			wantCode: fwk.UnschedulableAndUnresolvable, want: "2 of its minMember 3 pods past their scheduling gates"},
		{name: "devices cannot fit together", groups: []*v1alpha1.PodGroup{podGroup("g", 3)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 30000), memberPod("g-1", "g", 30000), memberPod("g-2", "g", 30000)},
			wantCode: fwk.UnschedulableAndUnresolvable, want: "cannot place its members' devices together: 3 members need 3 card shares of 30000 MiB"},
		{name: "devices fit", groups: []*v1alpha1.PodGroup{podGroup("g", 2)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 30000), memberPod("g-1", "g", 30000)},
			wantCode: fwk.Success},
		{name: "minMember of more pods", groups: []*v1alpha1.PodGroup{podGroup("g", 2)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 30000), memberPod("g-1", "g", 30000), memberPod("g-2", "g", 30000)},
			wantCode: fwk.Success},
		{name: "a bound member needs no room", groups: []*v1alpha1.PodGroup{podGroup("g", 3)},
			pods:     []*corev1.Pod{memberPod("g-0", "g", 30000), memberPod("g-1", "g", 30000), boundTo(memberPod("g-2", "g", 30000), "elsewhere")},
			wantCode: fwk.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, defaultArgs(), tt.groups, objects(nodes(t, twoCards), tt.pods...)...)
			_, st := h.plugin.PreFilter(h.ctx, cycle(), tt.pods[0], nil)
			if st.Code() != tt.wantCode {
				t.Fatalf("PreFilter = %v, want code %v", st, tt.wantCode)
			}
			if !strings.Contains(st.Message(), tt.want) {
				t.Errorf("PreFilter message %q, want it to contain %q", st.Message(), tt.want)
			}
		})
	}
}

// A group whose devices fit only once pods are evicted passes PreFilter
// when its members may evict them (lower priority, preemptionPolicy not
// Never): Filter then turns each member away and default preemption
// evicts for it. Otherwise the refusal is UnschedulableAndUnresolvable,
// so no preemption is tried for a member that cannot run anyway.
func TestPreFilterDeviceRoomAfterPreemption(t *testing.T) {
	never := corev1.PreemptNever
	tests := []struct {
		name           string
		holderPriority int32
		memberPriority int32
		memberPreempts bool
		wantCode       fwk.Code
	}{
		{"holders of lower priority", 10, 1000, true, fwk.Success},
		{"holders of the members' priority", 1000, 1000, true, fwk.UnschedulableAndUnresolvable},
		{"members that never preempt", 10, 1000, false, fwk.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := nodes(t, "2 nodes x 1 card of NVIDIA A100 40 GiB")
			var holders, members []*corev1.Pod
			for i := range 2 {
				holder := memberPod(fmt.Sprintf("holder-%d", i), "", 30000)
				holder.Spec.Priority = new(tt.holderPriority)
				holders = append(holders, holder)
				m := memberPod(fmt.Sprintf("g-%d", i), "g", 30000)
				m.Spec.Priority = new(tt.memberPriority)
				if !tt.memberPreempts {
					m.Spec.PreemptionPolicy = &never
				}
				members = append(members, m)
			}
			h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", 2)}, objects(cluster, append(holders, members...)...)...)
			for i, holder := range holders {
				h.reserve(holder, cluster[i].(*corev1.Node))
			}
			_, st := h.plugin.PreFilter(h.ctx, cycle(), members[0], nil)
			if st.Code() != tt.wantCode {
				t.Fatalf("PreFilter = %v, want code %v", st, tt.wantCode)
			}
		})
	}
}

// minResources is taken from the scheduler's snapshot as scheduler-plugins
// takes it: allocatable less what the nodes' pods request, bound or
// assumed (other groups' members waiting at Permit), the group's own pods
// left out; a shortfall is UnschedulableAndUnresolvable.
func TestMinResources(t *testing.T) {
	cpu := func(p *corev1.Pod, milli int64) *corev1.Pod {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
		return p
	}
	tests := []struct {
		name     string
		bound    []*corev1.Pod
		assumed  []*corev1.Pod
		wantCode fwk.Code
	}{
		{name: "free", wantCode: fwk.Success},
		{name: "a bound pod takes the room", bound: []*corev1.Pod{cpu(memberPod("other", "", 0), 3500)}, wantCode: fwk.UnschedulableAndUnresolvable},
		{name: "another group's member waiting at Permit takes it", assumed: []*corev1.Pod{cpu(memberPod("h-0", "h", 0), 1500)}, wantCode: fwk.UnschedulableAndUnresolvable},
		{name: "the group's own pods do not count", assumed: []*corev1.Pod{cpu(memberPod("g-9", "g", 0), 1500)}, wantCode: fwk.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := nodes(t, "2 nodes x 1 card of NVIDIA A100 40 GiB")
			for _, n := range cluster {
				n.(*corev1.Node).Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("2")
				n.(*corev1.Node).Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
			}
			pg := podGroup("g", 2)
			pg.Spec.MinResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
			pods := []*corev1.Pod{memberPod("g-0", "g", 0), memberPod("g-1", "g", 0)}
			for _, b := range tt.bound {
				pods = append(pods, boundTo(b, "node-0"))
			}
			h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{pg}, objects(cluster, pods...)...)
			for _, a := range tt.assumed {
				h.handle.assume(a, "node-1")
			}
			_, st := h.plugin.PreFilter(h.ctx, cycle(), pods[0], nil)
			if st.Code() != tt.wantCode {
				t.Fatalf("PreFilter = %v, want code %v", st, tt.wantCode)
			}
		})
	}
}

// rejectedGroup is a group of two members, with podGroupBackoffSeconds 30,
// that PostFilter has just rejected (the harness clock at 10:00:00).
func rejectedGroup(t *testing.T) (*harness, []*corev1.Pod) {
	t.Helper()
	args := defaultArgs()
	args.PodGroupBackoffSeconds = 30
	pods := []*corev1.Pod{memberPod("g-0", "g", 1000), memberPod("g-1", "g", 1000)}
	h := newHarness(t, args, []*v1alpha1.PodGroup{podGroup("g", 2)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), pods...)...)
	if _, st := h.plugin.PostFilter(h.ctx, cycle(), pods[0], framework.NewDefaultNodeToStatus()); st.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter = %v", st)
	}
	return h, pods
}

func TestPreFilterBackoff(t *testing.T) {
	h, pods := rejectedGroup(t)
	_, st := h.plugin.PreFilter(h.ctx, cycle(), pods[1], nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "backs off until 10:00:30") {
		t.Fatalf("PreFilter during the backoff = %v", st)
	}
	h.clock.SetTime(h.clock.Now().Add(31 * time.Second))
	if _, st := h.plugin.PreFilter(h.ctx, cycle(), pods[1], nil); !st.IsSuccess() {
		t.Fatalf("PreFilter after the backoff = %v", st)
	}
}

// A member turned away while its group backs off goes through PostFilter
// too (kube-scheduler runs it after any PreFilter rejection); that does
// not extend the backoff, as scheduler-plugins' adds one only when none
// is there.
func TestPostFilterDuringBackoff(t *testing.T) {
	h, pods := rejectedGroup(t)
	for range 3 {
		h.clock.SetTime(h.clock.Now().Add(9 * time.Second))
		if _, st := h.plugin.PreFilter(h.ctx, cycle(), pods[1], nil); st.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("PreFilter during the backoff = %v", st)
		}
		h.plugin.PostFilter(h.ctx, cycle(), pods[1], framework.NewDefaultNodeToStatus())
	}
	h.clock.SetTime(h.clock.Now().Add(4 * time.Second))
	if _, st := h.plugin.PreFilter(h.ctx, cycle(), pods[1], nil); !st.IsSuccess() {
		t.Fatalf("PreFilter 31 s after the rejection, members turned away meanwhile = %v, want the backoff over", st)
	}
}

// Permit holds members until minMember are placed (bound ones count),
// then lets every waiting one go; the first to wait activates the others.
func TestPermit(t *testing.T) {
	g3 := podGroup("g", 3)
	timeout := int32(5)
	g3.Spec.ScheduleTimeoutSeconds = &timeout
	pods := []*corev1.Pod{memberPod("g-0", "g", 1000), memberPod("g-1", "g", 1000), memberPod("g-2", "g", 1000), memberPod("g-3", "g", 1000)}
	h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{g3, podGroup("other", 1)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), pods...)...)

	state := cycle()
	st, wait := h.plugin.Permit(h.ctx, state, pods[0], "node-0")
	if st.Code() != fwk.Wait || wait != 5*time.Second {
		t.Fatalf("first member: Permit = %v, %s; want Wait for the group's 5s", st, wait)
	}
	if got := activatedBy(state); len(got) != 3 {
		t.Errorf("the first member activated %v, want its 3 pending siblings", got)
	}
	w0 := h.handle.wait(pods[0])
	state = cycle()
	if st, _ := h.plugin.Permit(h.ctx, state, pods[1], "node-0"); st.Code() != fwk.Wait {
		t.Fatalf("second member: Permit = %v, want Wait", st)
	}
	if got := activatedBy(state); len(got) != 0 {
		t.Errorf("the second member activated %v, want none", got)
	}
	w1 := h.handle.wait(pods[1])
	// A member of another group waits apart.
	other := memberPod("other-0", "other", 1000)
	if st, _ := h.plugin.Permit(h.ctx, cycle(), other, "node-0"); !st.IsSuccess() {
		t.Fatalf("a group of one: Permit = %v", st)
	}
	if st, _ := h.plugin.Permit(h.ctx, cycle(), pods[2], "node-0"); !st.IsSuccess() {
		t.Fatalf("third member: Permit = %v, want Success", st)
	}
	if !w0.allowed || !w1.allowed {
		t.Errorf("waiting members allowed: %t %t, want both", w0.allowed, w1.allowed)
	}
	if got := h.handle.recorder.reasons(); !slices.Contains(got, reasonGangScheduled) {
		t.Errorf("events %v, want %s", got, reasonGangScheduled)
	}
	// A late member of a placed group passes at once.
	if st, _ := h.plugin.Permit(h.ctx, cycle(), pods[3], "node-0"); !st.IsSuccess() {
		t.Errorf("fourth member: Permit = %v, want Success", st)
	}
}

func TestPermitCountsBoundMembers(t *testing.T) {
	pods := []*corev1.Pod{boundTo(memberPod("g-0", "g", 1000), "node-0"), boundTo(memberPod("g-1", "g", 1000), "node-0"), memberPod("g-2", "g", 1000)}
	h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", 3)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), pods...)...)
	if st, _ := h.plugin.Permit(h.ctx, cycle(), pods[2], "node-0"); !st.IsSuccess() {
		t.Fatalf("Permit with 2 bound members = %v, want Success", st)
	}
}

func TestPermitWait(t *testing.T) {
	zero, five := int32(0), int32(5)
	tests := []struct {
		name    string
		args    int64
		timeout *int32
		want    time.Duration
	}{
		{"the group's", 60, &five, 5 * time.Second},
		{"the args' when the group sets none", 30, nil, 30 * time.Second},
		{"the args' when the group's is 0", 30, &zero, 30 * time.Second},
		{"60s when neither", 0, nil, 60 * time.Second},
	}
	for _, tt := range tests {
		p := &Plugin{args: defaultArgs()}
		p.args.PermitWaitingTimeSeconds = tt.args
		if got := p.permitWait(tt.timeout); got != tt.want {
			t.Errorf("%s: permitWait = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// PostFilter rejects the group's waiting members, unless the group is
// close enough to minMember (podGroupRejectPercentage) or placed.
func TestPostFilter(t *testing.T) {
	tests := []struct {
		name       string
		minMember  int32
		waiting    int
		wantReject bool
	}{
		{"far from quorum", 3, 2, true},
		{"none waiting", 3, 0, true},
		{"within the reject percentage", 10, 9, false},
		{"quorum placed", 2, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for i := range int(tt.minMember) + 1 {
				pods = append(pods, memberPod("g-"+string(rune('a'+i)), "g", 1000))
			}
			h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", tt.minMember)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), pods...)...)
			var waiting []*fakeWaitingPod
			for _, p := range pods[:tt.waiting] {
				h.plugin.permitted.add("ns/g", p.UID)
				waiting = append(waiting, h.handle.wait(p))
			}
			failing := pods[len(pods)-1]
			_, st := h.plugin.PostFilter(h.ctx, cycle(), failing, framework.NewDefaultNodeToStatus())
			if st.Code() != fwk.Unschedulable {
				t.Fatalf("PostFilter = %v, want Unschedulable", st)
			}
			for _, w := range waiting {
				if rejected := w.rejected != ""; rejected != tt.wantReject {
					t.Errorf("%s rejected: %t, want %t", w.pod.Name, rejected, tt.wantReject)
				}
			}
			_, rejected := h.plugin.failures.lastRejection("ns/g")
			if rejected != tt.wantReject {
				t.Errorf("group marked rejected: %t, want %t", rejected, tt.wantReject)
			}
			if tt.wantReject && !strings.Contains(st.Message(), "rejected: member ns/"+failing.Name+" fits no node") {
				t.Errorf("PostFilter message %q", st.Message())
			}
		})
	}
}

// Unreserve of one member turns the group's waiting members away; at the
// group's deadline it is a timeout, told to the PodGroup.
func TestUnreserve(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		pods := []*corev1.Pod{memberPod("g-0", "g", 1000), memberPod("g-1", "g", 1000), memberPod("g-2", "g", 1000)}
		h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", 3)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), pods...)...)
		for _, p := range pods[:2] {
			if st, _ := h.plugin.Permit(h.ctx, cycle(), p, "node-0"); st.Code() != fwk.Wait {
				t.Fatalf("Permit %s = %v", p.Name, st)
			}
		}
		w1 := h.handle.wait(pods[1])
		if timeout {
			h.clock.SetTime(h.clock.Now().Add(time.Minute))
		}
		h.handle.recorder.take()
		h.plugin.Unreserve(h.ctx, cycle(), pods[0], "node-0")
		if w1.rejected == "" {
			t.Errorf("timeout %t: the other waiting member was not rejected", timeout)
		}
		want := reasonGangRejected
		if timeout {
			want = reasonGangTimeout
			if !strings.Contains(w1.rejected, "within 1m0s") {
				t.Errorf("rejection message %q does not tell the timeout", w1.rejected)
			}
		}
		if got := h.handle.recorder.reasons(); !slices.Equal(got, []string{want}) {
			t.Errorf("timeout %t: events %v, want [%s]", timeout, got, want)
		}
		// The rejected member's own Unreserve tells nothing more.
		h.plugin.Unreserve(h.ctx, cycle(), pods[1], "node-0")
		if got := h.handle.recorder.reasons(); len(got) != 1 {
			t.Errorf("timeout %t: events after the cascade %v", timeout, got)
		}
		if n := h.plugin.permitted.placed("ns/g", nil, ""); n != 0 {
			t.Errorf("timeout %t: %d members still counted placed", timeout, n)
		}
	}
}

// The queue sorts by priority, then a group's members by their group's
// time (its last rejection, else its creation), together, then by name.
func TestLess(t *testing.T) {
	h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("old", 2), func() *v1alpha1.PodGroup {
		pg := podGroup("new", 2)
		pg.CreationTimestamp = metav1.NewTime(pg.CreationTimestamp.Add(time.Hour))
		return pg
	}()})
	base := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	at := func(pod *corev1.Pod, d time.Duration) queued { return queuedPod(pod, base.Add(d)) }
	high := memberPod("high", "", 0)
	high.Spec.Priority = new(int32)
	*high.Spec.Priority = 10
	tests := []struct {
		name string
		a, b queued
		want bool
	}{
		{"priority first", at(high, time.Hour), at(memberPod("old-0", "old", 0), 0), true},
		{"an older group before a plain pod queued after it was created", at(memberPod("old-1", "old", 0), 2*time.Hour), at(memberPod("plain", "", 0), 0), true},
		{"a plain pod queued before a group was created", at(memberPod("plain", "", 0), 0), at(memberPod("new-0", "new", 0), 0), true},
		{"an older group first", at(memberPod("new-0", "new", 0), 0), at(memberPod("old-9", "old", 0), time.Hour), false},
		{"a group's members by name", at(memberPod("old-0", "old", 0), time.Hour), at(memberPod("old-1", "old", 0), 0), true},
		{"plain pods by queue time", at(memberPod("b", "", 0), 0), at(memberPod("a", "", 0), time.Second), true},
	}
	for _, tt := range tests {
		if got := h.plugin.less(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: less = %t, want %t", tt.name, got, tt.want)
		}
		if got := h.plugin.less(tt.b, tt.a); got == tt.want {
			t.Errorf("%s: less reversed = %t, want %t", tt.name, got, !tt.want)
		}
	}
	// A rejected group sorts as if created at its rejection.
	h.plugin.failures.rejected("ns/old", base.Add(3*time.Hour), 0)
	if h.plugin.less(at(memberPod("old-0", "old", 0), 0), at(memberPod("new-0", "new", 0), 0)) {
		t.Error("a just rejected group still sorts before a newer one")
	}
}

// The member that completes its group's quorum sends the members waiting
// for it back to the active queue.
func TestQuorumActivatesTheGroup(t *testing.T) {
	first := memberPod("g-0", "g", 1000)
	h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", 2)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), first)...)
	if _, st := h.plugin.PreFilter(h.ctx, cycle(), first, nil); st.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("PreFilter with one of two pods = %v", st)
	}
	if _, err := h.client.CoreV1().Pods("ns").Create(h.ctx, memberPod("g-1", "g", 1000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the first member activated", func() bool {
		h.handle.mu.Lock()
		defer h.handle.mu.Unlock()
		return slices.Contains(h.handle.activated, "ns/g-0")
	})
}

package coscheduling

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/apis/scheduling/v1alpha1"
)

func phased(name string, phase corev1.PodPhase) *corev1.Pod {
	p := memberPod(name, "g", 0)
	p.Status.Phase = phase
	return p
}

// groupStatus takes the PodGroup controller's steps to where they settle.
func TestGroupStatus(t *testing.T) {
	owned := phased("a", corev1.PodPending)
	owned.OwnerReferences = []metav1.OwnerReference{{Name: "job-b"}, {Name: "job-a"}}
	tests := []struct {
		name string
		from v1alpha1.PodGroupPhase
		pods []*corev1.Pod
		want v1alpha1.PodGroupStatus
	}{
		{name: "new, too few pods", pods: []*corev1.Pod{phased("a", corev1.PodPending)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending}},
		{name: "new, enough pods, none running", pods: []*corev1.Pod{owned, phased("b", corev1.PodPending)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupScheduling, OccupiedBy: "ns/job-a,ns/job-b"}},
		{name: "running", from: v1alpha1.PodGroupScheduling, pods: []*corev1.Pod{phased("a", corev1.PodRunning), phased("b", corev1.PodRunning)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, Running: 2}},
		{name: "running and succeeded", from: v1alpha1.PodGroupRunning, pods: []*corev1.Pod{phased("a", corev1.PodRunning), phased("b", corev1.PodSucceeded)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, Running: 1, Succeeded: 1}},
		{name: "finished", from: v1alpha1.PodGroupRunning, pods: []*corev1.Pod{phased("a", corev1.PodSucceeded), phased("b", corev1.PodSucceeded)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupFinished, Succeeded: 2}},
		{name: "failed", from: v1alpha1.PodGroupRunning, pods: []*corev1.Pod{phased("a", corev1.PodRunning), phased("b", corev1.PodFailed)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupFailed, Running: 1, Failed: 1}},
		{name: "a pod lost", from: v1alpha1.PodGroupRunning, pods: []*corev1.Pod{phased("a", corev1.PodRunning)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Running: 1}},
		{name: "failed is final", from: v1alpha1.PodGroupFailed, pods: []*corev1.Pod{phased("a", corev1.PodRunning), phased("b", corev1.PodRunning)},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg := podGroup("g", 2)
			pg.Status.Phase = tt.from
			if diff := cmp.Diff(tt.want, groupStatus(pg, tt.pods)); diff != "" {
				t.Errorf("groupStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// The status is written once it differs, with the resourceVersion it was
// computed from.
func TestStatusWritten(t *testing.T) {
	pods := []*corev1.Pod{phased("g-0", corev1.PodRunning), phased("g-1", corev1.PodRunning)}
	for _, p := range pods {
		p.Labels[v1alpha1.PodGroupLabel] = "g"
	}
	h := newHarness(t, defaultArgs(), []*v1alpha1.PodGroup{podGroup("g", 2)}, objects(nodes(t, "1 node x 1 card of NVIDIA A100 40 GiB"), pods...)...)
	var got v1alpha1.PodGroup
	h.waitFor("status written", func() bool {
		u, err := h.dynamic.Resource(v1alpha1.Resource).Namespace("ns").Get(h.ctx, "g", metav1.GetOptions{})
		if err != nil {
			return false
		}
		data, _ := json.Marshal(u.Object)
		got = v1alpha1.PodGroup{}
		_ = json.Unmarshal(data, &got)
		return got.Status.Phase == v1alpha1.PodGroupRunning
	})
	if got.Status.Running != 2 {
		t.Errorf("status %+v, want 2 running", got.Status)
	}
}

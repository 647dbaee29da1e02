//go:build !k8s1.33 && !k8s1.30

package dynamicresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestWithoutResources(t *testing.T) {
	hami := map[v1.ResourceName]bool{"nvidia.com/gpu": true, "nvidia.com/gpumem": true, "nvidia.com/gpucores": true}
	hidden := func(name v1.ResourceName) bool { return hami[name] }
	list := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	reqs := func(limits v1.ResourceList) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: limits, Requests: limits.DeepCopy()}
	}
	tests := []struct {
		name string
		pod  v1.PodSpec
		want v1.PodSpec
		// same: the pod itself is returned.
		same bool
	}{
		{
			name: "no hidden resource",
			pod:  v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: reqs(list("cpu", "1", "example.com/nic", "1"))}}},
			same: true,
		},
		{
			name: "a HAMi pod keeps its other resources",
			pod: v1.PodSpec{Containers: []v1.Container{
				{Name: "cuda", Resources: reqs(list("cpu", "1", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000", "nvidia.com/gpucores", "30"))},
				{Name: "sidecar", Resources: reqs(list("memory", "1Gi"))},
			}},
			want: v1.PodSpec{Containers: []v1.Container{
				{Name: "cuda", Resources: reqs(list("cpu", "1"))},
				{Name: "sidecar", Resources: reqs(list("memory", "1Gi"))},
			}},
		},
		{
			name: "init containers and pod-level resources",
			pod: v1.PodSpec{
				Resources:      &v1.ResourceRequirements{Limits: list("cpu", "2", "nvidia.com/gpu", "1")},
				InitContainers: []v1.Container{{Name: "warm", Resources: reqs(list("nvidia.com/gpu", "1", "example.com/nic", "1"))}},
				Containers:     []v1.Container{{Name: "main", Resources: reqs(list("cpu", "1"))}},
			},
			want: v1.PodSpec{
				Resources:      &v1.ResourceRequirements{Limits: list("cpu", "2")},
				InitContainers: []v1.Container{{Name: "warm", Resources: reqs(list("example.com/nic", "1"))}},
				Containers:     []v1.Container{{Name: "main", Resources: reqs(list("cpu", "1"))}},
			},
		},
		{
			name: "a limit alone counts",
			pod:  v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Limits: list("nvidia.com/gpumem", "1000")}}}},
			want: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Limits: list()}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.pod}
			before := pod.DeepCopy()
			got := withoutResources(pod, hidden)
			if diff := cmp.Diff(before, pod); diff != "" {
				t.Errorf("the pod itself changed (-before +after):\n%s", diff)
			}
			if tt.same {
				if got != pod {
					t.Errorf("got a copy, want the pod itself")
				}
				return
			}
			if got == pod {
				t.Fatal("got the pod itself, want a view without the hidden resources")
			}
			if diff := cmp.Diff(tt.want, got.Spec); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
		})
	}
}

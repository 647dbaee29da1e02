package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

const allocated = "hami.io/vgpu-devices-allocated"

func resourceQuota(name string, hard ...string) *corev1.ResourceQuota {
	rq := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}},
	}
	for i := 0; i+1 < len(hard); i += 2 {
		rq.Spec.Hard[corev1.ResourceName(hard[i])] = quantity(hard[i+1])
	}
	return rq
}

func memoryQuota(name, mib string) *corev1.ResourceQuota {
	return resourceQuota(name, "limits.nvidia.com/gpumem", mib)
}

func coresQuota(name, cores string) *corev1.ResourceQuota {
	return resourceQuota(name, "limits.nvidia.com/gpucores", cores)
}

func withPriorityClassScope(rq *corev1.ResourceQuota, op corev1.ScopeSelectorOperator, values ...string) *corev1.ResourceQuota {
	rq.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values},
	}}
	return rq
}

// holding is an admitted pod whose allocated annotation is assignment.
func holding(name, assignment string, opts ...podOption) *corev1.Pod {
	opts = append([]podOption{named(name), phase(corev1.PodRunning), nodeName("node-1"), annotation(allocated, assignment)}, opts...)
	return newPod(opts...)
}

// initExited gives every init container of the pod a terminated status
// with the exit code.
func initExited(code int32) podOption {
	return func(p *corev1.Pod) {
		for _, c := range p.Spec.InitContainers {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
			})
		}
	}
}

func deletedLongAgo(p *corev1.Pod) {
	past := metav1.NewTime(time.Now().Add(-time.Hour))
	grace := int64(30)
	p.DeletionTimestamp = &past
	p.DeletionGracePeriodSeconds = &grace
	p.Finalizers = []string{"example.com/hold"}
}

// TestQuotaCheck is the quota rule on its own: existing pods' assigned
// memory and cores (from their allocated annotations) plus what the new
// pod asks (cards x per-card amount), against each ResourceQuota.
func TestQuotaCheck(t *testing.T) {
	tests := []struct {
		name    string
		config  func(*Config)
		objects []client.Object
		pod     *corev1.Pod
		refusal string // "" means the pod fits
	}{
		{
			name: "no quota",
			objects: []client.Object{
				holding("a", ";GPU-0,NVIDIA,99999,100:;"),
			},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
		},
		{
			name: "exactly at the limit fits",
			objects: []client.Object{memoryQuota("gpu", "10000"),
				holding("a", ";GPU-0,NVIDIA,3000,0:GPU-1,NVIDIA,3000,0:;")},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")),
		},
		{
			name: "one MiB over the limit",
			objects: []client.Object{memoryQuota("gpu", "10000"),
				holding("a", ";GPU-0,NVIDIA,3000,0:GPU-1,NVIDIA,3000,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4001")),
			refusal: "limits.nvidia.com/gpumem is 10000 MiB, its pods hold 6000 MiB and this pod asks 4001 MiB more",
		},
		{
			name:    "memory is per card: 2 cards x 2500",
			objects: []client.Object{memoryQuota("gpu", "10000"), holding("a", ";GPU-0,NVIDIA,6000,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "2", "nvidia.com/gpumem", "2500")),
			refusal: "this pod asks 5000 MiB more",
		},
		{
			// HAMi: max(sum of regular containers, largest init container).
			name:    "init containers run before the regular ones: not added to them",
			objects: []client.Object{memoryQuota("gpu", "5000")},
			pod:     newPod(initContainer("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000")),
		},
		{
			name:    "the largest init container counts when it is above the regular sum",
			objects: []client.Object{memoryQuota("gpu", "5000"), holding("a", ";GPU-0,NVIDIA,2000,0:;")},
			pod: newPod(initContainer("small", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
				initContainer("big", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3001"),
				limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), container("second", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			refusal: "its pods hold 2000 MiB and this pod asks 3001 MiB more",
		},
		{
			name:    "the regular sum counts when it is above the largest init container",
			objects: []client.Object{memoryQuota("gpu", "5000"), holding("a", ";GPU-0,NVIDIA,2000,0:;")},
			pod: newPod(initContainer("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1500"),
				limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), container("second", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "1001")),
			refusal: "this pod asks 3002 MiB more",
		},
		{
			name:    "cores: the largest init container against the regular sum",
			objects: []client.Object{coresQuota("gpu", "100"), holding("a", ";GPU-0,NVIDIA,1000,50:;")},
			pod: newPod(initContainer("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "60"),
				limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "20"),
				container("second", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "20")),
			refusal: "its pods hold 50 and this pod asks 60 more",
		},
		{
			name: "init container grants of existing pods count",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("a", "GPU-0,NVIDIA,2000,0:;GPU-1,NVIDIA,2000,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1001")),
			refusal: "its pods hold 4000 MiB",
		},
		{
			// hami-protocol 8: per card, max(largest init, sum of regular).
			name: "a pod's init container and regular container on one card hold the larger grant",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("a", "GPU-0,NVIDIA,3000,0:;GPU-0,NVIDIA,1000,0:;", initContainer("warmup", "cpu", "1"))},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "2001")),
			refusal: "its pods hold 3000 MiB",
		},
		{
			name: "a pod's init and regular grants on different cards are added",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("a", "GPU-1,NVIDIA,3000,0:;GPU-0,NVIDIA,1000,0:;", initContainer("warmup", "cpu", "1"))},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1001")),
			refusal: "its pods hold 4000 MiB",
		},
		{
			name: "cores of a pod's init and regular containers collapse per card too",
			objects: []client.Object{coresQuota("gpu", "100"),
				holding("a", "GPU-0,NVIDIA,1000,60:;GPU-0,NVIDIA,1000,20:GPU-1,NVIDIA,1000,20:;", initContainer("warmup", "cpu", "1"))},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "21")),
			refusal: "its pods hold 80 and this pod asks 21 more",
		},
		{
			name: "once its init containers succeeded a pod holds its regular grants only",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("a", "GPU-0,NVIDIA,3000,0:;GPU-0,NVIDIA,1000,0:;", initContainer("warmup", "cpu", "1"), initExited(0))},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4001")),
			refusal: "its pods hold 1000 MiB",
		},
		{
			name: "a failed init container keeps its grant held",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("a", "GPU-0,NVIDIA,3000,0:;GPU-0,NVIDIA,1000,0:;", initContainer("warmup", "cpu", "1"), initExited(1))},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "2001")),
			refusal: "its pods hold 3000 MiB",
		},
		{
			name: "terminated pods hold nothing",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("done", ";GPU-0,NVIDIA,5000,0:;", phase(corev1.PodSucceeded)),
				holding("failed", ";GPU-0,NVIDIA,5000,0:;", phase(corev1.PodFailed))},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000")),
		},
		{
			name: "pods deleted and past their grace period hold nothing",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("gone", ";GPU-0,NVIDIA,5000,0:;", deletedLongAgo)},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000")),
		},
		{
			name: "pods of other namespaces do not count",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("elsewhere", ";GPU-0,NVIDIA,5000,0:;", inNamespace("team-b"))},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000")),
		},
		{
			name: "pending pods without an assignment hold nothing yet",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				newPod(named("pending"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000"))},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000")),
		},
		{
			name: "an unreadable assignment is not counted",
			objects: []client.Object{memoryQuota("gpu", "5000"),
				holding("broken", "GPU-0,NVIDIA,lots,0:;")},
			pod: newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000")),
		},
		{
			name:    "cores: cards x cores per card",
			objects: []client.Object{coresQuota("gpu", "200"), holding("a", ";GPU-0,NVIDIA,1000,150:;")},
			pod:     newPod(limits("nvidia.com/gpu", "2", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "30")),
			refusal: "limits.nvidia.com/gpucores is 200, its pods hold 150 and this pod asks 60 more",
		},
		{
			name:    "cores fit",
			objects: []client.Object{coresQuota("gpu", "210"), holding("a", ";GPU-0,NVIDIA,1000,150:;")},
			pod:     newPod(limits("nvidia.com/gpu", "2", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "30")),
		},
		{
			name:    "whole card asks 100 cores per card",
			objects: []client.Object{coresQuota("gpu", "100"), holding("a", ";GPU-0,NVIDIA,1000,1:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "100")),
			refusal: "this pod asks 100 more",
		},
		{
			name:    "memory percentage fits while memory is left",
			objects: []client.Object{memoryQuota("gpu", "5000"), holding("a", ";GPU-0,NVIDIA,4999,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")),
		},
		{
			// HAMi: percentage memory counts 0, and a pod asking 0 MiB
			// and 0 cores is not checked at all.
			name:    "memory percentage without cores is not checked, even against a used-up quota",
			objects: []client.Object{memoryQuota("gpu", "5000"), holding("a", ";GPU-0,NVIDIA,6000,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")),
		},
		{
			name:    "memory percentage with cores is checked: 0 MiB asked against what is held",
			objects: []client.Object{memoryQuota("gpu", "5000"), holding("a", ";GPU-0,NVIDIA,6000,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50", "nvidia.com/gpucores", "10")),
			refusal: "its pods hold 6000 MiB and this pod asks 0 MiB more",
		},
		{
			name:    "memory percentage with cores fits a quota held up to its limit",
			objects: []client.Object{memoryQuota("gpu", "5000"), holding("a", ";GPU-0,NVIDIA,5000,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50", "nvidia.com/gpucores", "10")),
		},
		{
			name:    "whole card (no memory asked) asks 0 MiB: a zero memory quota does not refuse it",
			objects: []client.Object{memoryQuota("no-gpu", "0")},
			pod:     newPod(limits("nvidia.com/gpu", "1")),
		},
		{
			name:    "defaultMemoryMiB counts as asked memory",
			config:  withVendor(t, devices.Config{Name: "nvidia", DefaultMemoryMiB: 2000}),
			objects: []client.Object{memoryQuota("gpu", "3000"), holding("a", ";GPU-0,NVIDIA,1001,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1")),
			refusal: "its pods hold 1001 MiB and this pod asks 2000 MiB more",
		},
		{
			name:    "memoryFactor: gpumem and the limit are both multiplied",
			config:  withVendor(t, devices.Config{Name: "nvidia", MemoryFactor: 1024}),
			objects: []client.Object{memoryQuota("gpu", "10"), holding("a", ";GPU-0,NVIDIA,8192,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "2")),
		},
		{
			name:    "memoryFactor: over the multiplied limit",
			config:  withVendor(t, devices.Config{Name: "nvidia", MemoryFactor: 1024}),
			objects: []client.Object{memoryQuota("gpu", "10"), holding("a", ";GPU-0,NVIDIA,8192,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3")),
			refusal: "limits.nvidia.com/gpumem is 10 (x memoryFactor 1024 = 10240 MiB), its pods hold 8192 MiB and this pod asks 3072 MiB more",
		},
		{
			// HAMi scales the dcumem quota by Hygon's memoryFactor too.
			name:   "memoryFactor of Hygon: over the multiplied dcumem limit",
			config: withVendor(t, devices.Config{Name: "nvidia"}, devices.Config{Name: "hygon", MemoryFactor: 1024}),
			objects: []client.Object{resourceQuota("dcu", "limits.hygon.com/dcumem", "10"),
				newPod(named("a"), phase(corev1.PodRunning), nodeName("node-1"), annotation("hami.io/dcu-devices-allocated", ";DCU-0,DCU,8192,0:;"))},
			pod:     newPod(limits("hygon.com/dcunum", "1", "hygon.com/dcumem", "3")),
			refusal: "limits.hygon.com/dcumem is 10 (x memoryFactor 1024 = 10240 MiB), its pods hold 8192 MiB and this pod asks 3072 MiB more",
		},
		{
			name:    "memoryFactor: a huge limit does not overflow",
			config:  withVendor(t, devices.Config{Name: "nvidia", MemoryFactor: 1024}),
			objects: []client.Object{memoryQuota("gpu", "9223372036854775807"), holding("a", ";GPU-0,NVIDIA,8192,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3")),
		},
		{
			name:    "a zero memory quota refuses explicit memory",
			objects: []client.Object{memoryQuota("no-gpu", "0")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1")),
			refusal: "is over resource quota no-gpu",
		},
		{
			name:    "quota on other resources is ignored",
			objects: []client.Object{resourceQuota("cpu", "limits.cpu", "1", "requests.nvidia.com/gpu", "0")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
		},
		{
			name: "the tightest of several quotas refuses",
			objects: []client.Object{memoryQuota("loose", "100000"), memoryQuota("tight", "1000"),
				holding("a", ";GPU-0,NVIDIA,500,0:;")},
			pod:     newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "600")),
			refusal: "is over resource quota tight",
		},
		{
			name: "scoped quota does not apply to a pod out of its scope",
			objects: []client.Object{withPriorityClassScope(memoryQuota("high", "1000"), corev1.ScopeSelectorOpIn, "high"),
				holding("a", ";GPU-0,NVIDIA,1000,0:;", priorityClass("high"))},
			pod: newPod(priorityClass("low"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
		},
		{
			name: "scoped quota applies to a pod in its scope",
			objects: []client.Object{withPriorityClassScope(memoryQuota("high", "1000"), corev1.ScopeSelectorOpIn, "high"),
				holding("a", ";GPU-0,NVIDIA,1000,0:;", priorityClass("high"))},
			pod:     newPod(priorityClass("high"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1")),
			refusal: "its pods hold 1000 MiB",
		},
		{
			name: "scoped quota counts only the pods in its scope",
			objects: []client.Object{withPriorityClassScope(memoryQuota("high", "1000"), corev1.ScopeSelectorOpIn, "high"),
				holding("low", ";GPU-0,NVIDIA,1000,0:;", priorityClass("low"))},
			pod: newPod(priorityClass("high"), limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
		},
		{
			name: "NotBestEffort scope: a GPU pod with cpu limits is in scope",
			objects: []client.Object{func() client.Object {
				rq := memoryQuota("burstable", "500")
				rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}
				return rq
			}()},
			pod:     newPod(limits("cpu", "1", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			refusal: "is over resource quota burstable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			if tt.config != nil {
				tt.config(&cfg)
			}
			reader := fake.NewClientBuilder().WithObjects(tt.objects...).Build()
			q := NewQuotaChecker(reader, cfg.Registry)
			pod := tt.pod.DeepCopy()
			m := cfg.mutatePod(pod)
			if m.refusal != "" || !m.asks {
				t.Fatalf("test pod is not a device pod: %+v", m)
			}
			refusal, err := q.Check(context.Background(), testNamespace, pod, m.requests)
			if err != nil {
				t.Fatal(err)
			}
			if tt.refusal == "" {
				if refusal != "" {
					t.Fatalf("refused: %s", refusal)
				}
				return
			}
			if !strings.Contains(refusal, tt.refusal) {
				t.Fatalf("refusal %q does not contain %q", refusal, tt.refusal)
			}
		})
	}
}

func TestQuotaCheckReadErrors(t *testing.T) {
	cfg := testConfig(t)
	pod := newPod(limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"))
	m := cfg.mutatePod(pod)
	tests := []struct {
		name    string
		objects []client.Object
		reader  client.Reader
		want    string
	}{
		{name: "quotas cannot be listed", reader: failingReader{}, want: "list resource quotas"},
		{
			name:   "pods cannot be listed",
			reader: podsFailing{fake.NewClientBuilder().WithObjects(memoryQuota("gpu", "1")).Build()},
			want:   "list pods",
		},
		{
			name:   "a scope selector kube cannot parse",
			reader: fake.NewClientBuilder().WithObjects(withPriorityClassScope(memoryQuota("bad", "1"), corev1.ScopeSelectorOpIn)).Build(),
			want:   "resource quota team-a/bad",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQuotaChecker(tt.reader, cfg.Registry)
			refusal, err := q.Check(context.Background(), testNamespace, pod, m.requests)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (refusal %q), want one containing %q", err, refusal, tt.want)
			}
		})
	}
}

// podsFailing lists quotas but fails to list pods.
type podsFailing struct{ client.Reader }

func (p podsFailing) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.PodList); ok {
		return errUnavailable
	}
	return p.Reader.List(ctx, list, opts...)
}

// TestDemandOf pins how a pod's ask is counted.
func TestDemandOf(t *testing.T) {
	tests := []struct {
		name  string
		req   devices.PodRequest
		inits int
		want  amount
	}{
		{name: "nothing", req: devices.PodRequest{}, want: amount{}},
		{
			name: "count x memory and count x cores, containers summed",
			req: devices.PodRequest{Containers: []devices.Request{
				{Count: 2, MemoryMiB: 1000, Cores: 30},
				{},
				{Count: 1, MemoryMiB: 500, Cores: 100},
			}},
			want: amount{MemoryMiB: 2500, Cores: 160},
		},
		{
			name: "percentage memory counts 0 MiB",
			req: devices.PodRequest{Containers: []devices.Request{
				{Count: 2, MemoryPercent: 50, Cores: 10},
				{Count: 1, MemoryMiB: 700},
			}},
			want: amount{MemoryMiB: 700, Cores: 20},
		},
		{
			name:  "init containers: the largest one, memory and cores apart, against the regular sum",
			inits: 2,
			req: devices.PodRequest{Containers: []devices.Request{
				{Count: 1, MemoryMiB: 4000, Cores: 10},
				{Count: 2, MemoryMiB: 1000, Cores: 50},
				{Count: 1, MemoryMiB: 1000, Cores: 20},
				{Count: 1, MemoryMiB: 1000, Cores: 20},
			}},
			want: amount{MemoryMiB: 4000, Cores: 100},
		},
		{
			name:  "init containers only",
			inits: 1,
			req:   devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 300, Cores: 5}, {}}},
			want:  amount{MemoryMiB: 300, Cores: 5},
		},
		{
			name: "large values do not overflow",
			req:  devices.PodRequest{Containers: []devices.Request{{Count: 1 << 30, MemoryMiB: 1 << 30}}},
			want: amount{MemoryMiB: 1 << 60},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := demandOf(tt.req, tt.inits); got != tt.want {
				t.Errorf("demandOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

package nvidia

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/devicestest"
)

// The fixtures every vendor's tests share.
var (
	res    = devicestest.Resources
	limits = devicestest.Limits
	pod    = devicestest.Pod
)

const (
	docJSONInventory   = `[{"id":"GPU-0a","index":0,"count":10,"devmem":15360,"devcore":100,"type":"NVIDIA-Tesla T4","numa":0,"mode":"hami-core","health":true}]`
	docLegacyInventory = `GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:`
	twoCardInventory   = `[{"id":"GPU-0","count":10,"devmem":16000,"devcore":100,"type":"NVIDIA-A100-SXM4-40GB","health":true},` +
		`{"id":"GPU-1","index":1,"count":10,"devmem":16000,"devcore":100,"type":"NVIDIA-Tesla T4","health":true}]`
)

// res builds a resource list from name, quantity pairs.

func node(annotations map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annotations},
		Status:     corev1.NodeStatus{Allocatable: allocatable},
	}
}

func mustNew(t testing.TB, cfg devices.Config) *Vendor {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "nvidia"
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return v
}

func checkErr(t *testing.T, err error, wantErr []string) bool {
	t.Helper()
	if wantErr == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return false
	}
	if err == nil {
		t.Fatalf("no error, want one containing %q", wantErr)
	}
	for _, sub := range wantErr {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("error %q does not contain %q", err, sub)
		}
	}
	return true
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     devices.Config
		want    devices.ResourceNames
		wantErr []string
	}{
		{
			name: "defaults",
			cfg:  devices.Config{Name: "nvidia"},
			want: devices.ResourceNames{
				Count: "nvidia.com/gpu", Memory: "nvidia.com/gpumem", MemoryPercentage: "nvidia.com/gpumem-percentage",
				Cores: "nvidia.com/gpucores", Priority: "nvidia.com/priority",
			},
		},
		{
			name: "renamed count only",
			cfg:  devices.Config{Name: "nvidia", ResourceCountName: "example.com/vgpu"},
			want: devices.ResourceNames{
				Count: "example.com/vgpu", Memory: "nvidia.com/gpumem", MemoryPercentage: "nvidia.com/gpumem-percentage",
				Cores: "nvidia.com/gpucores", Priority: "nvidia.com/priority",
			},
		},
		{name: "invalid config", cfg: devices.Config{Name: "nvidia", DefaultMemoryMiB: -1}, wantErr: []string{"defaultMemoryMiB"}},
		{name: "default cores above 100", cfg: devices.Config{Name: "nvidia", DefaultCores: 101}, wantErr: []string{"defaultCores"}},
		{name: "unknown core policy", cfg: devices.Config{Name: "nvidia", CorePolicy: "forced"}, wantErr: []string{`corePolicy "forced" is not one of default, force, disable`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := New(tt.cfg)
			if checkErr(t, err, tt.wantErr) {
				return
			}
			if got := v.Resources(); got != tt.want {
				t.Errorf("Resources() = %+v, want %+v", got, tt.want)
			}
			if v.Name() != "NVIDIA" {
				t.Errorf("Name() = %q, want NVIDIA", v.Name())
			}
			toAllocate, allocated := v.AssignmentAnnotations()
			if toAllocate != "hami.io/vgpu-devices-to-allocate" || allocated != "hami.io/vgpu-devices-allocated" {
				t.Errorf("AssignmentAnnotations() = %q, %q", toAllocate, allocated)
			}
		})
	}
}

func TestParsePod(t *testing.T) {
	tests := []struct {
		name    string
		cfg     devices.Config
		pod     *corev1.Pod
		want    devices.PodRequest
		wantErr []string
	}{
		{
			name: "count only: the whole card",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "limits before requests",
			pod: pod(nil, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Limits:   res("nvidia.com/gpu", "2", "nvidia.com/gpumem", "3000", "nvidia.com/gpucores", "40"),
				Requests: res("nvidia.com/gpu", "1", "nvidia.com/gpumem", "2000", "nvidia.com/gpucores", "10"),
			}}),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 3000, Cores: 40}}},
		},
		{
			name: "requests when limits are absent",
			pod: pod(nil, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: res("nvidia.com/gpu", "1", "nvidia.com/gpumem", "2000", "nvidia.com/gpucores", "20"),
			}}),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 2000, Cores: 20}}},
		},
		{
			name: "limits and requests mixed per resource",
			pod: pod(nil, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Limits:   res("nvidia.com/gpu", "1"),
				Requests: res("nvidia.com/gpumem", "2000"),
			}}),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 2000}}},
		},
		{
			name: "gpumem",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 3000}}},
		},
		{
			name: "memoryFactor multiplies gpumem",
			cfg:  devices.Config{MemoryFactor: 1024},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "3", "nvidia.com/gpucores", "10")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 3072, Cores: 10}}},
		},
		{
			name: "memoryFactor leaves percentages alone",
			cfg:  devices.Config{MemoryFactor: 1024},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "30")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 30}}},
		},
		{
			name: "memoryFactor leaves defaultMemoryMiB alone",
			cfg:  devices.Config{MemoryFactor: 1024, DefaultMemoryMiB: 500},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 500}}},
		},
		{
			// HAMi: gpumem x memoryFactor above 2^31-1 asks for no card.
			name: "memoryFactor overflow asks for no card",
			cfg:  devices.Config{MemoryFactor: 1024},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "2097152")),
			want: devices.PodRequest{},
		},
		{
			name: "gpumem with a suffix",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "2k")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 2000}}},
		},
		{
			name: "gpumem-percentage",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 50}}},
		},
		{
			name: "gpumem-percentage clamped to 100",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "150")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "gpumem-percentage 0 ignored: whole card",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "gpumem-percentage 0 ignored: default memory",
			cfg:  devices.Config{DefaultMemoryMiB: 2048},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 2048}}},
		},
		{
			name: "gpumem and gpumem-percentage both kept, MiB applies",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000", "nvidia.com/gpumem-percentage", "50")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 3000, MemoryPercent: 50}}},
		},
		{
			name: "no memory: configured default memory",
			cfg:  devices.Config{DefaultMemoryMiB: 2048},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "2")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 2048}}},
		},
		{
			name: "default memory does not override gpumem",
			cfg:  devices.Config{DefaultMemoryMiB: 2048},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1000}}},
		},
		{
			name: "default memory does not override gpumem-percentage",
			cfg:  devices.Config{DefaultMemoryMiB: 2048},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "30")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 30}}},
		},
		{
			name: "gpumem 0 means no memory asked",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "0")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "gpucores",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "30")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1000, Cores: 30}}},
		},
		{
			name: "default cores",
			cfg:  devices.Config{DefaultCores: 20},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1000, Cores: 20}}},
		},
		{
			name: "gpucores override default cores",
			cfg:  devices.Config{DefaultCores: 20},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "50")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 50}}},
		},
		{
			name: "gpucores 0 overrides default cores",
			cfg:  devices.Config{DefaultCores: 20},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "init containers first, empty entries kept",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{limits("init", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")},
				Containers: []corev1.Container{
					limits("sidecar", "cpu", "1"),
					limits("worker", "nvidia.com/gpu", "2", "nvidia.com/gpucores", "25"),
				},
			}},
			want: devices.PodRequest{Containers: []devices.Request{
				{Count: 1, MemoryMiB: 1000},
				{},
				{Count: 2, MemoryPercent: 100, Cores: 25},
			}, Inits: 1},
		},
		{
			name: "pod asking nothing",
			pod:  pod(nil, limits("main", "cpu", "1", "memory", "1Gi"), corev1.Container{Name: "bare"}),
			want: devices.PodRequest{},
		},
		{
			name: "count 0 asks nothing",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "0", "nvidia.com/gpumem", "1000")),
			want: devices.PodRequest{},
		},
		{
			name: "gpumem without count asks nothing until the webhook adds it",
			pod:  pod(nil, limits("main", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "10")),
			want: devices.PodRequest{},
		},
		{
			name: "pod asking nothing: preference annotations are not read",
			pod:  pod(map[string]string{NUMABindAnnotation: "maybe", devices.CardPolicyAnnotation: "packed"}, limits("main", "cpu", "1")),
			want: devices.PodRequest{},
		},
		{
			name: "preferences",
			pod: pod(map[string]string{
				UseModelAnnotation:           " a100 ,Tesla,",
				AvoidModelAnnotation:         "t4",
				UseUUIDAnnotation:            "GPU-0, GPU-1",
				AvoidUUIDAnnotation:          "GPU-2",
				NUMABindAnnotation:           "true",
				ModeAnnotation:               " mps ",
				devices.CardPolicyAnnotation: "binpack",
			}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{
				Containers: []devices.Request{{Count: 1, MemoryPercent: 100}},
				Preferences: devices.Preferences{
					UseModels:   []string{"A100", "TESLA"},
					AvoidModels: []string{"T4"},
					UseUUIDs:    []string{"GPU-0", "GPU-1"},
					AvoidUUIDs:  []string{"GPU-2"},
					NUMABind:    true,
					Mode:        "mps",
					Policy:      devices.CardBinpack,
				},
			},
		},
		{
			name: "policy chain of HAMi's card policies",
			pod: pod(map[string]string{devices.CardPolicyAnnotation: "binpack, numa,mutex,topology-aware"},
				limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{
				Containers: []devices.Request{{Count: 1, MemoryPercent: 100}},
				// numa is a sort key, not a binding; the chain is kept as written.
				Preferences: devices.Preferences{Policy: "binpack, numa,mutex,topology-aware", Exclusive: true},
			},
		},
		{
			name: "numa-bind false, spread",
			pod: pod(map[string]string{NUMABindAnnotation: "false", devices.CardPolicyAnnotation: "spread"},
				limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{
				Containers:  []devices.Request{{Count: 1, MemoryPercent: 100}},
				Preferences: devices.Preferences{Policy: devices.CardSpread},
			},
		},
		{
			name: "empty preference annotations",
			pod: pod(map[string]string{UseModelAnnotation: "", AvoidUUIDAnnotation: " , ", devices.CardPolicyAnnotation: ""},
				limits("main", "nvidia.com/gpu", "1")),
			// An empty policy orders as spread in HAMi, whatever the default.
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}, Preferences: devices.Preferences{Policy: devices.CardSpread}},
		},
		// Quantities HAMi cannot read make the container ask for no card (or
		// are ignored); they never fail the pod.
		{
			name: "fractional count asks nothing",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1.5")),
			want: devices.PodRequest{},
		},
		{
			name: "negative count asks nothing",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "-1")),
			want: devices.PodRequest{},
		},
		{
			name: "count beyond 32 bits asks nothing",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "4294967297")),
			want: devices.PodRequest{},
		},
		{
			name: "count from requests when limits lack it",
			pod: pod(nil, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
			}}),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryPercent: 100}}},
		},
		{
			name: "negative gpumem asks nothing",
			pod:  pod(nil, limits("worker", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "-1")),
			want: devices.PodRequest{},
		},
		{
			name: "gpumem beyond 32 bits asks nothing",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "3Gi")),
			want: devices.PodRequest{},
		},
		{
			name: "fractional gpumem asks nothing",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000.5")),
			want: devices.PodRequest{},
		},
		{
			name: "bad gpumem in one container leaves the others",
			pod: pod(nil, limits("a", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "-5"),
				limits("b", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "100")),
			want: devices.PodRequest{Containers: []devices.Request{{}, {Count: 1, MemoryMiB: 100}}},
		},
		{
			name: "fractional gpumem-percentage is ignored",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "12.5")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "gpumem-percentage 0 is ignored",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "gpumem-percentage above 100 is 100",
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "150")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "fractional gpucores take the default cores",
			cfg:  devices.Config{DefaultCores: 20},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0.5")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 20}}},
		},
		{
			name: "negative gpucores take the default cores",
			cfg:  devices.Config{DefaultCores: 20},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "-30")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 20}}},
		},
		{
			name: "bad quantity in an init container",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{limits("init", "nvidia.com/gpu", "1.5")},
				Containers:     []corev1.Container{limits("main", "nvidia.com/gpu", "1")},
			}},
			want: devices.PodRequest{Containers: []devices.Request{{}, {Count: 1, MemoryPercent: 100}}, Inits: 1},
		},
		// memoryFactor multiplies gpumem only.
		{
			name: "memoryFactor multiplies gpumem",
			cfg:  devices.Config{MemoryFactor: 3},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 3000}}},
		},
		{
			name: "memoryFactor 1 leaves gpumem",
			cfg:  devices.Config{MemoryFactor: 1},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1000}}},
		},
		{
			name: "memoryFactor: largest gpumem that stays within 32 bits",
			cfg:  devices.Config{MemoryFactor: 3},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "715827882")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 2147483646}}},
		},
		{
			name: "memoryFactor: gpumem that would overflow asks nothing",
			cfg:  devices.Config{MemoryFactor: 3},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "715827883")),
			want: devices.PodRequest{},
		},
		{
			name: "memoryFactor does not multiply gpumem-percentage",
			cfg:  devices.Config{MemoryFactor: 3},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "30")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 30}}},
		},
		{
			name: "memoryFactor does not multiply the default memory",
			cfg:  devices.Config{MemoryFactor: 3, DefaultMemoryMiB: 2048},
			pod:  pod(nil, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 2048}}},
		},
		// Annotation values HAMi does not know fall back to its defaults.
		{
			name: "numa-bind not a boolean: no binding",
			pod:  pod(map[string]string{NUMABindAnnotation: "yes please"}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "numa-bind 1 is true (strconv.ParseBool)",
			pod:  pod(map[string]string{NUMABindAnnotation: "1"}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}, Preferences: devices.Preferences{NUMABind: true}},
		},
		{
			name: "unknown gpu-scheduler-policy kept as written",
			pod:  pod(map[string]string{devices.CardPolicyAnnotation: "packed"}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}, Preferences: devices.Preferences{Policy: "packed"}},
		},
		{
			name: "mutex anywhere in the chain is exclusive",
			pod:  pod(map[string]string{devices.CardPolicyAnnotation: "spread , mutex"}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}, Preferences: devices.Preferences{Policy: "spread , mutex", Exclusive: true}},
		},
		{
			name: "scoring weights",
			pod:  pod(map[string]string{devices.ScoringWeightsAnnotation: " memory=3, slot=1 ,core=0"}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}, Preferences: devices.Preferences{Weights: devices.ScoringWeights{Slot: 1, Memory: 3}}},
		},
		{
			name: "invalid scoring weights make the pod fit nowhere",
			pod:  pod(map[string]string{devices.ScoringWeightsAnnotation: "slot=1,core=1"}, limits("main", "nvidia.com/gpu", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}, Preferences: devices.Preferences{
				Invalid: `annotation hami.io/device-scoring-weights="slot=1,core=1": want slot=N,core=N,memory=N`,
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			before := tt.pod.DeepCopy()
			got, err := v.ParsePod(tt.pod)
			if !equality.Semantic.DeepEqual(before, tt.pod) {
				t.Errorf("ParsePod modified the pod")
			}
			if checkErr(t, err, tt.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePod()\n got %+v\nwant %+v", got, tt.want)
			}
			if got.IsZero() != tt.want.IsZero() {
				t.Errorf("IsZero() = %v, want %v", got.IsZero(), tt.want.IsZero())
			}
		})
	}
}

// TestParsePodThenFit checks that the annotations steer Fit as the protocol
// says: model filters are case-insensitive substrings, uuid filters exact.
func TestParsePodThenFit(t *testing.T) {
	v := mustNew(t, devices.Config{})
	n := node(map[string]string{RegisterAnnotation: twoCardInventory}, res("nvidia.com/gpu", "20"))
	cards, err := v.Inventory(n)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		annotations map[string]string
		want        string // UUID picked; empty: rejected
	}{
		{name: "no preference", want: "GPU-1"},
		{name: "use model, lower case", annotations: map[string]string{UseModelAnnotation: "tesla"}, want: "GPU-1"},
		{name: "use model, mixed case", annotations: map[string]string{UseModelAnnotation: "h100,TeSlA t4"}, want: "GPU-1"},
		{name: "avoid model", annotations: map[string]string{AvoidModelAnnotation: "a100"}, want: "GPU-1"},
		{name: "avoid both models", annotations: map[string]string{AvoidModelAnnotation: "a100,t4"}},
		{name: "use uuid", annotations: map[string]string{UseUUIDAnnotation: "GPU-1"}, want: "GPU-1"},
		{name: "avoid uuid", annotations: map[string]string{AvoidUUIDAnnotation: "GPU-0"}, want: "GPU-1"},
		{name: "uuid is case-sensitive", annotations: map[string]string{UseUUIDAnnotation: "gpu-1"}},
		{name: "mode not on the node", annotations: map[string]string{ModeAnnotation: "mig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := v.ParsePod(pod(tt.annotations, limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")))
			if err != nil {
				t.Fatal(err)
			}
			a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
			if tt.want == "" {
				if rej == nil {
					t.Fatalf("Fit() = %v, want a rejection", a)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %s", rej.Reason())
			}
			want := devices.Assignment{{{UUID: tt.want, Vendor: "NVIDIA", MemoryMiB: 1000}}}
			if !reflect.DeepEqual(a, want) {
				t.Errorf("Fit() = %v, want %v", a, want)
			}
		})
	}
}

func TestInventory(t *testing.T) {
	docCard := devices.Card{UUID: "GPU-0a", Split: 10, MemoryMiB: 15360, Cores: 100, Model: "NVIDIA-Tesla T4", Mode: "hami-core", Healthy: true}
	tests := []struct {
		name    string
		cfg     devices.Config
		node    *corev1.Node
		want    []devices.Card
		wantErr []string
	}{
		{
			name: "no register annotation: no cards, no error",
			node: node(map[string]string{"other": "x"}, res("nvidia.com/gpu", "10")),
			want: nil,
		},
		{
			name: "no annotations at all",
			node: node(nil, nil),
			want: nil,
		},
		{
			name: "JSON inventory",
			node: node(map[string]string{RegisterAnnotation: docJSONInventory}, res("nvidia.com/gpu", "10")),
			want: []devices.Card{docCard},
		},
		{
			name: "legacy inventory",
			node: node(map[string]string{RegisterAnnotation: docLegacyInventory}, res("nvidia.com/gpu", "10")),
			want: []devices.Card{{
				UUID: "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4", Index: 1, Split: 10, MemoryMiB: 7680, Cores: 100,
				Model: "NVIDIA-Tesla P4", Mode: "hami-core", Healthy: true,
			}},
		},
		{
			name: "cordon applied",
			node: node(map[string]string{RegisterAnnotation: twoCardInventory, devices.DeviceCordon: "GPU-1"}, res("nvidia.com/gpu", "20")),
			want: []devices.Card{
				{UUID: "GPU-0", Split: 10, MemoryMiB: 16000, Cores: 100, Model: "NVIDIA-A100-SXM4-40GB", Mode: "hami-core", Healthy: true},
				{UUID: "GPU-1", Index: 1, Split: 10, MemoryMiB: 16000, Cores: 100, Model: "NVIDIA-Tesla T4", Mode: "hami-core", Healthy: true, Cordoned: true},
			},
		},
		{
			name: "topology scores: first entry per card, unknown cards ignored",
			node: node(map[string]string{
				RegisterAnnotation: twoCardInventory,
				ScoreAnnotation: `[{"uuid":"GPU-0","score":{"GPU-1":50,"GPU-9":7}},{"uuid":"GPU-0","score":{"GPU-1":1}},` +
					`{"uuid":"GPU-1","score":{"GPU-0":40}},{"uuid":"GPU-7","score":{"GPU-0":3}}]`,
			}, res("nvidia.com/gpu", "20")),
			want: []devices.Card{
				{UUID: "GPU-0", Split: 10, MemoryMiB: 16000, Cores: 100, Model: "NVIDIA-A100-SXM4-40GB", Mode: "hami-core", Healthy: true, Links: "GPU-1=50,GPU-9=7"},
				{UUID: "GPU-1", Index: 1, Split: 10, MemoryMiB: 16000, Cores: 100, Model: "NVIDIA-Tesla T4", Mode: "hami-core", Healthy: true, Links: "GPU-0=40"},
			},
		},
		{
			name: "topology scores: a card without an entry has no links",
			node: node(map[string]string{RegisterAnnotation: docJSONInventory, ScoreAnnotation: `[]`}, res("nvidia.com/gpu", "10")),
			want: []devices.Card{docCard},
		},
		{
			name:    "topology scores that do not parse: no card at all, as in HAMi",
			node:    node(map[string]string{RegisterAnnotation: docJSONInventory, ScoreAnnotation: `{"uuid":"GPU-0a"}`}, res("nvidia.com/gpu", "10")),
			wantErr: []string{"hami.io/node-nvidia-score", "JSON array"},
		},
		{
			name:    "topology scores present but empty: no card at all, as in HAMi",
			node:    node(map[string]string{RegisterAnnotation: docJSONInventory, ScoreAnnotation: ""}, res("nvidia.com/gpu", "10")),
			wantErr: []string{"hami.io/node-nvidia-score"},
		},
		{
			name:    "topology score not an integer",
			node:    node(map[string]string{RegisterAnnotation: docJSONInventory, ScoreAnnotation: `[{"uuid":"GPU-0a","score":{"GPU-1":1.5}}]`}, res("nvidia.com/gpu", "10")),
			wantErr: []string{"hami.io/node-nvidia-score"},
		},
		{
			name: "only cards whose type names NVIDIA, in any case",
			node: node(map[string]string{RegisterAnnotation: `[{"id":"GPU-0","count":1,"type":"Tesla T4","health":true},` +
				`{"id":"GPU-1","count":1,"type":"nvidia a10","health":true}]`}, res("nvidia.com/gpu", "2")),
			want: []devices.Card{{UUID: "GPU-1", Split: 1, Model: "nvidia a10", Mode: "hami-core", Healthy: true}},
		},
		{
			name:    "no card whose type names NVIDIA",
			node:    node(map[string]string{RegisterAnnotation: `[{"id":"GPU-0","count":1,"type":"Tesla T4","health":true}]`}, res("nvidia.com/gpu", "1")),
			wantErr: []string{"hami.io/node-nvidia-register", "no card whose type names NVIDIA"},
		},
		{
			name:    "garbage",
			node:    node(map[string]string{RegisterAnnotation: "garbage"}, res("nvidia.com/gpu", "10")),
			wantErr: []string{"hami.io/node-nvidia-register"},
		},
		{
			name:    "present but empty",
			node:    node(map[string]string{RegisterAnnotation: ""}, res("nvidia.com/gpu", "10")),
			wantErr: []string{"hami.io/node-nvidia-register", "empty"},
		},
		{
			name:    "allocatable 0",
			node:    node(map[string]string{RegisterAnnotation: docJSONInventory}, res("nvidia.com/gpu", "0")),
			wantErr: []string{"allocatable nvidia.com/gpu"},
		},
		{
			name:    "allocatable absent",
			node:    node(map[string]string{RegisterAnnotation: docJSONInventory}, res("cpu", "8")),
			wantErr: []string{"allocatable nvidia.com/gpu"},
		},
		{
			name: "renamed count resource",
			cfg:  devices.Config{ResourceCountName: "example.com/vgpu"},
			node: node(map[string]string{RegisterAnnotation: docJSONInventory}, res("example.com/vgpu", "10")),
			want: []devices.Card{docCard},
		},
		{
			name:    "renamed count resource not allocatable",
			cfg:     devices.Config{ResourceCountName: "example.com/vgpu"},
			node:    node(map[string]string{RegisterAnnotation: docJSONInventory}, res("nvidia.com/gpu", "10")),
			wantErr: []string{"allocatable example.com/vgpu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			got, err := v.Inventory(tt.node)
			if checkErr(t, err, tt.wantErr) {
				if got != nil {
					t.Errorf("Inventory() returned cards with an error")
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Inventory()\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestInventoryChanged(t *testing.T) {
	base := func() *corev1.Node {
		return node(map[string]string{
			RegisterAnnotation:   docJSONInventory,
			devices.DeviceCordon: "",
			"unrelated":          "a",
		}, res("nvidia.com/gpu", "10", "cpu", "8"))
	}
	tests := []struct {
		name   string
		cfg    devices.Config
		change func(*corev1.Node)
		want   bool
	}{
		{name: "nothing changed", change: func(*corev1.Node) {}, want: false},
		{name: "unrelated annotation", change: func(n *corev1.Node) { n.Annotations["unrelated"] = "b" }, want: false},
		{name: "labels", change: func(n *corev1.Node) { n.Labels = map[string]string{"a": "b"} }, want: false},
		{name: "cpu allocatable", change: func(n *corev1.Node) { n.Status.Allocatable["cpu"] = resource.MustParse("4") }, want: false},
		{name: "same count, other notation", change: func(n *corev1.Node) { n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1e1") }, want: false},
		{name: "register annotation", change: func(n *corev1.Node) { n.Annotations[RegisterAnnotation] = docLegacyInventory }, want: true},
		{name: "register annotation removed", change: func(n *corev1.Node) { delete(n.Annotations, RegisterAnnotation) }, want: true},
		{name: "topology scores added", change: func(n *corev1.Node) { n.Annotations[ScoreAnnotation] = "[]" }, want: true},
		{name: "cordon", change: func(n *corev1.Node) { n.Annotations[devices.DeviceCordon] = "GPU-0a" }, want: true},
		{name: "allocatable count", change: func(n *corev1.Node) { n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0") }, want: true},
		{name: "allocatable count removed", change: func(n *corev1.Node) { delete(n.Status.Allocatable, "nvidia.com/gpu") }, want: true},
		{
			name:   "renamed count resource changed",
			cfg:    devices.Config{ResourceCountName: "example.com/vgpu"},
			change: func(n *corev1.Node) { n.Status.Allocatable["example.com/vgpu"] = resource.MustParse("5") },
			want:   true,
		},
		{
			name:   "default count resource ignored when renamed",
			cfg:    devices.Config{ResourceCountName: "example.com/vgpu"},
			change: func(n *corev1.Node) { n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("5") },
			want:   false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			old := base()
			updated := base()
			tt.change(updated)
			if got := v.InventoryChanged(old, updated); got != tt.want {
				t.Errorf("InventoryChanged(old, updated) = %v, want %v", got, tt.want)
			}
			if got := v.InventoryChanged(updated, old); got != tt.want {
				t.Errorf("InventoryChanged(updated, old) = %v, want %v", got, tt.want)
			}
		})
	}
}

// quantities renders a resource list as name -> value.
func quantities(rl corev1.ResourceList) map[string]int64 {
	if rl == nil {
		return nil
	}
	out := map[string]int64{}
	for name, q := range rl {
		out[string(name)] = q.Value()
	}
	return out
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		cfg  devices.Config
		ctr  corev1.Container
		// wantAsks is Default's first result.
		wantAsks bool
		// wantLimits is the container's limits afterwards.
		wantLimits map[string]int64
		// wantRequests is the container's requests afterwards (nil: none).
		wantRequests map[string]int64
		wantEnv      []corev1.EnvVar
		wantErr      []string
	}{
		{
			name:       "gpumem only: count added, no exclusive cores",
			ctr:        limits("main", "nvidia.com/gpumem", "3000"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpumem": 3000, "nvidia.com/gpu": 1},
		},
		{
			name:       "gpucores only: count added",
			ctr:        limits("main", "nvidia.com/gpucores", "30"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpucores": 30, "nvidia.com/gpu": 1},
		},
		{
			name:       "gpumem-percentage only: count added",
			ctr:        limits("main", "nvidia.com/gpumem-percentage", "50"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpumem-percentage": 50, "nvidia.com/gpu": 1},
		},
		{
			name:       "gpumem-percentage 100 only: count added and exclusive cores",
			ctr:        limits("main", "nvidia.com/gpumem-percentage", "100"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpumem-percentage": 100, "nvidia.com/gpu": 1, "nvidia.com/gpucores": 100},
		},
		{
			name:       "configured default count",
			cfg:        devices.Config{DefaultCount: ptr.To[int32](2)},
			ctr:        limits("main", "nvidia.com/gpumem", "3000"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpumem": 3000, "nvidia.com/gpu": 2},
		},
		{
			// HAMi's defaultGPUNum: 0: no count is added and the container
			// is not a GPU container.
			name:       "default count 0: nothing added",
			cfg:        devices.Config{DefaultCount: ptr.To[int32](0)},
			ctr:        limits("main", "nvidia.com/gpumem", "3000"),
			wantAsks:   false,
			wantLimits: map[string]int64{"nvidia.com/gpumem": 3000},
		},
		{
			name:       "count only: exclusive cores",
			ctr:        limits("main", "nvidia.com/gpu", "1"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpucores": 100},
		},
		{
			name:       "count and gpumem-percentage 100: exclusive cores",
			ctr:        limits("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem-percentage", "100"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 2, "nvidia.com/gpumem-percentage": 100, "nvidia.com/gpucores": 100},
		},
		{
			name:       "count and gpumem-percentage 50: unchanged",
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50},
		},
		{
			name:       "count and gpumem: unchanged",
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "2000"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 2000},
		},
		{
			name:       "count and gpucores: unchanged",
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "20"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpucores": 20},
		},
		{
			name: "count and gpucores in requests: unchanged",
			ctr: corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Limits:   res("nvidia.com/gpu", "1"),
				Requests: res("nvidia.com/gpucores", "20"),
			}},
			wantAsks:     true,
			wantLimits:   map[string]int64{"nvidia.com/gpu": 1},
			wantRequests: map[string]int64{"nvidia.com/gpucores": 20},
		},
		{
			name: "count in requests only: exclusive cores in new limits",
			ctr: corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: res("nvidia.com/gpu", "1"),
			}},
			wantAsks:     true,
			wantLimits:   map[string]int64{"nvidia.com/gpucores": 100},
			wantRequests: map[string]int64{"nvidia.com/gpu": 1},
		},
		{
			name:       "priority becomes CUDA_TASK_PRIORITY",
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/priority", "1"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/priority": 1},
			wantEnv:    []corev1.EnvVar{{Name: "CUDA_TASK_PRIORITY", Value: "1"}},
		},
		{
			name: "priority 0 appended after existing env",
			ctr: corev1.Container{
				Name:      "main",
				Env:       []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Limits: res("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/priority", "0")},
			},
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/priority": 0},
			wantEnv:    []corev1.EnvVar{{Name: "A", Value: "b"}, {Name: "CUDA_TASK_PRIORITY", Value: "0"}},
		},
		{
			name: "existing CUDA_TASK_PRIORITY is replaced, not duplicated",
			ctr: corev1.Container{
				Name:      "main",
				Env:       []corev1.EnvVar{{Name: "CUDA_TASK_PRIORITY", Value: "7"}, {Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Limits: res("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/priority", "1")},
			},
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/priority": 1},
			wantEnv:    []corev1.EnvVar{{Name: "CUDA_TASK_PRIORITY", Value: "1"}, {Name: "A", Value: "b"}},
		},
		{
			name:     "gpumem-percentage 101",
			ctr:      limits("main", "nvidia.com/gpumem-percentage", "101"),
			wantErr:  []string{"nvidia.com/gpumem-percentage 101 is above 100"},
			wantAsks: false,
		},
		{
			name:    "fractional gpumem",
			ctr:     limits("main", "nvidia.com/gpumem", "1.5"),
			wantErr: []string{"nvidia.com/gpumem"},
		},
		{
			name:    "negative count",
			ctr:     limits("main", "nvidia.com/gpu", "-1"),
			wantErr: []string{"nvidia.com/gpu -1"},
		},
		{
			name:    "fractional gpucores",
			ctr:     limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0.5"),
			wantErr: []string{"nvidia.com/gpucores"},
		},
		{
			// nvidia.com/gpu: 0 in limits is a GPU container for HAMi's
			// webhook (schedulerName, runtime class, exclusive cores).
			name:       "count 0 in limits asks, and gets exclusive cores",
			ctr:        limits("main", "nvidia.com/gpu", "0"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 0, "nvidia.com/gpucores": 100},
		},
		{
			name:    "negative gpumem-percentage",
			ctr:     limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "-1"),
			wantErr: []string{"nvidia.com/gpumem-percentage -1"},
		},
		{
			name:       "gpumem-percentage 0 is accepted",
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 0},
		},
		{
			name:       "core policy force on a GPU container, after the priority env",
			cfg:        devices.Config{CorePolicy: "force"},
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/priority", "1"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/priority": 1},
			wantEnv:    []corev1.EnvVar{{Name: "CUDA_TASK_PRIORITY", Value: "1"}, {Name: "GPU_CORE_UTILIZATION_POLICY", Value: "force"}},
		},
		{
			name:       "core policy disable on a container asking nothing",
			cfg:        devices.Config{CorePolicy: "disable"},
			ctr:        limits("main", "cpu", "1"),
			wantAsks:   false,
			wantLimits: map[string]int64{"cpu": 1},
			wantEnv:    []corev1.EnvVar{{Name: "GPU_CORE_UTILIZATION_POLICY", Value: "disable"}},
		},
		{
			name:       "core policy default adds nothing",
			cfg:        devices.Config{CorePolicy: "default"},
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000},
		},
		{
			name:       "overwriteEnv hides the cards from a container asking nothing",
			cfg:        devices.Config{OverwriteEnv: true},
			ctr:        limits("main", "cpu", "1"),
			wantAsks:   false,
			wantLimits: map[string]int64{"cpu": 1},
			wantEnv:    []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "none"}},
		},
		{
			name: "overwriteEnv replaces the container's own NVIDIA_VISIBLE_DEVICES",
			cfg:  devices.Config{OverwriteEnv: true},
			ctr: corev1.Container{Name: "main", Env: []corev1.EnvVar{
				{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}, {Name: "A", Value: "b"},
			}},
			wantAsks: false,
			wantEnv:  []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "none"}, {Name: "A", Value: "b"}},
		},
		{
			name:       "overwriteEnv leaves a GPU container alone",
			cfg:        devices.Config{OverwriteEnv: true},
			ctr:        limits("main", "nvidia.com/gpumem", "1000"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000},
		},
		{
			// With defaultCount 0 a container asking only memory is not a
			// GPU container, so it is hidden from the cards too (HAMi).
			name:       "overwriteEnv with default count 0: memory-only container is hidden",
			cfg:        devices.Config{OverwriteEnv: true, DefaultCount: ptr.To[int32](0)},
			ctr:        limits("main", "nvidia.com/gpumem", "1000"),
			wantAsks:   false,
			wantLimits: map[string]int64{"nvidia.com/gpumem": 1000},
			wantEnv:    []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "none"}},
		},
		{
			name:    "overwriteEnv and core policy leave a failing container unchanged",
			cfg:     devices.Config{OverwriteEnv: true, CorePolicy: "force"},
			ctr:     limits("main", "nvidia.com/gpumem-percentage", "101"),
			wantErr: []string{"above 100"},
		},
		{
			name:       "container asking nothing",
			ctr:        limits("main", "cpu", "1", "memory", "1Gi"),
			wantAsks:   false,
			wantLimits: map[string]int64{"cpu": 1, "memory": 1 << 30},
		},
		{
			name:     "bare container",
			ctr:      corev1.Container{Name: "bare"},
			wantAsks: false,
		},
		{
			name:       "renamed resources: default names ignored",
			cfg:        devices.Config{ResourceCountName: "example.com/vgpu", ResourceMemoryName: "example.com/vmem", ResourceCoresName: "example.com/vcores"},
			ctr:        limits("main", "nvidia.com/gpumem", "3000"),
			wantAsks:   false,
			wantLimits: map[string]int64{"nvidia.com/gpumem": 3000},
		},
		{
			name:       "renamed resources: renamed count added",
			cfg:        devices.Config{ResourceCountName: "example.com/vgpu", ResourceMemoryName: "example.com/vmem", ResourceCoresName: "example.com/vcores"},
			ctr:        limits("main", "example.com/vmem", "3000"),
			wantAsks:   true,
			wantLimits: map[string]int64{"example.com/vmem": 3000, "example.com/vgpu": 1},
		},
		{
			name:       "renamed resources: renamed exclusive cores",
			cfg:        devices.Config{ResourceCountName: "example.com/vgpu", ResourceCoresName: "example.com/vcores"},
			ctr:        limits("main", "example.com/vgpu", "1"),
			wantAsks:   true,
			wantLimits: map[string]int64{"example.com/vgpu": 1, "example.com/vcores": 100},
		},
		{
			name:       "renamed priority",
			cfg:        devices.Config{ResourcePriorityName: "example.com/prio"},
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1", "example.com/prio", "1", "nvidia.com/priority", "0"),
			wantAsks:   true,
			wantLimits: map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1, "example.com/prio": 1, "nvidia.com/priority": 0},
			wantEnv:    []corev1.EnvVar{{Name: "CUDA_TASK_PRIORITY", Value: "1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			c := tt.ctr.DeepCopy()
			asks, err := v.Default(c)
			if asks != tt.wantAsks {
				t.Errorf("Default() = %v, want %v", asks, tt.wantAsks)
			}
			if checkErr(t, err, tt.wantErr) {
				if !equality.Semantic.DeepEqual(c, &tt.ctr) {
					t.Errorf("Default() changed the container although it failed: %+v", c)
				}
				return
			}
			if got := quantities(c.Resources.Limits); !reflect.DeepEqual(got, tt.wantLimits) {
				t.Errorf("limits = %v, want %v", got, tt.wantLimits)
			}
			if got := quantities(c.Resources.Requests); !reflect.DeepEqual(got, tt.wantRequests) {
				t.Errorf("requests = %v, want %v", got, tt.wantRequests)
			}
			if !reflect.DeepEqual(c.Env, tt.wantEnv) {
				t.Errorf("env = %v, want %v", c.Env, tt.wantEnv)
			}
			if !asks && !tt.cfg.OverwriteEnv && tt.cfg.CorePolicy == "" && !equality.Semantic.DeepEqual(c, &tt.ctr) {
				t.Errorf("Default() changed a container that asks nothing: %+v", c)
			}
		})
	}
}

// TestDefaultThenParsePod checks that what the webhook writes is what the
// scheduler reads.
func TestDefaultThenParsePod(t *testing.T) {
	tests := []struct {
		name string
		cfg  devices.Config
		ctr  corev1.Container
		want devices.Request
	}{
		{name: "gpumem only", ctr: limits("main", "nvidia.com/gpumem", "3000"), want: devices.Request{Count: 1, MemoryMiB: 3000}},
		{name: "count only", ctr: limits("main", "nvidia.com/gpu", "2"), want: devices.Request{Count: 2, MemoryPercent: 100, Cores: 100}},
		{name: "gpucores only", ctr: limits("main", "nvidia.com/gpucores", "30"), want: devices.Request{Count: 1, MemoryPercent: 100, Cores: 30}},
		{
			name: "custom names",
			cfg:  devices.Config{ResourceCountName: "example.com/vgpu", ResourceMemoryPercentageName: "example.com/vmem-pct"},
			ctr:  limits("main", "example.com/vmem-pct", "25"),
			want: devices.Request{Count: 1, MemoryPercent: 25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			c := tt.ctr.DeepCopy()
			asks, err := v.Default(c)
			if err != nil || !asks {
				t.Fatalf("Default() = %v, %v", asks, err)
			}
			req, err := v.ParsePod(pod(nil, *c))
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Containers) != 1 || req.Containers[0] != tt.want {
				t.Errorf("ParsePod() = %+v, want one container %+v", req.Containers, tt.want)
			}
		})
	}
}

func TestCustomResourceNames(t *testing.T) {
	cfg := devices.Config{
		Name:                         "nvidia",
		ResourceCountName:            "example.com/vgpu",
		ResourceMemoryName:           "example.com/vgpu-memory",
		ResourceMemoryPercentageName: "example.com/vgpu-memory-percentage",
		ResourceCoresName:            "example.com/vgpu-cores",
		ResourcePriorityName:         "example.com/vgpu-priority",
	}
	v := mustNew(t, cfg)
	tests := []struct {
		name string
		ctr  corev1.Container
		want devices.PodRequest
	}{
		{
			name: "renamed resources read",
			ctr: limits("main", "example.com/vgpu", "2", "example.com/vgpu-memory", "1000",
				"example.com/vgpu-memory-percentage", "10", "example.com/vgpu-cores", "20"),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 1000, MemoryPercent: 10, Cores: 20}}},
		},
		{
			name: "default names ignored",
			ctr:  limits("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "1000"),
			want: devices.PodRequest{},
		},
		{
			name: "default memory and cores names ignored beside a renamed count",
			ctr:  limits("main", "example.com/vgpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "20"),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.ParsePod(pod(nil, tt.ctr))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePod() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzInventory(f *testing.F) {
	for _, seed := range []struct{ register, cordon string }{
		{docJSONInventory, ""},
		{docJSONInventory, "GPU-0a"},
		{docLegacyInventory, "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4, x"},
		{twoCardInventory, "GPU-0,GPU-1"},
		{`[{"ID":"GPU-2","Count":5}]`, ""},
		{"", ""},
		{"garbage", ""},
		{"[]", ""},
		{`{"id":"GPU-0"}`, ""},
		{`[{"id":"GPU-0","count":-1}]`, ""},
		{`GPU-a,10,7680,100,T4,0:`, ","},
	} {
		f.Add(seed.register, seed.cordon)
	}
	v := mustNew(f, devices.Config{})
	f.Fuzz(func(t *testing.T, register, cordon string) {
		n := node(map[string]string{RegisterAnnotation: register, devices.DeviceCordon: cordon}, res("nvidia.com/gpu", "10"))
		cards, err := v.Inventory(n)
		if err != nil {
			if cards != nil {
				t.Fatalf("Inventory returned cards with error %v", err)
			}
			if !strings.Contains(err.Error(), RegisterAnnotation) {
				t.Fatalf("error %q does not name %s", err, RegisterAnnotation)
			}
			return
		}
		if len(cards) == 0 {
			t.Fatalf("Inventory(%q) succeeded without a card", register)
		}
		cordonedIDs := map[string]bool{}
		for id := range strings.SplitSeq(cordon, ",") {
			cordonedIDs[strings.TrimSpace(id)] = true
		}
		for _, c := range cards {
			if c.UUID == "" || c.Index < 0 || (c.Healthy && (c.Split < 0 || c.MemoryMiB < 0 || c.Cores < 0)) {
				t.Fatalf("Inventory(%q) returned an invalid card %+v", register, c)
			}
			if c.Cordoned != cordonedIDs[c.UUID] {
				t.Fatalf("card %s Cordoned = %v with cordon %q", c.UUID, c.Cordoned, cordon)
			}
		}
		// Whatever was decoded can be placed on without a panic.
		req := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 50, Cores: 10}}}
		used := make([]devices.Usage, len(cards))
		if a, rej := v.Fit(cards, used, &req); rej == nil {
			if len(a) != 1 || len(a[0]) != 1 {
				t.Fatalf("Fit() = %v for a one-card request", a)
			}
		} else if rej.Reason() == "" {
			t.Fatalf("empty rejection reason")
		}
	})
}

// TestWebhookSettings checks the settings the webhook reads through the
// optional devices interfaces.
func TestWebhookSettings(t *testing.T) {
	var v devices.Vendor = mustNew(t, devices.Config{RuntimeClassName: "nvidia", MemoryFactor: 4, CorePolicy: "disable"})
	if rc, ok := v.(devices.RuntimeClassVendor); !ok || rc.RuntimeClassName() != "nvidia" {
		t.Errorf("RuntimeClassName() not %q", "nvidia")
	}
	if ms, ok := v.(devices.MemoryScaler); !ok || ms.MemoryFactor() != 4 {
		t.Errorf("MemoryFactor() not 4")
	}
	for _, f := range []int32{0, 1} {
		if got := mustNew(t, devices.Config{MemoryFactor: f}).MemoryFactor(); got != 1 {
			t.Errorf("memoryFactor %d: MemoryFactor() = %d, want 1 (off)", f, got)
		}
	}
	if rc := mustNew(t, devices.Config{}).RuntimeClassName(); rc != "" {
		t.Errorf("default RuntimeClassName() = %q, want empty", rc)
	}
}

// TestParsePodThenFitPolicies reads the pod's policy annotations and the
// node's annotations as HAMi does and checks the cards chosen. The node has
// GPU-0 on NUMA 0 and GPU-1, GPU-2 on NUMA 1 (8000 MiB each); GPU-2 is the
// worst connected card.
func TestParsePodThenFitPolicies(t *testing.T) {
	const inventory = `[{"id":"GPU-0","count":10,"devmem":8000,"devcore":100,"type":"NVIDIA-A10","health":true},` +
		`{"id":"GPU-1","index":1,"count":10,"devmem":8000,"devcore":100,"type":"NVIDIA-A10","numa":1,"health":true},` +
		`{"id":"GPU-2","index":2,"count":10,"devmem":8000,"devcore":100,"type":"NVIDIA-A10","numa":1,"health":true}]`
	const scores = `[{"uuid":"GPU-0","score":{"GPU-1":100,"GPU-2":10}},{"uuid":"GPU-1","score":{"GPU-0":100,"GPU-2":10}},` +
		`{"uuid":"GPU-2","score":{"GPU-0":10,"GPU-1":10}}]`
	n := node(map[string]string{RegisterAnnotation: inventory, ScoreAnnotation: scores}, res("nvidia.com/gpu", "30"))
	tests := []struct {
		name        string
		cfg         devices.Config
		annotations map[string]string
		ctr         corev1.Container
		used        []devices.Usage
		want        []string // UUIDs of the one container; nil: rejected
		wantReason  string
	}{
		{
			name: "no annotation: spread, higher NUMA first, later card first",
			ctr:  limits("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "1000"),
			want: []string{"GPU-2", "GPU-1"},
		},
		{
			name:        "numa-bind true: all cards on one NUMA node",
			annotations: map[string]string{NUMABindAnnotation: "true"},
			ctr:         limits("main", "nvidia.com/gpu", "3", "nvidia.com/gpumem", "1000"),
			wantReason:  "2/3 cards: dropped for another NUMA node, 1/3 cards free on one NUMA node, 3 wanted",
		},
		{
			name:        "numa-bind not a boolean: no binding",
			annotations: map[string]string{NUMABindAnnotation: "yes please"},
			ctr:         limits("main", "nvidia.com/gpu", "3", "nvidia.com/gpumem", "1000"),
			want:        []string{"GPU-2", "GPU-1", "GPU-0"},
		},
		{
			name:        "numa in the policy is a sort key, not a binding",
			annotations: map[string]string{devices.CardPolicyAnnotation: "numa"},
			ctr:         limits("main", "nvidia.com/gpu", "3", "nvidia.com/gpumem", "1000"),
			want:        []string{"GPU-2", "GPU-1", "GPU-0"},
		},
		{
			name:        "unknown policy: spread",
			annotations: map[string]string{devices.CardPolicyAnnotation: "packed"},
			ctr:         limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
			used:        []devices.Usage{{}, {}, {Sharers: 1, MemoryMiB: 1000}},
			want:        []string{"GPU-1"},
		},
		{
			name:        "binpack",
			annotations: map[string]string{devices.CardPolicyAnnotation: "binpack"},
			ctr:         limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 1000}, {}, {}},
			want:        []string{"GPU-0"},
		},
		{
			name:        "topology-aware, one card: the worst connected",
			annotations: map[string]string{devices.CardPolicyAnnotation: "topology-aware"},
			ctr:         limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
			want:        []string{"GPU-2"},
		},
		{
			name:        "topology-aware, two cards: the best connected pair",
			annotations: map[string]string{devices.CardPolicyAnnotation: "binpack,topology-aware"},
			ctr:         limits("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "1000"),
			want:        []string{"GPU-1", "GPU-0"},
		},
		{
			name:        "invalid scoring weights: rejected on every node",
			annotations: map[string]string{devices.ScoringWeightsAnnotation: "slot=1,core=1,memory=-3"},
			ctr:         limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
			wantReason:  `annotation hami.io/device-scoring-weights="slot=1,core=1,memory=-3": "memory" weight is negative`,
		},
		{
			name:       "memoryFactor multiplies gpumem before the fit",
			cfg:        devices.Config{MemoryFactor: 2},
			ctr:        limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000"),
			wantReason: "3/3 cards: insufficient memory",
		},
		{
			name: "without memoryFactor the same gpumem fits",
			ctr:  limits("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000"),
			want: []string{"GPU-2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			cards, err := v.Inventory(n)
			if err != nil {
				t.Fatal(err)
			}
			req, err := v.ParsePod(pod(tt.annotations, tt.ctr))
			if err != nil {
				t.Fatal(err)
			}
			used := tt.used
			if used == nil {
				used = make([]devices.Usage, len(cards))
			}
			a, rej := v.Fit(cards, used, &req)
			if tt.wantReason != "" {
				if rej == nil {
					t.Fatalf("Fit() = %v, want rejection %q", a, tt.wantReason)
				}
				if rej.Reason() != tt.wantReason {
					t.Errorf("Reason() = %q, want %q", rej.Reason(), tt.wantReason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %s", rej.Reason())
			}
			var got []string
			for _, g := range a[0] {
				got = append(got, g.UUID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cards %v, want %v", got, tt.want)
			}
		})
	}
}

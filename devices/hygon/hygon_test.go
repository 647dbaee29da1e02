package hygon

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// Register strings as HAMi's docs and tests write them.
const (
	specRegister    = "DCU-3a0f,4,65520,100,DCU-K100_AI,0,true:"
	hamiRegister9   = "test-0,1,1024,100,DCU,0,true,0,test:"
	hamiRegister5   = "test-0,1,1024,100,DCU:"
	twoCardRegister = "DCU-a,4,65520,100,DCU-K100_AI,0,true:DCU-b,4,65520,100,DCU-Z100L,1,true,1,hami-core:"
)

func node(annotations map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annotations},
		Status:     corev1.NodeStatus{Allocatable: allocatable},
	}
}

func mustNew(t testing.TB, cfg devices.Config) *Vendor {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "hygon"
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return v
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     devices.Config
		want    devices.ResourceNames
		wantErr string
	}{
		{
			name: "chart defaults",
			cfg:  devices.Config{Name: "hygon"},
			want: devices.ResourceNames{Count: "hygon.com/dcunum", Memory: "hygon.com/dcumem", Cores: "hygon.com/dcucores"},
		},
		{
			name: "renamed",
			cfg:  devices.Config{Name: "hygon", ResourceCountName: "x.com/n", ResourceMemoryName: "x.com/m", ResourceCoresName: "x.com/c"},
			want: devices.ResourceNames{Count: "x.com/n", Memory: "x.com/m", Cores: "x.com/c"},
		},
		{name: "negative memory factor", cfg: devices.Config{Name: "hygon", MemoryFactor: -1}, wantErr: "memoryFactor"},
		{name: "percentage resource", cfg: devices.Config{Name: "hygon", ResourceMemoryPercentageName: "x"}, wantErr: "percentage"},
		{name: "priority resource", cfg: devices.Config{Name: "hygon", ResourcePriorityName: "x"}, wantErr: "priority"},
		{name: "default count", cfg: devices.Config{Name: "hygon", DefaultCount: ptr.To[int32](1)}, wantErr: "defaultCount"},
		{name: "nvidia settings", cfg: devices.Config{Name: "hygon", OverwriteEnv: true}, wantErr: "NVIDIA settings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Resources(); got != tt.want {
				t.Errorf("Resources() = %+v, want %+v", got, tt.want)
			}
			if v.Name() != "DCU" {
				t.Errorf("Name() = %q, want DCU", v.Name())
			}
			toAllocate, allocated := v.AssignmentAnnotations()
			if toAllocate != "hami.io/dcu-devices-to-allocate" || allocated != "hami.io/dcu-devices-allocated" {
				t.Errorf("AssignmentAnnotations() = %q, %q", toAllocate, allocated)
			}
			if got := v.HandshakeAnnotation(); got != "hami.io/node-handshake-dcu" {
				t.Errorf("HandshakeAnnotation() = %q", got)
			}
		})
	}
}

func TestInventory(t *testing.T) {
	dcus := res("hygon.com/dcunum", "8")
	tests := []struct {
		name        string
		annotations map[string]string
		allocatable corev1.ResourceList
		want        []devices.Card
		wantErr     string
	}{
		{name: "no annotation: no Hygon cards", annotations: map[string]string{}, allocatable: dcus},
		{
			name:        "spec example, 7 fields",
			annotations: map[string]string{RegisterAnnotation: specRegister},
			allocatable: dcus,
			want:        []devices.Card{{UUID: "DCU-3a0f", Split: 4, MemoryMiB: 65520, Cores: 100, Model: "DCU-K100_AI", Mode: "hami-core", Healthy: true}},
		},
		{
			name:        "HAMi fixture, 9 fields",
			annotations: map[string]string{RegisterAnnotation: hamiRegister9},
			allocatable: dcus,
			want:        []devices.Card{{UUID: "test-0", Split: 1, MemoryMiB: 1024, Cores: 100, Model: "DCU", Mode: "test", Healthy: true}},
		},
		{
			name:        "two cards, second cordoned",
			annotations: map[string]string{RegisterAnnotation: twoCardRegister, devices.DeviceCordon: "DCU-b"},
			allocatable: dcus,
			want: []devices.Card{
				{UUID: "DCU-a", Split: 4, MemoryMiB: 65520, Cores: 100, Model: "DCU-K100_AI", Mode: "hami-core", Healthy: true},
				{UUID: "DCU-b", Index: 1, Split: 4, MemoryMiB: 65520, Cores: 100, Model: "DCU-Z100L", NUMA: 1, Mode: "hami-core", Healthy: true, Cordoned: true},
			},
		},
		{
			name:        "type without DCU is not Hygon's",
			annotations: map[string]string{RegisterAnnotation: "DCU-a,4,65520,100,dcu-k100,0,true:GPU-b,4,65520,100,NVIDIA-T4,0,true:"},
			allocatable: dcus,
			want:        []devices.Card{{UUID: "DCU-a", Split: 4, MemoryMiB: 65520, Cores: 100, Model: "dcu-k100", Mode: "hami-core", Healthy: true}},
		},
		{name: "only foreign types", annotations: map[string]string{RegisterAnnotation: "GPU-b,4,65520,100,NVIDIA-T4,0,true:"}, allocatable: dcus, wantErr: "no card type contains DCU"},
		{name: "HAMi fixture: 5 fields", annotations: map[string]string{RegisterAnnotation: hamiRegister5}, allocatable: dcus, wantErr: "want 7 or 9 fields"},
		{name: "HAMi fixture: separator only", annotations: map[string]string{RegisterAnnotation: ":"}, allocatable: dcus, wantErr: "lists no card"},
		{name: "HAMi fixture: empty", annotations: map[string]string{RegisterAnnotation: ""}, allocatable: dcus, wantErr: "empty"},
		{name: "device plugin not serving", annotations: map[string]string{RegisterAnnotation: specRegister}, wantErr: "allocatable hygon.com/dcunum is 0"},
	}
	v := mustNew(t, devices.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Inventory(node(tt.annotations, tt.allocatable))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Fatalf("Inventory() = %v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Inventory() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestInventoryChanged(t *testing.T) {
	v := mustNew(t, devices.Config{})
	base := node(map[string]string{RegisterAnnotation: specRegister}, res("hygon.com/dcunum", "4"))
	tests := []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{name: "nothing", change: func(*corev1.Node) {}},
		{name: "other annotation", change: func(n *corev1.Node) { n.Annotations["x"] = "y" }},
		{name: "register", change: func(n *corev1.Node) { n.Annotations[RegisterAnnotation] = hamiRegister9 }, want: true},
		{name: "cordon", change: func(n *corev1.Node) { n.Annotations[devices.DeviceCordon] = "DCU-3a0f" }, want: true},
		{name: "allocatable", change: func(n *corev1.Node) { n.Status.Allocatable = res("hygon.com/dcunum", "0") }, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updated := base.DeepCopy()
			tt.change(updated)
			if got := v.InventoryChanged(base, updated); got != tt.want {
				t.Errorf("InventoryChanged() = %v, want %v", got, tt.want)
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
		wantErr string
	}{
		{
			name: "count only: whole card, 100 cores",
			pod:  pod(nil, limits("main", "hygon.com/dcunum", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}}},
		},
		{
			name: "memory and cores",
			pod:  pod(nil, limits("main", "hygon.com/dcunum", "2", "hygon.com/dcumem", "2000", "hygon.com/dcucores", "60")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 2000, Cores: 60}}},
		},
		{
			name: "explicit 0 cores kept",
			pod:  pod(nil, limits("main", "hygon.com/dcunum", "1", "hygon.com/dcucores", "0")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			// Init containers come first and are counted in Inits, so
			// that FitPod places them as HAMi does (each alone).
			name: "init container first",
			pod: func() *corev1.Pod {
				p := pod(nil, limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "1000"))
				p.Spec.InitContainers = []corev1.Container{limits("warmup", "hygon.com/dcunum", "2", "hygon.com/dcumem", "2000", "hygon.com/dcucores", "10")}
				return p
			}(),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 2000, Cores: 10}, {Count: 1, MemoryMiB: 1000, Cores: 100}}, Inits: 1},
		},
		{
			name: "requests when limits are absent",
			pod: pod(nil, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: res("hygon.com/dcunum", "1", "hygon.com/dcumem", "1024"),
			}}),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1024, Cores: 100}}},
		},
		{
			name: "memoryFactor multiplies memory",
			cfg:  devices.Config{MemoryFactor: 4},
			pod:  pod(nil, limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "1000")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 4000, Cores: 100}}},
		},
		{
			name:    "memoryFactor overflow refused",
			cfg:     devices.Config{MemoryFactor: 1024},
			pod:     pod(nil, limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "16777216")),
			wantErr: "memoryFactor",
		},
		{
			name: "default memory from config",
			cfg:  devices.Config{DefaultMemoryMiB: 4096, DefaultCores: 30},
			pod:  pod(nil, limits("main", "hygon.com/dcunum", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 4096, Cores: 30}}},
		},
		{
			name: "sidecar without DCU keeps its slot",
			pod:  pod(nil, limits("sidecar"), limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "2000", "hygon.com/dcucores", "60")),
			want: devices.PodRequest{Containers: []devices.Request{{}, {Count: 1, MemoryMiB: 2000, Cores: 60}}},
		},
		{
			name: "selectors and policy",
			pod: pod(map[string]string{
				UseTypeAnnotation: "k100_ai, z100", AvoidTypeAnnotation: " ", UseUUIDAnnotation: "DCU-a, DCU-b",
				AvoidUUIDAnnotation: "DCU-c", devices.CardPolicyAnnotation: "binpack,mutex,numa",
			}, limits("main", "hygon.com/dcunum", "1")),
			want: devices.PodRequest{
				Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}},
				Preferences: devices.Preferences{
					UseModels: []string{"K100_AI", "Z100"}, UseUUIDs: []string{"DCU-a", "DCU-b"}, AvoidUUIDs: []string{"DCU-c"},
					Policy: devices.CardBinpack, Exclusive: true,
				},
			},
		},
		{name: "no DCU asked", pod: pod(map[string]string{devices.CardPolicyAnnotation: "bogus"}, limits("main", "nvidia.com/gpu", "1"))},
		{name: "count 0 asks nothing", pod: pod(nil, limits("main", "hygon.com/dcunum", "0", "hygon.com/dcumem", "10"))},
		{name: "fractional count", pod: pod(nil, limits("main", "hygon.com/dcunum", "500m")), wantErr: "not a whole number"},
		{name: "fractional memory", pod: pod(nil, limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "1.5")), wantErr: "hygon.com/dcumem"},
		{name: "bad policy", pod: pod(map[string]string{devices.CardPolicyAnnotation: "pack"}, limits("main", "hygon.com/dcunum", "1")), wantErr: "gpu-scheduler-policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			got, err := v.ParsePod(tt.pod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePod() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePod() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func k100(id string, numa int) devices.Card {
	return devices.Card{UUID: id, Split: 4, MemoryMiB: 65520, Cores: 100, Model: "DCU-K100_AI", NUMA: numa, Mode: "hami-core", Healthy: true}
}

// TestFit runs HAMi's standard share fit rules for Hygon, one per row.
func TestFit(t *testing.T) {
	z100 := k100("DCU-z", 0)
	z100.Model = "DCU-Z100L"
	tests := []struct {
		name        string
		annotations map[string]string
		ctr         corev1.Container
		cards       []devices.Card
		used        []devices.Usage
		want        string // encoded assignment
		wantReason  string
	}{
		{
			name:  "whole card by default",
			ctr:   limits("main", "hygon.com/dcunum", "1"),
			cards: []devices.Card{k100("DCU-a", 0)},
			want:  "DCU-a,DCU,65520,100:;",
		},
		{
			name:       "default 100 cores: a used card is refused",
			ctr:        limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "1000"),
			cards:      []devices.Card{k100("DCU-a", 0)},
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 0}},
			wantReason: "1/1 cards: exclusive use conflict",
		},
		{
			name:  "shared card with cores asked",
			ctr:   limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "2000", "hygon.com/dcucores", "60"),
			cards: []devices.Card{k100("DCU-a", 0)},
			used:  []devices.Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 40}},
			want:  "DCU-a,DCU,2000,60:;",
		},
		{
			name:       "insufficient cores",
			ctr:        limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "2000", "hygon.com/dcucores", "61"),
			cards:      []devices.Card{k100("DCU-a", 0)},
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 40}},
			wantReason: "1/1 cards: insufficient cores",
		},
		{
			name:       "insufficient memory",
			ctr:        limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "65000", "hygon.com/dcucores", "10"),
			cards:      []devices.Card{k100("DCU-a", 0)},
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 10}},
			wantReason: "1/1 cards: insufficient memory",
		},
		{
			name:       "split count exhausted",
			ctr:        limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "10", "hygon.com/dcucores", "1"),
			cards:      []devices.Card{k100("DCU-a", 0)},
			used:       []devices.Usage{{Sharers: 4, MemoryMiB: 40, Cores: 4}},
			wantReason: "1/1 cards: all shares in use",
		},
		{
			name:       "0 cores on a card whose cores are all used",
			ctr:        limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "10", "hygon.com/dcucores", "0"),
			cards:      []devices.Card{k100("DCU-a", 0)},
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 40, Cores: 100}},
			wantReason: "1/1 cards: cores fully used",
		},
		{
			name:  "cores above 100 clamped",
			ctr:   limits("main", "hygon.com/dcunum", "1", "hygon.com/dcucores", "150"),
			cards: []devices.Card{k100("DCU-a", 0)},
			want:  "DCU-a,DCU,65520,100:;",
		},
		{
			name:       "unhealthy",
			ctr:        limits("main", "hygon.com/dcunum", "1"),
			cards:      []devices.Card{{UUID: "DCU-a", Split: 4, MemoryMiB: 100, Cores: 100, Model: "DCU"}},
			wantReason: "1/1 cards: unhealthy",
		},
		{
			name:        "use-dcutype, case-insensitive substring (HAMi fixture value dcu)",
			annotations: map[string]string{UseTypeAnnotation: "z100"},
			ctr:         limits("main", "hygon.com/dcunum", "1"),
			cards:       []devices.Card{k100("DCU-a", 0), z100},
			want:        "DCU-z,DCU,65520,100:;",
		},
		{
			name:        "nouse-dcutype",
			annotations: map[string]string{AvoidTypeAnnotation: "test,k100"},
			ctr:         limits("main", "hygon.com/dcunum", "1"),
			cards:       []devices.Card{k100("DCU-a", 0)},
			wantReason:  "1/1 cards: card type not wanted",
		},
		{
			name:        "blank type selectors mean no constraint",
			annotations: map[string]string{UseTypeAnnotation: "", AvoidTypeAnnotation: "   "},
			ctr:         limits("main", "hygon.com/dcunum", "1"),
			cards:       []devices.Card{k100("DCU-a", 0)},
			want:        "DCU-a,DCU,65520,100:;",
		},
		{
			name:        "use-gpuuuid exact",
			annotations: map[string]string{UseUUIDAnnotation: "DCU-b"},
			ctr:         limits("main", "hygon.com/dcunum", "1"),
			cards:       []devices.Card{k100("DCU-a", 0), k100("DCU-b", 0)},
			want:        "DCU-b,DCU,65520,100:;",
		},
		{
			name:        "nouse-gpuuuid",
			annotations: map[string]string{AvoidUUIDAnnotation: "DCU-a"},
			ctr:         limits("main", "hygon.com/dcunum", "1"),
			cards:       []devices.Card{k100("DCU-a", 0)},
			wantReason:  "1/1 cards: card uuid not wanted",
		},
		{
			name:        "mutex policy",
			annotations: map[string]string{devices.CardPolicyAnnotation: "mutex"},
			ctr:         limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "10", "hygon.com/dcucores", "1"),
			cards:       []devices.Card{k100("DCU-a", 0)},
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 10, Cores: 1}},
			wantReason:  "1/1 cards: exclusive use conflict",
		},
		{
			// numa only orders the cards (higher NUMA node first, as HAMi's
			// sort does); nothing binds them to one node.
			name:        "numa policy is not enforced for Hygon",
			annotations: map[string]string{devices.CardPolicyAnnotation: "numa"},
			ctr:         limits("main", "hygon.com/dcunum", "2"),
			cards:       []devices.Card{k100("DCU-a", 0), k100("DCU-b", 1)},
			want:        "DCU-b,DCU,65520,100:DCU-a,DCU,65520,100:;",
		},
		{
			name:       "not enough cards",
			ctr:        limits("main", "hygon.com/dcunum", "3"),
			cards:      []devices.Card{k100("DCU-a", 0), k100("DCU-b", 1)},
			wantReason: "3 cards wanted, node has 2",
		},
	}
	v := mustNew(t, devices.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := v.ParsePod(pod(tt.annotations, tt.ctr))
			if err != nil {
				t.Fatal(err)
			}
			used := tt.used
			if used == nil {
				used = make([]devices.Usage, len(tt.cards))
			}
			a, rej := v.Fit(tt.cards, used, &req)
			if tt.wantReason != "" {
				if rej == nil {
					t.Fatalf("Fit() = %q, want rejection %q", devices.EncodeAssignment(a), tt.wantReason)
				}
				if got := rej.Reason(); got != tt.wantReason {
					t.Errorf("Reason() = %q, want %q", got, tt.wantReason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("Fit() rejected: %s", rej.Reason())
			}
			if got := devices.EncodeAssignment(a); got != tt.want {
				t.Errorf("assignment = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAssignmentGolden: a pod placed on a node registered as Hygon's device
// plugin does gets exactly the annotation strings the plugin reads.
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t, devices.Config{})
	n := node(map[string]string{RegisterAnnotation: specRegister}, res("hygon.com/dcunum", "4"))
	cards, err := v.Inventory(n)
	if err != nil {
		t.Fatal(err)
	}
	p := pod(nil, limits("sidecar"), limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "2000", "hygon.com/dcucores", "60"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	toAllocate, allocated := v.AssignmentAnnotations()
	got := map[string]string{toAllocate: devices.EncodeAssignment(a), allocated: devices.EncodeAssignment(a)}
	want := map[string]string{
		"hami.io/dcu-devices-to-allocate": ";DCU-3a0f,DCU,2000,60:;",
		"hami.io/dcu-devices-allocated":   ";DCU-3a0f,DCU,2000,60:;",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
	// The allocated value rebuilds the same usage after a restart.
	back, err := devices.DecodeAssignment(want[allocated])
	if err != nil || !reflect.DeepEqual(back, a) {
		t.Errorf("DecodeAssignment() = %v, %v; want %v", back, err, a)
	}
}

func TestDefault(t *testing.T) {
	v := mustNew(t, devices.Config{})
	tests := []struct {
		name    string
		ctr     corev1.Container
		want    bool
		wantErr string
	}{
		{name: "count in limits", ctr: limits("main", "hygon.com/dcunum", "1"), want: true},
		{name: "memory only: no count added", ctr: limits("main", "hygon.com/dcumem", "1000")},
		{name: "count in requests only is not detected", ctr: corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("hygon.com/dcunum", "1")}}},
		{name: "fractional cores", ctr: limits("main", "hygon.com/dcunum", "1", "hygon.com/dcucores", "0.5"), wantErr: "hygon.com/dcucores"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.ctr.DeepCopy()
			got, err := v.Default(&tt.ctr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Default() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Default() = %v, %v; want %v", got, err, tt.want)
			}
			if !reflect.DeepEqual(before, &tt.ctr) {
				t.Errorf("Default() changed the container: %+v", tt.ctr)
			}
		})
	}
}

func FuzzInventory(f *testing.F) {
	for _, seed := range []struct{ register, cordon string }{
		{specRegister, ""},
		{hamiRegister9, "test-0"},
		{hamiRegister5, ""},
		{twoCardRegister, "DCU-a, DCU-b"},
		{":", ""},
		{"", ""},
		{"[]", ""},
		{`[{"id":"DCU-0","count":4,"devmem":100,"devcore":100,"type":"DCU","health":true}]`, ""},
		{"DCU-a,-1,1,1,DCU,0,true:", ""},
		{"DCU-a,1,1,1,GPU,0,true:", ""},
	} {
		f.Add(seed.register, seed.cordon)
	}
	v := mustNew(f, devices.Config{})
	f.Fuzz(func(t *testing.T, register, cordon string) {
		n := node(map[string]string{RegisterAnnotation: register, devices.DeviceCordon: cordon}, res("hygon.com/dcunum", "4"))
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
		for _, c := range cards {
			// A card with negative capacities is kept, but never healthy.
			negative := c.Split < 0 || c.MemoryMiB < 0 || c.Cores < 0
			if c.UUID == "" || (negative && c.Healthy) || !strings.Contains(strings.ToUpper(c.Model), "DCU") {
				t.Fatalf("Inventory(%q) returned an invalid card %+v", register, c)
			}
		}
		req := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}}}
		used := make([]devices.Usage, len(cards))
		if a, rej := v.Fit(cards, used, &req); rej == nil {
			if _, err := devices.DecodeAssignment(devices.EncodeAssignment(a)); err != nil {
				t.Fatalf("assignment does not round-trip: %v", err)
			}
		} else if rej.Reason() == "" {
			t.Fatal("empty rejection reason")
		}
	})
}

// BenchmarkFit places one container on an 8-card node, half shared.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b, devices.Config{})
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = k100(fmt.Sprintf("DCU-%d", i), i/4)
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 8000, Cores: 30}
		}
	}
	for _, bm := range []struct {
		name string
		ctr  corev1.Container
	}{
		{"one shared card", limits("main", "hygon.com/dcunum", "1", "hygon.com/dcumem", "4000", "hygon.com/dcucores", "30")},
		{"four whole cards", limits("main", "hygon.com/dcunum", "4")},
	} {
		req, err := v.ParsePod(pod(nil, bm.ctr))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := v.Fit(cards, used, &req); rej != nil {
					b.Fatal(rej.Reason())
				}
			}
		})
	}
}

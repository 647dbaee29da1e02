package cambricon

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func node(name string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: capacity}}
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "cambricon"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mlu(node string, i int) devices.Card {
	return devices.Card{UUID: CardID(node, i), Index: i, Split: 100, MemoryMiB: 24576, Cores: 100, Model: "MLU", Mode: devices.DefaultMode, Healthy: true}
}

func TestNew(t *testing.T) {
	v := mustNew(t)
	want := devices.ResourceNames{Count: DefaultCountName, Memory: DefaultMemoryName, Cores: DefaultCoresName}
	if got := v.Resources(); got != want {
		t.Errorf("Resources() = %+v, want %+v", got, want)
	}
	if v.Name() != "MLU" || v.MemoryFactor() != 256 || v.NodeLock() != "cambricon.com/dsmlu.lock" {
		t.Errorf("Name, MemoryFactor, NodeLock = %s, %d, %s", v.Name(), v.MemoryFactor(), v.NodeLock())
	}
	renamed, err := New(devices.Config{Name: "cambricon", ResourceCountName: "cambricon.com/mlu", ResourceMemoryName: "cambricon.com/mlu370.smlu.vmemory", ResourceCoresName: "c"})
	if err != nil || renamed.Resources().Memory != "cambricon.com/mlu370.smlu.vmemory" || renamed.Resources().Count != "cambricon.com/mlu" {
		t.Errorf("renamed: %+v, %v", renamed, err)
	}
	for _, bad := range []devices.Config{
		{Name: "cambricon", ResourcePriorityName: "x"},
		{Name: "cambricon", DefaultCores: 10},
		{Name: "cambricon", DefaultCount: ptr.To[int32](1)},
		{Name: "cambricon", MemoryFactor: 2},
		{Name: "cambricon", OverwriteEnv: true},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

func TestInventory(t *testing.T) {
	v := mustNew(t)
	tests := []struct {
		name     string
		capacity corev1.ResourceList
		want     []devices.Card
		wantErr  string
	}{
		{
			// HAMi's Test_GetNodeDevices: vcore 1, vmemory 1.
			name:     "HAMi fixture",
			capacity: res(DefaultCoresName, "1", DefaultMemoryName, "1"),
			want:     []devices.Card{{UUID: "test-cambricon-mlu-0", Split: 100, MemoryMiB: 25600, Cores: 100, Model: "MLU", Mode: "hami-core", Healthy: true}},
		},
		{
			// The spec's example: vcore 400, vmemory 384 -> 4 cards of 24576 MiB.
			name:     "four cards",
			capacity: res(DefaultCoresName, "400", DefaultMemoryName, "384", DefaultCountName, "4"),
			want:     []devices.Card{mlu("test", 0), mlu("test", 1), mlu("test", 2), mlu("test", 3)},
		},
		{
			name:     "a started hundred is a card",
			capacity: res(DefaultCoresName, "250", DefaultMemoryName, "250"),
			want: []devices.Card{
				{UUID: "test-cambricon-mlu-0", Split: 100, MemoryMiB: 25600, Cores: 100, Model: "MLU", Mode: "hami-core", Healthy: true},
				{UUID: "test-cambricon-mlu-1", Index: 1, Split: 100, MemoryMiB: 25600, Cores: 100, Model: "MLU", Mode: "hami-core", Healthy: true},
				{UUID: "test-cambricon-mlu-2", Index: 2, Split: 100, MemoryMiB: 25600, Cores: 100, Model: "MLU", Mode: "hami-core", Healthy: true},
			},
		},
		{name: "no core capacity", capacity: res(DefaultMemoryName, "384")},
		{name: "zero core capacity", capacity: res(DefaultCoresName, "0")},
		{name: "count alone is not read", capacity: res(DefaultCountName, "4")},
		{name: "fractional cores", capacity: res(DefaultCoresName, "1.5"), wantErr: "is not a whole"},
		{name: "fractional memory", capacity: res(DefaultCoresName, "100", DefaultMemoryName, "1.5"), wantErr: "is not a whole"},
		{name: "memory too large", capacity: res(DefaultCoresName, "100", DefaultMemoryName, "100000000"), wantErr: "MiB"},
		{name: "too many cards", capacity: res(DefaultCoresName, "1000000")},
	}
	tests[len(tests)-1].wantErr = "cards"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Inventory(node("test", tt.capacity))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Inventory() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Inventory() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	n := node("test", res(DefaultCoresName, "200", DefaultMemoryName, "256"))
	n.Annotations = map[string]string{devices.DeviceCordon: "test-cambricon-mlu-1"}
	cards, err := v.Inventory(n)
	if err != nil || cards[0].Cordoned || !cards[1].Cordoned {
		t.Errorf("cordon: %+v, %v", cards, err)
	}
}

func TestInventoryChanged(t *testing.T) {
	v := mustNew(t)
	old := node("n", res(DefaultCoresName, "200", DefaultMemoryName, "256"))
	if v.InventoryChanged(old, old.DeepCopy()) {
		t.Error("same node reported changed")
	}
	for _, change := range []func(*corev1.Node){
		func(n *corev1.Node) { n.Status.Capacity[DefaultCoresName] = resource.MustParse("300") },
		func(n *corev1.Node) { n.Status.Capacity[DefaultMemoryName] = resource.MustParse("512") },
		func(n *corev1.Node) { n.Annotations = map[string]string{devices.DeviceCordon: "x"} },
	} {
		updated := old.DeepCopy()
		change(updated)
		if !v.InventoryChanged(old, updated) {
			t.Errorf("change not reported: %+v", updated.Status.Capacity)
		}
	}
}

func TestParsePod(t *testing.T) {
	v := mustNew(t)
	tests := []struct {
		name    string
		pod     *corev1.Pod
		want    devices.PodRequest
		wantErr string
	}{
		{name: "nothing asked", pod: pod(nil, limits("main"))},
		{
			// HAMi: memory units x 256, cores as asked.
			name: "memory units and cores",
			pod:  pod(nil, limits("main", DefaultCountName, "1", DefaultMemoryName, "20", DefaultCoresName, "10")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 5120, Cores: 10}}},
		},
		{
			name: "defaults: whole memory, 100 cores",
			pod:  pod(nil, limits("main", DefaultCountName, "2")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryPercent: 100, Cores: 100}}},
		},
		{
			name: "requests when limits name nothing",
			pod: pod(nil, corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: res(DefaultCountName, "1", DefaultMemoryName, "4")}}),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1024, Cores: 100}}},
		},
		{
			name: "init containers first; selectors and mutex",
			pod: func() *corev1.Pod {
				p := pod(map[string]string{UseUUIDAnnotation: "a, b", AvoidUUIDAnnotation: "c", "cambricon.com/use-mlutype": "MLU370",
					devices.CardPolicyAnnotation: "binpack,mutex"}, limits("main", DefaultCountName, "1"))
				p.Spec.InitContainers = []corev1.Container{limits("init", DefaultCountName, "1", DefaultCoresName, "0")}
				return p
			}(),
			want: devices.PodRequest{
				Containers:  []devices.Request{{Count: 1, MemoryPercent: 100}, {Count: 1, MemoryPercent: 100, Cores: 100}},
				Inits:       1,
				Preferences: devices.Preferences{UseUUIDs: []string{"a", "b"}, AvoidUUIDs: []string{"c"}, Policy: "binpack", Exclusive: true},
			},
		},
		{name: "memory overflow", pod: pod(nil, limits("main", DefaultCountName, "1", DefaultMemoryName, "10000000")), wantErr: "memoryFactor"},
		{name: "fractional count", pod: pod(nil, limits("main", DefaultCountName, "500m")), wantErr: DefaultCountName},
		{name: "bad policy", pod: pod(map[string]string{devices.CardPolicyAnnotation: "x"}, limits("main", DefaultCountName, "1")), wantErr: "gpu-scheduler-policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.ParsePod(tt.pod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePod() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePod() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestFit has one row per rule of HAMi's Cambricon fit (the standard share
// fit); each row fails if its rule is removed.
func TestFit(t *testing.T) {
	two := []devices.Card{mlu("n", 0), mlu("n", 1)}
	tests := []struct {
		name        string
		annotations map[string]string
		ctr         corev1.Container
		cards       []devices.Card
		used        []devices.Usage
		want        string
		wantReason  string
	}{
		{
			name:  "whole card by default, last card first",
			ctr:   limits("main", DefaultCountName, "1"),
			cards: two,
			want:  "n-cambricon-mlu-1,MLU,24576,100:;",
		},
		{
			name:       "default 100 cores: a used card is refused",
			ctr:        limits("main", DefaultCountName, "1", DefaultMemoryName, "4"),
			cards:      two[:1],
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 1024}},
			wantReason: "1/1 cards: exclusive use conflict",
		},
		{
			name:  "memory in 256 MiB units",
			ctr:   limits("main", DefaultCountName, "1", DefaultMemoryName, "20", DefaultCoresName, "10"),
			cards: two[:1],
			used:  []devices.Usage{{Sharers: 1, MemoryMiB: 19456, Cores: 90}},
			want:  "n-cambricon-mlu-0,MLU,5120,10:;",
		},
		{
			name:       "insufficient memory",
			ctr:        limits("main", DefaultCountName, "1", DefaultMemoryName, "21", DefaultCoresName, "10"),
			cards:      two[:1],
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 19456, Cores: 10}},
			wantReason: "1/1 cards: insufficient memory",
		},
		{
			name:       "insufficient cores",
			ctr:        limits("main", DefaultCountName, "1", DefaultMemoryName, "1", DefaultCoresName, "11"),
			cards:      two[:1],
			used:       []devices.Usage{{Sharers: 1, MemoryMiB: 1024, Cores: 90}},
			wantReason: "1/1 cards: insufficient cores",
		},
		{
			name:       "zero cores on a card whose cores are all used",
			ctr:        limits("main", DefaultCountName, "1", DefaultMemoryName, "1", DefaultCoresName, "0"),
			cards:      two[:1],
			used:       []devices.Usage{{Sharers: 2, MemoryMiB: 1024, Cores: 100}},
			wantReason: "1/1 cards: cores fully used",
		},
		{
			name:       "100 shares in use",
			ctr:        limits("main", DefaultCountName, "1", DefaultMemoryName, "1", DefaultCoresName, "0"),
			cards:      two[:1],
			used:       []devices.Usage{{Sharers: 100, MemoryMiB: 1024, Cores: 50}},
			wantReason: "1/1 cards: all shares in use",
		},
		{
			name:        "mutex: used cards refused",
			annotations: map[string]string{devices.CardPolicyAnnotation: "mutex"},
			ctr:         limits("main", DefaultCountName, "1", DefaultMemoryName, "1", DefaultCoresName, "1"),
			cards:       two[:1],
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 1024, Cores: 1}},
			wantReason:  "1/1 cards: exclusive use conflict",
		},
		{
			name:        "use uuid",
			annotations: map[string]string{UseUUIDAnnotation: "n-cambricon-mlu-0"},
			ctr:         limits("main", DefaultCountName, "1"),
			cards:       two,
			want:        "n-cambricon-mlu-0,MLU,24576,100:;",
		},
		{
			name:        "avoid uuid",
			annotations: map[string]string{AvoidUUIDAnnotation: "n-cambricon-mlu-1"},
			ctr:         limits("main", DefaultCountName, "1"),
			cards:       two,
			want:        "n-cambricon-mlu-0,MLU,24576,100:;",
		},
		{
			name:        "type selector is not read (HAMi defines it, never uses it)",
			annotations: map[string]string{"cambricon.com/use-mlutype": "MLU590", "cambricon.com/nouse-mlutype": "MLU"},
			ctr:         limits("main", DefaultCountName, "1"),
			cards:       two[:1],
			want:        "n-cambricon-mlu-0,MLU,24576,100:;",
		},
		{
			name:       "more cards than the node has",
			ctr:        limits("main", DefaultCountName, "3"),
			cards:      two,
			wantReason: "3 cards wanted, node has 2",
		},
		{
			name:  "cores above 100 are clamped",
			ctr:   limits("main", DefaultCountName, "1", DefaultMemoryName, "1", DefaultCoresName, "150"),
			cards: two[:1],
			want:  "n-cambricon-mlu-0,MLU,256,100:;",
		},
	}
	v := mustNew(t)
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
				if rej == nil || rej.Reason() != tt.wantReason {
					t.Fatalf("Fit() = %v, %v; want rejection %q", a, rej, tt.wantReason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("Fit() rejected: %s", rej.Reason())
			}
			if got := devices.EncodeAssignment(a); got != tt.want {
				t.Errorf("Fit() = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestAssignmentGolden: a pod gets exactly HAMi's annotations, plus the
// assigned flag as Cambricon's device plugin spells it.
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	// HAMi's Test_PatchAnnotations rows: the profile comes from the first
	// container that holds a card.
	for _, a := range []devices.Assignment{
		{{{UUID: "device-0", Vendor: "MLU", MemoryMiB: 256000, Cores: 1}}},
		{nil, {{UUID: "device-0", Vendor: "MLU", MemoryMiB: 256000, Cores: 1}}},
	} {
		got, err := v.AssignmentExtras(nil, a, time.Unix(0, 0))
		want := map[string]string{"CAMBRICON_DSMLU_ASSIGNED": "false", "CAMBRICON_DSMLU_ASSIGHED": "false", "CAMBRICON_DSMLU_PROFILE": "0_1_1000"}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("AssignmentExtras(%v) = %v, %v; want %v", a, got, err, want)
		}
	}
	if got, err := v.AssignmentExtras(nil, devices.Assignment{nil}, time.Unix(0, 0)); err != nil || got != nil {
		t.Errorf("empty assignment: %v, %v", got, err)
	}
	if _, err := v.AssignmentExtras(nil, devices.Assignment{{{UUID: "x-y"}}}, time.Unix(0, 0)); err == nil {
		t.Error("card id without index accepted")
	}

	// The whole flow on the spec's node: vcore 400, vmemory 384.
	cards, err := v.Inventory(node("node1", res(DefaultCoresName, "400", DefaultMemoryName, "384")))
	if err != nil {
		t.Fatal(err)
	}
	used := make([]devices.Usage, len(cards))
	for i := 1; i < len(cards); i++ {
		used[i] = devices.Usage{Sharers: 1, MemoryMiB: 24576, Cores: 100}
	}
	p := pod(nil, limits("sidecar"), limits("main", DefaultCountName, "1", DefaultMemoryName, "20", DefaultCoresName, "10"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, used, &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	toAllocate, allocated := v.AssignmentAnnotations()
	got := map[string]string{toAllocate: devices.EncodeAssignment(a), allocated: devices.EncodeAssignment(a)}
	extras, err := v.AssignmentExtras(p, a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(got, extras)
	want := map[string]string{
		"hami.io/cambricon-mlu-devices-to-allocate": ";node1-cambricon-mlu-0,MLU,5120,10:;",
		"hami.io/cambricon-mlu-devices-allocated":   ";node1-cambricon-mlu-0,MLU,5120,10:;",
		"CAMBRICON_DSMLU_ASSIGNED":                  "false",
		"CAMBRICON_DSMLU_ASSIGHED":                  "false",
		"CAMBRICON_DSMLU_PROFILE":                   "0_10_20",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
}

func TestDefault(t *testing.T) {
	v := mustNew(t)
	for _, tt := range []struct {
		ctr     corev1.Container
		want    bool
		wantErr bool
	}{
		{ctr: limits("main", DefaultCountName, "1"), want: true},
		{ctr: corev1.Container{Resources: corev1.ResourceRequirements{Requests: res(DefaultCountName, "1")}}},
		{ctr: limits("main")},
		{ctr: limits("main", DefaultCountName, "1", DefaultMemoryName, "0.5"), wantErr: true},
	} {
		before := tt.ctr.DeepCopy()
		got, err := v.Default(&tt.ctr)
		if got != tt.want || (err != nil) != tt.wantErr || !reflect.DeepEqual(before, &tt.ctr) {
			t.Errorf("Default(%+v) = %v, %v; want %v, error %v, container unchanged", before.Resources, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzInventory(f *testing.F) {
	f.Add("test", "400", "384", "")
	f.Add("test", "1", "1", "test-cambricon-mlu-0")
	f.Add("n", "250", "1.5", "")
	f.Add("n", "1e9", "1e9", "")
	f.Add("n", "-100", "10", "")
	v := mustNew(f)
	f.Fuzz(func(t *testing.T, name, cores, mem, cordon string) {
		capacity := corev1.ResourceList{}
		for rn, s := range map[corev1.ResourceName]string{DefaultCoresName: cores, DefaultMemoryName: mem} {
			if q, err := parseSmall(s); err == nil {
				capacity[rn] = q
			}
		}
		n := node(name, capacity)
		n.Annotations = map[string]string{devices.DeviceCordon: cordon}
		cards, err := v.Inventory(n)
		if err != nil {
			if cards != nil {
				t.Fatalf("Inventory returned cards with error %v", err)
			}
			return
		}
		for i, c := range cards {
			if c.UUID != CardID(name, i) || c.Index != i || c.MemoryMiB < 0 || c.Split != 100 || c.Cores != 100 || !c.Healthy {
				t.Fatalf("Inventory returned an invalid card %+v", c)
			}
		}
		if len(cards) > maxCards {
			t.Fatalf("%d cards", len(cards))
		}
		req := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}}}
		if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
			if _, err := v.AssignmentExtras(nil, a, time.Now()); err != nil && !strings.ContainsAny(name, ",:;") {
				t.Fatalf("AssignmentExtras: %v", err)
			}
		}
	})
}

// BenchmarkFit places one container on an 8-card node, half shared.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = mlu("node1", i)
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 8192, Cores: 30}
		}
	}
	for _, bm := range []struct {
		name string
		ctr  corev1.Container
	}{
		{"one shared card", limits("main", DefaultCountName, "1", DefaultMemoryName, "16", DefaultCoresName, "30")},
		{"four whole cards", limits("main", DefaultCountName, "4")},
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

// smallQuantity is a quantity without exponent: the fuzz input cannot make
// resource.ParseQuantity compute for ever (1e1000010010000 does).
var smallQuantity = regexp.MustCompile(`^[+-]?[0-9]{1,12}(\.[0-9]{1,6})?([a-zA-Z]{1,2})?$`)

func parseSmall(s string) (resource.Quantity, error) {
	if !smallQuantity.MatchString(s) {
		return resource.Quantity{}, fmt.Errorf("not a small quantity: %q", s)
	}
	return resource.ParseQuantity(s)
}

// TestCheckServable: the MLU shapes Cambricon's plugin (v2.0.23,
// dynamic-smlu) cannot serve are refused with the reason; the one it
// serves passes.
func TestCheckServable(t *testing.T) {
	v := mustNew(t)
	mlu := func(name string, kv ...string) corev1.Container { return limits(name, kv...) }
	full := []string{DefaultCountName, "1", DefaultMemoryName, "20", DefaultCoresName, "10"}
	initPod := func(init corev1.Container, regular ...corev1.Container) *corev1.Pod {
		p := pod(nil, regular...)
		p.Spec.InitContainers = []corev1.Container{init}
		return p
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		wantErr string
	}{
		{name: "one container with count, vcore and vmemory", pod: pod(nil, mlu("sidecar"), mlu("main", full...))},
		{name: "no MLU", pod: pod(nil, mlu("main", "cpu", "1"))},
		{name: "two MLU containers", pod: pod(nil, mlu("a", full...), mlu("b", full...)), wantErr: "containers a, b each ask for an MLU"},
		{name: "init container", pod: initPod(mlu("init", full...), mlu("main")), wantErr: "init container init asks for an MLU"},
		{name: "init container asking vcore only", pod: initPod(mlu("init", DefaultCoresName, "10"), mlu("main")), wantErr: "init container init"},
		{name: "two MLUs", pod: pod(nil, mlu("main", DefaultCountName, "2", DefaultMemoryName, "20", DefaultCoresName, "10")), wantErr: "serves one MLU per pod"},
		{name: "count alone", pod: pod(nil, mlu("main", DefaultCountName, "1")), wantErr: "must set both"},
		{name: "vcore only", pod: pod(nil, mlu("main", DefaultCountName, "1", DefaultCoresName, "10")), wantErr: "must set both"},
		{name: "vmemory only", pod: pod(nil, mlu("main", DefaultCountName, "1", DefaultMemoryName, "10")), wantErr: "must set both"},
		{name: "shares without count", pod: pod(nil, mlu("main", DefaultMemoryName, "10", DefaultCoresName, "10")), wantErr: "without cambricon.com/vmlu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.CheckServable(tt.pod)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckServable() = %v, want nil", err)
				}
				return
			}
			var unservable *devices.UnservableError
			if !errors.As(err, &unservable) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckServable() = %v, want an UnservableError containing %q", err, tt.wantErr)
			}
			if unservable.Plugin != PluginVersion {
				t.Errorf("Plugin = %q, want %q", unservable.Plugin, PluginVersion)
			}
		})
	}
}

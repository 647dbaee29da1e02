package metax

import (
	"fmt"
	"reflect"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/devicestest"
)

// The fixtures every vendor's tests share.
var (
	res    = devicestest.Resources
	limits = devicestest.Limits
	pod    = devicestest.Pod
)

func capNode(name string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: capacity}}
}

func mustGPU(t testing.TB) *GPUVendor {
	t.Helper()
	v, err := NewGPU(devices.Config{Name: "metax"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func gpu(node string, i int) devices.Card {
	return devices.Card{UUID: GPUCardID(node, i), Index: i, Split: 1, MemoryMiB: 65536, Cores: 100, Model: "Metax-GPU", Mode: devices.DefaultMode, Healthy: true}
}

func TestNewGPU(t *testing.T) {
	v := mustGPU(t)
	if v.Name() != "Metax-GPU" || v.Resources() != (devices.ResourceNames{Count: "metax-tech.com/gpu"}) || v.NodeLock() != "" {
		t.Errorf("vendor = %s %+v", v.Name(), v.Resources())
	}
	for _, bad := range []devices.Config{{Name: "metax", ResourceMemoryName: "m"}, {Name: "metax", DefaultCores: 1}, {Name: "metax", MemoryFactor: 2}} {
		if _, err := NewGPU(bad); err == nil {
			t.Errorf("NewGPU(%+v) accepted", bad)
		}
	}
}

func TestGPUInventory(t *testing.T) {
	v := mustGPU(t)
	// HAMi's TestGetNodeDevices: capacity 1 -> test-metax-0, 65536 MiB, 100
	// cores (its fixture says count 100, its code writes 1: the code wins).
	got, err := v.Inventory(capNode("test", res("metax-tech.com/gpu", "1")))
	if err != nil || !reflect.DeepEqual(got, []devices.Card{gpu("test", 0)}) {
		t.Errorf("Inventory() = %+v, %v", got, err)
	}
	got, err = v.Inventory(capNode("node1", res("metax-tech.com/gpu", "8")))
	if err != nil || len(got) != 8 || got[7] != gpu("node1", 7) {
		t.Errorf("8 cards: %+v, %v", got, err)
	}
	for _, capacity := range []corev1.ResourceList{nil, res("metax-tech.com/gpu", "0"), res("metax-tech.com/sgpu", "4")} {
		if got, err := v.Inventory(capNode("n", capacity)); got != nil || err != nil {
			t.Errorf("Inventory(%v) = %+v, %v; want no cards", capacity, got, err)
		}
	}
	for _, capacity := range []corev1.ResourceList{res("metax-tech.com/gpu", "1.5"), res("metax-tech.com/gpu", "2000")} {
		if _, err := v.Inventory(capNode("n", capacity)); err == nil {
			t.Errorf("Inventory(%v) accepted", capacity)
		}
	}
	old := capNode("n", res("metax-tech.com/gpu", "2"))
	updated := capNode("n", res("metax-tech.com/gpu", "3"))
	if v.InventoryChanged(old, old.DeepCopy()) || !v.InventoryChanged(old, updated) {
		t.Error("InventoryChanged")
	}
}

func TestGPUParsePod(t *testing.T) {
	v := mustGPU(t)
	p := pod(map[string]string{devices.CardPolicyAnnotation: "spread,mutex"}, limits("main", "metax-tech.com/gpu", "2"), limits("side"))
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: res("metax-tech.com/gpu", "1")}}}
	got, err := v.ParsePod(p)
	want := devices.PodRequest{
		Containers:  []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}, {Count: 2, MemoryPercent: 100, Cores: 100}, {}},
		Inits:       1,
		Preferences: devices.Preferences{Policy: "spread", Exclusive: true},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePod() = %+v, %v; want %+v", got, err, want)
	}
	if got, err := v.ParsePod(pod(nil, limits("main"))); err != nil || !got.IsZero() {
		t.Errorf("no request: %+v, %v", got, err)
	}
	if _, err := v.ParsePod(pod(nil, limits("main", "metax-tech.com/gpu", "0.5"))); err == nil {
		t.Error("fractional count accepted")
	}
}

// TestGPUFit: one row per rule; each fails if its rule is removed.
func TestGPUFit(t *testing.T) {
	four := []devices.Card{gpu("n", 0), gpu("n", 1), gpu("n", 2), gpu("n", 3)}
	withInit := func(init corev1.Container, ctrs ...corev1.Container) *corev1.Pod {
		p := pod(nil, ctrs...)
		p.Spec.InitContainers = []corev1.Container{init}
		return p
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		cards      []devices.Card
		used       []devices.Usage
		want       string
		wantReason string
	}{
		{name: "whole card, last first", pod: pod(nil, limits("main", "metax-tech.com/gpu", "1")), cards: four, want: "n-metax-3,Metax-GPU,65536,100:;"},
		{name: "two cards", pod: pod(nil, limits("main", "metax-tech.com/gpu", "2")), cards: four, want: "n-metax-3,Metax-GPU,65536,100:n-metax-2,Metax-GPU,65536,100:;"},
		{
			name: "one share per card", pod: pod(nil, limits("main", "metax-tech.com/gpu", "1")), cards: four[:1],
			used: []devices.Usage{{Sharers: 1}}, wantReason: "1/1 cards: all shares in use",
		},
		{
			name:  "a second regular container never fits (HAMi's same-card rule)",
			pod:   pod(nil, limits("a", "metax-tech.com/gpu", "1"), limits("b", "metax-tech.com/gpu", "1")),
			cards: four, wantReason: "3/4 cards: card uuid not wanted, 1/4 cards: all shares in use",
		},
		{
			name:  "a later init container takes the first one's card",
			pod:   withInit(limits("init", "metax-tech.com/gpu", "1"), limits("main", "metax-tech.com/gpu", "1")),
			cards: four, want: "n-metax-3,Metax-GPU,65536,100:;n-metax-3,Metax-GPU,65536,100:;",
		},
		{
			name: "same-card rule with two init containers",
			pod: func() *corev1.Pod {
				p := withInit(limits("i1", "metax-tech.com/gpu", "1"))
				p.Spec.InitContainers = append(p.Spec.InitContainers, limits("i2", "metax-tech.com/gpu", "1"))
				return p
			}(),
			cards: four, used: []devices.Usage{{}, {}, {}, {Sharers: 1}},
			want: "n-metax-2,Metax-GPU,65536,100:;n-metax-2,Metax-GPU,65536,100:;",
		},
		{
			name: "a first container with two cards leaves none to later ones",
			pod: func() *corev1.Pod {
				p := withInit(limits("i1", "metax-tech.com/gpu", "2"))
				p.Spec.InitContainers = append(p.Spec.InitContainers, limits("i2", "metax-tech.com/gpu", "1"))
				return p
			}(),
			cards: four, wantReason: "4/4 cards: card uuid not wanted",
		},
		{name: "too few cards", pod: pod(nil, limits("main", "metax-tech.com/gpu", "5")), cards: four, wantReason: "5 cards wanted, node has 4"},
	}
	v := mustGPU(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := v.ParsePod(tt.pod)
			if err != nil {
				t.Fatal(err)
			}
			used := tt.used
			if used == nil {
				used = make([]devices.Usage, len(tt.cards))
			}
			before := append([]devices.Usage(nil), used...)
			a, rej := v.Fit(tt.cards, used, &req)
			if !reflect.DeepEqual(before, used) {
				t.Error("Fit modified used")
			}
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

// TestGPUScoreNode: HAMi's Test_ScoreNode and TestParseMetaxAnnos rows.
func TestGPUScoreNode(t *testing.T) {
	v := mustGPU(t)
	two := devices.Assignment{{{UUID: "test-0"}, {UUID: "test-1"}}}
	one := devices.Assignment{nil, {{UUID: "test-0"}}}
	node := func(kv ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Annotations[kv[i]] = kv[i+1]
		}
		return n
	}
	for _, tt := range []struct {
		name   string
		node   *corev1.Node
		policy devices.NodePolicy
		a      devices.Assignment
		want   float64
	}{
		{"binpack", node(LossAnnotation, `{"1":100,"2":200}`), devices.NodeBinpack, two, 1800},
		{"spread", node(ScoreAnnotation, `{"1":100,"2":200}`), devices.NodeSpread, one, 1900},
		{"binpack reads only losses", node(ScoreAnnotation, `{"1":100}`), devices.NodeBinpack, one, 0},
		{"missing entry counts 0", node(LossAnnotation, `{"1":100}`), devices.NodeBinpack, two, 2000},
		{"unreadable counts 0", node(LossAnnotation, `x`), devices.NodeBinpack, two, 2000},
		{"eight cards", node(LossAnnotation, `{"1":0,"2":110,"3":270,"4":540,"5":580,"6":730,"7":930,"8":1240}`), devices.NodeBinpack,
			devices.Assignment{make([]devices.Grant, 8)}, 760},
	} {
		if got := v.ScoreNode(tt.node, tt.policy, tt.a); got != tt.want {
			t.Errorf("%s: ScoreNode() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestGPUAssignmentGolden(t *testing.T) {
	v := mustGPU(t)
	cards, err := v.Inventory(capNode("node1", res("metax-tech.com/gpu", "2")))
	if err != nil {
		t.Fatal(err)
	}
	req, err := v.ParsePod(pod(nil, limits("sidecar"), limits("main", "metax-tech.com/gpu", "1")))
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, []devices.Usage{{}, {Sharers: 1, MemoryMiB: 65536, Cores: 100}}, &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	toAllocate, allocated := v.AssignmentAnnotations()
	got := map[string]string{toAllocate: devices.EncodeAssignment(a), allocated: devices.EncodeAssignment(a)}
	want := map[string]string{
		"hami.io/metax-gpu-devices-to-allocate": ";node1-metax-0,Metax-GPU,65536,100:;",
		"hami.io/metax-gpu-devices-allocated":   ";node1-metax-0,Metax-GPU,65536,100:;",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
	if _, ok := any(v).(devices.PodAnnotator); ok {
		t.Error("Metax GPU writes no extra annotation")
	}
}

func TestGPUDefault(t *testing.T) {
	v := mustGPU(t)
	c := limits("main", "metax-tech.com/gpu", "1")
	if ok, err := v.Default(&c); !ok || err != nil {
		t.Errorf("Default() = %v, %v", ok, err)
	}
	c = corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("metax-tech.com/gpu", "1")}}
	if ok, err := v.Default(&c); ok || err != nil {
		t.Errorf("requests only: Default() = %v, %v", ok, err)
	}
}

func FuzzInventory(f *testing.F) {
	for _, s := range []string{"1", "8", "0", "1.5", "-1", "1e3", "1e4"} {
		f.Add("node1", s, `[{"uuid":"GPU-0","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"healthy":true,"qosPolicy":"best-effort","linkZone":1}]`)
	}
	f.Add("n", "2", `[]`)
	f.Add("n", "2", `[{"uuid":"a,b"}]`)
	f.Add("n", "2", `{}`)
	g := mustGPU(f)
	f.Fuzz(func(t *testing.T, name, count, sgpus string) {
		n := capNode(name, corev1.ResourceList{})
		if q, err := parseSmall(count); err == nil {
			n.Status.Capacity["metax-tech.com/gpu"] = q
		}
		n.Annotations = map[string]string{SGPURegisterAnnotation: sgpus}
		cards, err := g.Inventory(n)
		if err != nil && cards != nil {
			t.Fatalf("cards with error %v", err)
		}
		for i, c := range cards {
			if c != gpu(name, i) {
				t.Fatalf("card %+v", c)
			}
		}
		fuzzSGPU(t, n)
	})
}

// BenchmarkFit places whole GPUs on an 8-card node, half used.
func BenchmarkFit(b *testing.B) {
	v := mustGPU(b)
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = gpu("node1", i)
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 65536, Cores: 100}
		}
	}
	for _, bm := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"one card", pod(nil, limits("main", "metax-tech.com/gpu", "1"))},
		{"four cards", pod(nil, limits("main", "metax-tech.com/gpu", "4"))},
	} {
		req, err := v.ParsePod(bm.pod)
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

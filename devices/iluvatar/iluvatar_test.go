package iluvatar

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// Register strings from HAMi's tests and the spec.
const (
	hamiRegister = "GPU-bad51c5a-ed4c-591d-91bf-c04a12e19eae,10,8192,100,MR-V100,0,true:"
	specRegister = "GPU-bad5,10,32768,100,BI-V150,0,true:"
)

func node(annotations map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annotations}, Status: corev1.NodeStatus{Allocatable: allocatable}}
}

func chip(t testing.TB, cw string) *Vendor {
	t.Helper()
	for _, c := range DefaultConfigs() {
		if c.CommonWord == cw {
			v, err := New(devices.Config{Name: "iluvatar", Vendor: c})
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no chip %s", cw)
	return nil
}

func card(id string, split, mem int32) devices.Card {
	return devices.Card{UUID: id, Split: split, MemoryMiB: mem, Cores: 100, Model: "BI-V150", Mode: devices.DefaultMode, Healthy: true}
}

func TestNew(t *testing.T) {
	v := chip(t, "BI-V150")
	want := devices.ResourceNames{Count: "iluvatar.ai/BI-V150-vgpu", Memory: "iluvatar.ai/BI-V150.vMem", Cores: "iluvatar.ai/BI-V150.vCore"}
	to, al := v.AssignmentAnnotations()
	if v.Name() != "BI-V150" || v.Resources() != want || v.MemoryFactor() != 256 || v.HandshakeAnnotation() != "hami.io/node-handshake-BI-V150" ||
		to != "hami.io/BI-V150-devices-to-allocate" || al != "hami.io/BI-V150-devices-allocated" {
		t.Errorf("vendor %s %+v %s %s %s", v.Name(), v.Resources(), v.HandshakeAnnotation(), to, al)
	}
	for _, bad := range []devices.Config{
		{Name: "iluvatar"},
		{Name: "iluvatar", Vendor: Config{CommonWord: "BI-V150"}},
		{Name: "iluvatar", Vendor: Config{CommonWord: "a,b", ResourceCountName: "x"}},
		{Name: "iluvatar", ResourceCountName: "x", Vendor: DefaultConfigs()[0]},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

func TestInventory(t *testing.T) {
	v := chip(t, "MR-V100")
	alloc := res("iluvatar.ai/MR-V100-vgpu", "10")
	got, err := v.Inventory(node(map[string]string{RegisterAnnotation("MR-V100"): hamiRegister}, alloc))
	want := []devices.Card{{UUID: "GPU-bad51c5a-ed4c-591d-91bf-c04a12e19eae", Split: 10, MemoryMiB: 8192, Cores: 100, Model: "MR-V100", Mode: "hami-core", Healthy: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Inventory() = %+v, %v", got, err)
	}
	for _, tt := range []struct {
		ann     map[string]string
		alloc   corev1.ResourceList
		wantErr string
	}{
		{ann: map[string]string{RegisterAnnotation("MR-V100"): specRegister}, alloc: alloc, wantErr: "no card type contains MR-V100"},
		{ann: map[string]string{RegisterAnnotation("MR-V100"): hamiRegister}, wantErr: "allocatable"},
		{ann: map[string]string{RegisterAnnotation("MR-V100"): "x"}, alloc: alloc, wantErr: RegisterAnnotation("MR-V100")},
		// Another chip's key is not read.
		{ann: map[string]string{RegisterAnnotation("BI-V150"): specRegister}, alloc: alloc},
	} {
		got, err := v.Inventory(node(tt.ann, tt.alloc))
		if tt.wantErr == "" && (err != nil || got != nil) || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Inventory(%v) = %+v, %v; want %q", tt.ann, got, err, tt.wantErr)
		}
	}
	old := node(map[string]string{RegisterAnnotation("MR-V100"): hamiRegister}, alloc)
	upd := node(map[string]string{RegisterAnnotation("MR-V100"): hamiRegister}, res("iluvatar.ai/MR-V100-vgpu", "0"))
	if v.InventoryChanged(old, old.DeepCopy()) || !v.InventoryChanged(old, upd) {
		t.Error("InventoryChanged")
	}
}

func TestParsePod(t *testing.T) {
	v := chip(t, "MR-V100")
	// HAMi's TestGenerateResourceRequests: vgpu 1, vMem 1000, vCore 100.
	p := pod(map[string]string{UseUUIDAnnotation("MR-V100"): "a", AvoidUUIDAnnotation("MR-V100"): "b", "hami.io/use-BI-V150-uuid": "c"},
		limits("m", "iluvatar.ai/MR-V100-vgpu", "1", "iluvatar.ai/MR-V100.vMem", "1000", "iluvatar.ai/MR-V100.vCore", "100"))
	p.Spec.InitContainers = []corev1.Container{limits("i", "iluvatar.ai/MR-V100-vgpu", "2")}
	got, err := v.ParsePod(p)
	want := devices.PodRequest{
		Containers:  []devices.Request{{Count: 2, MemoryPercent: 100}, {Count: 1, MemoryMiB: 256000, Cores: 100}},
		Inits:       1,
		Preferences: devices.Preferences{UseUUIDs: []string{"a"}, AvoidUUIDs: []string{"b"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePod() = %+v, %v; want %+v", got, err, want)
	}
	// HAMi: 16Gi is not a plain unit count; here it is an error naming it.
	if _, err := v.ParsePod(pod(nil, limits("m", "iluvatar.ai/MR-V100-vgpu", "1", "iluvatar.ai/MR-V100.vMem", "16.5"))); err == nil || !strings.Contains(err.Error(), "vMem") {
		t.Errorf("fractional memory: %v", err)
	}
}

// TestFit: one row per rule of the standard share fit; each fails if its
// rule is removed.
func TestFit(t *testing.T) {
	v := chip(t, "BI-V150")
	two := []devices.Card{card("GPU-a", 10, 32768), card("GPU-b", 10, 32768)}
	ctr := func(kv ...string) corev1.Container {
		return limits("m", append([]string{"iluvatar.ai/BI-V150-vgpu", "1"}, kv...)...)
	}
	for _, tt := range []struct {
		name       string
		ann        map[string]string
		ctr        corev1.Container
		cards      []devices.Card
		used       []devices.Usage
		want       string
		wantReason string
	}{
		{name: "shared by default (0 cores), last card first", ctr: ctr("iluvatar.ai/BI-V150.vMem", "64"), cards: two, want: "GPU-b,BI-V150,16384,0:;"},
		{name: "0 cores joins a card with 100 shares of cores taken only below 100", ctr: ctr("iluvatar.ai/BI-V150.vMem", "64"), cards: two[:1],
			used: []devices.Usage{{Sharers: 1, MemoryMiB: 1000, Cores: 99}}, want: "GPU-a,BI-V150,16384,0:;"},
		{name: "memory units", ctr: ctr("iluvatar.ai/BI-V150.vMem", "65"), cards: two[:1],
			used: []devices.Usage{{Sharers: 1, MemoryMiB: 16384}}, wantReason: "1/1 cards: insufficient memory"},
		{name: "cores with memory room", ctr: ctr("iluvatar.ai/BI-V150.vMem", "1", "iluvatar.ai/BI-V150.vCore", "51"), cards: two[:1],
			used: []devices.Usage{{Sharers: 1, Cores: 50}}, wantReason: "1/1 cards: insufficient cores"},
		{name: "zero cores on a full card", ctr: ctr("iluvatar.ai/BI-V150.vMem", "1"), cards: two[:1],
			used: []devices.Usage{{Sharers: 1, Cores: 100}}, wantReason: "1/1 cards: cores fully used"},
		{name: "shares", ctr: ctr("iluvatar.ai/BI-V150.vMem", "1"), cards: two[:1],
			used: []devices.Usage{{Sharers: 10}}, wantReason: "1/1 cards: all shares in use"},
		{name: "exclusive 100", ctr: ctr("iluvatar.ai/BI-V150.vMem", "1", "iluvatar.ai/BI-V150.vCore", "100"), cards: two[:1],
			used: []devices.Usage{{Sharers: 1}}, wantReason: "1/1 cards: exclusive use conflict"},
		{name: "use uuid", ann: map[string]string{"hami.io/use-BI-V150-uuid": "GPU-a"}, ctr: ctr(), cards: two, want: "GPU-a,BI-V150,32768,0:;"},
		{name: "no-use uuid", ann: map[string]string{"hami.io/no-use-BI-V150-uuid": "GPU-b"}, ctr: ctr(), cards: two, want: "GPU-a,BI-V150,32768,0:;"},
		{name: "mutex", ann: map[string]string{devices.CardPolicyAnnotation: "mutex"}, ctr: ctr("iluvatar.ai/BI-V150.vMem", "1"), cards: two[:1],
			used: []devices.Usage{{Sharers: 1}}, wantReason: "1/1 cards: exclusive use conflict"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := v.ParsePod(pod(tt.ann, tt.ctr))
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
					t.Fatalf("Fit() = %v, %v; want %q", a, rej, tt.wantReason)
				}
				return
			}
			if rej != nil || devices.EncodeAssignment(a) != tt.want {
				t.Errorf("Fit() = %s, %v; want %s", devices.EncodeAssignment(a), rej, tt.want)
			}
		})
	}
}

func TestAssignmentGolden(t *testing.T) {
	v := chip(t, "BI-V150")
	cards, err := v.Inventory(node(map[string]string{RegisterAnnotation("BI-V150"): specRegister}, res("iluvatar.ai/BI-V150-vgpu", "10")))
	if err != nil {
		t.Fatal(err)
	}
	req, err := v.ParsePod(pod(nil, limits("side"), limits("m", "iluvatar.ai/BI-V150-vgpu", "1", "iluvatar.ai/BI-V150.vMem", "64", "iluvatar.ai/BI-V150.vCore", "50")))
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, 1), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	to, al := v.AssignmentAnnotations()
	got := map[string]string{to: devices.EncodeAssignment(a), al: devices.EncodeAssignment(a)}
	want := map[string]string{
		"hami.io/BI-V150-devices-to-allocate": ";GPU-bad5,BI-V150,16384,50:;",
		"hami.io/BI-V150-devices-allocated":   ";GPU-bad5,BI-V150,16384,50:;",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
	if _, ok := any(v).(devices.PodAnnotator); ok {
		t.Error("Iluvatar writes no extra annotation")
	}
}

func TestDefault(t *testing.T) {
	v := chip(t, "BI-V150")
	c := limits("main", "iluvatar.ai/BI-V150-vgpu", "2")
	if ok, err := v.Default(&c); !ok || err != nil {
		t.Fatalf("Default() = %v, %v", ok, err)
	}
	if q := c.Resources.Limits["iluvatar.ai/BI-V150.vCore"]; q.Value() != 200 ||
		!reflect.DeepEqual(c.Env, []corev1.EnvVar{{Name: "SOL_CONTINER_NAME", Value: "main"}}) {
		t.Errorf("container after Default: %+v", c)
	}
	one := limits("main", "iluvatar.ai/BI-V150-vgpu", "1")
	one.Env = []corev1.EnvVar{{Name: "SOL_CONTINER_NAME", Value: "x"}}
	if ok, err := v.Default(&one); !ok || err != nil || len(one.Env) != 1 || len(one.Resources.Limits) != 1 {
		t.Errorf("count 1 with env: %+v", one)
	}
	none := limits("main")
	if ok, err := v.Default(&none); ok || err != nil || none.Env != nil {
		t.Errorf("not asking: %+v", none)
	}
	bad := limits("main", "iluvatar.ai/BI-V150-vgpu", "2", "iluvatar.ai/BI-V150.vMem", "0.5")
	if _, err := v.Default(&bad); err == nil || bad.Env != nil {
		t.Errorf("bad value: %v %+v", err, bad)
	}
}

func FuzzInventory(f *testing.F) {
	for _, s := range []string{hamiRegister, specRegister, "", ":", "[]", "GPU-a,-1,1,1,BI-V150,0,true:", `[{"id":"a","count":1,"devmem":1,"devcore":100,"type":"BI-V150","health":true}]`} {
		f.Add(s)
	}
	v := chip(f, "BI-V150")
	f.Fuzz(func(t *testing.T, register string) {
		cards, err := v.Inventory(node(map[string]string{RegisterAnnotation("BI-V150"): register}, res("iluvatar.ai/BI-V150-vgpu", "10")))
		if err != nil {
			if cards != nil {
				t.Fatalf("cards with error %v", err)
			}
			return
		}
		for _, c := range cards {
			if c.UUID == "" || !strings.Contains(strings.ToUpper(c.Model), "BI-V150") || (c.Healthy && (c.Split < 0 || c.MemoryMiB < 0 || c.Cores < 0)) {
				t.Fatalf("card %+v", c)
			}
		}
		req := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}}
		if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
			if _, err := devices.DecodeAssignment(devices.EncodeAssignment(a)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func BenchmarkFit(b *testing.B) {
	v := chip(b, "BI-V150")
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = card(fmt.Sprintf("GPU-%d", i), 10, 32768)
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 8192, Cores: 30}
		}
	}
	for _, bm := range []struct {
		name string
		ctr  corev1.Container
	}{
		{"one shared card", limits("m", "iluvatar.ai/BI-V150-vgpu", "1", "iluvatar.ai/BI-V150.vMem", "16", "iluvatar.ai/BI-V150.vCore", "30")},
		{"four whole cards", limits("m", "iluvatar.ai/BI-V150-vgpu", "4", "iluvatar.ai/BI-V150.vCore", "400")},
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

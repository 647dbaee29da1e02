package amd

import (
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

// Register strings: HAMi's test fixture and the spec's MI300X example.
const (
	hamiRegister  = `[{"id":"GPU-0","index":0,"count":1,"devmem":8192,"devcore":100,"type":"amd","numa":0,"health":true}]`
	mi300Register = `[{"id":"GPU-0","index":0,"count":4,"devmem":196608,"devcore":304,"type":"AMD Instinct MI300X VF","numa":0,"mode":"hami-core","health":true}]`
)

func node(register string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{RegisterAnnotation: register}},
		Status:     corev1.NodeStatus{Capacity: capacity},
	}
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "amd"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNew(t *testing.T) {
	v := mustNew(t)
	if got := v.Resources(); got != (devices.ResourceNames{Count: "amd.com/gpu", Memory: "amd.com/gpumem", Cores: "amd.com/gpucores"}) {
		t.Fatalf("Resources() = %+v", got)
	}
	if to, al := v.AssignmentAnnotations(); to != "hami.io/amd-devices-to-allocate" || al != "hami.io/amd-devices-allocated" {
		t.Fatalf("AssignmentAnnotations() = %q, %q", to, al)
	}
	if v.NodeLock() != "hami.io/mutex.lock" {
		t.Fatal(v.NodeLock())
	}
	if _, err := New(devices.Config{Name: "amd", DefaultCores: 10}); err == nil {
		t.Fatal("New accepted defaultCores")
	}
}

func TestInventory(t *testing.T) {
	v := mustNew(t)
	gpu := res("amd.com/gpu", "1")
	cards, err := v.Inventory(node(hamiRegister, gpu))
	want := []devices.Card{{UUID: "GPU-0", Split: 1, MemoryMiB: 8192, Cores: 100, Model: "amd", Mode: devices.DefaultMode, Healthy: true}}
	if err != nil || !reflect.DeepEqual(cards, want) {
		t.Fatalf("HAMi fixture: %+v, %v", cards, err)
	}
	cards, err = v.Inventory(node(mi300Register, gpu))
	if err != nil || len(cards) != 1 || cards[0].Cores != 304 || cards[0].Model != "AMD Instinct MI300X VF" {
		t.Fatalf("MI300X: %+v, %v", cards, err)
	}
	for _, tc := range []struct {
		name, register string
		capacity       corev1.ResourceList
		wantErr        string
	}{
		{"no capacity", hamiRegister, nil, "capacity amd.com/gpu is 0"},
		{"zero capacity", hamiRegister, res("amd.com/gpu", "0"), "capacity amd.com/gpu is 0"},
		{"not AMD", `[{"id":"GPU-0","count":1,"devmem":1,"devcore":1,"type":"NVIDIA","health":true}]`, gpu, "no card type contains AMD"},
		{"separator in type", `[{"id":"GPU-0","count":1,"devmem":1,"devcore":1,"type":"AMD:x","health":true}]`, gpu, "separator"},
		{"garbage", "{", gpu, RegisterAnnotation},
	} {
		cards, err := v.Inventory(node(tc.register, tc.capacity))
		if cards != nil || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %+v, %v", tc.name, cards, err)
		}
	}
	if cards, err := v.Inventory(&corev1.Node{}); cards != nil || err != nil {
		t.Fatal("a node without the annotation")
	}
}

// TestParsePod: limits only; HAMi's GenerateResourceRequests cases.
func TestParsePod(t *testing.T) {
	v := mustNew(t)
	for _, tc := range []struct {
		name    string
		ctr     corev1.Container
		want    devices.Request
		wantErr bool
	}{
		{"count only: whole memory, 100%", limits("c", "amd.com/gpu", "1"), devices.Request{Count: 1, Cores: 100}, false},
		{"memory and cores", limits("c", "amd.com/gpu", "2", "amd.com/gpumem", "16384", "amd.com/gpucores", "25"), devices.Request{Count: 2, MemoryMiB: 16384, Cores: 25}, false},
		{"requests are ignored", corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("amd.com/gpu", "1")}}, devices.Request{}, false},
		{"cores 0", limits("c", "amd.com/gpu", "1", "amd.com/gpucores", "0"), devices.Request{}, true},
		{"cores 101", limits("c", "amd.com/gpu", "1", "amd.com/gpucores", "101"), devices.Request{}, true},
	} {
		req, err := v.ParsePod(pod(nil, tc.ctr))
		var got devices.Request
		if len(req.Containers) == 1 {
			got = req.Containers[0]
		}
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: %+v, %v", tc.name, req.Containers, err)
		}
	}
	req, _ := v.ParsePod(pod(map[string]string{UseTypeAnnotation: "mi300x", AvoidTypeAnnotation: "mi210", UseUUIDAnnotation: "GPU-0", AvoidUUIDAnnotation: "GPU-1"}, limits("c", "amd.com/gpu", "1")))
	pr := req.Preferences
	if !reflect.DeepEqual(pr.UseModels, []string{"MI300X"}) || !reflect.DeepEqual(pr.AvoidModels, []string{"MI210"}) ||
		!reflect.DeepEqual(pr.UseUUIDs, []string{"GPU-0"}) || !reflect.DeepEqual(pr.AvoidUUIDs, []string{"GPU-1"}) {
		t.Fatalf("preferences %+v", pr)
	}
}

func card(id string, split, mem, cus int32, model string) devices.Card {
	return devices.Card{UUID: id, Split: split, MemoryMiB: mem, Cores: cus, Model: model, Healthy: true}
}

// TestFit: HAMi's TestDevices_Fit rows plus one row per rule.
func TestFit(t *testing.T) {
	v := mustNew(t)
	two := []devices.Card{card("dev-0", 2, 1000, 100, "AMD"), card("dev-1", 12, 1000, 100, "AMD")}
	tests := []struct {
		name  string
		cards []devices.Card
		used  []devices.Usage
		req   devices.Request
		prefs devices.Preferences
		want  string
	}{
		{name: "HAMi: two whole cards", cards: two, req: devices.Request{Count: 2}, want: "dev-1,AMD,1000,100:dev-0,AMD,1000,100:;"},
		{name: "HAMi: percent maps to CUs", cards: []devices.Card{card("dev-0", 2, 1000, 10, "AMD"), card("dev-1", 12, 1000, 100, "AMD")}, req: devices.Request{Count: 1, MemoryMiB: 500, Cores: 50}, want: "dev-1,AMD,500,50:;"},
		{name: "HAMi: product type in the grant", cards: []devices.Card{card("dev-0", 2, 1000, 100, "AMD_Instinct_MI300X_VF")}, req: devices.Request{Count: 1, MemoryMiB: 100, Cores: 10}, want: "dev-0,AMD_Instinct_MI300X_VF,100,10:;"},
		{name: "HAMi: at least one CU", cards: []devices.Card{card("dev-0", 2, 1000, 64, "AMD")}, req: devices.Request{Count: 1, MemoryMiB: 100, Cores: 1}, want: "dev-0,AMD,100,1:;"},
		{name: "HAMi: at most devcore", cards: []devices.Card{card("dev-0", 2, 1000, 64, "AMD")}, req: devices.Request{Count: 1, MemoryMiB: 100, Cores: 101}, want: "dev-0,AMD,100,64:;"},
		{name: "HAMi: insufficient memory", cards: []devices.Card{card("dev-0", 2, 1000, 100, "AMD")}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 900}}, req: devices.Request{Count: 1, MemoryMiB: 500, Cores: 10}},
		{name: "HAMi: insufficient CUs", cards: []devices.Card{card("dev-0", 2, 1000, 10, "AMD")}, used: []devices.Usage{{Sharers: 1, Cores: 9}}, req: devices.Request{Count: 1, MemoryMiB: 100, Cores: 100}},
		{name: "no exclusive-100 rule", cards: []devices.Card{card("dev-0", 4, 1000, 100, "AMD")}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 100}}, req: devices.Request{Count: 1, MemoryMiB: 100, Cores: 90}, want: "dev-0,AMD,100,90:;"},
		{name: "no cores-full rule", cards: []devices.Card{card("dev-0", 4, 1000, 100, "AMD")}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 100, Cores: 100}}, req: devices.Request{Count: 1, MemoryMiB: 100}, want: "dev-0,AMD,100,0:;"},
		{name: "whole memory without cores takes every CU", cards: []devices.Card{card("dev-0", 4, 1000, 100, "AMD")}, used: []devices.Usage{{Sharers: 1, Cores: 1}}, req: devices.Request{Count: 1}},
		{name: "no CUs registered", cards: []devices.Card{card("dev-0", 4, 1000, 0, "AMD")}, req: devices.Request{Count: 1, MemoryMiB: 1, Cores: 1}},
		{name: "shares", cards: []devices.Card{card("dev-0", 1, 1000, 100, "AMD")}, used: []devices.Usage{{Sharers: 1}}, req: devices.Request{Count: 1, MemoryMiB: 1, Cores: 1}},
		{name: "mutex", cards: []devices.Card{card("dev-0", 4, 1000, 100, "AMD")}, used: []devices.Usage{{Sharers: 1}}, req: devices.Request{Count: 1, MemoryMiB: 1, Cores: 1}, prefs: devices.Preferences{Exclusive: true}},
		{name: "use uuid", cards: two, req: devices.Request{Count: 1, MemoryMiB: 1, Cores: 1}, prefs: devices.Preferences{UseUUIDs: []string{"dev-0"}}, want: "dev-0,AMD,1,1:;"},
		{name: "avoid type", cards: []devices.Card{card("dev-0", 4, 1000, 100, "AMD MI210"), card("dev-1", 4, 1000, 100, "AMD MI300X")}, req: devices.Request{Count: 1, MemoryMiB: 1, Cores: 1}, prefs: devices.Preferences{AvoidModels: []string{"MI300X"}}, want: "dev-0,AMD MI210,1,1:;"},
		{name: "unhealthy", cards: func() []devices.Card {
			c := []devices.Card{card("dev-0", 4, 1000, 100, "AMD")}
			c[0].Healthy = false
			return c
		}(), req: devices.Request{Count: 1, MemoryMiB: 1, Cores: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := tc.used
			if used == nil {
				used = make([]devices.Usage, len(tc.cards))
			}
			req := devices.PodRequest{Containers: []devices.Request{tc.req}, Preferences: tc.prefs}
			a, rej := v.Fit(tc.cards, used, &req)
			if tc.want == "" {
				if rej == nil {
					t.Fatalf("placed %s", devices.EncodeAssignment(a))
				}
				return
			}
			if rej != nil {
				t.Fatal(rej.Reason())
			}
			if got := devices.EncodeAssignment(a); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAssignmentGolden: the spec's MI300X example, 16384 MiB and 25% of
// 304 CUs (76), under both keys; the assignment round-trips.
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	cards, err := v.Inventory(node(mi300Register, res("amd.com/gpu", "1")))
	if err != nil {
		t.Fatal(err)
	}
	p := pod(nil, limits("sidecar"), limits("main", "amd.com/gpu", "1", "amd.com/gpumem", "16384", "amd.com/gpucores", "25"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	to, al := v.AssignmentAnnotations()
	got := map[string]string{to: devices.EncodeAssignment(a), al: devices.EncodeAssignment(a)}
	want := map[string]string{
		"hami.io/amd-devices-to-allocate": ";GPU-0,AMD Instinct MI300X VF,16384,76:;",
		"hami.io/amd-devices-allocated":   ";GPU-0,AMD Instinct MI300X VF,16384,76:;",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("annotations %v, want %v", got, want)
	}
	if back, err := devices.DecodeAssignment(want[al]); err != nil || !reflect.DeepEqual(back, a) {
		t.Fatalf("round trip %v, %v", back, err)
	}
}

// TestDefault: HAMi's MutateAdmission cases.
func TestDefault(t *testing.T) {
	v := mustNew(t)
	for _, tc := range []struct {
		ctr     corev1.Container
		asks    bool
		wantErr bool
	}{
		{limits("c", "amd.com/gpu", "1"), true, false},
		{limits("c", "amd.com/gpu", "1", "amd.com/gpucores", "0"), false, true},
		{limits("c", "amd.com/gpu", "1", "amd.com/gpucores", "101"), false, true},
		{limits("c", "amd.com/gpumem", "1024"), true, false},
		{limits("c", "amd.com/gpucores", "10"), true, false},
		{limits("c", "cpu", "1"), false, false},
	} {
		asks, err := v.Default(&tc.ctr)
		if asks != tc.asks || (err != nil) != tc.wantErr {
			t.Errorf("%v: %v, %v", tc.ctr.Resources.Limits, asks, err)
		}
	}
}

func FuzzInventory(f *testing.F) {
	for _, s := range []string{hamiRegister, mi300Register, "", "[]", "{", "GPU-0,1,1,1,AMD,0,true:", `[{"id":"a","type":"AMD","devmem":-1,"health":true}]`} {
		f.Add(s)
	}
	v := mustNew(f)
	f.Fuzz(func(t *testing.T, register string) {
		cards, err := v.Inventory(node(register, res("amd.com/gpu", "1")))
		if err != nil {
			if cards != nil || !strings.Contains(err.Error(), RegisterAnnotation) {
				t.Fatalf("%v with cards %v", err, cards)
			}
			return
		}
		for _, c := range cards {
			if c.UUID == "" || !strings.Contains(strings.ToUpper(c.Model), "AMD") || strings.ContainsAny(c.Model, ",:;") {
				t.Fatalf("invalid card %+v", c)
			}
		}
		req := devices.PodRequest{Containers: []devices.Request{{Count: 1, Cores: 50}}}
		if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
			back, err := devices.DecodeAssignment(devices.EncodeAssignment(a))
			if err != nil || !reflect.DeepEqual(back, a) {
				t.Fatalf("assignment does not round-trip: %v", err)
			}
		}
	})
}

// BenchmarkFit: an 8-card MI300X node, half shared.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = card("GPU-"+string(rune('0'+i)), 4, 196608, 304, "AMD Instinct MI300X VF")
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 65536, Cores: 100}
		}
	}
	for _, bm := range []struct {
		name string
		ctr  corev1.Container
	}{
		{"one shared card", limits("main", "amd.com/gpu", "1", "amd.com/gpumem", "16384", "amd.com/gpucores", "25")},
		{"four whole cards", limits("main", "amd.com/gpu", "4")},
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

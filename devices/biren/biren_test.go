package biren

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

// hamiRegister is HAMi's test fixture (also the spec's example).
const hamiRegister = `[{"id":"7-0","count":1,"devmem":32768,"type":"Biren","health":true,"devicepairscore":{}}]`

func node(register string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{RegisterAnnotation: register}},
		Status:     corev1.NodeStatus{Allocatable: allocatable},
	}
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "biren"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNew(t *testing.T) {
	v := mustNew(t)
	if v.Resources().Count != "birentech.com/gpu" || v.Name() != "Biren" || v.HandshakeAnnotation() != "hami.io/node-handshake-biren" || v.NodeLock() != "hami.io/mutex.lock" {
		t.Fatal("names")
	}
	if to, al := v.AssignmentAnnotations(); to != "hami.io/Biren-devices-to-allocate" || al != "hami.io/Biren-devices-allocated" {
		t.Fatal(to, al)
	}
	if _, err := New(devices.Config{Name: "biren", ResourceCoresName: "x/y"}); err == nil {
		t.Fatal("cores accepted")
	}
}

// TestInventory: HAMi's fixtures (the JSON card; ":" and "" fail).
func TestInventory(t *testing.T) {
	v := mustNew(t)
	gpu := res("birentech.com/gpu", "1")
	cards, err := v.Inventory(node(hamiRegister, gpu))
	want := []devices.Card{{UUID: "7-0", Split: 1, MemoryMiB: 32768, Cores: 100, Model: "Biren", Mode: devices.DefaultMode, Healthy: true}}
	if err != nil || !reflect.DeepEqual(cards, want) {
		t.Fatalf("%+v, %v", cards, err)
	}
	// Biren's plugin (runc mode, since 2026-05) registers the driver's GPU
	// name: such cards are Biren's too, where HAMi keeps none.
	cards, err = v.Inventory(node(`[{"id":"card_0","count":1,"devmem":32768,"type":"BR104","health":true}]`, gpu))
	if err != nil || len(cards) != 1 || cards[0].UUID != "card_0" || cards[0].Model != "BR104" {
		t.Fatalf("driver GPU name: %+v, %v", cards, err)
	}
	for _, tc := range []struct{ name, register string }{{"colon", ":"}, {"empty", ""}} {
		if cards, err := v.Inventory(node(tc.register, gpu)); cards != nil || err == nil {
			t.Errorf("%s: %+v, %v", tc.name, cards, err)
		}
	}
	if cards, err := v.Inventory(node(hamiRegister, nil)); cards != nil || err == nil {
		t.Fatal("no allocatable accepted")
	}
}

func TestParsePod(t *testing.T) {
	v := mustNew(t)
	req, err := v.ParsePod(pod(map[string]string{AvoidUUIDAnnotation: "7-1", devices.CardPolicyAnnotation: "binpack"}, limits("c", "birentech.com/gpu", "2")))
	if err != nil || !reflect.DeepEqual(req.Containers, []devices.Request{{Count: 2, MemoryPercent: 100}}) ||
		!reflect.DeepEqual(req.Preferences.AvoidUUIDs, []string{"7-1"}) || req.Preferences.Policy != devices.CardBinpack {
		t.Fatalf("%+v, %v", req, err)
	}
}

// TestFit: one row per rule; each fails if its rule is removed.
func TestFit(t *testing.T) {
	v := mustNew(t)
	two := []devices.Card{
		{UUID: "7-0", Split: 2, MemoryMiB: 32768, Cores: 100, Model: "Biren", Healthy: true},
		{UUID: "7-1", Index: 1, Split: 2, MemoryMiB: 32768, Cores: 100, Model: "Biren", Healthy: true},
	}
	one := devices.Request{Count: 1, MemoryPercent: 100}
	full := []devices.Usage{{Sharers: 1, MemoryMiB: 32768, Cores: 100}, {Sharers: 1, MemoryMiB: 32768, Cores: 100}}
	tests := []struct {
		name  string
		cards []devices.Card
		used  []devices.Usage
		req   devices.Request
		prefs devices.Preferences
		want  string
	}{
		{name: "no memory or core check: 0/0", cards: two, used: full, req: one, want: "7-1,Biren,0,0:;"},
		{name: "shares", cards: two, used: []devices.Usage{{Sharers: 2}, {Sharers: 2}}, req: one},
		{name: "mutex", cards: two, used: []devices.Usage{{Sharers: 1}, {Sharers: 1}}, req: one, prefs: devices.Preferences{Exclusive: true}},
		{name: "avoid uuid", cards: two, req: one, prefs: devices.Preferences{AvoidUUIDs: []string{"7-1"}}, want: "7-0,Biren,0,0:;"},
		{name: "use uuid", cards: two, req: one, prefs: devices.Preferences{UseUUIDs: []string{"7-0"}}, want: "7-0,Biren,0,0:;"},
		{name: "unhealthy", cards: []devices.Card{{UUID: "7-0", Split: 1, Model: "Biren"}}, req: one},
		{name: "two cards", cards: two, req: devices.Request{Count: 2, MemoryPercent: 100}, want: "7-1,Biren,0,0:7-0,Biren,0,0:;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := tc.used
			if used == nil {
				used = make([]devices.Usage, len(tc.cards))
			}
			pr := devices.PodRequest{Containers: []devices.Request{tc.req}, Preferences: tc.prefs}
			a, rej := v.Fit(tc.cards, used, &pr)
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

// TestAssignmentGolden: the spec's `;7-0,Biren,0,0:;` under both
// capitalised keys.
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	cards, err := v.Inventory(node(hamiRegister, res("birentech.com/gpu", "1")))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := v.ParsePod(pod(nil, limits("sidecar"), limits("main", "birentech.com/gpu", "1")))
	a, rej := v.Fit(cards, make([]devices.Usage, 1), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	to, al := v.AssignmentAnnotations()
	got := map[string]string{to: devices.EncodeAssignment(a), al: devices.EncodeAssignment(a)}
	want := map[string]string{"hami.io/Biren-devices-to-allocate": ";7-0,Biren,0,0:;", "hami.io/Biren-devices-allocated": ";7-0,Biren,0,0:;"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestDefault(t *testing.T) {
	v := mustNew(t)
	if ok, err := v.Default(&corev1.Container{Resources: corev1.ResourceRequirements{Limits: res("birentech.com/gpu", "1")}}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := v.Default(&corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("birentech.com/gpu", "1")}}); ok {
		t.Fatal("requests-only detected (HAMi reads limits)")
	}
}

func FuzzInventory(f *testing.F) {
	for _, s := range []string{hamiRegister, ":", "", "[]", "7-0,1,32768,100,Biren,0,true:", `[{"id":"a","type":"biren","count":-1,"health":true}]`} {
		f.Add(s)
	}
	v := mustNew(f)
	f.Fuzz(func(t *testing.T, register string) {
		cards, err := v.Inventory(node(register, res("birentech.com/gpu", "1")))
		if err != nil {
			if cards != nil || !strings.Contains(err.Error(), RegisterAnnotation) {
				t.Fatalf("%v with %v", err, cards)
			}
			return
		}
		for _, c := range cards {
			// Any type: the register is Biren's (the plugin may name the
			// driver's GPU, e.g. BR104).
			if c.Cores != 100 || c.UUID == "" {
				t.Fatalf("invalid card %+v", c)
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

// BenchmarkFit: 8 Biren GPUs, half shared.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = devices.Card{UUID: "7-" + string(rune('0'+i)), Index: i, Split: 4, MemoryMiB: 32768, Cores: 100, Model: "Biren", Healthy: true}
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1}
		}
	}
	for _, n := range []string{"1", "4"} {
		req, _ := v.ParsePod(pod(nil, limits("main", "birentech.com/gpu", n)))
		b.Run(n+" GPUs", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := v.Fit(cards, used, &req); rej != nil {
					b.Fatal(rej.Reason())
				}
			}
		})
	}
}

package vastai

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

// specRegister is the spec's example register annotation.
const specRegister = `[{"id":"va-0-0","index":0,"count":1,"devmem":16384,"type":"Vastai","health":true,"custominfo":{"DeviceStrategy":"die","AIC":"0"}}]`

func node(register string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{RegisterAnnotation: register}},
		Status:     corev1.NodeStatus{Allocatable: allocatable},
	}
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "vastai"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// dies registers n dies, two per AIC.
func dies(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`{"id":"va-%d-%d","index":%d,"count":1,"devmem":16384,"type":"Vastai","health":true,"custominfo":{"DeviceStrategy":"die","AIC":"%d"}}`, i/2, i%2, i, i/2))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestNew(t *testing.T) {
	v := mustNew(t)
	if v.Resources().Count != "vastaitech.com/va" || v.Name() != "Vastai" || v.HandshakeAnnotation() != "hami.io/node-handshake-va" || v.NodeLock() != "hami.io/mutex.lock" {
		t.Fatal("names")
	}
	if to, al := v.AssignmentAnnotations(); to != "hami.io/Vastai-devices-to-allocate" || al != "hami.io/Vastai-devices-allocated" {
		t.Fatal(to, al)
	}
	if _, err := New(devices.Config{Name: "vastai", ResourceMemoryName: "x/y"}); err == nil {
		t.Fatal("memory accepted")
	}
}

func TestInventory(t *testing.T) {
	v := mustNew(t)
	va := res("vastaitech.com/va", "1")
	cards, err := v.Inventory(node(specRegister, va))
	want := []devices.Card{{UUID: "va-0-0", Split: 1, MemoryMiB: 16384, Cores: 100, Model: "Vastai", Mode: DieMode, Group: 1, Healthy: true}}
	if err != nil || !reflect.DeepEqual(cards, want) {
		t.Fatalf("spec example: %+v, %v", cards, err)
	}
	cards, err = v.Inventory(node(`[{"id":"va-0","count":1,"devmem":16384,"type":"Vastai","health":true,"custominfo":{"DeviceStrategy":"card","AIC":7}}]`, va))
	if err != nil || cards[0].Mode != devices.DefaultMode || cards[0].Group != 0 {
		t.Fatalf("card strategy, numeric AIC: %+v, %v", cards, err)
	}
	cards, _ = v.Inventory(node(dies(4), va))
	if cards[3].Group != 2 || cards[2].Group != 2 || cards[1].Group != 1 {
		t.Fatalf("AIC groups %+v", cards)
	}
	for _, tc := range []struct{ name, register string }{{"not Vastai", `[{"id":"x","count":1,"type":"GPU","health":true}]`}, {"garbage", "["}} {
		if cards, err := v.Inventory(node(tc.register, va)); cards != nil || err == nil {
			t.Errorf("%s: %+v, %v", tc.name, cards, err)
		}
	}
	if cards, err := v.Inventory(node(specRegister, nil)); cards != nil || err == nil || !strings.Contains(err.Error(), "allocatable") {
		t.Fatalf("no allocatable: %v", err)
	}
}

func TestParsePod(t *testing.T) {
	v := mustNew(t)
	p := pod(map[string]string{UseUUIDAnnotation: "va-0-0", devices.CardPolicyAnnotation: "mutex"}, limits("c", "vastaitech.com/va", "2"))
	req, err := v.ParsePod(p)
	if err != nil || !reflect.DeepEqual(req.Containers, []devices.Request{{Count: 2, MemoryPercent: 100}}) || !req.Preferences.Exclusive ||
		!reflect.DeepEqual(req.Preferences.UseUUIDs, []string{"va-0-0"}) {
		t.Fatalf("%+v, %v", req, err)
	}
	req, _ = v.ParsePod(pod(nil, corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("vastaitech.com/va", "1")}}))
	if len(req.Containers) != 1 || req.Containers[0].Count != 1 {
		t.Fatal("requests are read too", req)
	}
}

// TestFit: one row per rule; each fails if its rule is removed.
func TestFit(t *testing.T) {
	v := mustNew(t)
	va := res("vastaitech.com/va", "1")
	four, _ := v.Inventory(node(dies(4), va))
	six, _ := v.Inventory(node(dies(6), va))
	cardMode, _ := v.Inventory(node(`[{"id":"a","index":0,"count":2,"devmem":1,"type":"Vastai","health":true},{"id":"b","index":1,"count":2,"devmem":1,"type":"Vastai","health":true}]`, va))
	req := func(n int32) devices.Request { return devices.Request{Count: n, MemoryPercent: 100} }
	tests := []struct {
		name  string
		cards []devices.Card
		used  []devices.Usage
		req   devices.Request
		prefs devices.Preferences
		want  string
	}{
		{name: "no memory or core check: 0/0", cards: cardMode, used: []devices.Usage{{Sharers: 1, MemoryMiB: 1, Cores: 100}, {Sharers: 1, MemoryMiB: 1, Cores: 100}}, req: req(1), want: "b,Vastai,0,0:;"},
		{name: "shares", cards: cardMode, used: []devices.Usage{{Sharers: 2}, {Sharers: 2}}, req: req(1)},
		{name: "mutex", cards: cardMode, used: []devices.Usage{{Sharers: 1}, {Sharers: 1}}, req: req(1), prefs: devices.Preferences{Exclusive: true}},
		{name: "uuid", cards: cardMode, req: req(1), prefs: devices.Preferences{UseUUIDs: []string{"a"}}, want: "a,Vastai,0,0:;"},
		{name: "die mode: mutex refuses dies of an AIC in use", cards: four, used: []devices.Usage{{}, {}, {}, {Sharers: 1}}, req: req(1), prefs: devices.Preferences{Exclusive: true}, want: "va-0-1,Vastai,0,0:;"},
		{name: "die mode: two dies from one AIC", cards: six, used: []devices.Usage{{}, {}, {}, {Sharers: 1}, {}, {}}, req: req(2), want: "va-2-1,Vastai,0,0:va-2-0,Vastai,0,0:;"},
		{name: "die mode: fuller AIC first", cards: six, used: []devices.Usage{{}, {Sharers: 1}, {}, {}, {}, {Sharers: 1}}, req: req(3), want: "va-1-1,Vastai,0,0:va-1-0,Vastai,0,0:va-2-0,Vastai,0,0:;"},
		{name: "die mode: exactly the fitting dies, walk order", cards: four, used: []devices.Usage{{}, {Sharers: 1}, {}, {Sharers: 1}}, req: req(2), want: "va-1-0,Vastai,0,0:va-0-0,Vastai,0,0:;"},
		{name: "too few dies", cards: four, used: []devices.Usage{{Sharers: 1}, {Sharers: 1}, {Sharers: 1}, {}}, req: req(2)},
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
	// Mutex in die mode sees the AIC taken by an earlier container.
	pr := devices.PodRequest{Containers: []devices.Request{req(1), req(1)}, Preferences: devices.Preferences{Exclusive: true}}
	a, rej := v.Fit(four, make([]devices.Usage, 4), &pr)
	if rej != nil || devices.EncodeAssignment(a) != "va-1-1,Vastai,0,0:;va-0-1,Vastai,0,0:;" {
		t.Fatalf("two mutex containers: %s, %v", devices.EncodeAssignment(a), rej)
	}
}

func TestScoreAssignment(t *testing.T) {
	v := mustNew(t)
	six, _ := v.Inventory(node(dies(6), res("vastaitech.com/va", "1")))
	a := devices.Assignment{{{UUID: "va-0-0"}, {UUID: "va-0-1"}, {UUID: "va-1-0"}}, nil, {{UUID: "va-2-0"}}}
	if got := v.ScoreAssignment(six, a); got < 1.6666 || got > 1.6667 {
		t.Fatalf("score %v", got)
	}
	cardMode := []devices.Card{{UUID: "a", Model: "Vastai", Mode: devices.DefaultMode}}
	if got := v.ScoreAssignment(cardMode, devices.Assignment{{{UUID: "a"}}}); got != 0 {
		t.Fatalf("card mode score %v", got)
	}
}

// TestAssignmentGolden: the spec's example, under both capitalised keys.
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	cards, err := v.Inventory(node(specRegister, res("vastaitech.com/va", "1")))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := v.ParsePod(pod(nil, limits("sidecar"), limits("main", "vastaitech.com/va", "1")))
	a, rej := v.Fit(cards, make([]devices.Usage, 1), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	to, al := v.AssignmentAnnotations()
	got := map[string]string{to: devices.EncodeAssignment(a), al: devices.EncodeAssignment(a)}
	want := map[string]string{"hami.io/Vastai-devices-to-allocate": ";va-0-0,Vastai,0,0:;", "hami.io/Vastai-devices-allocated": ";va-0-0,Vastai,0,0:;"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestDefault(t *testing.T) {
	v := mustNew(t)
	if ok, err := v.Default(&corev1.Container{Resources: corev1.ResourceRequirements{Limits: res("vastaitech.com/va", "1")}}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := v.Default(&corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("vastaitech.com/va", "1")}}); ok {
		t.Fatal("requests-only detected (HAMi reads limits)")
	}
}

func FuzzInventory(f *testing.F) {
	for _, s := range []string{specRegister, dies(4), "", "[]", "va-0,1,1,1,Vastai,0,true:", `[{"id":"a","type":"Vastai","custominfo":{"AIC":{}}}]`} {
		f.Add(s)
	}
	v := mustNew(f)
	f.Fuzz(func(t *testing.T, register string) {
		cards, err := v.Inventory(node(register, res("vastaitech.com/va", "1")))
		if err != nil {
			if cards != nil || !strings.Contains(err.Error(), RegisterAnnotation) {
				t.Fatalf("%v with %v", err, cards)
			}
			return
		}
		for _, c := range cards {
			if c.Cores != 100 || c.Group < 0 || c.Group > len(cards) || !strings.Contains(strings.ToUpper(c.Model), "VASTAI") {
				t.Fatalf("invalid card %+v", c)
			}
		}
		for _, n := range []int32{1, 2} {
			req := devices.PodRequest{Containers: []devices.Request{{Count: n, MemoryPercent: 100}}, Preferences: devices.Preferences{Exclusive: n == 2}}
			if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
				if _, err := devices.DecodeAssignment(devices.EncodeAssignment(a)); err != nil {
					t.Fatal(err)
				}
				v.ScoreAssignment(cards, a)
			}
		}
	})
}

// BenchmarkFit: 8 dies on 4 AICs, a quarter used.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards, err := v.Inventory(node(dies(8), res("vastaitech.com/va", "1")))
	if err != nil {
		b.Fatal(err)
	}
	used := make([]devices.Usage, 8)
	used[1], used[6] = devices.Usage{Sharers: 1}, devices.Usage{Sharers: 1}
	for _, n := range []string{"1", "2"} {
		req, _ := v.ParsePod(pod(nil, limits("main", "vastaitech.com/va", n)))
		b.Run(n+" dies", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := v.Fit(cards, used, &req); rej != nil {
					b.Fatal(rej.Reason())
				}
			}
		})
	}
}

package kunlun

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// The spec's register example, extended to eight cards.
const specVXPU = `[{"id":"xpu-0","index":0,"count":4,"devmem":98304,"devcore":100,"type":"XPU","health":true}]`

func vxpuRegister(n int) string {
	var items []string
	for i := range n {
		items = append(items, `{"id":"xpu-`+string(rune('0'+i))+`","index":`+string(rune('0'+i))+`,"count":4,"devmem":98304,"devcore":100,"type":"XPU","health":true}`)
	}
	return "[" + strings.Join(items, ",") + "]"
}

func mustVXPU(t testing.TB) *VXPUVendor {
	t.Helper()
	v, err := NewVXPU(devices.Config{Name: "kunlun-vxpu"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func vnode(register string, alloc string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{VXPURegisterAnnotation: register}}}
	if alloc != "" {
		n.Status.Allocatable = corev1.ResourceList{DefaultVXPUCountName: resource.MustParse(alloc)}
	}
	return n
}

func vlimits(kv ...string) corev1.Container {
	c := corev1.Container{Name: "m", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Resources.Limits[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return c
}

func TestVXPUInventory(t *testing.T) {
	v := mustVXPU(t)
	got, err := v.Inventory(vnode(specVXPU, "4"))
	want := []devices.Card{{UUID: "xpu-0", Split: 4, MemoryMiB: 98304, Cores: 100, Model: "XPU", Mode: "hami-core", Healthy: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Inventory() = %+v, %v", got, err)
	}
	if _, err := v.Inventory(vnode(specVXPU, "")); err == nil {
		t.Error("no allocatable accepted")
	}
	if _, err := v.Inventory(vnode(strings.Replace(specVXPU, `"XPU"`, `"GPU"`, 1), "4")); err == nil {
		t.Error("foreign type accepted")
	}
	to, al := v.AssignmentAnnotations()
	if v.Name() != "XPU" || v.HandshakeAnnotation() != "hami.io/node-handshake-xpu" || to != "hami.io/xpu-devices-to-allocate" || al != "hami.io/xpu-devices-allocated" {
		t.Errorf("keys %s %s %s", v.HandshakeAnnotation(), to, al)
	}
}

func TestVXPUParsePod(t *testing.T) {
	v := mustVXPU(t)
	for _, tt := range []struct {
		mem  string
		want devices.Request
	}{
		{"", devices.Request{Count: 1, MemoryMiB: 98304, Cores: 100}},
		{"1000", devices.Request{Count: 1, MemoryMiB: 24576, Cores: 25}},
		{"0", devices.Request{Count: 1, MemoryMiB: 24576, Cores: 25}},
		{"30000", devices.Request{Count: 1, MemoryMiB: 49152, Cores: 50}},
		{"60000", devices.Request{Count: 1, MemoryMiB: 98304, Cores: 100}},
	} {
		kv := []string{DefaultVXPUCountName, "1"}
		if tt.mem != "" {
			kv = append(kv, DefaultVXPUMemoryName, tt.mem)
		}
		got, err := v.ParsePod(pod(nil, vlimits(kv...)))
		if err != nil || !reflect.DeepEqual(got.Containers, []devices.Request{tt.want}) {
			t.Errorf("memory %q: %+v, %v; want %+v", tt.mem, got.Containers, err, tt.want)
		}
	}
}

// TestVXPUParsePodPreferences: both uuid selector pairs and the card
// policy reach the vXPU request's preferences.
func TestVXPUParsePodPreferences(t *testing.T) {
	v := mustVXPU(t)
	ctr := vlimits(DefaultVXPUCountName, "1")
	for _, tt := range []struct {
		name    string
		ann     map[string]string
		want    devices.Preferences
		wantErr bool
	}{
		{name: "none", ann: nil, want: devices.Preferences{}},
		{
			name: "both pairs and the policy",
			ann: map[string]string{
				UseUUIDAnnotation: "xpu-1,xpu-2", BaiduUseUUIDAnnotation: "xpu-2,xpu-3",
				AvoidUUIDAnnotation: "xpu-4", BaiduNoUseUUIDAnnotion: "xpu-5",
				devices.CardPolicyAnnotation: "binpack,mutex",
			},
			want: devices.Preferences{UseUUIDs: []string{"xpu-2"}, AvoidUUIDs: []string{"xpu-4", "xpu-5"}, Policy: devices.CardBinpack, Exclusive: true},
		},
		{name: "use lists that share no card", ann: map[string]string{UseUUIDAnnotation: "xpu-1", BaiduUseUUIDAnnotation: "xpu-3"}, want: devices.Preferences{UseUUIDs: []string{""}}},
		{name: "an unknown policy", ann: map[string]string{devices.CardPolicyAnnotation: "packed"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.ParsePod(pod(tt.ann, ctr))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePod() error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && !reflect.DeepEqual(got.Preferences, tt.want) {
				t.Errorf("Preferences = %+v, want %+v", got.Preferences, tt.want)
			}
		})
	}
}

// TestVXPUFit: one row per FitVXPU rule; each fails if its rule is removed.
func TestVXPUFit(t *testing.T) {
	v := mustVXPU(t)
	cards, err := v.Inventory(vnode(vxpuRegister(8), "32"))
	if err != nil || len(cards) != 8 {
		t.Fatal(cards, err)
	}
	quarter := vlimits(DefaultVXPUCountName, "1", DefaultVXPUMemoryName, "24576")
	half := vlimits(DefaultVXPUCountName, "1", DefaultVXPUMemoryName, "49152")
	all := func(u devices.Usage) []devices.Usage {
		us := make([]devices.Usage, 8)
		for i := range us {
			us[i] = u
		}
		return us
	}
	for _, tt := range []struct {
		name string
		ann  map[string]string
		ctr  corev1.Container
		used []devices.Usage
		want string
	}{
		{"an idle board: the left group's first card", nil, quarter, nil, "xpu-0,XPU,24576,25:;"},
		{"same slice size joins a used card", nil, quarter, all(devices.Usage{Sharers: 2, MemoryMiB: 49152, Cores: 50}), "xpu-0,XPU,24576,25:;"},
		{"another slice size does not", nil, half, all(devices.Usage{Sharers: 2, MemoryMiB: 49152, Cores: 50}), ""},
		{"memory bounds sharing", nil, quarter, all(devices.Usage{Sharers: 4, MemoryMiB: 98304, Cores: 100}), ""},
		{"the share count is not checked", nil, quarter, all(devices.Usage{Sharers: 9, MemoryMiB: 73728, Cores: 75}), ""},
		{"mutex: unused cards only", map[string]string{devices.CardPolicyAnnotation: "mutex"}, quarter, all(devices.Usage{Sharers: 1, MemoryMiB: 24576, Cores: 25}), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := v.ParsePod(pod(tt.ann, tt.ctr))
			if err != nil {
				t.Fatal(err)
			}
			used := tt.used
			if used == nil {
				used = make([]devices.Usage, 8)
			}
			a, rej := v.Fit(cards, used, &req)
			got := ""
			if rej == nil {
				got = devices.EncodeAssignment(a)
			}
			if got != tt.want {
				t.Errorf("Fit() = %q (%v), want %q", got, rej, tt.want)
			}
		})
	}
}

func TestVXPUDefault(t *testing.T) {
	v := mustVXPU(t)
	c := vlimits(DefaultVXPUCountName, "1", DefaultVXPUMemoryName, "30000")
	if ok, err := v.Default(&c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	l, r := c.Resources.Limits[DefaultVXPUMemoryName], c.Resources.Requests[DefaultVXPUMemoryName]
	if l.Value() != 49152 || r.Value() != 49152 {
		t.Errorf("memory %v %v", l.String(), r.String())
	}
	none := vlimits()
	if ok, err := v.Default(&none); ok || err != nil {
		t.Error("not asking")
	}
}

func BenchmarkVXPUFit(b *testing.B) {
	v := mustVXPU(b)
	cards, err := v.Inventory(vnode(vxpuRegister(8), "32"))
	if err != nil {
		b.Fatal(err)
	}
	used := make([]devices.Usage, 8)
	for i := range used {
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 24576, Cores: 25}
		}
	}
	req, err := v.ParsePod(pod(nil, vlimits(DefaultVXPUCountName, "2", DefaultVXPUMemoryName, "20000")))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := v.Fit(cards, used, &req); rej != nil {
			b.Fatal(rej.Reason())
		}
	}
}

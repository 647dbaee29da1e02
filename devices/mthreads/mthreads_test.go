package mthreads

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

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

func node(name string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: capacity}}
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "mthreads"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNew(t *testing.T) {
	v := mustNew(t)
	want := devices.ResourceNames{Count: "mthreads.com/vgpu", Memory: "mthreads.com/sgpu-memory", Cores: "mthreads.com/sgpu-core"}
	if got := v.Resources(); got != want {
		t.Fatalf("Resources() = %+v, want %+v", got, want)
	}
	if to, al := v.AssignmentAnnotations(); to != "" || al != "hami.io/mthreads-vgpu-devices-allocated" {
		t.Fatalf("AssignmentAnnotations() = %q, %q", to, al)
	}
	if v.Name() != "Mthreads" || v.MemoryFactor() != 512 || v.NodeLock() != "" {
		t.Fatalf("Name %q MemoryFactor %d NodeLock %q", v.Name(), v.MemoryFactor(), v.NodeLock())
	}
	if _, err := New(devices.Config{Name: "mthreads", MemoryFactor: 2}); err == nil {
		t.Fatal("New accepted a memoryFactor")
	}
}

// TestInventory: HAMi's fixture (sgpu-memory 1, sgpu-core 1 -> one card of
// 8192 MiB) and an 8-GPU node.
func TestInventory(t *testing.T) {
	v := mustNew(t)
	hami := devices.Card{UUID: "test-mthreads-0", Index: 0, Split: 100, MemoryMiB: 8192, Cores: 16, Model: "Mthreads", Mode: devices.DefaultMode, Healthy: true}
	tests := []struct {
		name    string
		node    *corev1.Node
		want    []devices.Card
		wantN   int
		wantErr string
	}{
		{name: "HAMi fixture", node: node("test", res("mthreads.com/sgpu-memory", "1", "mthreads.com/sgpu-core", "1")), want: []devices.Card{hami}},
		{name: "8 GPUs of 48 GiB", node: node("n1", res("mthreads.com/sgpu-memory", "768", "mthreads.com/sgpu-core", "128")), wantN: 8},
		{name: "17 cores start a second GPU", node: node("n1", res("mthreads.com/sgpu-memory", "17", "mthreads.com/sgpu-core", "17")), wantN: 2},
		{name: "no capacity", node: node("n1", nil)},
		{name: "zero cores", node: node("n1", res("mthreads.com/sgpu-core", "0"))},
		{name: "fractional", node: node("n1", res("mthreads.com/sgpu-core", "1.5")), wantErr: "not a whole number"},
		{name: "huge", node: node("n1", res("mthreads.com/sgpu-core", "1000000000")), wantErr: "above"},
		{name: "memory overflow", node: node("n1", res("mthreads.com/sgpu-memory", "2000000000", "mthreads.com/sgpu-core", "16")), wantErr: "per GPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cards, err := v.Inventory(tc.node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(cards, tc.want) {
				t.Fatalf("got %+v, want %+v", cards, tc.want)
			}
			if tc.want == nil && len(cards) != tc.wantN {
				t.Fatalf("got %d cards, want %d", len(cards), tc.wantN)
			}
		})
	}
	cards, _ := v.Inventory(node("n1", res("mthreads.com/sgpu-memory", "768", "mthreads.com/sgpu-core", "128")))
	if cards[7].UUID != "n1-mthreads-7" || cards[7].MemoryMiB != 49152 {
		t.Fatalf("card 7 = %+v", cards[7])
	}
}

func TestInventoryChanged(t *testing.T) {
	v := mustNew(t)
	a := node("n", res("mthreads.com/sgpu-core", "16"))
	b := node("n", res("mthreads.com/sgpu-core", "32"))
	if !v.InventoryChanged(a, b) || v.InventoryChanged(a, a.DeepCopy()) {
		t.Fatal("InventoryChanged does not follow sgpu-core capacity")
	}
}

// TestParsePod: HAMi's GenerateResourceRequests fixtures; memory and cores
// are container totals divided by the count.
func TestParsePod(t *testing.T) {
	v := mustNew(t)
	tests := []struct {
		name    string
		ctr     corev1.Container
		want    devices.Request
		wantErr bool
	}{
		{name: "HAMi fixture", ctr: limits("c", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "1000", "mthreads.com/sgpu-core", "1"), want: devices.Request{Count: 1, MemoryMiB: 512000, Cores: 1}},
		{name: "two GPUs after the webhook", ctr: limits("c", "mthreads.com/vgpu", "2", "mthreads.com/sgpu-memory", "192", "mthreads.com/sgpu-core", "32"), want: devices.Request{Count: 2, MemoryMiB: 49152, Cores: 16}},
		{name: "no memory is the whole card", ctr: limits("c", "mthreads.com/vgpu", "1"), want: devices.Request{Count: 1, MemoryPercent: 100}},
		{name: "requests only", ctr: corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: res("mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "4")}}, want: devices.Request{Count: 1, MemoryMiB: 2048}},
		{name: "memory overflow", ctr: limits("c", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "5000000"), wantErr: true},
		{name: "negative", ctr: limits("c", "mthreads.com/vgpu", "-1"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := v.ParsePod(pod(nil, tc.ctr))
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Containers) != 1 || req.Containers[0] != tc.want {
				t.Fatalf("got %+v, want %+v", req.Containers, tc.want)
			}
		})
	}
	p := pod(map[string]string{UseUUIDAnnotation: "a, b", AvoidUUIDAnnotation: "c", devices.CardPolicyAnnotation: "binpack,mutex"}, limits("c", "mthreads.com/vgpu", "1"))
	p.Spec.InitContainers = []corev1.Container{limits("init")}
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	if req.Inits != 1 || len(req.Containers) != 2 || !reflect.DeepEqual(req.Preferences.UseUUIDs, []string{"a", "b"}) ||
		!reflect.DeepEqual(req.Preferences.AvoidUUIDs, []string{"c"}) || !req.Preferences.Exclusive || req.Preferences.Policy != devices.CardBinpack {
		t.Fatalf("got %+v", req)
	}
}

func gpus(n int) []devices.Card {
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{UUID: CardID("n1", i), Index: i, Split: Split, MemoryMiB: 49152, Cores: 16, Model: VendorWord, Healthy: true}
	}
	return cards
}

// TestFit: one row per rule; each fails if its rule is removed.
func TestFit(t *testing.T) {
	v := mustNew(t)
	one := devices.Request{Count: 1, MemoryMiB: 8192, Cores: 4}
	whole := devices.Request{Count: 1, MemoryPercent: 100, Cores: 16}
	tests := []struct {
		name  string
		cards []devices.Card
		used  []devices.Usage
		req   devices.PodRequest
		want  string // encoded assignment, "" = rejected
	}{
		{name: "walk takes the last card", cards: gpus(2), req: devices.PodRequest{Containers: []devices.Request{one}}, want: "n1-mthreads-1,Mthreads,8192,4:;"},
		{name: "16 cores is the whole GPU: cores of a shared GPU", cards: gpus(1), used: []devices.Usage{{Sharers: 1, MemoryMiB: 512, Cores: 1}}, req: devices.PodRequest{Containers: []devices.Request{whole}}},
		{name: "memory", cards: gpus(1), used: []devices.Usage{{Sharers: 1, MemoryMiB: 45000}}, req: devices.PodRequest{Containers: []devices.Request{one}}},
		{name: "shares", cards: gpus(1), used: []devices.Usage{{Sharers: 100}}, req: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 1}}}},
		{name: "zero cores on a full GPU", cards: gpus(1), used: []devices.Usage{{Sharers: 1, Cores: 16}}, req: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 512}}}},
		{name: "uuid selector", cards: gpus(2), req: devices.PodRequest{Containers: []devices.Request{one}, Preferences: devices.Preferences{UseUUIDs: []string{"n1-mthreads-0"}}}, want: "n1-mthreads-0,Mthreads,8192,4:;"},
		{name: "mutex", cards: gpus(1), used: []devices.Usage{{Sharers: 1, MemoryMiB: 512}}, req: devices.PodRequest{Containers: []devices.Request{one}, Preferences: devices.Preferences{Exclusive: true}}},
		{name: "unhealthy", cards: func() []devices.Card { c := gpus(1); c[0].Healthy = false; return c }(), req: devices.PodRequest{Containers: []devices.Request{one}}},
		{
			name:  "later containers take the first container's GPU",
			cards: gpus(2),
			req:   devices.PodRequest{Containers: []devices.Request{one, one}},
			want:  "n1-mthreads-1,Mthreads,8192,4:;n1-mthreads-1,Mthreads,8192,4:;",
		},
		{
			name:  "same GPU even when it is full for the second container",
			cards: gpus(2),
			req:   devices.PodRequest{Containers: []devices.Request{whole, whole}},
		},
		{
			name:  "after a two-GPU container nothing fits",
			cards: gpus(4),
			req:   devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryPercent: 100, Cores: 16}, one}},
		},
		{
			name:  "init and regular phases are separate",
			cards: gpus(2),
			req:   devices.PodRequest{Containers: []devices.Request{whole, whole}, Inits: 1},
			want:  "n1-mthreads-1,Mthreads,49152,16:;n1-mthreads-1,Mthreads,49152,16:;",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := tc.used
			if used == nil {
				used = make([]devices.Usage, len(tc.cards))
			}
			a, rej := v.Fit(tc.cards, used, &tc.req)
			if tc.want == "" {
				if rej == nil {
					t.Fatalf("placed %s, want a rejection", devices.EncodeAssignment(a))
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %s", rej.Reason())
			}
			if got := devices.EncodeAssignment(a); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAssignmentGolden: a pod gets exactly the annotations the MT device
// plugin reads: the allocated assignment (no to-allocate key), the GPU
// indexes of the last container with GPUs, the time and the node.
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	cards, err := v.Inventory(node("node1", res("mthreads.com/sgpu-memory", "768", "mthreads.com/sgpu-core", "128")))
	if err != nil {
		t.Fatal(err)
	}
	p := pod(nil, limits("main", "mthreads.com/vgpu", "2"), limits("sidecar"))
	if _, err := v.DefaultInPod(p, &p.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	if p.Annotations[RequestGPUNumAnnotation] != "2" {
		t.Fatalf("webhook annotations %v", p.Annotations)
	}
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if got, want := devices.EncodeAssignment(a), "node1-mthreads-7,Mthreads,49152,16:node1-mthreads-6,Mthreads,49152,16:;;"; got != want {
		t.Fatalf("assignment %s, want %s", got, want)
	}
	now := time.Unix(1700000000, 5)
	extras, err := v.AssignmentExtras(p, a, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"mthreads.com/gpu-index":      "7,6",
		"mthreads.com/predicate-time": "1700000000000000005",
		"mthreads.com/predicate-node": "node1",
	}
	if !reflect.DeepEqual(extras, want) {
		t.Fatalf("extras %v, want %v", extras, want)
	}
	// HAMi's PatchAnnotations fixture: one card of index 0.
	extras, _ = v.AssignmentExtras(p, devices.Assignment{{{UUID: "node1-mthreads-0", Vendor: VendorWord}}}, now)
	if extras[GPUIndexAnnotation] != "0" {
		t.Fatalf("gpu-index %q", extras[GPUIndexAnnotation])
	}
	if _, err := v.AssignmentExtras(p, devices.Assignment{{{UUID: "GPU-x"}}}, now); err == nil {
		t.Fatal("a foreign card id was accepted")
	}
}

// TestDefault: HAMi's MutateAdmission cases.
func TestDefault(t *testing.T) {
	v := mustNew(t)
	tests := []struct {
		name              string
		ctr               corev1.Container
		asks              bool
		wantErr           bool
		wantCores, wantMm string
		wantAnnotation    string
	}{
		{name: "one GPU without memory is whole", ctr: limits("c", "mthreads.com/vgpu", "1"), asks: true, wantCores: "16", wantMm: "96"},
		{name: "two GPUs are whole", ctr: limits("c", "mthreads.com/vgpu", "2", "mthreads.com/sgpu-memory", "4"), asks: true, wantCores: "32", wantMm: "192", wantAnnotation: "2"},
		{name: "legal memory", ctr: limits("c", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "8"), asks: true, wantMm: "8"},
		{name: "illegal memory", ctr: limits("c", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "3"), asks: true, wantErr: true},
		{name: "zero count", ctr: limits("c", "mthreads.com/vgpu", "0"), wantErr: true},
		{name: "count in requests", ctr: corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("mthreads.com/vgpu", "1")}}, asks: true, wantCores: "16", wantMm: "96"},
		{name: "no GPU", ctr: limits("c", "cpu", "1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(nil, tc.ctr)
			c := &p.Spec.Containers[0]
			asks, err := v.DefaultInPod(p, c)
			if (err != nil) != tc.wantErr || (!tc.wantErr && asks != tc.asks) {
				t.Fatalf("DefaultInPod = %v, %v", asks, err)
			}
			if tc.wantCores != "" {
				if q := c.Resources.Limits["mthreads.com/sgpu-core"]; q.String() != tc.wantCores {
					t.Fatalf("cores %s, want %s", q.String(), tc.wantCores)
				}
			}
			if tc.wantMm != "" {
				if q := c.Resources.Limits["mthreads.com/sgpu-memory"]; q.String() != tc.wantMm {
					t.Fatalf("memory %s, want %s", q.String(), tc.wantMm)
				}
			}
			if p.Annotations[RequestGPUNumAnnotation] != tc.wantAnnotation {
				t.Fatalf("annotation %q", p.Annotations[RequestGPUNumAnnotation])
			}
		})
	}
}

func FuzzInventory(f *testing.F) {
	f.Add("1", "1", "")
	f.Add("768", "128", "n-mthreads-0")
	f.Add("0", "17", "")
	f.Add("-3", "16", "")
	f.Add("1e3", "1.5", "")
	v := mustNew(f)
	f.Fuzz(func(t *testing.T, memory, cores, cordon string) {
		capacity := corev1.ResourceList{}
		for name, s := range map[string]string{"mthreads.com/sgpu-memory": memory, "mthreads.com/sgpu-core": cores} {
			if q, err := resource.ParseQuantity(s); err == nil {
				capacity[corev1.ResourceName(name)] = q
			}
		}
		n := node("n", capacity)
		n.Annotations = map[string]string{devices.DeviceCordon: cordon}
		cards, err := v.Inventory(n)
		if err != nil {
			if cards != nil {
				t.Fatal("cards with an error")
			}
			return
		}
		for i, c := range cards {
			if c.UUID != CardID("n", i) || c.MemoryMiB < 0 || c.Cores != 16 || c.Split != Split || !c.Healthy {
				t.Fatalf("invalid card %+v", c)
			}
		}
		req := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 16}}}
		if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
			if _, err := v.AssignmentExtras(nil, a, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// BenchmarkFit places containers on an 8-GPU node, half shared.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards := gpus(8)
	used := make([]devices.Usage, 8)
	for i := range used {
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 8192, Cores: 4}
		}
	}
	for _, bm := range []struct {
		name string
		ctrs []corev1.Container
	}{
		{"one shared GPU", []corev1.Container{limits("main", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "8", "mthreads.com/sgpu-core", "4")}},
		{"two containers one GPU", []corev1.Container{limits("a", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "8", "mthreads.com/sgpu-core", "4"), limits("b", "mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "8", "mthreads.com/sgpu-core", "4")}},
	} {
		req, err := v.ParsePod(pod(nil, bm.ctrs...))
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

var _ = fmt.Sprint

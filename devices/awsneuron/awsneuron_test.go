package awsneuron

import (
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

func node(name, instance string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{InstanceTypeLabel: instance}},
		Status:     corev1.NodeStatus{Capacity: capacity},
	}
}

func mustNew(t testing.TB) *Vendor {
	t.Helper()
	v, err := New(devices.Config{Name: "awsneuron"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNew(t *testing.T) {
	v := mustNew(t)
	if got := v.Resources(); got != (devices.ResourceNames{Count: "aws.amazon.com/neuron", Cores: "aws.amazon.com/neuroncore"}) {
		t.Fatalf("Resources() = %+v", got)
	}
	if to, al := v.AssignmentAnnotations(); to != "" || al != "hami.io/aws-neuron-devices-allocated" {
		t.Fatalf("AssignmentAnnotations() = %q, %q", to, al)
	}
	if v.Name() != "AWSNeuron" || v.NodeLock() != "" {
		t.Fatal("name or lock")
	}
	if _, err := New(devices.Config{Name: "awsneuron", ResourceMemoryName: "x/y"}); err == nil {
		t.Fatal("New accepted a memory resource")
	}
}

// TestInventory: HAMi's fixture (inf2, 1 device, 2 cores -> count 2,
// devcore 3) and a trn1 node.
func TestInventory(t *testing.T) {
	v := mustNew(t)
	cards, err := v.Inventory(node("test", "inf2", res("aws.amazon.com/neuron", "1", "aws.amazon.com/neuroncore", "2")))
	want := []devices.Card{{UUID: "test-AWSNeuron-0", Split: 2, Cores: 3, Model: "AWSNeuron", Mode: devices.DefaultMode, Group: GroupRing, Healthy: true}}
	if err != nil || !reflect.DeepEqual(cards, want) {
		t.Fatalf("got %+v, %v; want %+v", cards, err, want)
	}
	cards, err = v.Inventory(node("n", "trn1.32xlarge", res("aws.amazon.com/neuron", "16", "aws.amazon.com/neuroncore", "32")))
	if err != nil || len(cards) != 16 || cards[15].UUID != "n-AWSNeuron-15" || cards[15].Index != 15 || cards[0].Group != 0 {
		t.Fatalf("trn1: %v, %+v", err, cards)
	}
	for _, tc := range []struct {
		name    string
		cap     corev1.ResourceList
		wantErr string
	}{
		{"none", nil, ""},
		{"zero", res("aws.amazon.com/neuron", "0"), ""},
		{"fraction", res("aws.amazon.com/neuron", "1.5"), "not a whole number"},
		{"too many", res("aws.amazon.com/neuron", "5000"), "above"},
		{"too many cores", res("aws.amazon.com/neuron", "1", "aws.amazon.com/neuroncore", "64"), "cores per device"},
	} {
		cards, err := v.Inventory(node("n", "", tc.cap))
		if cards != nil || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %+v, %v", tc.name, cards, err)
		}
	}
}

// TestParsePod: HAMi's GenerateResourceRequests and splitCoreRequest
// cases (2 cores per device).
func TestParsePod(t *testing.T) {
	v := mustNew(t)
	for _, tc := range []struct {
		name    string
		ctr     corev1.Container
		want    devices.Request
		wantErr bool
	}{
		{"devices", limits("c", "aws.amazon.com/neuron", "2"), devices.Request{Count: 2, MemoryPercent: wholeDevices}, false},
		{"devices win over cores", limits("c", "aws.amazon.com/neuron", "1", "aws.amazon.com/neuroncore", "1"), devices.Request{Count: 1, MemoryPercent: wholeDevices}, false},
		{"one core", limits("c", "aws.amazon.com/neuroncore", "1"), devices.Request{Count: 1, Cores: 1}, false},
		{"two cores", limits("c", "aws.amazon.com/neuroncore", "2"), devices.Request{Count: 1, Cores: 2}, false},
		{"four cores are two devices", limits("c", "aws.amazon.com/neuroncore", "4"), devices.Request{Count: 2, Cores: 2}, false},
		{"three cores", limits("c", "aws.amazon.com/neuroncore", "3"), devices.Request{}, true},
		{"zero devices", limits("c", "aws.amazon.com/neuron", "0"), devices.Request{}, true},
		{"requests", corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("aws.amazon.com/neuroncore", "1")}}, devices.Request{Count: 1, Cores: 1}, false},
	} {
		req, err := v.ParsePod(pod(nil, tc.ctr))
		if (err != nil) != tc.wantErr || (!tc.wantErr && (len(req.Containers) != 1 || req.Containers[0] != tc.want)) {
			t.Errorf("%s: %+v, %v", tc.name, req.Containers, err)
		}
	}
}

func neurons(n int, ring bool) []devices.Card {
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{UUID: CardID("n1", i), Index: i, Split: 2, Cores: 3, Model: VendorWord, Healthy: true}
		if ring {
			cards[i].Group = GroupRing
		}
	}
	return cards
}

func usedAt(n int, at map[int]devices.Usage) []devices.Usage {
	u := make([]devices.Usage, n)
	for i, x := range at {
		u[i] = x
	}
	return u
}

// TestFit: one row per rule of both paths; each fails if its rule is
// removed.
func TestFit(t *testing.T) {
	v := mustNew(t)
	core := devices.Request{Count: 1, Cores: 1}
	dev := func(n int32) devices.Request { return devices.Request{Count: n, MemoryPercent: wholeDevices} }
	tests := []struct {
		name  string
		cards []devices.Card
		used  []devices.Usage
		req   devices.Request
		prefs devices.Preferences
		want  string
	}{
		{name: "one core on an idle device is bit 1", cards: neurons(1, false), req: core, want: "n1-AWSNeuron-0,AWSNeuron,0,1:;"},
		{name: "one core on a half-used device is the other bit", cards: neurons(1, false), used: usedAt(1, map[int]devices.Usage{0: {Sharers: 1, Cores: 1}}), req: core, want: "n1-AWSNeuron-0,AWSNeuron,0,2:;"},
		{name: "bit 2 used leaves bit 1", cards: neurons(1, false), used: usedAt(1, map[int]devices.Usage{0: {Sharers: 1, Cores: 2}}), req: core, want: "n1-AWSNeuron-0,AWSNeuron,0,1:;"},
		{name: "whole device is mask 3", cards: neurons(2, false), req: dev(1), want: "n1-AWSNeuron-1,AWSNeuron,0,3:;"},
		{name: "free cores on the mask", cards: neurons(1, false), used: usedAt(1, map[int]devices.Usage{0: {Sharers: 1, Cores: 1}}), req: devices.Request{Count: 1, Cores: 2}},
		{name: "shares (cores per device)", cards: neurons(1, false), used: usedAt(1, map[int]devices.Usage{0: {Sharers: 2}}), req: core},
		{name: "mutex", cards: neurons(1, false), used: usedAt(1, map[int]devices.Usage{0: {Sharers: 1, Cores: 1}}), req: core, prefs: devices.Preferences{Exclusive: true}},
		{name: "uuid on one device", cards: neurons(2, false), req: core, prefs: devices.Preferences{AvoidUUIDs: []string{"n1-AWSNeuron-1"}}, want: "n1-AWSNeuron-0,AWSNeuron,0,1:;"},
		{name: "four devices aligned", cards: neurons(8, false), used: usedAt(8, map[int]devices.Usage{1: {Sharers: 1, Cores: 1}}), req: dev(4), want: "n1-AWSNeuron-4,AWSNeuron,0,3:n1-AWSNeuron-5,AWSNeuron,0,3:n1-AWSNeuron-6,AWSNeuron,0,3:n1-AWSNeuron-7,AWSNeuron,0,3:;"},
		{name: "no aligned run", cards: neurons(8, false), used: usedAt(8, map[int]devices.Usage{1: {Sharers: 1}, 5: {Sharers: 1}}), req: dev(4)},
		{name: "two devices off Inferentia", cards: neurons(4, false), req: dev(2)},
		{name: "Inferentia: any run", cards: neurons(4, true), used: usedAt(4, map[int]devices.Usage{0: {Sharers: 1}}), req: dev(2), want: "n1-AWSNeuron-1,AWSNeuron,0,3:n1-AWSNeuron-2,AWSNeuron,0,3:;"},
		{name: "Inferentia: run broken by an unhealthy device", cards: func() []devices.Card { c := neurons(3, true); c[1].Healthy = false; return c }(), req: dev(2)},
		{name: "uuid selectors ignored for several devices", cards: neurons(2, true), req: dev(2), prefs: devices.Preferences{AvoidUUIDs: []string{"n1-AWSNeuron-0"}}, want: "n1-AWSNeuron-0,AWSNeuron,0,3:n1-AWSNeuron-1,AWSNeuron,0,3:;"},
		{name: "more devices than the node has", cards: neurons(2, true), req: dev(4)},
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

// TestAssignmentGolden: the annotations the Neuron device plugin reads,
// for a device container and a core container (HAMi's PatchAnnotations
// cases: device indexes "0,1"; core ids with NEURON_RESOURCE_TYPE).
func TestAssignmentGolden(t *testing.T) {
	v := mustNew(t)
	cards, err := v.Inventory(node("node1", "inf2.48xlarge", res("aws.amazon.com/neuron", "12", "aws.amazon.com/neuroncore", "24")))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 7)
	p := pod(nil, limits("main", "aws.amazon.com/neuron", "2"))
	req, _ := v.ParsePod(p)
	a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if got := devices.EncodeAssignment(a); got != "node1-AWSNeuron-0,AWSNeuron,0,3:node1-AWSNeuron-1,AWSNeuron,0,3:;" {
		t.Fatalf("assignment %s", got)
	}
	extras, err := v.AssignmentExtras(p, a, now)
	want := map[string]string{
		"AWS_NEURON_IDS":                "0,1",
		"NEURON_ALLOC_TIME":             "1700000000000000007",
		"NEURON_ALLOCATED":              "false",
		"aws.amazon.com/predicate-node": "node1",
	}
	if err != nil || !reflect.DeepEqual(extras, want) {
		t.Fatalf("device extras %v, %v; want %v", extras, err, want)
	}
	// One core on device 3 whose first core is taken: core id 2x3+1.
	p = pod(nil, limits("sidecar"), limits("main", "aws.amazon.com/neuroncore", "1"))
	req, _ = v.ParsePod(p)
	used := make([]devices.Usage, len(cards))
	for i := range used {
		used[i] = devices.Usage{Sharers: 2, Cores: 3}
	}
	used[3] = devices.Usage{Sharers: 1, Cores: 1}
	a, rej = v.Fit(cards, used, &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if got := devices.EncodeAssignment(a); got != ";node1-AWSNeuron-3,AWSNeuron,0,2:;" {
		t.Fatalf("assignment %s", got)
	}
	extras, err = v.AssignmentExtras(p, a, now)
	want = map[string]string{
		"AWS_NEURON_IDS":                "7",
		"NEURON_RESOURCE_TYPE":          "aws.amazon.com/neuroncore",
		"NEURON_ALLOC_TIME":             "1700000000000000007",
		"NEURON_ALLOCATED":              "false",
		"aws.amazon.com/predicate-node": "node1",
	}
	if err != nil || !reflect.DeepEqual(extras, want) {
		t.Fatalf("core extras %v, %v; want %v", extras, err, want)
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
		{limits("c", "aws.amazon.com/neuron", "1"), true, false},
		{limits("c", "aws.amazon.com/neuron", "0"), false, true},
		{limits("c", "aws.amazon.com/neuroncore", "2"), true, false},
		{limits("c", "aws.amazon.com/neuroncore", "3"), false, true},
		{limits("c", "aws.amazon.com/neuroncore", "-1"), false, true},
		{limits("c", "cpu", "1"), false, false},
	} {
		asks, err := v.Default(&tc.ctr)
		if asks != tc.asks || (err != nil) != tc.wantErr {
			t.Errorf("%v: %v, %v", tc.ctr.Resources.Limits, asks, err)
		}
	}
}

func FuzzInventory(f *testing.F) {
	f.Add("1", "2", "inf2")
	f.Add("16", "32", "trn1.32xlarge")
	f.Add("3", "0", "")
	f.Add("-1", "1e3", "Inf1")
	v := mustNew(f)
	f.Fuzz(func(t *testing.T, count, cores, instance string) {
		capacity := corev1.ResourceList{}
		for name, s := range map[string]string{"aws.amazon.com/neuron": count, "aws.amazon.com/neuroncore": cores} {
			if q, err := resource.ParseQuantity(s); err == nil {
				capacity[corev1.ResourceName(name)] = q
			}
		}
		cards, err := v.Inventory(node("n", instance, capacity))
		if err != nil {
			if cards != nil {
				t.Fatal("cards with an error")
			}
			return
		}
		for i, c := range cards {
			if c.UUID != CardID("n", i) || c.Split < 0 || c.Cores < 0 || popcount(int64(c.Cores)) != int64(c.Split) {
				t.Fatalf("invalid card %+v", c)
			}
		}
		for _, r := range []devices.Request{{Count: 1, Cores: 1}, {Count: 2, MemoryPercent: wholeDevices}} {
			req := devices.PodRequest{Containers: []devices.Request{r}}
			if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
				if _, err := v.AssignmentExtras(pod(nil, limits("c")), a, time.Unix(0, 0)); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkFit: a 16-device trn1 node, half the devices half used.
func BenchmarkFit(b *testing.B) {
	v := mustNew(b)
	cards := neurons(16, false)
	used := make([]devices.Usage, 16)
	for i := range 8 {
		used[i] = devices.Usage{Sharers: 1, Cores: 1}
	}
	for _, bm := range []struct {
		name string
		ctr  corev1.Container
	}{
		{"one core", limits("main", "aws.amazon.com/neuroncore", "1")},
		{"eight devices", limits("main", "aws.amazon.com/neuron", "8")},
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

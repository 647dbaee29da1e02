package enflame

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

// hamiCapacity is HAMi's DRS fixture (and the spec's example).
const hamiCapacity = `{"devices":[{"index":"0","minor":"0","capacity":6}],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`

func node(name string, annotations map[string]string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Status: corev1.NodeStatus{Capacity: capacity}}
}

func newGCU(t testing.TB) *GCU {
	t.Helper()
	v, err := NewGCU(devices.Config{Name: "enflame-gcu"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func newDRS(t testing.TB) *DRS {
	t.Helper()
	v, err := NewDRS(devices.Config{Name: "enflame-drs"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestGCU(t *testing.T) {
	v := newGCU(t)
	if v.Name() != "GCU" || v.NodeLock() != "" || v.Resources().Count != "enflame.com/gcu" {
		t.Fatal("name, lock or resource")
	}
	if to, al := v.AssignmentAnnotations(); to != "hami.io/enflame-gcu-devices-to-allocate" || al != "hami.io/enflame-gcu-devices-allocated" {
		t.Fatal(to, al)
	}
	cards, err := v.Inventory(node("node1", nil, res("enflame.com/gcu", "2")))
	want := []devices.Card{
		{UUID: "node1-GCU-0", Index: 0, Split: 1, MemoryMiB: 100, Cores: 100, Model: "GCU", Mode: devices.DefaultMode, Healthy: true},
		{UUID: "node1-GCU-1", Index: 1, Split: 1, MemoryMiB: 100, Cores: 100, Model: "GCU", Mode: devices.DefaultMode, Healthy: true},
	}
	if err != nil || !reflect.DeepEqual(cards, want) {
		t.Fatalf("inventory %+v, %v", cards, err)
	}
	if c, err := v.Inventory(node("n", nil, res("enflame.com/gcu", "0"))); c != nil || err != nil {
		t.Fatal("zero capacity")
	}
	// Golden: a sidecar first, then a container with one GCU.
	p := pod(nil, limits("sidecar"), limits("main", "enflame.com/gcu", "1"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards[:1], make([]devices.Usage, 1), &req)
	if rej != nil || devices.EncodeAssignment(a) != ";node1-GCU-0,GCU,100,100:;" {
		t.Fatalf("assignment %s, %v", devices.EncodeAssignment(a), rej)
	}
	// Fit rules: a used GCU refuses; an unhealthy one too; count > cards.
	one := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 100, Cores: 100}}}
	if _, rej := v.Fit(cards[:1], []devices.Usage{{Sharers: 1, MemoryMiB: 100, Cores: 100}}, &one); rej == nil {
		t.Fatal("a used GCU was taken")
	}
	sick := []devices.Card{cards[0]}
	sick[0].Healthy = false
	if _, rej := v.Fit(sick, make([]devices.Usage, 1), &one); rej == nil {
		t.Fatal("an unhealthy GCU was taken")
	}
	if ok, err := v.Default(&p.Spec.Containers[1]); !ok || err != nil {
		t.Fatal("Default", ok, err)
	}
	if ok, _ := v.Default(&corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("enflame.com/gcu", "1")}}); ok {
		t.Fatal("requests-only GCU detected (HAMi reads limits)")
	}
}

// TestDRSInventory: HAMi's fixture -> one card of 6 slices, 40960 MiB.
func TestDRSInventory(t *testing.T) {
	v := newDRS(t)
	cards, err := v.Inventory(node("node1", map[string]string{DRSCapacityAnnotation: hamiCapacity}, nil))
	want := []devices.Card{{UUID: "node1-enflame-drs-0", Split: 6, MemoryMiB: 40960, Cores: 100, Model: "Enflame", Mode: devices.DefaultMode, Healthy: true}}
	if err != nil || !reflect.DeepEqual(cards, want) {
		t.Fatalf("got %+v, %v", cards, err)
	}
	spec := v.spec("node1-enflame-drs-0")
	wantProfiles := []profile{
		{Name: "1g.6gb", ID: "0", Slices: 1, MemoryGB: 6, Percent: 17},
		{Name: "3g.20gb", ID: "1", Slices: 3, MemoryGB: 20, Percent: 50},
		{Name: "6g.40gb", ID: "2", Slices: 6, MemoryGB: 40, Percent: 100},
	}
	if spec == nil || !reflect.DeepEqual(spec.profiles, wantProfiles) {
		t.Fatalf("profiles %+v", spec)
	}
	for _, tc := range []struct{ name, raw, wantErr string }{
		{"no profile", `{"devices":[{"index":"0","capacity":6}],"profiles":{}}`, "no valid DRS profile"},
		{"string capacity", `{"devices":[{"index":"1","capacity":"4"}],"profiles":{"1g.6gb":"0"}}`, ""},
		{"zero capacity", `{"devices":[{"index":"0","capacity":0}],"profiles":{"1g.6gb":"0"}}`, "invalid capacity"},
		{"duplicate index", `{"devices":[{"index":"0","capacity":1},{"index":"0","capacity":1}],"profiles":{"1g.6gb":"0"}}`, "twice"},
		{"no device", `{"devices":[],"profiles":{"1g.6gb":"0"}}`, "no device"},
		{"not JSON", `[`, DRSCapacityAnnotation},
	} {
		cards, err := v.Inventory(node("n", map[string]string{DRSCapacityAnnotation: tc.raw}, nil))
		if (tc.wantErr == "") != (err == nil) || (err != nil && (cards != nil || !strings.Contains(err.Error(), tc.wantErr))) {
			t.Errorf("%s: %+v, %v", tc.name, cards, err)
		}
	}
}

func TestDRSParsePod(t *testing.T) {
	v := newDRS(t)
	for _, tc := range []struct {
		name string
		ctr  corev1.Container
		want devices.Request
	}{
		{"slices", limits("c", "enflame.com/drs-gcu", "3"), devices.Request{Count: 1, MemoryMiB: 3}},
		{"memory and cores", limits("c", "enflame.com/gcu-memory", "20480", "enflame.com/gcu-core", "40"), devices.Request{Count: 1, MemoryMiB: 20480, MemoryPercent: bySpec, Cores: 40}},
		{"zero slices fall to spec", limits("c", "enflame.com/drs-gcu", "0", "enflame.com/gcu-core", "10"), devices.Request{Count: 1, MemoryPercent: bySpec, Cores: 10}},
		{"nothing", limits("c", "cpu", "1"), devices.Request{}},
	} {
		req, err := v.ParsePod(pod(nil, tc.ctr))
		var got devices.Request
		if len(req.Containers) == 1 {
			got = req.Containers[0]
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v", tc.name, req.Containers, err)
		}
	}
}

// TestDRSFit: HAMi's profile fixtures and one row per rule.
func TestDRSFit(t *testing.T) {
	v := newDRS(t)
	two := `{"devices":[{"index":"0","minor":"0","capacity":6},{"index":"1","minor":"5","capacity":6}],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`
	cards, err := v.Inventory(node("node-a", map[string]string{DRSCapacityAnnotation: two}, nil))
	if err != nil {
		t.Fatal(err)
	}
	slices := func(s int32) devices.Request { return devices.Request{Count: 1, MemoryMiB: s} }
	tests := []struct {
		name  string
		used  []devices.Usage
		req   devices.Request
		prefs devices.Preferences
		want  string
	}{
		{name: "HAMi: 3 slices -> 3g.20gb, 20480 MiB, 50%", req: slices(3), want: "node-a-enflame-drs-1,Enflame,20480,50:;"},
		{name: "HAMi: 20480 MiB and 40% -> 3g.20gb", req: devices.Request{Count: 1, MemoryMiB: 20480, MemoryPercent: bySpec, Cores: 40}, want: "node-a-enflame-drs-1,Enflame,20480,50:;"},
		{name: "memory in GB", req: devices.Request{Count: 1, MemoryMiB: 7, MemoryPercent: bySpec}, want: "node-a-enflame-drs-1,Enflame,20480,50:;"},
		{name: "cores alone", req: devices.Request{Count: 1, MemoryPercent: bySpec, Cores: 60}, want: "node-a-enflame-drs-1,Enflame,40960,100:;"},
		{name: "HAMi: no profile with 4 slices", req: slices(4)},
		{name: "no profile that large", req: devices.Request{Count: 1, MemoryMiB: 50, MemoryPercent: bySpec}},
		{name: "memory", used: []devices.Usage{{Sharers: 1, MemoryMiB: 30000}, {Sharers: 1, MemoryMiB: 30000}}, req: slices(3)},
		{name: "cores", used: []devices.Usage{{Sharers: 1, Cores: 60}, {Sharers: 1, Cores: 60}}, req: slices(3)},
		{name: "shares", used: []devices.Usage{{Sharers: 6}, {Sharers: 6}}, req: slices(1)},
		{name: "HAMi: mutex refuses a used GCU", used: []devices.Usage{{Sharers: 1, MemoryMiB: 6144, Cores: 17}, {Sharers: 1, MemoryMiB: 6144, Cores: 17}}, req: slices(1), prefs: devices.Preferences{Exclusive: true}},
		{name: "uuid", req: slices(1), prefs: devices.Preferences{UseUUIDs: []string{"node-a-enflame-drs-0"}}, want: "node-a-enflame-drs-0,Enflame,6144,17:;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := tc.used
			if used == nil {
				used = make([]devices.Usage, len(cards))
			}
			req := devices.PodRequest{Containers: []devices.Request{tc.req}, Preferences: tc.prefs}
			a, rej := v.Fit(cards, used, &req)
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
	sick := append([]devices.Card(nil), cards...)
	sick[0].Healthy, sick[1].Healthy = false, false
	req := devices.PodRequest{Containers: []devices.Request{slices(1)}}
	if _, rej := v.Fit(sick, make([]devices.Usage, 2), &req); rej == nil {
		t.Fatal("HAMi: an unhealthy GCU was taken")
	}
}

// TestDRSAssignmentGolden: 3 slices on HAMi's node: the assignment and
// every annotation the Enflame plugin reads.
func TestDRSAssignmentGolden(t *testing.T) {
	v := newDRS(t)
	cards, err := v.Inventory(node("node1", map[string]string{DRSCapacityAnnotation: hamiCapacity}, nil))
	if err != nil {
		t.Fatal(err)
	}
	p := pod(nil, limits("sidecar"), limits("main", "enflame.com/drs-gcu", "3"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, 1), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	if to, al := v.AssignmentAnnotations(); to != "" || al != "hami.io/enflame-vgpu-devices-allocated" {
		t.Fatal(to, al)
	}
	if got := devices.EncodeAssignment(a); got != ";node1-enflame-drs-0,Enflame,20480,50:;" {
		t.Fatalf("assignment %s", got)
	}
	extras, err := v.AssignmentExtras(p, a, time.Unix(1700000000, 9))
	want := map[string]string{
		"enflame.com/gcu-assigned":       "false",
		"enflame.com/gcu-assigned-time":  "1700000000000000009",
		"assigned-containers":            `{"main":{"allocated":false,"request":3,"profileID":"1","profileName":"3g.20gb"}}`,
		"enflame.com/gcu-assigned-index": "0",
		"enflame.com/gcu-assigned-id":    "0",
		"enflame.com/gcu-assigned-minor": "0",
		"enflame.com/gcu-request-size":   "3",
	}
	if err != nil || !reflect.DeepEqual(extras, want) {
		t.Fatalf("extras %v, %v; want %v", extras, err, want)
	}
}

// TestDRSDefault: HAMi's MutateAdmission cases.
func TestDRSDefault(t *testing.T) {
	v := newDRS(t)
	c := corev1.Container{Resources: corev1.ResourceRequirements{Requests: res("enflame.com/drs-gcu", "3")}}
	if ok, err := v.Default(&c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if q := c.Resources.Limits["enflame.com/drs-gcu"]; q.String() != "3" {
		t.Fatalf("limit not copied: %v", c.Resources.Limits)
	}
	c = limits("c", "enflame.com/gcu-memory", "20", "enflame.com/gcu-core", "50")
	if ok, err := v.Default(&c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if q := c.Resources.Requests["enflame.com/gcu-core"]; q.String() != "50" {
		t.Fatalf("request not copied: %v", c.Resources.Requests)
	}
	for _, bad := range []corev1.Container{
		limits("c", "enflame.com/drs-gcu", "0"),
		limits("c", "enflame.com/gcu-memory", "0"),
		limits("c", "enflame.com/gcu-core", "101"),
	} {
		if _, err := v.Default(&bad); err == nil {
			t.Errorf("%v accepted", bad.Resources.Limits)
		}
	}
	if ok, err := v.Default(&corev1.Container{}); ok || err != nil {
		t.Fatal("empty container")
	}
}

func FuzzInventory(f *testing.F) {
	for _, s := range []string{hamiCapacity, "", "{}", `{"devices":[{"index":"x","capacity":"2"}],"profiles":{"2g.4gb":"a","bad":"b"}}`, `{"devices":[{"capacity":1e40}],"profiles":{"1g.1gb":"0"}}`} {
		f.Add(s, "3")
	}
	v := newDRS(f)
	g := newGCU(f)
	f.Fuzz(func(t *testing.T, raw, gcus string) {
		cards, err := v.Inventory(node("n", map[string]string{DRSCapacityAnnotation: raw}, nil))
		if err != nil {
			if cards != nil || !strings.Contains(err.Error(), DRSCapacityAnnotation) {
				t.Fatalf("%v with %v", err, cards)
			}
		}
		for _, c := range cards {
			if c.Split <= 0 || c.MemoryMiB <= 0 || c.Index < 0 {
				t.Fatalf("invalid card %+v", c)
			}
		}
		for _, r := range []devices.Request{{Count: 1, MemoryMiB: 1}, {Count: 1, MemoryMiB: 20, MemoryPercent: bySpec, Cores: 30}} {
			req := devices.PodRequest{Containers: []devices.Request{r}}
			if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
				p := pod(nil, limits("c", "enflame.com/gcu-memory", "20", "enflame.com/gcu-core", "30"))
				if r.MemoryPercent == 0 {
					p = pod(nil, limits("c", "enflame.com/drs-gcu", "1"))
				}
				if _, err := v.AssignmentExtras(p, a, time.Unix(0, 0)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if q, err := resource.ParseQuantity(gcus); err == nil {
			cards, err := g.Inventory(node("n", nil, corev1.ResourceList{"enflame.com/gcu": q}))
			for i, c := range cards {
				if err != nil || c.UUID != GCUCardID("n", i) {
					t.Fatalf("GCU card %+v, %v", c, err)
				}
			}
		}
	})
}

// BenchmarkFit: 8 DRS GCUs, half partly used; and 8 whole GCUs.
func BenchmarkFit(b *testing.B) {
	v := newDRS(b)
	raw := `{"devices":[`
	for i := range 8 {
		if i > 0 {
			raw += ","
		}
		raw += `{"index":"` + string(rune('0'+i)) + `","capacity":6}`
	}
	raw += `],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`
	cards, err := v.Inventory(node("n", map[string]string{DRSCapacityAnnotation: raw}, nil))
	if err != nil {
		b.Fatal(err)
	}
	used := make([]devices.Usage, 8)
	for i := 0; i < 8; i += 2 {
		used[i] = devices.Usage{Sharers: 1, MemoryMiB: 6144, Cores: 17}
	}
	req, _ := v.ParsePod(pod(nil, limits("main", "enflame.com/gcu-memory", "20", "enflame.com/gcu-core", "40")))
	b.Run("DRS by spec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, rej := v.Fit(cards, used, &req); rej != nil {
				b.Fatal(rej.Reason())
			}
		}
	})
	g := newGCU(b)
	gcards, _ := g.Inventory(node("n", nil, res("enflame.com/gcu", "8")))
	greq, _ := g.ParsePod(pod(nil, limits("main", "enflame.com/gcu", "2")))
	b.Run("two whole GCUs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, rej := g.Fit(gcards, make([]devices.Usage, 8), &greq); rej != nil {
				b.Fatal(rej.Reason())
			}
		}
	})
}

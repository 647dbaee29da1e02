package metax

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// HAMi's TestGetMetaxSDevices fixture and the spec's example.
const (
	hamiSGPUs = `[{"uuid": "GPU-123", "model": "sgpu", "totalDevCount": 16, "totalCompute": 100, "bdf": "0000:44:00.0", "totalVRam" : 32768, "numa": 1, "healthy": true, "qosPolicy": "fixed-share"}]`
	specSGPUs = `[{"uuid":"GPU-36be","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"numa":0,"healthy":true,"qosPolicy":"best-effort","linkZone":1}]`
)

func mustSGPU(t testing.TB, sc SGPUConfig) *SGPUVendor {
	t.Helper()
	v, err := NewSGPU(devices.Config{Name: "metax-sgpu", Vendor: sc})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func annNode(kv ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Annotations[kv[i]] = kv[i+1]
	}
	return n
}

func sgpu(id string, zone int, qos string) devices.Card {
	return devices.Card{UUID: id, Split: 16, MemoryMiB: 65536, Cores: 100, Model: SGPUWord, Group: zone, Mode: qos, Healthy: true}
}

func TestNewSGPU(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	want := devices.ResourceNames{Count: "metax-tech.com/sgpu", Memory: "metax-tech.com/vmemory", Cores: "metax-tech.com/vcore"}
	if v.Name() != "Metax-SGPU" || v.Resources() != want || v.MemoryFactor() != 1024 || v.NodeLock() != "hami.io/mutex.lock" {
		t.Errorf("vendor %s %+v", v.Name(), v.Resources())
	}
	if _, err := NewSGPU(devices.Config{Name: "metax-sgpu", ResourceCountName: "x"}); err == nil {
		t.Error("shared fields accepted")
	}
	if _, err := NewSGPU(devices.Config{Name: "metax-sgpu", Vendor: 1}); err == nil {
		t.Error("foreign payload accepted")
	}
}

func TestSGPUInventory(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	got, err := v.Inventory(annNode(SGPURegisterAnnotation, hamiSGPUs))
	want := []devices.Card{{UUID: "GPU-123", Split: 16, MemoryMiB: 32768, Cores: 100, Model: "Metax-SGPU", NUMA: 1, Mode: "fixed-share", Healthy: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Inventory() = %+v, %v; want %+v", got, err, want)
	}
	got, err = v.Inventory(annNode(SGPURegisterAnnotation, `[{"uuid":"a","totalDevCount":4,"totalVRam":100,"totalCompute":100,"healthy":true,"linkZone":2},{"uuid":"b","healthy":false},{"uuid":"a"}]`))
	if err != nil || len(got) != 2 || got[0].Group != 2 || got[1].Index != 1 || got[1].Healthy {
		t.Errorf("Inventory() = %+v, %v", got, err)
	}
	for _, raw := range []string{"", "{}", `[{"uuid":""}]`, `[{"uuid":"a,b"}]`, `[null]`} {
		if got, err := v.Inventory(annNode(SGPURegisterAnnotation, raw)); err == nil {
			t.Errorf("Inventory(%q) = %+v, want an error", raw, got)
		}
	}
	for _, n := range []*corev1.Node{annNode(), annNode(SGPURegisterAnnotation, "[]")} {
		if got, err := v.Inventory(n); got != nil || err != nil {
			t.Errorf("no devices: %+v, %v", got, err)
		}
	}
	old, updated := annNode(SGPURegisterAnnotation, hamiSGPUs), annNode(SGPURegisterAnnotation, specSGPUs)
	if v.InventoryChanged(old, old.DeepCopy()) || !v.InventoryChanged(old, updated) {
		t.Error("InventoryChanged")
	}
}

func TestSGPUParsePod(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	tests := []struct {
		name    string
		pod     *corev1.Pod
		want    []devices.Request
		wantErr string
	}{
		{name: "bare vmemory is GiB, vcore as asked", pod: pod(nil, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4", "metax-tech.com/vcore", "60")),
			want: []devices.Request{{Count: 1, MemoryMiB: 4096, Cores: 60}}},
		{name: "vmemory with a unit is bytes", pod: pod(nil, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "2048Mi")),
			want: []devices.Request{{Count: 1, MemoryMiB: 2048, Cores: 100}}},
		{name: "HAMi quirk: 1e3 prints as 1k, bytes, 0 MiB: whole card", pod: pod(nil, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "1e3")),
			want: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}}},
		{name: "requests are not read", pod: pod(nil, corev1.Container{Name: "m", Resources: corev1.ResourceRequirements{Requests: res("metax-tech.com/sgpu", "1")}})},
		{name: "vcore above 100", pod: pod(nil, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vcore", "101")), wantErr: "above 100"},
		{name: "app class online", pod: pod(map[string]string{AppClassAnnotation: Online}, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4")),
			want: []devices.Request{{Count: 1, MemoryMiB: 4096, Cores: 100}}},
		{name: "app class other than online or offline", pod: pod(map[string]string{AppClassAnnotation: "batch"}, limits("m", "metax-tech.com/sgpu", "1")), wantErr: "must be one of online, offline"},
		{name: "empty app class", pod: pod(map[string]string{AppClassAnnotation: ""}, limits("m", "metax-tech.com/sgpu", "1")), wantErr: "must be one of"},
		{name: "huge GiB", pod: pod(nil, limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "2097153")), wantErr: "MiB"},
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
			if err != nil || !reflect.DeepEqual(got.Containers, tt.want) {
				t.Errorf("ParsePod() = %+v, %v; want %+v", got.Containers, err, tt.want)
			}
		})
	}
	got, _ := v.ParsePod(pod(map[string]string{QoSPolicyAnnotation: FixedShare, SGPUUseUUIDAnnotation: "GPU-1", SGPUAvoidUUIDAnnotation: "GPU-2"}, limits("m", "metax-tech.com/sgpu", "1")))
	if want := (devices.Preferences{UseUUIDs: []string{"GPU-1"}, AvoidUUIDs: []string{"GPU-2"}, Mode: "qos=fixed-share"}); !reflect.DeepEqual(got.Preferences, want) {
		t.Errorf("Preferences = %+v, want %+v", got.Preferences, want)
	}
	for _, tt := range []struct {
		ann        map[string]string
		mode       string
		class, qos string
	}{
		{nil, "qos=", "", ""},
		{map[string]string{AppClassAnnotation: Online}, "class=online qos=", Online, ""},
		{map[string]string{AppClassAnnotation: Offline, QoSPolicyAnnotation: BestEffort}, "class=offline qos=best-effort", Offline, BestEffort},
		{map[string]string{QoSPolicyAnnotation: "class=online qos=x"}, "qos=class=online qos=x", "", "class=online qos=x"},
	} {
		got, err := v.ParsePod(pod(tt.ann, limits("m", "metax-tech.com/sgpu", "1")))
		class, qos := parseMode(got.Preferences.Mode)
		if err != nil || got.Preferences.Mode != tt.mode || class != tt.class || qos != tt.qos {
			t.Errorf("%v: Mode %q (%q, %q), %v; want %q", tt.ann, got.Preferences.Mode, class, qos, err, tt.mode)
		}
	}
}

// TestSGPUFit: one row per sGPU rule; each fails if its rule is removed.
func TestSGPUFit(t *testing.T) {
	be := map[string]string{QoSPolicyAnnotation: BestEffort}
	shared := limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4", "metax-tech.com/vcore", "30")
	tests := []struct {
		name       string
		ann        map[string]string
		ctr        corev1.Container
		cards      []devices.Card
		used       []devices.Usage
		pending    map[string]string
		want       string
		wantReason string
	}{
		{name: "a used card with another QoS policy is refused", ann: be, ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, FixedShare)}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 1024, Cores: 10}},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "an unused card takes any QoS policy", ann: be, ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, FixedShare)}, want: "GPU-0,Metax-SGPU,4096,30:;"},
		{name: "a card without a policy takes any", ann: be, ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, "")}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 1024, Cores: 10}}, want: "GPU-0,Metax-SGPU,4096,30:;"},
		{name: "the pending policy wins over the registered one", ann: be, ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, BestEffort)}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 1024, Cores: 10}},
			pending: map[string]string{"GPU-0": FixedShare}, wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "a pod without a policy only joins cards without one", ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, BestEffort)}, used: []devices.Usage{{Sharers: 1, MemoryMiB: 1024, Cores: 10}},
			wantReason: "1/1 cards: sharing mode not wanted"},
		{name: "default 100 cores: exclusive", ann: be, ctr: limits("m", "metax-tech.com/sgpu", "1"),
			cards: []devices.Card{sgpu("GPU-0", 0, BestEffort)}, used: []devices.Usage{{Sharers: 1}},
			wantReason: "1/1 cards: exclusive use conflict"},
		{name: "shares", ann: be, ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, BestEffort)}, used: []devices.Usage{{Sharers: 16, MemoryMiB: 1024, Cores: 10}},
			wantReason: "1/1 cards: all shares in use"},
		{name: "uuid selector", ann: map[string]string{QoSPolicyAnnotation: BestEffort, SGPUAvoidUUIDAnnotation: "GPU-1"}, ctr: shared,
			cards: []devices.Card{sgpu("GPU-0", 0, ""), sgpu("GPU-1", 0, "")}, want: "GPU-0,Metax-SGPU,4096,30:;"},
		// HAMi's TestPrioritizeExclusiveDevices "require one device": the
		// smallest MetaLink zone. The walk goes GPU-5, GPU-2, GPU-1.
		{name: "exclusive, one card: the smallest link zone", ann: be, ctr: limits("m", "metax-tech.com/sgpu", "1"),
			cards: []devices.Card{sgpu("GPU-5", 2, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-1", 1, "")}, want: "GPU-5,Metax-SGPU,65536,100:;"},
		{name: "exclusive, two cards: a zone that holds both", ann: be, ctr: limits("m", "metax-tech.com/sgpu", "2"),
			cards: []devices.Card{sgpu("GPU-7", 2, ""), sgpu("GPU-6", 2, ""), sgpu("GPU-5", 2, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-1", 1, "")},
			want:  "GPU-1,Metax-SGPU,65536,100:GPU-2,Metax-SGPU,65536,100:;"},
		{name: "exclusive across zones, then cards without a zone", ann: be, ctr: limits("m", "metax-tech.com/sgpu", "3"),
			cards: []devices.Card{sgpu("GPU-9", 0, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-1", 3, "")},
			want:  "GPU-1,Metax-SGPU,65536,100:GPU-2,Metax-SGPU,65536,100:GPU-9,Metax-SGPU,65536,100:;"},
		{name: "shared: the first cards walked, zones ignored", ann: be, ctr: limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vcore", "50"),
			cards: []devices.Card{sgpu("GPU-5", 2, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-1", 1, "")}, want: "GPU-1,Metax-SGPU,65536,50:;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustSGPU(t, SGPUConfig{})
			maps.Copy(v.pending, tt.pending)
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

// TestSGPUScorePlacement: HAMi's TestScoreExclusiveDevices rows.
func TestSGPUScorePlacement(t *testing.T) {
	four := []devices.Card{sgpu("GPU-1", 1, ""), sgpu("GPU-2", 1, ""), sgpu("GPU-3", 1, ""), sgpu("GPU-4", 1, "")}
	one := devices.Assignment{{{UUID: "GPU-4", Cores: 100}}}
	busy := []devices.Usage{{Sharers: 1}, {Sharers: 1}, {Sharers: 1}, {}}
	on := mustSGPU(t, SGPUConfig{TopologyAware: true})
	off := mustSGPU(t, SGPUConfig{})
	for _, tt := range []struct {
		name string
		v    *SGPUVendor
		pod  *corev1.Pod
		used []devices.Usage
		a    devices.Assignment
		want float64
	}{
		{"one card, none left free", on, nil, busy, one, 0},
		{"one card, three left free", on, nil, make([]devices.Usage, 4), one, -30},
		{"two cards, two left free", on, nil, make([]devices.Usage, 4), devices.Assignment{{{UUID: "GPU-3", Cores: 100}, {UUID: "GPU-4", Cores: 100}}}, 10*10 - (60 - 10 - 10)},
		{"off by config", off, nil, make([]devices.Usage, 4), one, 0},
		{"on by the pod", off, pod(map[string]string{TopologyAwareAnnotation: "true"}), make([]devices.Usage, 4), one, -30},
		{"shared cards are not scored", on, nil, make([]devices.Usage, 4), devices.Assignment{{{UUID: "GPU-4", Cores: 50}}}, 0},
	} {
		if got := tt.v.ScorePlacement(tt.pod, four, tt.used, tt.a); got != tt.want {
			t.Errorf("%s: ScorePlacement() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSGPUAssignmentGolden: exactly the annotations MetaX's device plugin
// reads, and the pending QoS they leave until the node reports it.
func TestSGPUAssignmentGolden(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	cards, err := v.Inventory(annNode(SGPURegisterAnnotation, specSGPUs))
	if err != nil {
		t.Fatal(err)
	}
	p := pod(map[string]string{QoSPolicyAnnotation: FixedShare}, limits("sidecar"), limits("main", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "4", "metax-tech.com/vcore", "60"))
	req, err := v.ParsePod(p)
	if err != nil {
		t.Fatal(err)
	}
	a, rej := v.Fit(cards, make([]devices.Usage, 1), &req)
	if rej != nil {
		t.Fatal(rej.Reason())
	}
	toAllocate, allocated := v.AssignmentAnnotations()
	got := map[string]string{toAllocate: devices.EncodeAssignment(a), allocated: devices.EncodeAssignment(a)}
	extras, err := v.AssignmentExtras(p, a, time.Unix(1700000000, 5))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(got, extras)
	want := map[string]string{
		"hami.io/metax-sgpu-devices-to-allocate": ";GPU-36be,Metax-SGPU,4096,60:;",
		"hami.io/metax-sgpu-devices-allocated":   ";GPU-36be,Metax-SGPU,4096,60:;",
		"metax-tech.com/gpu-devices-allocated":   `[[],[{"uuid":"GPU-36be","compute":60,"vRam":4096}]]`,
		"metax-tech.com/predicate-time":          "1700000000000000005",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
	var decoded [][]map[string]any
	if err := json.Unmarshal([]byte(got["metax-tech.com/gpu-devices-allocated"]), &decoded); err != nil || len(decoded) != 2 {
		t.Errorf("JSON %v", err)
	}
	// The card now runs fixed-share work: a best-effort pod cannot join it
	// until the node reports the policy...
	used := []devices.Usage{{Sharers: 1, MemoryMiB: 4096, Cores: 60}}
	other, _ := v.ParsePod(pod(map[string]string{QoSPolicyAnnotation: BestEffort}, limits("main", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "1", "metax-tech.com/vcore", "10")))
	if _, rej := v.Fit(cards, used, &other); rej == nil {
		t.Error("best-effort pod joined a card turning fixed-share")
	}
	// ...and once it does, the register annotation alone decides.
	if _, err := v.Inventory(annNode(SGPURegisterAnnotation, strings.Replace(specSGPUs, "best-effort", "fixed-share", 1))); err != nil || len(v.pending) != 0 {
		t.Errorf("pending not synced: %v %v", v.pending, err)
	}
	// An exclusive container leaves the card without a policy.
	ex := devices.Assignment{{{UUID: "GPU-36be", Cores: 100}}}
	if _, err := v.AssignmentExtras(p, ex, time.Now()); err != nil || v.pending["GPU-36be"] != "" {
		t.Errorf("exclusive pending = %q", v.pending["GPU-36be"])
	}
}

func TestSGPUDefaultInPod(t *testing.T) {
	v := mustSGPU(t, SGPUConfig{})
	ctr := limits("m", "metax-tech.com/sgpu", "1")
	two := limits("m", "metax-tech.com/sgpu", "2")
	for _, tt := range []struct {
		name    string
		ann     map[string]string
		ctr     corev1.Container
		want    bool
		wantQoS string
		wantErr string
	}{
		{name: "best-effort added", ctr: ctr, want: true, wantQoS: BestEffort},
		{name: "known policy kept", ann: map[string]string{QoSPolicyAnnotation: BurstShare}, ctr: ctr, want: true, wantQoS: BurstShare},
		{name: "unknown policy", ann: map[string]string{QoSPolicyAnnotation: "x"}, ctr: ctr, wantErr: "must be set one of"},
		{name: "online: no policy added", ann: map[string]string{AppClassAnnotation: Online}, ctr: ctr, want: true},
		{name: "offline gets best-effort", ann: map[string]string{AppClassAnnotation: Offline}, ctr: ctr, want: true, wantQoS: BestEffort},
		{name: "unknown app class", ann: map[string]string{AppClassAnnotation: "batch"}, ctr: ctr, wantErr: "app-class"},
		{name: "app class asks one device", ann: map[string]string{AppClassAnnotation: Offline}, ctr: two, wantErr: "single device"},
		{name: "not asking", ctr: limits("m")},
	} {
		p := pod(tt.ann, tt.ctr)
		got, err := v.DefaultInPod(p, &p.Spec.Containers[0])
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || p.Annotations[QoSPolicyAnnotation] != tt.wantQoS {
			t.Errorf("%s: DefaultInPod() = %v, %v, qos %q", tt.name, got, err, p.Annotations[QoSPolicyAnnotation])
		}
	}
}

func fuzzSGPU(t *testing.T, n *corev1.Node) {
	v := mustSGPU(t, SGPUConfig{})
	cards, err := v.Inventory(n)
	if err != nil {
		if cards != nil {
			t.Fatalf("cards with error %v", err)
		}
		return
	}
	for i, c := range cards {
		if c.UUID == "" || strings.ContainsAny(c.UUID, ",:;") || c.Model != SGPUWord || (c.Healthy && (c.Split < 0 || c.MemoryMiB < 0 || c.Cores < 0)) {
			t.Fatalf("card %d %+v", i, c)
		}
	}
	req := devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100, Cores: 100}}, Preferences: devices.Preferences{Mode: "qos=best-effort"}}
	if a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req); rej == nil {
		if _, err := devices.DecodeAssignment(devices.EncodeAssignment(a)); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkSGPUFit places sGPU containers on an 8-card node, half shared.
func BenchmarkSGPUFit(b *testing.B) {
	v := mustSGPU(b, SGPUConfig{})
	cards := make([]devices.Card, 8)
	used := make([]devices.Usage, 8)
	for i := range cards {
		cards[i] = sgpu("GPU-"+string(rune('a'+i)), 1+i/4, BestEffort)
		if i%2 == 0 {
			used[i] = devices.Usage{Sharers: 1, MemoryMiB: 8192, Cores: 30}
		}
	}
	be := map[string]string{QoSPolicyAnnotation: BestEffort}
	for _, bm := range []struct {
		name string
		ctr  corev1.Container
	}{
		{"one shared card", limits("m", "metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "8", "metax-tech.com/vcore", "30")},
		{"two exclusive cards", limits("m", "metax-tech.com/sgpu", "2")},
	} {
		req, err := v.ParsePod(pod(be, bm.ctr))
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

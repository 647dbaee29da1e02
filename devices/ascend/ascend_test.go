package ascend

import (
	"fmt"
	"maps"
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

// Register strings as HAMi's docs and tests write them.
const (
	// hami-vendors.md section 3.
	specRegister = `[{"id":"npu-0","index":0,"count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true,"custominfo":{"NetworkID":0}}]`
	// pkg/device/ascend/device_test.go Test_GetNodeDevices (capitalised keys).
	hamiRegister = `[{"ID":"GPU-0","Count":4,"Devmem":8738,"Devcore":8,"Type":"huawei.com/Ascend910","Numa":0,"Health":true}]`
)

func node(annotations map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annotations},
		Status:     corev1.NodeStatus{Allocatable: allocatable},
	}
}

// chip returns the chart's default config of one chip.
func chip(t testing.TB, cw string) Config {
	t.Helper()
	for _, c := range DefaultConfigs() {
		if c.CommonWord == cw {
			return c
		}
	}
	t.Fatalf("no default config %s", cw)
	return Config{}
}

func mustNew(t testing.TB, cfg Config) *Vendor {
	t.Helper()
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.CommonWord, err)
	}
	return v
}

var hamiCorePod = map[string]string{VNPUModeAnnotation: ModeHAMiCore}

func TestDefaultConfigs(t *testing.T) {
	type row struct {
		cw, chip              string
		allocatable, capacity int64
		factor                int32
		templates             string
		superPod              bool
	}
	want := []row{
		{"Ascend910A", "910A", 32768, 32768, 1, "vir02:2184 vir04:4369 vir08:8738 vir16:17476", false},
		{"Ascend910B2", "910B2", 65536, 65536, 1, "vir03_1c_8g:8192 vir06_1c_16g:16384 vir12_3c_32g:32768", false},
		{"Ascend910B3", "910B3", 65536, 65536, 1, "vir05_1c_16g:16384 vir10_3c_32g:32768", false},
		{"Ascend910B4-1", "910B4-1", 65536, 65536, 1, "vir05_1c_16g:16384 vir10_3c_32g:32768", false},
		{"Ascend910B4", "910B4", 32768, 32768, 1, "vir05_1c_8g:8192 vir10_3c_16g:16384", false},
		{"Ascend310P", "310P3", 21527, 24576, 1, "vir01:3072 vir02:6144 vir04:12288", false},
		{"Ascend910C", "Ascend910", 65536, 65536, 0, "vir05_1c_16g:16384 vir10_3c_32g:32768", true},
	}
	var got []row
	for _, c := range DefaultConfigs() {
		var ts []string
		for _, tpl := range c.Templates {
			ts = append(ts, fmt.Sprintf("%s:%d", tpl.Name, tpl.Memory))
		}
		got = append(got, row{c.CommonWord, c.ChipName, c.MemoryAllocatable, c.MemoryCapacity, c.MemoryFactor, strings.Join(ts, " "), c.SuperPod})
		v := mustNew(t, c)
		cw := c.CommonWord
		if v.Name() != cw {
			t.Errorf("Name() = %q, want %q", v.Name(), cw)
		}
		wantNames := devices.ResourceNames{
			Count: corev1.ResourceName("huawei.com/" + cw), Memory: corev1.ResourceName("huawei.com/" + cw + "-memory"),
			Cores: corev1.ResourceName("huawei.com/" + cw + "-core"),
		}
		if v.Resources() != wantNames {
			t.Errorf("%s: Resources() = %+v", cw, v.Resources())
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfigs() =\n%v\nwant\n%v", got, want)
	}
	// Callers may change the result without changing the defaults.
	DefaultConfigs()[2].Templates[0].Memory = 1
	if chip(t, "Ascend910B3").Templates[0].Memory != 16384 || chip(t, "Ascend910B4-1").Templates[0].Memory != 16384 {
		t.Error("DefaultConfigs() shares template slices")
	}
}

func TestNew(t *testing.T) {
	v := mustNew(t, Config{
		CommonWord: "Ascend910B3", MemoryAllocatable: 65536, MemoryCapacity: 65536,
		Templates: []Template{{Name: "big", Memory: 32768}, {Name: "small", Memory: 16384}},
	})
	toAllocate, allocated := v.AssignmentAnnotations()
	keys := []string{toAllocate, allocated, v.HandshakeAnnotation(), v.registerKey, v.useUUIDKey, v.avoidUUIDKey, v.runtimeInfoKey}
	wantKeys := []string{
		"hami.io/Ascend910B3-devices-to-allocate", "hami.io/Ascend910B3-devices-allocated", "hami.io/node-handshake-Ascend910B3",
		"hami.io/node-register-Ascend910B3", "hami.io/use-Ascend910B3-uuid", "hami.io/no-use-Ascend910B3-uuid", "huawei.com/Ascend910B3",
	}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Errorf("keys = %q\nwant %q", keys, wantKeys)
	}
	if got := v.Config().Templates; got[0].Name != "small" || got[1].Name != "big" {
		t.Errorf("templates not sorted by memory: %+v", got)
	}
	if v.Resources().Cores != "huawei.com/Ascend910B3-core" {
		t.Errorf("default core resource = %q", v.Resources().Cores)
	}

	for _, tt := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no common word", Config{MemoryAllocatable: 1, MemoryCapacity: 1}, "commonWord is empty"},
		{"separator in common word", Config{CommonWord: "Ascend,910", MemoryAllocatable: 1, MemoryCapacity: 1}, "separators"},
		{"no memory", Config{CommonWord: "A"}, "memoryAllocatable"},
		{"capacity below allocatable", Config{CommonWord: "A", MemoryAllocatable: 2, MemoryCapacity: 1}, "memoryCapacity"},
		{"negative factor", Config{CommonWord: "A", MemoryAllocatable: 1, MemoryCapacity: 1, MemoryFactor: -1}, "memoryFactor"},
		{"unnamed template", Config{CommonWord: "A", MemoryAllocatable: 1, MemoryCapacity: 1, Templates: []Template{{Memory: 1}}}, "no name"},
		{"template twice", Config{CommonWord: "A", MemoryAllocatable: 1, MemoryCapacity: 1, Templates: []Template{{Name: "t", Memory: 1}, {Name: "t", Memory: 2}}}, "twice"},
		{"template without memory", Config{CommonWord: "A", MemoryAllocatable: 1, MemoryCapacity: 1, Templates: []Template{{Name: "t"}}}, "template t memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestInventory(t *testing.T) {
	b3 := chip(t, "Ascend910B3")
	b3Core := b3
	b3Core.HamiVnpuCore = true
	npus := res("huawei.com/Ascend910B3", "4")
	npu := func(id string, index, networkID int, mode string) devices.Card {
		return devices.Card{UUID: id, Index: index, Split: 4, MemoryMiB: 65536, Cores: 20, Model: "Ascend910B3", Group: networkID, Mode: mode, Healthy: true}
	}
	tests := []struct {
		name        string
		cfg         Config
		annotations map[string]string
		allocatable corev1.ResourceList
		want        []devices.Card
		wantErr     string
	}{
		{name: "no annotation", cfg: b3, annotations: map[string]string{}, allocatable: npus},
		{
			name: "spec example: NetworkID kept, hard split only", cfg: b3,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": specRegister},
			allocatable: npus,
			want:        []devices.Card{npu("npu-0", 0, 0, ModeTemplate)},
		},
		{
			name: "node supports hami-core", cfg: b3,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": specRegister, "hami-vnpu-core": "true"},
			allocatable: npus,
			want:        []devices.Card{npu("npu-0", 0, 0, ModeHAMiCore)},
		},
		{
			name: "global hamiVnpuCore", cfg: b3Core,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": specRegister},
			allocatable: npus,
			want:        []devices.Card{npu("npu-0", 0, 0, ModeHAMiCore)},
		},
		{
			name: "node annotation overrides global hamiVnpuCore", cfg: b3Core,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": specRegister, "hami-vnpu-core": "false"},
			allocatable: npus,
			want:        []devices.Card{npu("npu-0", 0, 0, ModeTemplate)},
		},
		{
			// Each NPU keeps its own NetworkID (Fit uses them only when all
			// have one) and its registered numa (HAMi's card sort reads it).
			name: "one NPU without NetworkID: each keeps its own", cfg: b3,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": `[` +
				`{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true,"custominfo":{"NetworkID":3}},` +
				`{"id":"npu-1","index":1,"numa":1,"count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true}]`},
			allocatable: npus,
			want: []devices.Card{npu("npu-0", 0, 3, ModeTemplate), func() devices.Card {
				c := npu("npu-1", 1, NoNetworkID, ModeTemplate)
				c.NUMA = 1
				return c
			}()},
		},
		{
			name: "non-numeric NetworkID counts as none", cfg: b3,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": `[{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true,"custominfo":{"NetworkID":"a"}}]`},
			allocatable: npus,
			want:        []devices.Card{npu("npu-0", 0, NoNetworkID, ModeTemplate)},
		},
		{
			name: "cordon and other chips' NPUs", cfg: b3,
			annotations: map[string]string{
				"hami.io/node-register-Ascend910B3": `[{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true},` +
					`{"id":"npu-1","count":4,"devmem":32768,"devcore":20,"type":"Ascend910B4","health":true}]`,
				devices.DeviceCordon: "npu-0",
			},
			allocatable: npus,
			want: []devices.Card{func() devices.Card {
				c := npu("npu-0", 0, NoNetworkID, ModeTemplate)
				c.Cordoned = true
				return c
			}()},
		},
		{
			name: "quirk: Ascend910B4 takes Ascend910B4-1 NPUs", cfg: chip(t, "Ascend910B4"),
			annotations: map[string]string{"hami.io/node-register-Ascend910B4": `[{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B4-1","health":true}]`},
			allocatable: res("huawei.com/Ascend910B4", "4"),
			want:        []devices.Card{{UUID: "npu-0", Split: 4, MemoryMiB: 65536, Cores: 20, Model: "Ascend910B4-1", Group: NoNetworkID, Mode: ModeTemplate, Healthy: true}},
		},
		{
			name:        "HAMi fixture decodes for a chip its type names",
			cfg:         Config{CommonWord: "Ascend910", MemoryAllocatable: 8738, MemoryCapacity: 8738},
			annotations: map[string]string{"hami.io/node-register-Ascend910": hamiRegister},
			allocatable: res("huawei.com/Ascend910", "4"),
			want:        []devices.Card{{UUID: "GPU-0", Split: 4, MemoryMiB: 8738, Cores: 8, Model: "huawei.com/Ascend910", Group: NoNetworkID, Mode: ModeTemplate, Healthy: true}},
		},
		{
			name: "HAMi fixture's type lacks Ascend910A", cfg: chip(t, "Ascend910A"),
			annotations: map[string]string{"hami.io/node-register-Ascend910A": hamiRegister},
			allocatable: res("huawei.com/Ascend910A", "4"),
			wantErr:     "no NPU type contains Ascend910A",
		},
		{
			name: "custominfo not an object", cfg: b3,
			annotations: map[string]string{"hami.io/node-register-Ascend910B3": `[{"id":"npu-0","count":4,"type":"Ascend910B3","health":true,"custominfo":"x"}]`},
			allocatable: npus,
			wantErr:     "custominfo",
		},
		{name: "not JSON", cfg: b3, annotations: map[string]string{"hami.io/node-register-Ascend910B3": "{"}, allocatable: npus, wantErr: "hami.io/node-register-Ascend910B3"},
		{name: "device plugin not serving", cfg: b3, annotations: map[string]string{"hami.io/node-register-Ascend910B3": specRegister}, wantErr: "allocatable huawei.com/Ascend910B3 is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			got, err := v.Inventory(node(tt.annotations, tt.allocatable))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Fatalf("Inventory() = %v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Inventory() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestInventoryChanged(t *testing.T) {
	v := mustNew(t, chip(t, "Ascend910B3"))
	base := node(map[string]string{"hami.io/node-register-Ascend910B3": specRegister}, res("huawei.com/Ascend910B3", "4"))
	for _, tt := range []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"nothing", func(*corev1.Node) {}, false},
		{"other chip's register", func(n *corev1.Node) { n.Annotations["hami.io/node-register-Ascend310P"] = "x" }, false},
		{"hami-vnpu-core false is the default", func(n *corev1.Node) { n.Annotations["hami-vnpu-core"] = "false" }, false},
		{"register", func(n *corev1.Node) { n.Annotations["hami.io/node-register-Ascend910B3"] = "[]" }, true},
		{"cordon", func(n *corev1.Node) { n.Annotations[devices.DeviceCordon] = "npu-0" }, true},
		{"hami-vnpu-core", func(n *corev1.Node) { n.Annotations["hami-vnpu-core"] = "true" }, true},
		{"allocatable", func(n *corev1.Node) { n.Status.Allocatable = nil }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			updated := base.DeepCopy()
			tt.change(updated)
			if got := v.InventoryChanged(base, updated); got != tt.want {
				t.Errorf("InventoryChanged() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParsePod(t *testing.T) {
	b3 := chip(t, "Ascend910B3")
	b3x2 := b3
	b3x2.MemoryFactor = 2
	tests := []struct {
		name    string
		cfg     Config
		pod     *corev1.Pod
		want    devices.PodRequest
		wantErr string
	}{
		{
			name: "count only: whole NPU",
			pod:  pod(nil, limits("main", "huawei.com/Ascend910B3", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "template memory",
			pod:  pod(nil, limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 16384}}},
		},
		{
			name: "memoryFactor",
			cfg:  b3x2,
			pod:  pod(nil, limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryMiB: 16384}}},
		},
		{
			name: "hami-core with cores and selectors",
			pod: pod(map[string]string{
				VNPUModeAnnotation: "hami-core", "hami.io/use-Ascend910B3-uuid": "npu-0, npu-1", "hami.io/no-use-Ascend910B3-uuid": "npu-2",
				devices.CardPolicyAnnotation: "spread",
			}, limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192", "huawei.com/Ascend910B3-core", "5")),
			want: devices.PodRequest{
				Containers:  []devices.Request{{Count: 1, MemoryMiB: 8192, Cores: 5}},
				Preferences: devices.Preferences{UseUUIDs: []string{"npu-0", "npu-1"}, AvoidUUIDs: []string{"npu-2"}, Mode: ModeHAMiCore, Policy: devices.CardSpread},
			},
		},
		{
			name: "another vnpu-mode value is the hard split",
			pod:  pod(map[string]string{VNPUModeAnnotation: "HAMi-core"}, limits("main", "huawei.com/Ascend910B3", "1")),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 1, MemoryPercent: 100}}},
		},
		{
			name: "requests when limits are absent, init container first",
			pod: func() *corev1.Pod {
				p := pod(nil, limits("main"))
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
					Requests: res("huawei.com/Ascend910B3", "2", "huawei.com/Ascend910B3-memory", "65536"),
				}}}
				return p
			}(),
			want: devices.PodRequest{Containers: []devices.Request{{Count: 2, MemoryMiB: 65536}, {}}, Inits: 1},
		},
		{name: "other chip", pod: pod(nil, limits("main", "huawei.com/Ascend310P", "1"))},
		{name: "bytes instead of MiB", pod: pod(nil, limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16Gi")), wantErr: "Ascend910B3-memory"},
		{name: "negative cores", pod: pod(nil, limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core", "-1")), wantErr: "Ascend910B3-core"},
		{name: "bad policy", pod: pod(map[string]string{devices.CardPolicyAnnotation: "x"}, limits("main", "huawei.com/Ascend910B3", "1")), wantErr: "gpu-scheduler-policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg.CommonWord == "" {
				cfg = b3
			}
			got, err := mustNew(t, cfg).ParsePod(tt.pod)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePod() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePod() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// npuCard is an NPU as Inventory returns it; networkID NoNetworkID for none.
func npuCard(cw, id string, index, networkID int, mode string) devices.Card {
	return devices.Card{UUID: id, Index: index, Split: 4, MemoryMiB: 65536, Cores: 20, Model: cw, Group: networkID, Mode: mode, Healthy: true}
}

func npuCards(cw string, networkIDs ...int) []devices.Card {
	cards := make([]devices.Card, len(networkIDs))
	for i, id := range networkIDs {
		cards[i] = npuCard(cw, fmt.Sprintf("npu-%d", i), i, id, ModeTemplate)
	}
	return cards
}

// TestFit: HAMi's Ascend fit rules, one per row.
func TestFit(t *testing.T) {
	none := NoNetworkID
	tests := []struct {
		name        string
		chip        string
		annotations map[string]string
		containers  []corev1.Container
		cards       []devices.Card
		used        []devices.Usage
		want        string // encoded assignment
		wantReason  string
	}{
		{
			name:       "hard split: template memory, no cores",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384")},
			cards:      npuCards("Ascend910B3", none),
			used:       []devices.Usage{{Sharers: 2, MemoryMiB: 32768}},
			want:       "npu-0,Ascend910B3,16384,0:;",
		},
		{
			name:       "hard split: memory bounds sharing",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "32768")},
			cards:      npuCards("Ascend910B3", none),
			used:       []devices.Usage{{Sharers: 3, MemoryMiB: 49152}},
			wantReason: "1/1 cards: insufficient memory",
		},
		{
			name:       "hard split: count bounds sharing",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "1")},
			cards:      npuCards("Ascend910B3", none),
			used:       []devices.Usage{{Sharers: 4, MemoryMiB: 4}},
			wantReason: "1/1 cards: all shares in use",
		},
		{
			name:       "no memory: the whole NPU",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "2")},
			cards:      npuCards("Ascend910B3", none, none),
			want:       "npu-1,Ascend910B3,65536,0:npu-0,Ascend910B3,65536,0:;",
		},
		{
			name:       "hard split: cores counted against the registered devcore",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core", "30")},
			cards:      npuCards("Ascend910B3", none),
			wantReason: "1/1 cards: insufficient cores",
		},
		{
			name:        "hami-core on a node without support: ModeNotFit",
			chip:        "Ascend910B3",
			annotations: hamiCorePod,
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192", "huawei.com/Ascend910B3-core", "5")},
			cards:       npuCards("Ascend910B3", none),
			wantReason:  "1/1 cards: sharing mode not wanted",
		},
		{
			name:        "hami-core: cores are percent of 100",
			chip:        "Ascend910B3",
			annotations: hamiCorePod,
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192", "huawei.com/Ascend910B3-core", "50")},
			cards:       []devices.Card{npuCard("Ascend910B3", "npu-0", 0, none, ModeHAMiCore)},
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 8192, Cores: 50}},
			want:        "npu-0,Ascend910B3,8192,50:;",
		},
		{
			// HAMi checks against 100 but scores with devcore 20: npu-0
			// (cores 10 used) scores 13.75, npu-1 (memory used) 10, so
			// spread tries npu-1 first. Scoring with 100 would flip them.
			name:        "hami-core: cards scored with the registered devcore",
			chip:        "Ascend910B3",
			annotations: hamiCorePod,
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192", "huawei.com/Ascend910B3-core", "5")},
			cards:       []devices.Card{npuCard("Ascend910B3", "npu-0", 0, none, ModeHAMiCore), npuCard("Ascend910B3", "npu-1", 1, none, ModeHAMiCore)},
			used:        []devices.Usage{{Sharers: 1, Cores: 10}, {Sharers: 1, MemoryMiB: 8192}},
			want:        "npu-1,Ascend910B3,8192,5:;",
		},
		{
			name:        "hami-core: insufficient percent",
			chip:        "Ascend910B3",
			annotations: hamiCorePod,
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core", "51")},
			cards:       []devices.Card{npuCard("Ascend910B3", "npu-0", 0, none, ModeHAMiCore)},
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 0, Cores: 50}},
			wantReason:  "1/1 cards: insufficient cores",
		},
		{
			name:        "hami-core: 100 percent wants the NPU alone",
			chip:        "Ascend910B3",
			annotations: hamiCorePod,
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "1", "huawei.com/Ascend910B3-core", "100")},
			cards:       []devices.Card{npuCard("Ascend910B3", "npu-0", 0, none, ModeHAMiCore)},
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 1}},
			wantReason:  "1/1 cards: exclusive use conflict",
		},
		{
			name:       "hard-split pod on a hami-core node",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384")},
			cards:      []devices.Card{npuCard("Ascend910B3", "npu-0", 0, none, ModeHAMiCore)},
			want:       "npu-0,Ascend910B3,16384,0:;",
		},
		{
			name:        "uuid selectors",
			chip:        "Ascend910B3",
			annotations: map[string]string{"hami.io/use-Ascend910B3-uuid": "npu-1,npu-2", "hami.io/no-use-Ascend910B3-uuid": " npu-1 "},
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1")},
			cards:       npuCards("Ascend910B3", none, none, none),
			want:        "npu-2,Ascend910B3,65536,0:;",
		},
		{
			name:        "mutex",
			chip:        "Ascend910B3",
			annotations: map[string]string{devices.CardPolicyAnnotation: "mutex"},
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384")},
			cards:       npuCards("Ascend910B3", none),
			used:        []devices.Usage{{Sharers: 1, MemoryMiB: 16384}},
			wantReason:  "1/1 cards: exclusive use conflict",
		},
		{
			// HAMi's "fit success. schedule by NetworkID" (dev-1 and dev-2).
			name:       "NetworkID: two NPUs from the largest group",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "2")},
			cards:      npuCards("Ascend910B3", 0, 1, 1),
			want:       "npu-2,Ascend910B3,65536,0:npu-1,Ascend910B3,65536,0:;",
		},
		{
			name:       "NetworkID: one NPU is the first that fits",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1")},
			cards:      npuCards("Ascend910B3", 0, 1, 1),
			want:       "npu-2,Ascend910B3,65536,0:;",
		},
		{
			// Groups 2 and 0 tie after group 1: the one walked first (HAMi:
			// map order, random).
			name:       "NetworkID: largest group first, then the next",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "3")},
			cards:      npuCards("Ascend910B3", 0, 1, 1, 2),
			want:       "npu-2,Ascend910B3,65536,0:npu-1,Ascend910B3,65536,0:npu-3,Ascend910B3,65536,0:;",
		},
		{
			name:       "NetworkID: exactly enough fit: walk order kept",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "3")},
			cards:      npuCards("Ascend910B3", 0, 1, 1),
			want:       "npu-2,Ascend910B3,65536,0:npu-1,Ascend910B3,65536,0:npu-0,Ascend910B3,65536,0:;",
		},
		{
			// Group 1 has three NPUs but only one fits: group 0 is larger.
			name:       "NetworkID: only NPUs that fit are grouped",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "2", "huawei.com/Ascend910B3-memory", "32768")},
			cards:      npuCards("Ascend910B3", 0, 0, 1, 1, 1),
			used:       []devices.Usage{{}, {}, {Sharers: 2, MemoryMiB: 65536}, {Sharers: 2, MemoryMiB: 65536}, {}},
			want:       "npu-1,Ascend910B3,32768,0:npu-0,Ascend910B3,32768,0:;",
		},
		{
			name:       "NetworkID: too few NPUs fit",
			chip:       "Ascend910B3",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "3")},
			cards:      npuCards("Ascend910B3", 0, 1, 1),
			used:       []devices.Usage{{}, {Sharers: 4}, {}},
			wantReason: "1/3 cards: all shares in use, 2/3 cards free, 3 wanted",
		},
		{
			name:       "NetworkID ignored for a non-910 chip",
			chip:       "Ascend310P",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend310P", "2")},
			cards:      npuCards("Ascend310P", 0, 1, 1),
			want:       "npu-2,Ascend310P,65536,0:npu-1,Ascend310P,65536,0:;",
		},
		{
			name: "NetworkID: each container sees the previous one's NPUs",
			chip: "Ascend910B3",
			containers: []corev1.Container{
				limits("a", "huawei.com/Ascend910B3", "2"),
				limits("b", "huawei.com/Ascend910B3", "2"),
			},
			// a takes two of group 1's three NPUs; b, seeing them taken,
			// finds group 0 the larger (it would be group 1 otherwise).
			cards: npuCards("Ascend910B3", 0, 1, 1, 1, 0),
			want:  "npu-3,Ascend910B3,65536,0:npu-2,Ascend910B3,65536,0:;npu-4,Ascend910B3,65536,0:npu-0,Ascend910B3,65536,0:;",
		},
		{
			// HAMi's 910C pairing test: indices 0 and 1 form a module.
			name:       "910C: one whole module",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "2")},
			cards:      npuCards("Ascend910C", none, none),
			want:       "npu-1,Ascend910C,65536,0:npu-0,Ascend910C,65536,0:;",
		},
		{
			name:       "910C: NPUs of two partial modules are refused",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "2")},
			cards:      npuCards("Ascend910C", none, none, none),
			used:       []devices.Usage{{}, {Sharers: 4}, {}},
			wantReason: "no card", // Rejection has no words for "no whole module" (see README)
		},
		{
			name:       "910C: a whole module after a partial one",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "2")},
			cards:      npuCards("Ascend910C", none, none, none, none),
			used:       []devices.Usage{{}, {Sharers: 4}, {}, {}},
			want:       "npu-3,Ascend910C,65536,0:npu-2,Ascend910C,65536,0:;",
		},
		{
			// HAMi's pairing test: 4 fit, but only 2 as a whole module.
			name:       "910C: 4 wanted, one whole module fits",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "4")},
			cards:      npuCards("Ascend910C", none, none, none, none, none, none),
			used:       []devices.Usage{{}, {}, {Sharers: 4}, {}, {}, {Sharers: 4}},
			wantReason: "2/6 cards free, 4 wanted",
		},
		{
			name:       "910C: too few NPUs fit at all",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "4")},
			cards:      npuCards("Ascend910C", none, none, none, none),
			used:       []devices.Usage{{}, {}, {Sharers: 4}, {}},
			wantReason: "1/4 cards: all shares in use, 3/4 cards free, 4 wanted",
		},
		{
			name:       "910C: an odd count never matches whole modules",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "3")},
			cards:      npuCards("Ascend910C", none, none, none, none),
			wantReason: "2/4 cards free, 3 wanted",
		},
		{
			// By NetworkID it would be npu-2 and npu-1.
			name:       "910C: modules win over NetworkID",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "2")},
			cards:      npuCards("Ascend910C", 0, 1, 1, 2),
			used:       []devices.Usage{{Sharers: 4}, {}, {}, {}},
			want:       "npu-3,Ascend910C,65536,0:npu-2,Ascend910C,65536,0:;",
		},
		{
			name:       "910C: one NPU, standard fit",
			chip:       "Ascend910C",
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910C", "1")},
			cards:      npuCards("Ascend910C", none, none),
			used:       []devices.Usage{{Sharers: 4}, {}},
			want:       "npu-1,Ascend910C,65536,0:;",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, chip(t, tt.chip))
			req, err := v.ParsePod(pod(tt.annotations, tt.containers...))
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
				t.Errorf("Fit() modified used: %v", used)
			}
			if tt.wantReason != "" {
				if rej == nil {
					t.Fatalf("Fit() = %q, want rejection %q", devices.EncodeAssignment(a), tt.wantReason)
				}
				if got := rej.Reason(); got != tt.wantReason {
					t.Errorf("Reason() = %q, want %q", got, tt.wantReason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("Fit() rejected: %s", rej.Reason())
			}
			if got := devices.EncodeAssignment(a); got != tt.want {
				t.Errorf("assignment = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAssignmentGolden: a pod placed on an Ascend node gets exactly the
// annotation strings Ascend's device plugin reads.
func TestAssignmentGolden(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tests := []struct {
		name        string
		cfg         Config
		register    string
		nodeAnnos   map[string]string
		podAnnos    map[string]string
		containers  []corev1.Container
		want        map[string]string
		wantNoExtra bool
	}{
		{
			name:       "hard split, spec example",
			cfg:        chip(t, "Ascend910B3"),
			register:   specRegister,
			containers: []corev1.Container{limits("sidecar"), limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384")},
			want: map[string]string{
				"hami.io/Ascend910B3-devices-to-allocate": ";npu-0,Ascend910B3,16384,0:;",
				"hami.io/Ascend910B3-devices-allocated":   ";npu-0,Ascend910B3,16384,0:;",
				"huawei.com/Ascend910B3":                  `[{"UUID":"npu-0","temp":"vir05_1c_16g","memory":16384}]`,
				"predicate-time":                          "1700000000",
			},
		},
		{
			name:       "hard split, whole NPU: no template",
			cfg:        chip(t, "Ascend910B3"),
			register:   specRegister,
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1")},
			want: map[string]string{
				"hami.io/Ascend910B3-devices-to-allocate": "npu-0,Ascend910B3,65536,0:;",
				"hami.io/Ascend910B3-devices-allocated":   "npu-0,Ascend910B3,65536,0:;",
				"huawei.com/Ascend910B3":                  `[{"UUID":"npu-0","memory":65536}]`,
				"predicate-time":                          "1700000000",
			},
		},
		{
			name:       "hami-core: memory and core, no template",
			cfg:        chip(t, "Ascend910B3"),
			register:   specRegister,
			nodeAnnos:  map[string]string{"hami-vnpu-core": "true"},
			podAnnos:   hamiCorePod,
			containers: []corev1.Container{limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192", "huawei.com/Ascend910B3-core", "5")},
			want: map[string]string{
				"hami.io/Ascend910B3-devices-to-allocate": "npu-0,Ascend910B3,8192,5:;",
				"hami.io/Ascend910B3-devices-allocated":   "npu-0,Ascend910B3,8192,5:;",
				"huawei.com/Ascend910B3":                  `[{"UUID":"npu-0","memory":8192,"core":5}]`,
				"predicate-time":                          "1700000000",
			},
		},
		{
			// HAMi's Test_PatchAnnotations: 910A vir08 with 1 core.
			name:        "910A template with cores (HAMi fixture)",
			cfg:         chip(t, "Ascend910A"),
			register:    `[{"id":"device-0","count":4,"devmem":32768,"devcore":30,"type":"Ascend910A","health":true}]`,
			containers:  []corev1.Container{limits("main", "huawei.com/Ascend910A", "1", "huawei.com/Ascend910A-memory", "8738", "huawei.com/Ascend910A-core", "1")},
			wantNoExtra: false,
			want: map[string]string{
				"hami.io/Ascend910A-devices-to-allocate": "device-0,Ascend910A,8738,1:;",
				"hami.io/Ascend910A-devices-allocated":   "device-0,Ascend910A,8738,1:;",
				"huawei.com/Ascend910A":                  `[{"UUID":"device-0","temp":"vir08","memory":8738,"core":1}]`,
				"predicate-time":                         "1700000000",
			},
		},
		{
			// one gets b (walked first), two then finds b used and gets a.
			name:     "two containers, all NPUs flattened in order",
			cfg:      chip(t, "Ascend310P"),
			register: `[{"id":"a","count":7,"devmem":21527,"devcore":8,"type":"Ascend310P","health":true},{"id":"b","index":1,"count":7,"devmem":21527,"devcore":8,"type":"Ascend310P","health":true}]`,
			containers: []corev1.Container{
				limits("one", "huawei.com/Ascend310P", "1", "huawei.com/Ascend310P-memory", "3072"),
				limits("two", "huawei.com/Ascend310P", "1"),
			},
			want: map[string]string{
				"hami.io/Ascend310P-devices-to-allocate": "b,Ascend310P,3072,0:;a,Ascend310P,21527,0:;",
				"hami.io/Ascend310P-devices-allocated":   "b,Ascend310P,3072,0:;a,Ascend310P,21527,0:;",
				"huawei.com/Ascend310P":                  `[{"UUID":"b","temp":"vir01","memory":3072},{"UUID":"a","memory":21527}]`,
				"predicate-time":                         "1700000000",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			annos := map[string]string{RegisterAnnotation(tt.cfg.CommonWord): tt.register}
			maps.Copy(annos, tt.nodeAnnos)
			cards, err := v.Inventory(node(annos, corev1.ResourceList{v.Resources().Count: resource.MustParse("8")}))
			if err != nil {
				t.Fatal(err)
			}
			p := pod(tt.podAnnos, tt.containers...)
			req, err := v.ParsePod(p)
			if err != nil {
				t.Fatal(err)
			}
			a, rej := v.Fit(cards, make([]devices.Usage, len(cards)), &req)
			if rej != nil {
				t.Fatal(rej.Reason())
			}
			toAllocate, allocated := v.AssignmentAnnotations()
			got := map[string]string{toAllocate: devices.EncodeAssignment(a), allocated: devices.EncodeAssignment(a)}
			extras, err := v.AssignmentExtras(p, a, now)
			if err != nil {
				t.Fatal(err)
			}
			maps.Copy(got, extras)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("annotations =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}

	v := mustNew(t, chip(t, "Ascend910B3"))
	if extras, err := v.AssignmentExtras(pod(nil), devices.Assignment{nil, nil}, now); extras != nil || err != nil {
		t.Errorf("AssignmentExtras(empty) = %v, %v; want nothing", extras, err)
	}
}

func TestScoreAssignment(t *testing.T) {
	cards := npuCards("Ascend910B3", 0, 1, 1, 1)
	grant := func(ids ...int) []devices.Grant {
		var gs []devices.Grant
		for _, id := range ids {
			gs = append(gs, devices.Grant{UUID: fmt.Sprintf("npu-%d", id)})
		}
		return gs
	}
	b3 := mustNew(t, chip(t, "Ascend910B3"))
	for _, tt := range []struct {
		name  string
		v     *Vendor
		cards []devices.Card
		a     devices.Assignment
		want  float64
	}{
		{"one group", b3, cards, devices.Assignment{grant(1, 2)}, 10},
		{"split 1 and 2", b3, cards, devices.Assignment{grant(0, 1, 2)}, 10 * 2.0 / 3},
		{"two containers", b3, cards, devices.Assignment{grant(0), nil, grant(0, 1)}, 15},
		{"NPU without NetworkID", b3, npuCards("Ascend910B3", NoNetworkID, NoNetworkID), devices.Assignment{grant(0, 1)}, 0},
		{"not a 910", mustNew(t, chip(t, "Ascend310P")), cards, devices.Assignment{grant(1, 2)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.ScoreAssignment(tt.cards, tt.a); got < tt.want-1e-9 || got > tt.want+1e-9 {
				t.Errorf("ScoreAssignment() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDefaultInPod: HAMi's Ascend admission rules, one per row.
func TestDefaultInPod(t *testing.T) {
	b3 := chip(t, "Ascend910B3")
	b3Runtime := b3
	b3Runtime.RuntimeClassName = "ascend"
	b3Env := b3
	b3Env.OverwriteEnv = true
	memOf := func(cw, mem string) corev1.ResourceList { return res("huawei.com/"+cw+"-memory", mem) }
	tests := []struct {
		name         string
		cfg          Config
		podAnnos     map[string]string
		ctr          corev1.Container
		want         bool
		wantErr      string
		wantLimits   corev1.ResourceList // checked names only
		wantRequests corev1.ResourceList
		wantRuntime  string
		wantEnv      []corev1.EnvVar
	}{
		{name: "no NPU", cfg: b3, ctr: limits("main", "nvidia.com/gpu", "1")},
		{name: "overwriteEnv on a container without the chip", cfg: b3Env, ctr: limits("main"), wantEnv: []corev1.EnvVar{{Name: "ASCEND_VISIBLE_DEVICES", Value: ""}}},
		{name: "910B3 2000 -> 16384", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "2000"), want: true, wantLimits: memOf("Ascend910B3", "16384"), wantRequests: memOf("Ascend910B3", "16384")},
		{name: "910B3 20000 -> 32768", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "20000"), want: true, wantLimits: memOf("Ascend910B3", "32768")},
		{name: "910B3 40000 -> 65536", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "40000"), want: true, wantLimits: memOf("Ascend910B3", "65536")},
		{name: "910B3 70000 refused", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "70000"), wantErr: "above the NPU's memory capacity"},
		{name: "310P 13000 -> 21527", cfg: chip(t, "Ascend310P"), ctr: limits("main", "huawei.com/Ascend310P", "1", "huawei.com/Ascend310P-memory", "13000"), want: true, wantLimits: memOf("Ascend310P", "21527")},
		{name: "HAMi fixture: 910A 20000 -> 32768", cfg: chip(t, "Ascend910A"), ctr: limits("main", "huawei.com/Ascend910A", "1", "huawei.com/Ascend910A-memory", "20000"), want: true, wantLimits: memOf("Ascend910A", "32768"), wantRequests: memOf("Ascend910A", "32768")},
		{name: "HAMi fixture: 910A 2 x 40000 refused", cfg: chip(t, "Ascend910A"), ctr: limits("main", "huawei.com/Ascend910A", "2", "huawei.com/Ascend910A-memory", "40000"), wantErr: "capacity"},
		{name: "HAMi fixture: 910A 2 x vir08 is a multi-vNPU", cfg: chip(t, "Ascend910A"), ctr: limits("main", "huawei.com/Ascend910A", "2", "huawei.com/Ascend910A-memory", "8738"), want: true, wantErr: ErrMultiVNPU.Error()},
		{name: "no memory: whole NPU written", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "2"), want: true, wantLimits: memOf("Ascend910B3", "65536"), wantRequests: memOf("Ascend910B3", "65536")},
		{name: "memory 0: smallest template", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "0"), want: true, wantLimits: memOf("Ascend910B3", "16384")},
		{name: "cores outside hami-core refused", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core", "5"), wantErr: "only supported in hami-core"},
		{name: "cores 0 outside hami-core allowed", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core", "0"), want: true},
		{name: "hami-core keeps raw memory and cores", cfg: b3, podAnnos: hamiCorePod, ctr: limits("main", "huawei.com/Ascend910B3", "2", "huawei.com/Ascend910B3-memory", "2000", "huawei.com/Ascend910B3-core", "5"), want: true, wantLimits: memOf("Ascend910B3", "2000"), wantRequests: memOf("Ascend910B3", "2000")},
		{
			name: "910C super pod: 1 becomes 2", cfg: chip(t, "Ascend910C"),
			ctr: corev1.Container{Resources: corev1.ResourceRequirements{
				Limits: res("huawei.com/Ascend910C", "1"), Requests: res("huawei.com/Ascend910C", "1"),
			}},
			want: true, wantLimits: res("huawei.com/Ascend910C", "2", "huawei.com/Ascend910C-memory", "65536"), wantRequests: res("huawei.com/Ascend910C", "2"),
		},
		{name: "910C super pod: 3 refused", cfg: chip(t, "Ascend910C"), ctr: limits("main", "huawei.com/Ascend910C", "3"), wantErr: "must be 1 or 2*n, got 3"},
		{name: "910C super pod: 4 kept", cfg: chip(t, "Ascend910C"), ctr: limits("main", "huawei.com/Ascend910C", "4"), want: true, wantLimits: res("huawei.com/Ascend910C", "4")},
		{name: "runtime class", cfg: b3Runtime, ctr: limits("main", "huawei.com/Ascend910B3", "1"), want: true, wantRuntime: "ascend"},
		{name: "fractional count", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "0.5"), wantErr: "not a whole number"},
		{name: "count 0 asks nothing", cfg: b3, ctr: limits("main", "huawei.com/Ascend910B3", "0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, tt.cfg)
			p := pod(tt.podAnnos, tt.ctr)
			ctr := &p.Spec.Containers[0]
			got, err := v.DefaultInPod(p, ctr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != tt.want {
					t.Fatalf("DefaultInPod() = %v, %v; want %v and an error containing %q", got, err, tt.want, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("DefaultInPod() = %v, %v; want %v", got, err, tt.want)
			}
			for name, q := range tt.wantLimits {
				if have := ctr.Resources.Limits[name]; have.Cmp(q) != 0 {
					t.Errorf("limits %s = %s, want %s", name, have.String(), q.String())
				}
			}
			for name, q := range tt.wantRequests {
				if have := ctr.Resources.Requests[name]; have.Cmp(q) != 0 {
					t.Errorf("requests %s = %s, want %s", name, have.String(), q.String())
				}
			}
			if rc := p.Spec.RuntimeClassName; (rc == nil) != (tt.wantRuntime == "") || (rc != nil && *rc != tt.wantRuntime) {
				t.Errorf("runtimeClassName = %v, want %q", rc, tt.wantRuntime)
			}
			if !reflect.DeepEqual(ctr.Env, tt.wantEnv) {
				t.Errorf("env = %v, want %v", ctr.Env, tt.wantEnv)
			}
			// Defaulting twice changes nothing more.
			again := ctr.DeepCopy()
			if _, err := v.DefaultInPod(p, again); err != nil || !reflect.DeepEqual(again, ctr) {
				t.Errorf("second DefaultInPod() = %v, changed %+v", err, again)
			}
		})
	}

	// The runtime class a pod names is kept; Default is the hard split.
	v := mustNew(t, b3Runtime)
	p := pod(nil, limits("main", "huawei.com/Ascend910B3", "1"))
	p.Spec.RuntimeClassName = new(string)
	*p.Spec.RuntimeClassName = "mine"
	if _, err := v.DefaultInPod(p, &p.Spec.Containers[0]); err != nil || *p.Spec.RuntimeClassName != "mine" {
		t.Errorf("runtime class = %q, %v", *p.Spec.RuntimeClassName, err)
	}
	ctr := limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-core", "5")
	if _, err := v.Default(&ctr); err == nil {
		t.Error("Default() accepted cores without the pod's hami-core mode")
	}
}

func FuzzInventory(f *testing.F) {
	for _, seed := range []struct{ register, cordon, hamiCore string }{
		{specRegister, "", ""},
		{specRegister, "npu-0", "true"},
		{hamiRegister, "", "false"},
		{`[{"id":"npu-0","type":"Ascend910B3","custominfo":{"NetworkID":1e300}},{"id":"npu-1","type":"Ascend910B3","custominfo":null}]`, "", ""},
		{`[{"id":"npu-0","type":"Ascend910B3","custominfo":[]}]`, "", ""},
		{`[{"id":"npu-0","type":"Ascend910B3","custominfo":{"NetworkID":-1}}]`, "", ""},
		{"npu-0,4,65536,20,Ascend910B3,0,true:", "", ""},
		{"[]", "", ""},
		{"", "", ""},
	} {
		f.Add(seed.register, seed.cordon, seed.hamiCore)
	}
	v := mustNew(f, chip(f, "Ascend910B3"))
	c := mustNew(f, chip(f, "Ascend910C"))
	f.Fuzz(func(t *testing.T, register, cordon, hamiCore string) {
		n := node(map[string]string{
			"hami.io/node-register-Ascend910B3": register, "hami.io/node-register-Ascend910C": register,
			devices.DeviceCordon: cordon, NodeHAMiCoreAnnotation: hamiCore,
		}, res("huawei.com/Ascend910B3", "4", "huawei.com/Ascend910C", "4"))
		for _, vendor := range []*Vendor{v, c} {
			cards, err := vendor.Inventory(n)
			if err != nil {
				if cards != nil {
					t.Fatalf("Inventory returned cards with error %v", err)
				}
				if !strings.Contains(err.Error(), vendor.registerKey) {
					t.Fatalf("error %q does not name %s", err, vendor.registerKey)
				}
				continue
			}
			for _, card := range cards {
				// A negative count or memory is kept, as unhealthy
				// (devices.DecodeInventory); a healthy card has none.
				if card.UUID == "" || (card.Healthy && (card.Split < 0 || card.MemoryMiB < 0)) || card.Group < NoNetworkID ||
					(card.Mode != ModeHAMiCore && card.Mode != ModeTemplate) {
					t.Fatalf("Inventory(%q) returned an invalid card %+v", register, card)
				}
			}
			for _, annos := range []map[string]string{nil, hamiCorePod} {
				for _, count := range []int32{1, 2, 3} {
					req := devices.PodRequest{Containers: []devices.Request{{Count: count, MemoryPercent: 50, Cores: 10}}}
					if annos != nil {
						req.Preferences.Mode = ModeHAMiCore
					}
					used := make([]devices.Usage, len(cards))
					a, rej := vendor.Fit(cards, used, &req)
					if rej != nil {
						if rej.Reason() == "" {
							t.Fatal("empty rejection reason")
						}
						continue
					}
					if len(a) != 1 || len(a[0]) != int(count) {
						t.Fatalf("Fit() = %v for %d NPUs", a, count)
					}
					_ = vendor.ScoreAssignment(cards, a)
					if _, err := vendor.AssignmentExtras(pod(annos), a, time.Unix(0, 0)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	})
}

// BenchmarkFit places pods on an 8-NPU node, one NPU in four shared.
func BenchmarkFit(b *testing.B) {
	for _, bm := range []struct {
		name       string
		chip       string
		networkIDs []int
		annos      map[string]string
		ctr        corev1.Container
	}{
		{name: "910B3 one vNPU", chip: "Ascend910B3", ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384")},
		{name: "910B3 hami-core", chip: "Ascend910B3", annos: hamiCorePod, ctr: limits("main", "huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "8192", "huawei.com/Ascend910B3-core", "20")},
		{name: "910B3 four NPUs by NetworkID", chip: "Ascend910B3", networkIDs: []int{0, 0, 0, 0, 1, 1, 1, 1}, ctr: limits("main", "huawei.com/Ascend910B3", "4")},
		{name: "910C four NPUs in modules", chip: "Ascend910C", ctr: limits("main", "huawei.com/Ascend910C", "4")},
	} {
		v := mustNew(b, chip(b, bm.chip))
		cards := make([]devices.Card, 8)
		used := make([]devices.Usage, 8)
		for i := range cards {
			id := NoNetworkID
			if bm.networkIDs != nil {
				id = bm.networkIDs[i]
			}
			cards[i] = npuCard(bm.chip, fmt.Sprintf("npu-%d", i), i, id, ModeHAMiCore)
			if i%4 == 3 {
				used[i] = devices.Usage{Sharers: 1, MemoryMiB: 16384}
			}
		}
		req, err := v.ParsePod(pod(bm.annos, bm.ctr))
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

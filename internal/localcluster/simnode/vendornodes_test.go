package simnode

import (
	"strings"
	"testing"

	hamiconfig "github.com/hami-scheduler/hami-scheduler/apis/config"
	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
	"github.com/hami-scheduler/hami-scheduler/devices/ascend"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
	"github.com/hami-scheduler/hami-scheduler/devices/vendors"
)

// chartDeviceConfig is HAMi v2.10's chart-default device-config.yaml.
const chartDeviceConfig = "../../../test/testdata/device-config.yaml"

// chartRegistry is every vendor HAMi's chart enables, Ascend and Iluvatar
// switched on: what a scheduler on a mixed cluster runs.
func chartRegistry(t testing.TB) *devices.Registry {
	t.Helper()
	settings, err := hamiconfig.FromDeviceConfigFile(chartDeviceConfig, deviceconfig.Options{EnableAscend: true, EnableIluvatar: true})
	if err != nil {
		t.Fatal(err)
	}
	registry, err := vendors.NewRegistry(settings.Configs)
	if err != nil {
		t.Fatal(err)
	}
	return registry
}

// Every simulated node decodes, with the real vendor packages as the
// scheduler configures them from HAMi's chart, to the cards its spec
// says, and to no card of any other vendor.
func TestVendorNodesDecode(t *testing.T) {
	registry := chartRegistry(t)
	tests := []struct {
		spec string
		// vendor is the devices.Vendor name that must find the cards.
		vendor string
		// split, memory and cores are what each card must register.
		split, memory, cores int32
		model                string
	}{
		{"1 node x 8 cards of Ascend910B4 32 GiB", "Ascend910B4", 4, 32768, 20, "Ascend910B4"},
		{"1 node x 2 cards of Ascend910B3 64 GiB, split 2", "Ascend910B3", 2, 65536, 20, "Ascend910B3"},
		{"1 node x 4 cards of Iluvatar BI-V150 32 GiB", "BI-V150", 10, 32768, 100, "BI-V150"},
		{"1 node x 4 cards of Hygon DCU Z100 32 GiB", "DCU", 4, 32768, 100, "DCU-Z100"},
		{"1 node x 4 cards of Cambricon MLU370 24 GiB", "MLU", 100, 24576, 100, "MLU"},
		{"1 node x 2 cards of MetaX sGPU C500 64 GiB", "Metax-SGPU", 16, 65536, 100, "Metax-SGPU"},
		{"1 node x 4 cards of MetaX C500 64 GiB", "Metax-GPU", 1, 65536, 100, "Metax-GPU"},
		{"1 node x 8 cards of Kunlun vXPU P800 96 GiB", "XPU", 4, 98304, 100, "Kunlun vXPU P800"},
		{"1 node x 8 cards of Kunlun P800 XPU 96 GiB", "kunlun", 100, 98304, 100, "kunlun"},
		{"1 node x 4 cards of Moore Threads MTT S4000 48 GiB", "Mthreads", 100, 49152, 16, "Mthreads"},
		{"1 node x 4 cards of AWS Neuron Trainium 32 GiB", "AWSNeuron", 2, 0, 3, "AWSNeuron"},
		{"1 node x 4 cards of AMD Instinct MI300X 192 GiB, cores 304", "AMD", 4, 196608, 304, "AMD Instinct MI300X"},
		{"1 node x 2 cards of Enflame DRS S60 40 GiB", "Enflame", 6, 40960, 100, "Enflame"},
		{"1 node x 4 cards of Enflame GCU S60 48 GiB", "GCU", 1, 100, 100, "GCU"},
		{"1 node x 4 cards of Vastai VA1 16 GiB", "Vastai", 1, 16384, 100, "Vastai VA1"},
		{"1 node x 4 cards of Biren BR104 32 GiB", "Biren", 1, 32768, 100, "BR104"},
		{"1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB", "NVIDIA", 10, 40960, 100, "NVIDIA A100-SXM4-40GB"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			spec, err := ParseSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			covered[kindOf(spec).vendor] = true
			node := spec.Build("n", 0)[0]
			found := false
			for _, v := range registry.Vendors() {
				cards, err := v.Inventory(node)
				if err != nil {
					t.Errorf("%s.Inventory: %v", v.Name(), err)
					continue
				}
				if v.Name() != tt.vendor {
					if len(cards) > 0 {
						t.Errorf("%s finds %d cards on a %s node", v.Name(), len(cards), tt.vendor)
					}
					continue
				}
				found = true
				if len(cards) != spec.Cards {
					t.Fatalf("%s finds %d cards, want %d", v.Name(), len(cards), spec.Cards)
				}
				for i, c := range cards {
					if c.Index != i || c.Split != tt.split || c.MemoryMiB != tt.memory || c.Cores != tt.cores || c.Model != tt.model || !c.Healthy {
						t.Errorf("card %d = index %d split %d memory %d cores %d model %q healthy %v; want index %d split %d memory %d cores %d model %q healthy",
							i, c.Index, c.Split, c.MemoryMiB, c.Cores, c.Model, c.Healthy, i, tt.split, tt.memory, tt.cores, tt.model)
					}
				}
			}
			if !found {
				t.Errorf("no enabled vendor is named %s", tt.vendor)
			}
			// String renders what ParseSpec reads back.
			if again, err := ParseSpec(spec.String()); err != nil || again != spec {
				t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", spec.String(), again, err, spec)
			}
		})
	}
	for _, k := range kinds {
		if !covered[k.vendor] {
			t.Errorf("vendor %s has no case", k.vendor)
		}
	}
}

// AddTo gives a node a second vendor's cards; both vendors find theirs.
func TestAddTo(t *testing.T) {
	registry := chartRegistry(t)
	nv, err := ParseSpec("1 node x 2 cards of NVIDIA A100-SXM4-40GB 40 GiB")
	if err != nil {
		t.Fatal(err)
	}
	npu, err := ParseSpec("1 node x 4 cards of Ascend910B4 32 GiB")
	if err != nil {
		t.Fatal(err)
	}
	node := nv.Build("n", 0)[0]
	npu.AddTo(node)
	got := map[string]int{}
	for _, v := range registry.Vendors() {
		cards, err := v.Inventory(node)
		if err != nil {
			t.Errorf("%s.Inventory: %v", v.Name(), err)
		}
		if len(cards) > 0 {
			got[v.Name()] = len(cards)
		}
	}
	if len(got) != 2 || got["NVIDIA"] != 2 || got["Ascend910B4"] != 4 {
		t.Errorf("cards per vendor = %v, want NVIDIA 2 and Ascend910B4 4", got)
	}
}

func TestParseVendorSpecErrors(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"1 node x 1 card of Ascend999 32 GiB", "names no chip"},
		{"1 node x 1 card of Iluvatar X1 32 GiB", "names no chip"},
		{"1 node x 1 card of MetaX C500 32 GiB", "65536 MiB"},
		{"1 node x 1 card of Kunlun XPU 32 GiB", "98304 MiB"},
		{"1 node x 1 card of Cambricon MLU370 1000 MiB", "multiple of 256"},
		{"1 node x 1 card of Cambricon MLU370 24 GiB, split 10", "always register 100"},
		{"1 node x 1 card of MTT S4000 1000 MiB", "multiple of 512"},
		{"1 node x 1 card of Enflame DRS 4 GiB", "slices"},
		{"1 node x 1 card of AWS Neuron 32 GiB, split 64", "at most 30"},
		{"1 node x 1 card of Hygon DCU Z100 32 GiB, mig", "only NVIDIA"},
		{"1 node x 1 card of Hygon DCU:Z100 32 GiB", "separators"},
		{"1 node x 1 card of AMD MI300X;VF 32 GiB", "separators"},
		{"1 node x 1 card of Hygon DCU Z100 32 GiB, hami-core", "only Ascend"},
		{"1 node x 1 card of Tesla T4 15 GiB, hami-core", "only Ascend"},
		{"1 node x 1 card of Ascend910B3 64 GiB, hami-core 2", "takes no value"},
	}
	for _, tt := range tests {
		_, err := ParseSpec(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseSpec(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
		}
	}
}

// EveryVendorSpec has one group of every vendor.
func TestEveryVendorSpec(t *testing.T) {
	specs, err := ParseSpecs(EveryVendorSpec)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range specs {
		seen[kindOf(s).vendor]++
	}
	for _, k := range kinds {
		if seen[k.vendor] != 1 {
			t.Errorf("vendor %s has %d groups, want 1", k.vendor, seen[k.vendor])
		}
	}
}

// The model's words pick the vendor, most specific first; any other model
// is NVIDIA's.
func TestKindOfModel(t *testing.T) {
	tests := map[string]string{
		"NVIDIA A100-SXM4-40GB": "nvidia", "Tesla T4": "nvidia", "NVIDIA H100 80GB HBM3": "nvidia",
		"Ascend910B3": "ascend", "Ascend 910B4": "ascend", "Iluvatar MR-V100": "iluvatar", "BI-V150": "iluvatar",
		"Hygon DCU K100_AI": "hygon", "Cambricon MLU370-X8": "cambricon", "MetaX sGPU C500": "metax-sgpu",
		"MetaX C500": "metax", "Kunlun vXPU P800": "kunlun-vxpu", "Kunlun P800": "kunlun", "P800 XPU": "kunlun",
		"Moore Threads MTT S4000": "mthreads", "MTT S80": "mthreads", "AWS Inferentia2": "awsneuron",
		"AMD Instinct MI300X": "amd", "Enflame DRS S60": "enflame-drs", "Enflame S60": "enflame-gcu",
		"Vastai VA1": "vastai", "Biren BR104": "biren",
	}
	for model, want := range tests {
		if got := kindOfModel(model).vendor; got != want {
			t.Errorf("kindOfModel(%q) = %s, want %s", model, got, want)
		}
	}
	listed := Vendors()
	if len(listed) != len(kinds) || !strings.HasPrefix(listed[len(listed)-1], "NVIDIA (nvidia): any other model") {
		t.Errorf("Vendors() = %q, want one line per vendor, NVIDIA last", listed)
	}
}

// MetaX GPU nodes carry the topology maps MetaX's plugin writes, and HAMi's
// node score reads them: no loss within half the cards, 100 across.
func TestMetaXTopology(t *testing.T) {
	spec, err := ParseSpec("1 node x 4 cards of MetaX C500 64 GiB")
	if err != nil {
		t.Fatal(err)
	}
	node := spec.Build("n", 0)[0]
	v, err := metax.NewGPU(devices.Config{Name: "metax"})
	if err != nil {
		t.Fatal(err)
	}
	grants := func(n int) devices.Assignment { return devices.Assignment{make([]devices.Grant, n)} }
	for _, tt := range []struct {
		cards  int
		policy devices.NodePolicy
		want   float64
	}{{1, devices.NodeBinpack, 2000}, {2, devices.NodeBinpack, 2000}, {3, devices.NodeBinpack, 1900}, {4, devices.NodeSpread, 1900}} {
		if got := v.ScoreNode(node, tt.policy, grants(tt.cards)); got != tt.want {
			t.Errorf("ScoreNode(%d cards, %s) = %g, want %g", tt.cards, tt.policy, got, tt.want)
		}
	}
}

// "hami-core" Ascend nodes support the soft split: their NPUs decode in
// hami-core mode; others in template mode.
func TestAscendHAMiCore(t *testing.T) {
	registry := chartRegistry(t)
	for _, tt := range []struct{ spec, mode string }{
		{"1 node x 2 cards of Ascend910B3 64 GiB, hami-core", ascend.ModeHAMiCore},
		{"1 node x 2 cards of Ascend910B3 64 GiB", ascend.ModeTemplate},
	} {
		spec, err := ParseSpec(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := ParseSpec(spec.String()); err != nil || again != spec {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", spec.String(), again, err, spec)
		}
		node := spec.Build("n", 0)[0]
		for _, v := range registry.Vendors() {
			if v.Name() != "Ascend910B3" {
				continue
			}
			cards, err := v.Inventory(node)
			if err != nil || len(cards) != 2 || cards[0].Mode != tt.mode {
				t.Errorf("%s: cards %+v, %v; want 2 in mode %s", tt.spec, cards, err, tt.mode)
			}
		}
	}
}

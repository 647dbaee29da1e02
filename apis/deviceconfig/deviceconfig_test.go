package deviceconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	vnpu "github.com/hami-scheduler/hami-scheduler/devices/ascend"
)

// chartDefault is HAMi v2.10.0's chart-rendered device-config.yaml.
const chartDefault = "../../test/testdata/device-config.yaml"

func ascend(chip, word string, alloc, capacity int64, factor, aiCore, aiCPU int32, superPod bool, templates ...AscendTemplate) AscendConfig {
	return AscendConfig{
		ChipName: chip, CommonWord: word,
		ResourceName:       "huawei.com/" + word,
		ResourceMemoryName: "huawei.com/" + word + "-memory",
		ResourceCoreName:   "huawei.com/" + word + "-core",
		MemoryAllocatable:  alloc, MemoryCapacity: capacity, MemoryFactor: factor,
		AICore: aiCore, AICPU: aiCPU, SuperPod: superPod, Templates: templates,
	}
}

func tpl(name string, memory int64, aiCore, aiCPU int32) AscendTemplate {
	return AscendTemplate{Name: name, Memory: memory, AICore: aiCore, AICPU: aiCPU}
}

func iluvatar(word string) Iluvatar {
	return Iluvatar{
		ChipName: word, CommonWord: word,
		ResourceCountName:  "iluvatar.ai/" + word + "-vgpu",
		ResourceMemoryName: "iluvatar.ai/" + word + ".vMem",
		ResourceCoreName:   "iluvatar.ai/" + word + ".vCore",
	}
}

// wantChartDefault is what every section of the chart's file decodes to.
func wantChartDefault() *Config {
	return &Config{
		NVIDIA: &NVIDIA{
			ResourceCountName:            "nvidia.com/gpu",
			ResourceMemoryName:           "nvidia.com/gpumem",
			ResourceCoreName:             "nvidia.com/gpucores",
			ResourceMemoryPercentageName: "nvidia.com/gpumem-percentage",
			ResourcePriorityName:         "nvidia.com/priority",
			OverwriteEnv:                 false,
			DefaultMemory:                0,
			DefaultCores:                 0,
			DefaultGPUNum:                1,
			MemoryFactor:                 1,
			MigProfileAllowlist: []MIGProfileAllowed{
				{Models: []string{"A30"}, Profiles: []string{"1g.6gb", "2g.12gb", "4g.24gb"}},
				{Models: []string{"A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"}, Profiles: []string{"1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"}},
				{Models: []string{"A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"}, Profiles: []string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.79gb"}},
				{Models: []string{"H100-PCIE-80GB", "H100-SXM5-80GB"}, Profiles: []string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}},
				{Models: []string{"H100-PCIE-94GB", "H100-SXM5-94GB"}, Profiles: []string{"1g.12gb", "2g.24gb", "3g.47gb", "7g.94gb"}},
				{Models: []string{"H20", "H100 on GH200"}, Profiles: []string{"1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb"}},
				{Models: []string{"H200 NVL", "H200-SXM5"}, Profiles: []string{"1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"}},
				{Models: []string{"B200"}, Profiles: []string{"1g.23gb", "2g.45gb", "3g.90gb", "7g.180gb"}},
				{Models: []string{"RTX PRO 6000 Blackwell Server Edition"}, Profiles: []string{"1g.24gb", "2g.48gb", "4g.96gb"}},
			},
			GPUCorePolicy:             "default",
			RuntimeClassName:          "",
			DeviceSplitCount:          ptr.To[int64](10),
			DeviceMemoryScaling:       ptr.To[float64](1),
			DeviceCoreScaling:         ptr.To[float64](1),
			PreConfiguredDeviceMemory: ptr.To[int64](0),
			LibCudaLogLevel:           ptr.To("1"),
			EnableNUMATopology:        ptr.To(false),
		},
		Cambricon: &Cambricon{
			ResourceCountName:  "cambricon.com/vmlu",
			ResourceMemoryName: "cambricon.com/mlu.smlu.vmemory",
			ResourceCoreName:   "cambricon.com/mlu.smlu.vcore",
		},
		Hygon: &Hygon{
			ResourceCountName:  "hygon.com/dcunum",
			ResourceMemoryName: "hygon.com/dcumem",
			ResourceCoreName:   "hygon.com/dcucores",
			MemoryFactor:       1,
		},
		MetaX: &MetaX{
			ResourceCountName:   "metax-tech.com/gpu",
			ResourceVCountName:  "metax-tech.com/sgpu",
			ResourceVMemoryName: "metax-tech.com/vmemory",
			ResourceVCoreName:   "metax-tech.com/vcore",
			SGPUTopologyAware:   false,
		},
		MThreads: &MThreads{
			ResourceCountName:  "mthreads.com/vgpu",
			ResourceMemoryName: "mthreads.com/sgpu-memory",
			ResourceCoreName:   "mthreads.com/sgpu-core",
		},
		Iluvatars: []Iluvatar{iluvatar("MR-V100"), iluvatar("MR-V50"), iluvatar("BI-V150"), iluvatar("BI-V100")},
		Enflame: &Enflame{
			ResourceNameGCU:       "enflame.com/gcu",
			ResourceNameDRSGCU:    "enflame.com/drs-gcu",
			ResourceNameGCUMemory: "enflame.com/gcu-memory",
			ResourceNameGCUCore:   "enflame.com/gcu-core",
		},
		Kunlun: &Kunlun{
			ResourceCountName:   "kunlunxin.com/xpu",
			ResourceVCountName:  "kunlunxin.com/vxpu",
			ResourceVMemoryName: "kunlunxin.com/vxpu-memory",
		},
		AWSNeuron: &AWSNeuron{ResourceCountName: "aws.amazon.com/neuron", ResourceCoreName: "aws.amazon.com/neuroncore"},
		AMD:       &AMD{ResourceCountName: "amd.com/gpu", ResourceMemoryName: "amd.com/gpumem", ResourceCoreName: "amd.com/gpucores"},
		Vastai:    &CountOnly{ResourceCountName: "vastaitech.com/va"},
		Biren:     &CountOnly{ResourceCountName: "birentech.com/gpu"},
		VNPUs: &AscendVNPU{
			HAMiVNPUCore: false,
			Configs: []AscendConfig{
				ascend("910A", "Ascend910A", 32768, 32768, 1, 30, 0, false,
					tpl("vir02", 2184, 2, 0), tpl("vir04", 4369, 4, 0), tpl("vir08", 8738, 8, 0), tpl("vir16", 17476, 16, 0)),
				ascend("910B2", "Ascend910B2", 65536, 65536, 1, 24, 6, false,
					tpl("vir03_1c_8g", 8192, 3, 1), tpl("vir06_1c_16g", 16384, 6, 1), tpl("vir12_3c_32g", 32768, 12, 3)),
				ascend("910B3", "Ascend910B3", 65536, 65536, 1, 20, 7, false,
					tpl("vir05_1c_16g", 16384, 5, 1), tpl("vir10_3c_32g", 32768, 10, 3)),
				ascend("910B4-1", "Ascend910B4-1", 65536, 65536, 1, 20, 7, false,
					tpl("vir05_1c_16g", 16384, 5, 1), tpl("vir10_3c_32g", 32768, 10, 3)),
				ascend("910B4", "Ascend910B4", 32768, 32768, 1, 20, 7, false,
					tpl("vir05_1c_8g", 8192, 5, 1), tpl("vir10_3c_16g", 16384, 10, 3)),
				ascend("310P3", "Ascend310P", 21527, 24576, 1, 8, 7, false,
					tpl("vir01", 3072, 1, 1), tpl("vir02", 6144, 2, 2), tpl("vir04", 12288, 4, 4)),
				// The chart gives 910C no memoryFactor.
				ascend("Ascend910", "Ascend910C", 65536, 65536, 0, 20, 7, true,
					tpl("vir05_1c_16g", 16384, 5, 1), tpl("vir10_3c_32g", 32768, 10, 3)),
			},
		},
	}
}

func loadChartDefault(t *testing.T) *Config {
	t.Helper()
	cfg, ignored, err := Load(chartDefault)
	if err != nil {
		t.Fatalf("Load(%s): %v", chartDefault, err)
	}
	if len(ignored) != 0 {
		t.Fatalf("Load(%s) ignored %q, want nothing: the file uses HAMi's schema only", chartDefault, ignored)
	}
	return cfg
}

func TestLoadChartDefault(t *testing.T) {
	cfg := loadChartDefault(t)
	if diff := cmp.Diff(wantChartDefault(), cfg); diff != "" {
		t.Errorf("chart default decoded wrong (-want +got):\n%s", diff)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("chart default does not validate: %v", errs)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		data        string
		want        *Config
		wantIgnored []string
		wantErr     string
	}{{
		name: "known keys only",
		data: "hygon:\n  resourceCountName: hygon.com/dcunum\n",
		want: &Config{Hygon: &Hygon{ResourceCountName: "hygon.com/dcunum"}},
	}, {
		name: "unknown keys at every level are decoded around and reported",
		data: `foo: 1
nvidia:
  resourceCountName: nvidia.com/gpu
  resourceCoresName: nvidia.com/gpucores
iluvatars:
- commonWord: MR-V100
  chip: x
vnpus:
  configs:
  - commonWord: Ascend910B3
    templates:
    - name: vir05
      memroy: 16384
`,
		want: &Config{
			NVIDIA:    &NVIDIA{ResourceCountName: "nvidia.com/gpu"},
			Iluvatars: []Iluvatar{{CommonWord: "MR-V100"}},
			VNPUs:     &AscendVNPU{Configs: []AscendConfig{{CommonWord: "Ascend910B3", Templates: []AscendTemplate{{Name: "vir05"}}}}},
		},
		wantIgnored: []string{
			"line 1: field foo not found in type deviceconfig.Config",
			"line 4: field resourceCoresName not found in type deviceconfig.NVIDIA",
			"line 7: field chip not found in type deviceconfig.Iluvatar",
			"line 13: field memroy not found in type deviceconfig.AscendTemplate",
		},
	}, {
		name:    "not YAML",
		data:    "nvidia: [\n",
		wantErr: "decode device config: yaml: line 1",
	}, {
		name:    "wrong type",
		data:    "nvidia:\n  defaultCores: all\n",
		wantErr: "cannot unmarshal !!str `all` into int32",
	}, {
		name: "a negative split count decodes (HAMi's is a uint); Validate reports it",
		data: "nvidia:\n  deviceSplitCount: -1\n",
		want: &Config{NVIDIA: &NVIDIA{DeviceSplitCount: ptr.To[int64](-1)}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ignored, err := Parse([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse() config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantIgnored, ignored); diff != "" {
				t.Errorf("Parse() ignored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "read device config") {
		t.Errorf("Load(missing) error = %v, want a read error", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("nvidia: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "decode device config") {
		t.Errorf("Load(bad) error = %v, want a decode error", err)
	}
}

// TestValidate changes one setting of the chart default per row and wants
// exactly the listed errors ("<type> <field path>").
func TestValidate(t *testing.T) {
	const badName = "not a name!"
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string
	}{
		{"chart default", func(*Config) {}, nil},
		{"every section empty", func(c *Config) { *c = Config{} }, []string{"FieldValueRequired <nil>"}},
		{"only an empty vnpus list", func(c *Config) { *c = Config{VNPUs: &AscendVNPU{HAMiVNPUCore: true}} }, []string{"FieldValueRequired <nil>"}},
		{"one empty section is not empty", func(c *Config) { *c = Config{Biren: &CountOnly{}} }, nil},

		{"nvidia.resourceCountName", func(c *Config) { c.NVIDIA.ResourceCountName = badName }, []string{"FieldValueInvalid nvidia.resourceCountName"}},
		{"nvidia.resourceMemoryName", func(c *Config) { c.NVIDIA.ResourceMemoryName = badName }, []string{"FieldValueInvalid nvidia.resourceMemoryName"}},
		{"nvidia.resourceCoreName", func(c *Config) { c.NVIDIA.ResourceCoreName = badName }, []string{"FieldValueInvalid nvidia.resourceCoreName"}},
		{"nvidia.resourceMemoryPercentageName", func(c *Config) { c.NVIDIA.ResourceMemoryPercentageName = badName }, []string{"FieldValueInvalid nvidia.resourceMemoryPercentageName"}},
		{"nvidia.resourcePriorityName", func(c *Config) { c.NVIDIA.ResourcePriorityName = badName }, []string{"FieldValueInvalid nvidia.resourcePriorityName"}},
		{"empty resource names are allowed", func(c *Config) { c.NVIDIA.ResourceMemoryName, c.NVIDIA.ResourceCoreName = "", "" }, nil},
		{"nvidia.defaultMemory", func(c *Config) { c.NVIDIA.DefaultMemory = -1 }, []string{"FieldValueInvalid nvidia.defaultMemory"}},
		{"nvidia.defaultCores below 0", func(c *Config) { c.NVIDIA.DefaultCores = -1 }, []string{"FieldValueInvalid nvidia.defaultCores"}},
		{"nvidia.defaultCores above 100", func(c *Config) { c.NVIDIA.DefaultCores = 101 }, []string{"FieldValueInvalid nvidia.defaultCores"}},
		{"nvidia.defaultCores 100", func(c *Config) { c.NVIDIA.DefaultCores = 100 }, nil},
		{"nvidia.defaultGPUNum", func(c *Config) { c.NVIDIA.DefaultGPUNum = -1 }, []string{"FieldValueInvalid nvidia.defaultGPUNum"}},
		{"nvidia.memoryFactor", func(c *Config) { c.NVIDIA.MemoryFactor = -1 }, []string{"FieldValueInvalid nvidia.memoryFactor"}},
		{"nvidia.gpuCorePolicy", func(c *Config) { c.NVIDIA.GPUCorePolicy = "always" }, []string{"FieldValueNotSupported nvidia.gpuCorePolicy"}},
		{"nvidia.gpuCorePolicy force", func(c *Config) { c.NVIDIA.GPUCorePolicy = "force" }, nil},
		{"nvidia.gpuCorePolicy unset", func(c *Config) { c.NVIDIA.GPUCorePolicy = "" }, nil},
		{"nvidia.runtimeClassName", func(c *Config) { c.NVIDIA.RuntimeClassName = "Not_DNS" }, []string{"FieldValueInvalid nvidia.runtimeClassName"}},
		{"nvidia.runtimeClassName valid", func(c *Config) { c.NVIDIA.RuntimeClassName = "nvidia" }, nil},
		{"nvidia.deviceSplitCount", func(c *Config) { c.NVIDIA.DeviceSplitCount = ptr.To[int64](-1) }, []string{"FieldValueInvalid nvidia.deviceSplitCount"}},
		{"nvidia.deviceMemoryScaling", func(c *Config) { c.NVIDIA.DeviceMemoryScaling = ptr.To(-0.5) }, []string{"FieldValueInvalid nvidia.deviceMemoryScaling"}},
		{"nvidia.deviceCoreScaling", func(c *Config) { c.NVIDIA.DeviceCoreScaling = ptr.To(-0.5) }, []string{"FieldValueInvalid nvidia.deviceCoreScaling"}},
		{"nvidia.migProfileAllowlist[].models", func(c *Config) { c.NVIDIA.MigProfileAllowlist[1].Models = nil }, []string{"FieldValueRequired nvidia.migProfileAllowlist[1].models"}},
		{"nvidia.migProfileAllowlist[].profiles", func(c *Config) { c.NVIDIA.MigProfileAllowlist[2].Profiles = nil }, []string{"FieldValueRequired nvidia.migProfileAllowlist[2].profiles"}},
		{"nvidia.migProfileAllowlist[].profiles[]", func(c *Config) { c.NVIDIA.MigProfileAllowlist[0].Profiles[1] = "2g" }, []string{"FieldValueInvalid nvidia.migProfileAllowlist[0].profiles[1]"}},

		{"cambricon.resourceCountName", func(c *Config) { c.Cambricon.ResourceCountName = badName }, []string{"FieldValueInvalid cambricon.resourceCountName"}},
		{"cambricon.resourceMemoryName", func(c *Config) { c.Cambricon.ResourceMemoryName = badName }, []string{"FieldValueInvalid cambricon.resourceMemoryName"}},
		{"cambricon.resourceCoreName", func(c *Config) { c.Cambricon.ResourceCoreName = badName }, []string{"FieldValueInvalid cambricon.resourceCoreName"}},
		{"hygon.resourceCountName", func(c *Config) { c.Hygon.ResourceCountName = badName }, []string{"FieldValueInvalid hygon.resourceCountName"}},
		{"hygon.resourceMemoryName", func(c *Config) { c.Hygon.ResourceMemoryName = badName }, []string{"FieldValueInvalid hygon.resourceMemoryName"}},
		{"hygon.resourceCoreName", func(c *Config) { c.Hygon.ResourceCoreName = badName }, []string{"FieldValueInvalid hygon.resourceCoreName"}},
		{"hygon.memoryFactor", func(c *Config) { c.Hygon.MemoryFactor = -1 }, []string{"FieldValueInvalid hygon.memoryFactor"}},
		{"metax.resourceCountName", func(c *Config) { c.MetaX.ResourceCountName = badName }, []string{"FieldValueInvalid metax.resourceCountName"}},
		{"metax.resourceVCountName", func(c *Config) { c.MetaX.ResourceVCountName = badName }, []string{"FieldValueInvalid metax.resourceVCountName"}},
		{"metax.resourceVMemoryName", func(c *Config) { c.MetaX.ResourceVMemoryName = badName }, []string{"FieldValueInvalid metax.resourceVMemoryName"}},
		{"metax.resourceVCoreName", func(c *Config) { c.MetaX.ResourceVCoreName = badName }, []string{"FieldValueInvalid metax.resourceVCoreName"}},
		{"mthreads.resourceCountName", func(c *Config) { c.MThreads.ResourceCountName = badName }, []string{"FieldValueInvalid mthreads.resourceCountName"}},
		{"mthreads.resourceMemoryName", func(c *Config) { c.MThreads.ResourceMemoryName = badName }, []string{"FieldValueInvalid mthreads.resourceMemoryName"}},
		{"mthreads.resourceCoreName", func(c *Config) { c.MThreads.ResourceCoreName = badName }, []string{"FieldValueInvalid mthreads.resourceCoreName"}},
		{"iluvatars[].commonWord required", func(c *Config) { c.Iluvatars[1].CommonWord = "" }, []string{"FieldValueRequired iluvatars[1].commonWord"}},
		{"iluvatars[].commonWord duplicate", func(c *Config) { c.Iluvatars[3].CommonWord = "MR-V100" }, []string{"FieldValueDuplicate iluvatars[3].commonWord"}},
		{"iluvatars[].resourceCountName", func(c *Config) { c.Iluvatars[2].ResourceCountName = badName }, []string{"FieldValueInvalid iluvatars[2].resourceCountName"}},
		{"iluvatars[].resourceMemoryName", func(c *Config) { c.Iluvatars[2].ResourceMemoryName = badName }, []string{"FieldValueInvalid iluvatars[2].resourceMemoryName"}},
		{"iluvatars[].resourceCoreName", func(c *Config) { c.Iluvatars[2].ResourceCoreName = badName }, []string{"FieldValueInvalid iluvatars[2].resourceCoreName"}},
		{"enflame.resourceNameGCU", func(c *Config) { c.Enflame.ResourceNameGCU = badName }, []string{"FieldValueInvalid enflame.resourceNameGCU"}},
		{"enflame.resourceNameDRSGCU", func(c *Config) { c.Enflame.ResourceNameDRSGCU = badName }, []string{"FieldValueInvalid enflame.resourceNameDRSGCU"}},
		{"enflame.resourceNameGCUMemory", func(c *Config) { c.Enflame.ResourceNameGCUMemory = badName }, []string{"FieldValueInvalid enflame.resourceNameGCUMemory"}},
		{"enflame.resourceNameGCUCore", func(c *Config) { c.Enflame.ResourceNameGCUCore = badName }, []string{"FieldValueInvalid enflame.resourceNameGCUCore"}},
		{"enflame.resourceNameVGCU", func(c *Config) { c.Enflame.ResourceNameVGCU = badName }, []string{"FieldValueInvalid enflame.resourceNameVGCU"}},
		{"enflame.resourceNameVGCUPercentage", func(c *Config) { c.Enflame.ResourceNameVGCUPercentage = badName }, []string{"FieldValueInvalid enflame.resourceNameVGCUPercentage"}},
		{"kunlun.resourceCountName", func(c *Config) { c.Kunlun.ResourceCountName = badName }, []string{"FieldValueInvalid kunlun.resourceCountName"}},
		{"kunlun.resourceVCountName", func(c *Config) { c.Kunlun.ResourceVCountName = badName }, []string{"FieldValueInvalid kunlun.resourceVCountName"}},
		{"kunlun.resourceVMemoryName", func(c *Config) { c.Kunlun.ResourceVMemoryName = badName }, []string{"FieldValueInvalid kunlun.resourceVMemoryName"}},
		{"awsneuron.resourceCountName", func(c *Config) { c.AWSNeuron.ResourceCountName = badName }, []string{"FieldValueInvalid awsneuron.resourceCountName"}},
		{"awsneuron.resourceCoreName", func(c *Config) { c.AWSNeuron.ResourceCoreName = badName }, []string{"FieldValueInvalid awsneuron.resourceCoreName"}},
		{"amd.resourceCountName", func(c *Config) { c.AMD.ResourceCountName = badName }, []string{"FieldValueInvalid amd.resourceCountName"}},
		{"amd.resourceMemoryName", func(c *Config) { c.AMD.ResourceMemoryName = badName }, []string{"FieldValueInvalid amd.resourceMemoryName"}},
		{"amd.resourceCoreName", func(c *Config) { c.AMD.ResourceCoreName = badName }, []string{"FieldValueInvalid amd.resourceCoreName"}},
		{"vastai.resourceCountName", func(c *Config) { c.Vastai.ResourceCountName = badName }, []string{"FieldValueInvalid vastai.resourceCountName"}},
		{"biren.resourceCountName", func(c *Config) { c.Biren.ResourceCountName = badName }, []string{"FieldValueInvalid biren.resourceCountName"}},
		{"vnpus.configs[].commonWord required", func(c *Config) { c.VNPUs.Configs[0].CommonWord = "" }, []string{"FieldValueRequired vnpus.configs[0].commonWord"}},
		{"vnpus.configs[].commonWord duplicate", func(c *Config) { c.VNPUs.Configs[4].CommonWord = "Ascend910B3" }, []string{"FieldValueDuplicate vnpus.configs[4].commonWord"}},
		{"vnpus.configs[].resourceName", func(c *Config) { c.VNPUs.Configs[2].ResourceName = badName }, []string{"FieldValueInvalid vnpus.configs[2].resourceName"}},
		{"vnpus.configs[].resourceMemoryName", func(c *Config) { c.VNPUs.Configs[2].ResourceMemoryName = badName }, []string{"FieldValueInvalid vnpus.configs[2].resourceMemoryName"}},
		{"vnpus.configs[].resourceCoreName", func(c *Config) { c.VNPUs.Configs[2].ResourceCoreName = badName }, []string{"FieldValueInvalid vnpus.configs[2].resourceCoreName"}},
		{"vnpus.configs[].memoryAllocatable", func(c *Config) { c.VNPUs.Configs[1].MemoryAllocatable = -1 }, []string{"FieldValueInvalid vnpus.configs[1].memoryAllocatable"}},
		{"vnpus.configs[].memoryCapacity", func(c *Config) { c.VNPUs.Configs[1].MemoryCapacity = -1 }, []string{"FieldValueInvalid vnpus.configs[1].memoryCapacity"}},
		{"vnpus.configs[].memoryFactor", func(c *Config) { c.VNPUs.Configs[1].MemoryFactor = -1 }, []string{"FieldValueInvalid vnpus.configs[1].memoryFactor"}},
		{"vnpus.configs[].templates[].name", func(c *Config) { c.VNPUs.Configs[5].Templates[2].Name = "" }, []string{"FieldValueRequired vnpus.configs[5].templates[2].name"}},
		{"vnpus.configs[].templates[].memory zero", func(c *Config) { c.VNPUs.Configs[5].Templates[0].Memory = 0 }, []string{"FieldValueInvalid vnpus.configs[5].templates[0].memory"}},
		{"vnpus.configs[].templates[].memory negative", func(c *Config) { c.VNPUs.Configs[5].Templates[0].Memory = -3 }, []string{"FieldValueInvalid vnpus.configs[5].templates[0].memory"}},

		{"errors accumulate across sections", func(c *Config) {
			c.NVIDIA.DefaultCores = 200
			c.Hygon.MemoryFactor = -2
			c.VNPUs.Configs[6].Templates[1].Name = ""
		}, []string{
			"FieldValueInvalid nvidia.defaultCores",
			"FieldValueInvalid hygon.memoryFactor",
			"FieldValueRequired vnpus.configs[6].templates[1].name",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := wantChartDefault()
			tt.mutate(c)
			var got []string
			for _, e := range c.Validate() {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVendorsChartDefault: the chart's nvidia and hygon sections become
// the NVIDIA and Hygon vendors' settings; every other section is listed as
// enabled, the vnpus chips as switched off (no enableAscend).
func TestVendorsChartDefault(t *testing.T) {
	enabled, sections := loadChartDefault(t).Vendors(Options{})
	want := []devices.Config{{
		Name:                         "nvidia",
		ResourceCountName:            "nvidia.com/gpu",
		ResourceMemoryName:           "nvidia.com/gpumem",
		ResourceMemoryPercentageName: "nvidia.com/gpumem-percentage",
		ResourceCoresName:            "nvidia.com/gpucores",
		ResourcePriorityName:         "nvidia.com/priority",
		DefaultMemoryMiB:             0,
		DefaultCores:                 0,
		DefaultCount:                 ptr.To[int32](1),
		MemoryFactor:                 1,
		RuntimeClassName:             "",
		OverwriteEnv:                 false,
		CorePolicy:                   "default",
		MIGProfiles: []devices.MIGProfileAllow{
			{Models: []string{"A30"}, Profiles: []string{"1g.6gb", "2g.12gb", "4g.24gb"}},
			{Models: []string{"A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"}, Profiles: []string{"1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"}},
			{Models: []string{"A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"}, Profiles: []string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.79gb"}},
			{Models: []string{"H100-PCIE-80GB", "H100-SXM5-80GB"}, Profiles: []string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}},
			{Models: []string{"H100-PCIE-94GB", "H100-SXM5-94GB"}, Profiles: []string{"1g.12gb", "2g.24gb", "3g.47gb", "7g.94gb"}},
			{Models: []string{"H20", "H100 on GH200"}, Profiles: []string{"1g.12gb", "2g.24gb", "3g.48gb", "7g.96gb"}},
			{Models: []string{"H200 NVL", "H200-SXM5"}, Profiles: []string{"1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"}},
			{Models: []string{"B200"}, Profiles: []string{"1g.23gb", "2g.45gb", "3g.90gb", "7g.180gb"}},
			{Models: []string{"RTX PRO 6000 Blackwell Server Edition"}, Profiles: []string{"1g.24gb", "2g.48gb", "4g.96gb"}},
		},
		NodeDefaults: devices.NodeDefaults{SplitCount: 10, MemoryScaling: 1, CoreScaling: 1},
	}, {
		Name:               "hygon",
		ResourceCountName:  "hygon.com/dcunum",
		ResourceMemoryName: "hygon.com/dcumem",
		ResourceCoresName:  "hygon.com/dcucores",
		MemoryFactor:       1,
	}, {
		Name:               "mthreads",
		ResourceCountName:  "mthreads.com/vgpu",
		ResourceMemoryName: "mthreads.com/sgpu-memory",
		ResourceCoresName:  "mthreads.com/sgpu-core",
	}, {
		Name:              "enflame-gcu",
		ResourceCountName: "enflame.com/gcu",
	}, {
		Name:               "enflame-drs",
		ResourceCountName:  "enflame.com/drs-gcu",
		ResourceMemoryName: "enflame.com/gcu-memory",
		ResourceCoresName:  "enflame.com/gcu-core",
	}, {
		Name:              "awsneuron",
		ResourceCountName: "aws.amazon.com/neuron",
		ResourceCoresName: "aws.amazon.com/neuroncore",
	}, {
		Name:               "amd",
		ResourceCountName:  "amd.com/gpu",
		ResourceMemoryName: "amd.com/gpumem",
		ResourceCoresName:  "amd.com/gpucores",
	}, {
		Name:              "vastai",
		ResourceCountName: "vastaitech.com/va",
	}, {
		Name:              "biren",
		ResourceCountName: "birentech.com/gpu",
	}}
	if diff := cmp.Diff(want, enabled); diff != "" {
		t.Errorf("Vendors() enabled (-want +got):\n%s", diff)
	}
	off := AscendSwitch
	wantSections := []Section{
		{Key: "nvidia", Enabled: true, Served: true},
		{Key: "cambricon", Enabled: true},
		{Key: "hygon", Enabled: true, Served: true},
		{Key: "metax", Enabled: true},
		{Key: "mthreads", Enabled: true, Served: true},
		{Key: "iluvatars[MR-V100]", Enabled: true},
		{Key: "iluvatars[MR-V50]", Enabled: true},
		{Key: "iluvatars[BI-V150]", Enabled: true},
		{Key: "iluvatars[BI-V100]", Enabled: true},
		{Key: "enflame", Enabled: true, Served: true},
		{Key: "kunlun", Enabled: true},
		{Key: "awsneuron", Enabled: true, Served: true},
		{Key: "amd", Enabled: true, Served: true},
		{Key: "vastai", Enabled: true, Served: true},
		{Key: "biren", Enabled: true, Served: true},
		{Key: "vnpus.configs[Ascend910A]", Enabled: true, Switch: off},
		{Key: "vnpus.configs[Ascend910B2]", Enabled: true, Switch: off},
		{Key: "vnpus.configs[Ascend910B3]", Enabled: true, Switch: off},
		{Key: "vnpus.configs[Ascend910B4-1]", Enabled: true, Switch: off},
		{Key: "vnpus.configs[Ascend910B4]", Enabled: true, Switch: off},
		{Key: "vnpus.configs[Ascend310P]", Enabled: true, Switch: off},
		{Key: "vnpus.configs[Ascend910C]", Enabled: true, Switch: off},
	}
	if diff := cmp.Diff(wantSections, sections); diff != "" {
		t.Errorf("Vendors() sections (-want +got):\n%s", diff)
	}
}

// TestVendorsChartAscend: with enableAscend each of the chart's vnpus
// chips becomes one "ascend" vendor whose payload is exactly the Ascend
// vendor's own chart defaults (ascend.DefaultConfigs), after nvidia and
// hygon.
func TestVendorsChartAscend(t *testing.T) {
	enabled, sections := loadChartDefault(t).Vendors(Options{EnableAscend: true})
	others, _ := loadChartDefault(t).Vendors(Options{})
	if len(enabled) != len(others)+7 || enabled[0].Name != "nvidia" || enabled[1].Name != "hygon" {
		t.Fatalf("Vendors() enabled %d vendors: %+v", len(enabled), enabled)
	}
	var got []vnpu.Config
	for _, c := range enabled[len(others):] {
		chip, ok := c.Vendor.(vnpu.Config)
		if c.Name != "ascend" || !ok || !cmp.Equal(c, devices.Config{Name: "ascend", Vendor: chip}) {
			t.Errorf("ascend vendor %+v: want only Name and an ascend.Config payload", c)
		}
		got = append(got, chip)
	}
	if diff := cmp.Diff(vnpu.DefaultConfigs(), got); diff != "" {
		t.Errorf("ascend chips (-want +got):\n%s", diff)
	}
	for _, s := range sections {
		if strings.HasPrefix(s.Key, "vnpus.") && (!s.Served || s.Switch != "") {
			t.Errorf("section %+v: want served", s)
		}
	}
	// hamiVnpuCore reaches every chip.
	c := loadChartDefault(t)
	c.VNPUs.HAMiVNPUCore = true
	enabled, _ = c.Vendors(Options{EnableAscend: true})
	for _, v := range enabled[len(others):] {
		if !v.Vendor.(vnpu.Config).HamiVnpuCore {
			t.Errorf("%+v: hamiVnpuCore not copied", v.Vendor)
		}
	}
}

// TestVendorsNVIDIAFieldByField gives every mapped nvidia setting a
// distinct value, so that each mapping is checked.
func TestVendorsNVIDIAFieldByField(t *testing.T) {
	c := &Config{NVIDIA: &NVIDIA{
		ResourceCountName:            "example.com/count",
		ResourceMemoryName:           "example.com/mem",
		ResourceCoreName:             "example.com/cores",
		ResourceMemoryPercentageName: "example.com/mem-pct",
		ResourcePriorityName:         "example.com/prio",
		OverwriteEnv:                 true,
		DefaultMemory:                1024,
		DefaultCores:                 30,
		DefaultGPUNum:                2,
		MemoryFactor:                 4,
		MigProfileAllowlist:          []MIGProfileAllowed{{Models: []string{"A30"}, Profiles: []string{"1g.6gb"}}, {Models: []string{"B200"}, Profiles: []string{"7g.180gb"}}},
		GPUCorePolicy:                "force",
		RuntimeClassName:             "nvidia",
		DeviceSplitCount:             ptr.To[int64](7),
		DeviceMemoryScaling:          ptr.To(1.5),
		DeviceCoreScaling:            ptr.To(2.5),
	}}
	want := devices.Config{
		Name:                         "nvidia",
		ResourceCountName:            "example.com/count",
		ResourceMemoryName:           "example.com/mem",
		ResourceMemoryPercentageName: "example.com/mem-pct",
		ResourceCoresName:            "example.com/cores",
		ResourcePriorityName:         "example.com/prio",
		DefaultMemoryMiB:             1024,
		DefaultCores:                 30,
		DefaultCount:                 ptr.To[int32](2),
		MemoryFactor:                 4,
		RuntimeClassName:             "nvidia",
		OverwriteEnv:                 true,
		CorePolicy:                   "force",
		MIGProfiles:                  []devices.MIGProfileAllow{{Models: []string{"A30"}, Profiles: []string{"1g.6gb"}}, {Models: []string{"B200"}, Profiles: []string{"7g.180gb"}}},
		NodeDefaults:                 devices.NodeDefaults{SplitCount: 7, MemoryScaling: 1.5, CoreScaling: 2.5},
	}
	enabled, _ := c.Vendors(Options{})
	if len(enabled) != 1 {
		t.Fatalf("Vendors() enabled %d vendors, want 1", len(enabled))
	}
	if diff := cmp.Diff(want, enabled[0]); diff != "" {
		t.Errorf("nvidia settings (-want +got):\n%s", diff)
	}
}

// TestVendorsEnableRule is HAMi's rule: a section is on when it is present
// and names its count resource.
func TestVendorsEnableRule(t *testing.T) {
	tests := []struct {
		name         string
		data         string
		opts         Options
		wantSections []Section
		// wantEnabled are the vendors' settings.
		wantEnabled []devices.Config
	}{{
		name:         "absent sections are not listed",
		data:         "biren:\n  resourceCountName: birentech.com/gpu\n",
		wantSections: []Section{{Key: "biren", Enabled: true, Served: true}},
		wantEnabled:  []devices.Config{{Name: "biren", ResourceCountName: "birentech.com/gpu"}},
	}, {
		name:         "hygon with its count resource alone is on, other names default in the vendor",
		data:         "hygon:\n  resourceCountName: example.com/dcu\n",
		wantSections: []Section{{Key: "hygon", Enabled: true, Served: true}},
		wantEnabled:  []devices.Config{{Name: "hygon", ResourceCountName: "example.com/dcu"}},
	}, {
		name:         "nvidia without a count resource is off",
		data:         "nvidia:\n  resourceMemoryName: nvidia.com/gpumem\n",
		wantSections: []Section{{Key: "nvidia", Enabled: false}},
	}, {
		name:         "nvidia with the count resource alone is on, HAMi's zero values kept",
		data:         "nvidia:\n  resourceCountName: nvidia.com/gpu\n",
		wantSections: []Section{{Key: "nvidia", Enabled: true, Served: true}},
		// defaultGPUNum absent is 0 in HAMi: the webhook adds no card.
		wantEnabled: []devices.Config{{Name: "nvidia", ResourceCountName: "nvidia.com/gpu", DefaultCount: ptr.To[int32](0)}},
	}, {
		name:         "a huge split count is capped",
		data:         "nvidia:\n  resourceCountName: nvidia.com/gpu\n  deviceSplitCount: 99999999999\n",
		wantSections: []Section{{Key: "nvidia", Enabled: true, Served: true}},
		wantEnabled:  []devices.Config{{Name: "nvidia", ResourceCountName: "nvidia.com/gpu", DefaultCount: ptr.To[int32](0), NodeDefaults: devices.NodeDefaults{SplitCount: 1 << 20}}},
	}, {
		name: "count-named sections without their count are off",
		data: `cambricon:
  resourceMemoryName: cambricon.com/mlu.smlu.vmemory
hygon:
  resourceMemoryName: hygon.com/dcumem
mthreads:
  resourceCoreName: mthreads.com/sgpu-core
awsneuron:
  resourceCoreName: aws.amazon.com/neuroncore
amd:
  resourceMemoryName: amd.com/gpumem
vastai: {}
biren: {}
`,
		wantSections: []Section{
			{Key: "cambricon", Enabled: false}, {Key: "hygon", Enabled: false}, {Key: "mthreads", Enabled: false},
			{Key: "awsneuron", Enabled: false}, {Key: "amd", Enabled: false}, {Key: "vastai", Enabled: false}, {Key: "biren", Enabled: false},
		},
	}, {
		name:         "metax is on with its GPU or its sGPU count, off with neither",
		data:         "metax:\n  resourceVCountName: metax-tech.com/sgpu\n",
		wantSections: []Section{{Key: "metax", Enabled: true}},
	}, {
		name:         "metax with neither count is off",
		data:         "metax:\n  resourceVMemoryName: metax-tech.com/vmemory\n",
		wantSections: []Section{{Key: "metax", Enabled: false}},
	}, {
		name:         "kunlun is on with its vXPU count alone",
		data:         "kunlun:\n  resourceVCountName: kunlunxin.com/vxpu\n",
		wantSections: []Section{{Key: "kunlun", Enabled: true}},
	}, {
		name:         "kunlun with neither count is off",
		data:         "kunlun:\n  resourceVMemoryName: kunlunxin.com/vxpu-memory\n",
		wantSections: []Section{{Key: "kunlun", Enabled: false}},
	}, {
		name:         "an empty enflame section is on: HAMi's DRS backend has its own names",
		data:         "enflame: {}\n",
		wantSections: []Section{{Key: "enflame", Enabled: true, Served: true}},
		wantEnabled:  []devices.Config{{Name: "enflame-drs"}},
	}, {
		name: "iluvatars and vnpus entries are listed one by one",
		data: `iluvatars:
- commonWord: MR-V100
  resourceCountName: iluvatar.ai/MR-V100-vgpu
- commonWord: BI-V150
vnpus:
  configs:
  - commonWord: Ascend910B3
    resourceName: huawei.com/Ascend910B3
  - commonWord: Ascend310P
    resourceMemoryName: huawei.com/Ascend310P-memory
`,
		wantSections: []Section{
			{Key: "iluvatars[MR-V100]", Enabled: true}, {Key: "iluvatars[BI-V150]", Enabled: false},
			{Key: "vnpus.configs[Ascend910B3]", Enabled: true, Switch: AscendSwitch}, {Key: "vnpus.configs[Ascend310P]", Enabled: false},
		},
	}, {
		name: "with enableAscend each named vnpus entry is one ascend vendor",
		data: `vnpus:
  hamiVnpuCore: true
  configs:
  - commonWord: Ascend910B3
    resourceName: example.com/b3
    memoryAllocatable: 65536
    memoryCapacity: 65536
    superPod: true
    templates:
    - {name: vir05_1c_16g, memory: 16384, aiCore: 5, aiCPU: 1}
  - commonWord: Ascend310P
    resourceMemoryName: huawei.com/Ascend310P-memory
`,
		opts: Options{EnableAscend: true},
		wantSections: []Section{
			{Key: "vnpus.configs[Ascend910B3]", Enabled: true, Served: true}, {Key: "vnpus.configs[Ascend310P]", Enabled: false},
		},
		wantEnabled: []devices.Config{{Name: "ascend", Vendor: vnpu.Config{
			CommonWord: "Ascend910B3", ResourceName: "example.com/b3", MemoryAllocatable: 65536, MemoryCapacity: 65536,
			SuperPod: true, HamiVnpuCore: true, Templates: []vnpu.Template{{Name: "vir05_1c_16g", Memory: 16384, AICore: 5, AICPU: 1}},
		}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ignored, err := Parse([]byte(tt.data))
			if err != nil || len(ignored) > 0 {
				t.Fatalf("Parse(): %v, ignored %q", err, ignored)
			}
			enabled, sections := c.Vendors(tt.opts)
			if diff := cmp.Diff(tt.wantSections, sections); diff != "" {
				t.Errorf("Vendors() sections (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEnabled, enabled); diff != "" {
				t.Errorf("Vendors() enabled (-want +got):\n%s", diff)
			}
		})
	}
}

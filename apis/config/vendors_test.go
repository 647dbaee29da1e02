package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/apis/deviceconfig"
	"github.com/hami-scheduler/hami-scheduler/devices"
)

const chartDefault = "../../test/testdata/device-config.yaml"

func TestResolveVendorsFromList(t *testing.T) {
	args := &HAMiArgs{Vendors: []VendorArgs{{
		Name:                         "NVIDIA",
		ResourceCountName:            "example.com/gpu",
		ResourceMemoryName:           "example.com/gpumem",
		ResourceMemoryPercentageName: "example.com/gpumem-percentage",
		ResourceCoresName:            "example.com/gpucores",
		ResourcePriorityName:         "example.com/priority",
		DefaultMemoryMiB:             512,
		DefaultCores:                 25,
		DefaultCount:                 ptr.To[int32](0),
		MemoryFactor:                 3,
	}}}
	got, err := args.ResolveVendors()
	if err != nil {
		t.Fatal(err)
	}
	want := &VendorSettings{
		Source: "vendors",
		Configs: []devices.Config{{
			Name:                         "nvidia",
			ResourceCountName:            "example.com/gpu",
			ResourceMemoryName:           "example.com/gpumem",
			ResourceMemoryPercentageName: "example.com/gpumem-percentage",
			ResourceCoresName:            "example.com/gpucores",
			ResourcePriorityName:         "example.com/priority",
			DefaultMemoryMiB:             512,
			DefaultCores:                 25,
			DefaultCount:                 ptr.To[int32](0),
			MemoryFactor:                 3,
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResolveVendors() (-want +got):\n%s", diff)
	}
}

func TestResolveVendorsFromChartDefault(t *testing.T) {
	args := &HAMiArgs{DeviceConfigFile: chartDefault}
	got, err := args.ResolveVendors()
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != "deviceConfigFile "+chartDefault {
		t.Errorf("Source = %q", got.Source)
	}
	var names []string
	for _, c := range got.Configs {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"nvidia", "hygon", "mthreads", "enflame-gcu", "enflame-drs", "awsneuron", "amd", "vastai", "biren"}, names); diff != "" {
		t.Errorf("vendors from the chart (-want +got):\n%s", diff)
	}
	if got.Configs[0].Name != "nvidia" || got.Configs[0].ResourceCountName != "nvidia.com/gpu" ||
		got.Configs[0].NodeDefaults.SplitCount != 10 || got.Configs[0].CorePolicy != "default" ||
		got.Configs[1].Name != "hygon" || got.Configs[1].ResourceCountName != "hygon.com/dcunum" {
		t.Errorf("Configs = %+v, want the chart's nvidia and hygon settings", got.Configs)
	}
	wantUnsupported := []string{
		"cambricon", "metax",
		"iluvatars[MR-V100]", "iluvatars[MR-V50]", "iluvatars[BI-V150]", "iluvatars[BI-V100]",
		"kunlun",
	}
	if diff := cmp.Diff(wantUnsupported, got.Unsupported); diff != "" {
		t.Errorf("Unsupported (-want +got):\n%s", diff)
	}
	wantOff := []string{
		"vnpus.configs[Ascend910A] (needs enableAscend)", "vnpus.configs[Ascend910B2] (needs enableAscend)",
		"vnpus.configs[Ascend910B3] (needs enableAscend)", "vnpus.configs[Ascend910B4-1] (needs enableAscend)",
		"vnpus.configs[Ascend910B4] (needs enableAscend)", "vnpus.configs[Ascend310P] (needs enableAscend)",
		"vnpus.configs[Ascend910C] (needs enableAscend)",
	}
	if diff := cmp.Diff(wantOff, got.SwitchedOff); diff != "" {
		t.Errorf("SwitchedOff (-want +got):\n%s", diff)
	}
	if len(got.Ignored) != 0 {
		t.Errorf("Ignored = %q, want none", got.Ignored)
	}

	// enableAscend: the seven chips follow nvidia and hygon.
	args.EnableAscend = true
	got, err = args.ResolveVendors()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Configs) != len(names)+7 || got.Configs[len(names)].Name != "ascend" || len(got.SwitchedOff) != 0 {
		t.Errorf("with enableAscend: %d configs, switched off %q", len(got.Configs), got.SwitchedOff)
	}
}

func TestFromDeviceConfigFile(t *testing.T) {
	tests := []struct {
		name            string
		data            string
		wantErr         string
		wantConfigs     int
		wantUnsupported []string
		wantIgnored     int
	}{
		{"unknown keys are reported, not fatal", "nvidia:\n  resourceCountName: nvidia.com/gpu\n  resourceCoresName: x\n", "", 1, nil, 1},
		{"disabled sections are not unsupported", "nvidia:\n  resourceCountName: nvidia.com/gpu\nhygon: {}\n", "", 1, nil, 0},
		{"hygon alone", "hygon:\n  resourceCountName: hygon.com/dcunum\n", "", 1, nil, 0},
		{"no supported vendor", "cambricon:\n  resourceCountName: cambricon.com/vmlu\nvnpus:\n  configs:\n  - {commonWord: Ascend910B3, resourceName: huawei.com/Ascend910B3}\n",
			"enables no vendor this build supports (nvidia needs nvidia.resourceCountName, hygon hygon.resourceCountName, Ascend vnpus.configs[].resourceName and enableAscend); configured: vnpus.configs[Ascend910B3] (needs enableAscend), cambricon", 0, []string{"cambricon"}, 0},
		{"nvidia off, nothing else", "nvidia:\n  resourceMemoryName: nvidia.com/gpumem\n", "configured: none", 0, nil, 0},
		{"invalid", "nvidia:\n  resourceCountName: nvidia.com/gpu\n  memoryFactor: -1\n", "nvidia.memoryFactor: Invalid value: -1", 0, nil, 0},
		{"every section empty", "foo: 1\n", "every section is empty", 0, nil, 0},
		{"not YAML", "nvidia: [\n", "decode device config", 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "device-config.yaml")
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := FromDeviceConfigFile(path, deviceconfig.Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error = %v, want one naming the file and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Configs) != tt.wantConfigs || !cmp.Equal(tt.wantUnsupported, got.Unsupported) || len(got.Ignored) != tt.wantIgnored {
				t.Errorf("got %d configs, unsupported %q, ignored %q", len(got.Configs), got.Unsupported, got.Ignored)
			}
		})
	}
	if _, err := FromDeviceConfigFile(filepath.Join(t.TempDir(), "missing.yaml"), deviceconfig.Options{}); err == nil || !strings.Contains(err.Error(), "read device config") {
		t.Errorf("missing file: error = %v", err)
	}
}

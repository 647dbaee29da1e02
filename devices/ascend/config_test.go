package ascend

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartVNPUs is HAMi v2.10.0's chart device configmap vnpus section for two
// chips, as rendered with the chart's values (runtimeClassName "",
// overwriteEnv false).
const chartVNPUs = `
hamiVnpuCore: true
configs:
- chipName: 910B3
  commonWord: Ascend910B3
  resourceName: huawei.com/Ascend910B3
  resourceMemoryName: huawei.com/Ascend910B3-memory
  resourceCoreName: huawei.com/Ascend910B3-core
  memoryAllocatable: 65536
  memoryCapacity: 65536
  memoryFactor: 1
  aiCore: 20
  aiCPU: 7
  runtimeClassName: ""
  overwriteEnv: false
  templates:
    - name: vir05_1c_16g
      memory: 16384
      aiCore: 5
      aiCPU: 1
    - name: vir10_3c_32g
      memory: 32768
      aiCore: 10
      aiCPU: 3
- chipName: Ascend910
  commonWord: Ascend910C
  resourceName: huawei.com/Ascend910C
  resourceMemoryName: huawei.com/Ascend910C-memory
  resourceCoreName: huawei.com/Ascend910C-core
  memoryAllocatable: 65536
  memoryCapacity: 65536
  aiCore: 20
  aiCPU: 7
  runtimeClassName: ""
  overwriteEnv: false
  superPod: true
  templates:
    - name: vir05_1c_16g
      memory: 16384
      aiCore: 5
      aiCPU: 1
    - name: vir10_3c_32g
      memory: 32768
      aiCore: 10
      aiCPU: 3
`

func TestVNPUsFromChartYAML(t *testing.T) {
	var s VNPUs
	if err := yaml.Unmarshal([]byte(chartVNPUs), &s); err != nil {
		t.Fatal(err)
	}
	got := s.Chips()
	b3, c := chip(t, "Ascend910B3"), chip(t, "Ascend910C")
	b3.HamiVnpuCore, c.HamiVnpuCore = true, true
	if want := []Config{b3, c}; !reflect.DeepEqual(got, want) {
		t.Errorf("Chips() =\n%+v\nwant\n%+v", got, want)
	}
	for _, cfg := range got {
		mustNew(t, cfg)
	}
}

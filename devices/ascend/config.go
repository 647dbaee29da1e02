package ascend

import (
	"fmt"
	"slices"
	"strings"
)

// Template is one vNPU template of a chip: a hard split whose memory a
// request is rounded up to.
type Template struct {
	// Name is the template the device plugin creates, e.g. vir05_1c_16g.
	Name string `json:"name"`
	// Memory is the template's memory in MiB.
	Memory int64 `json:"memory"`
	// AICore and AICPU describe the template; the scheduler does not use
	// them.
	AICore int32 `json:"aiCore,omitempty"`
	AICPU  int32 `json:"aiCPU,omitempty"`
}

// Config is one entry of HAMi's vnpus.configs (field names as in HAMi's
// device-config.yaml), plus the section's global hamiVnpuCore switch.
type Config struct {
	// CommonWord names the chip everywhere (resources, annotations, grant
	// type), e.g. Ascend910B3. Required.
	CommonWord string `json:"commonWord"`
	// ChipName is informational (e.g. 910B3).
	ChipName string `json:"chipName,omitempty"`
	// ResourceName, ResourceMemoryName and ResourceCoreName are the count,
	// memory (MiB per NPU) and core (percent per NPU, hami-core only)
	// resources; empty means huawei.com/<commonWord>[-memory|-core].
	ResourceName       string `json:"resourceName,omitempty"`
	ResourceMemoryName string `json:"resourceMemoryName,omitempty"`
	ResourceCoreName   string `json:"resourceCoreName,omitempty"`
	// MemoryAllocatable is the memory of a whole NPU given to one
	// container; MemoryCapacity is the largest request that still rounds
	// to a whole NPU. Both MiB.
	MemoryAllocatable int64 `json:"memoryAllocatable"`
	MemoryCapacity    int64 `json:"memoryCapacity"`
	// MemoryFactor multiplies the memory a container asks for; 0 and 1
	// leave it as written.
	MemoryFactor int32 `json:"memoryFactor,omitempty"`
	// AICore and AICPU are informational.
	AICore int32 `json:"aiCore,omitempty"`
	AICPU  int32 `json:"aiCPU,omitempty"`
	// RuntimeClassName is set on pods that ask for this chip and name no
	// runtime class (webhook).
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	// OverwriteEnv gives containers that do not ask for this chip
	// ASCEND_VISIBLE_DEVICES="" (webhook).
	OverwriteEnv bool `json:"overwriteEnv,omitempty"`
	// Templates are the chip's vNPU templates, in any order.
	Templates []Template `json:"templates,omitempty"`
	// SuperPod marks Ascend910C super-pod nodes: NPUs are given in module
	// pairs.
	SuperPod bool `json:"superPod,omitempty"`
	// HamiVnpuCore is vnpus.hamiVnpuCore: whether nodes support hami-core
	// soft splitting unless their hami-vnpu-core annotation says otherwise.
	HamiVnpuCore bool `json:"hamiVnpuCore,omitempty"`
}

// DefaultConfigs returns HAMi's chart defaults (charts/hami device
// configmap, v2.10.0), one per chip.
func DefaultConfigs() []Config {
	b3Templates := []Template{
		{Name: "vir05_1c_16g", Memory: 16384, AICore: 5, AICPU: 1},
		{Name: "vir10_3c_32g", Memory: 32768, AICore: 10, AICPU: 3},
	}
	chip := func(cw, chipName string, allocatable, capacity int64, factor, aiCore, aiCPU int32, templates []Template) Config {
		return Config{
			CommonWord: cw, ChipName: chipName,
			ResourceName: "huawei.com/" + cw, ResourceMemoryName: "huawei.com/" + cw + "-memory", ResourceCoreName: "huawei.com/" + cw + "-core",
			MemoryAllocatable: allocatable, MemoryCapacity: capacity, MemoryFactor: factor,
			AICore: aiCore, AICPU: aiCPU, Templates: slices.Clone(templates),
		}
	}
	c910 := chip("Ascend910C", "Ascend910", 65536, 65536, 0, 20, 7, b3Templates)
	c910.SuperPod = true
	return []Config{
		chip("Ascend910A", "910A", 32768, 32768, 1, 30, 0, []Template{
			{Name: "vir02", Memory: 2184, AICore: 2},
			{Name: "vir04", Memory: 4369, AICore: 4},
			{Name: "vir08", Memory: 8738, AICore: 8},
			{Name: "vir16", Memory: 17476, AICore: 16},
		}),
		chip("Ascend910B2", "910B2", 65536, 65536, 1, 24, 6, []Template{
			{Name: "vir03_1c_8g", Memory: 8192, AICore: 3, AICPU: 1},
			{Name: "vir06_1c_16g", Memory: 16384, AICore: 6, AICPU: 1},
			{Name: "vir12_3c_32g", Memory: 32768, AICore: 12, AICPU: 3},
		}),
		chip("Ascend910B3", "910B3", 65536, 65536, 1, 20, 7, b3Templates),
		chip("Ascend910B4-1", "910B4-1", 65536, 65536, 1, 20, 7, b3Templates),
		chip("Ascend910B4", "910B4", 32768, 32768, 1, 20, 7, []Template{
			{Name: "vir05_1c_8g", Memory: 8192, AICore: 5, AICPU: 1},
			{Name: "vir10_3c_16g", Memory: 16384, AICore: 10, AICPU: 3},
		}),
		chip("Ascend310P", "310P3", 21527, 24576, 1, 8, 7, []Template{
			{Name: "vir01", Memory: 3072, AICore: 1, AICPU: 1},
			{Name: "vir02", Memory: 6144, AICore: 2, AICPU: 2},
			{Name: "vir04", Memory: 12288, AICore: 4, AICPU: 4},
		}),
		c910,
	}
}

// validate reports settings the vendor cannot work with.
func (c *Config) validate() error {
	switch {
	case c.CommonWord == "":
		return fmt.Errorf("ascend: commonWord is empty")
	case strings.ContainsAny(c.CommonWord, ",:;/ \t\n\"\\"):
		return fmt.Errorf("ascend %s: commonWord must not contain separators, slashes, quotes or spaces", c.CommonWord)
	case c.MemoryAllocatable <= 0 || c.MemoryAllocatable > 1<<31-1:
		return fmt.Errorf("ascend %s: memoryAllocatable %d is not between 1 and 2147483647 MiB", c.CommonWord, c.MemoryAllocatable)
	case c.MemoryCapacity < c.MemoryAllocatable:
		return fmt.Errorf("ascend %s: memoryCapacity %d is below memoryAllocatable %d", c.CommonWord, c.MemoryCapacity, c.MemoryAllocatable)
	case c.MemoryFactor < 0:
		return fmt.Errorf("ascend %s: memoryFactor %d is negative", c.CommonWord, c.MemoryFactor)
	}
	seen := map[string]bool{}
	for _, t := range c.Templates {
		switch {
		case t.Name == "":
			return fmt.Errorf("ascend %s: a template has no name", c.CommonWord)
		case seen[t.Name]:
			return fmt.Errorf("ascend %s: template %s is listed twice", c.CommonWord, t.Name)
		case t.Memory <= 0 || t.Memory > 1<<31-1:
			return fmt.Errorf("ascend %s: template %s memory %d is not between 1 and 2147483647 MiB", c.CommonWord, t.Name, t.Memory)
		}
		seen[t.Name] = true
	}
	return nil
}

// VNPUs is HAMi's vnpus section of device-config.yaml.
type VNPUs struct {
	HamiVnpuCore bool     `json:"hamiVnpuCore,omitempty"`
	Configs      []Config `json:"configs,omitempty"`
}

// Chips returns the section's chips with the global hamiVnpuCore switch
// copied into each, ready for New.
func (s VNPUs) Chips() []Config {
	out := make([]Config, len(s.Configs))
	for i, c := range s.Configs {
		c.HamiVnpuCore = c.HamiVnpuCore || s.HamiVnpuCore
		c.Templates = slices.Clone(c.Templates)
		out[i] = c
	}
	return out
}

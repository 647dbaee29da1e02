package deviceconfig

import (
	"cmp"
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
	vnpu "github.com/hami-scheduler/hami-scheduler/devices/ascend"
	ilu "github.com/hami-scheduler/hami-scheduler/devices/iluvatar"
	"github.com/hami-scheduler/hami-scheduler/devices/kunlun"
	"github.com/hami-scheduler/hami-scheduler/devices/metax"
)

// Section is one vendor section of the file, as enabled or not.
type Section struct {
	// Key is the section's path in the file, e.g. "hygon" or
	// "vnpus.configs[Ascend910B3]".
	Key string
	// Enabled is HAMi's rule: the section is present and names its count
	// resource (Ascend: resourceName).
	Enabled bool
	// Served is set when the section's vendor is among the returned
	// settings: this build implements it and nothing switches it off.
	Served bool
	// Switch names the option that keeps an enabled section off (Ascend:
	// enableAscend, HAMi's --enable-ascend), empty otherwise.
	Switch string
}

// Options are the switches HAMi passes besides the file.
type Options struct {
	// EnableAscend is HAMi's --enable-ascend: without it the vnpus
	// section is read but no Ascend vendor is made.
	EnableAscend bool
	// EnableIluvatar is HAMi's --enable-iluvatar: without it the iluvatars
	// entries are read but no Iluvatar vendor is made.
	EnableIluvatar bool
}

// IluvatarSwitch is the plugin argument (webhook flag: --enable-iluvatar)
// that turns the iluvatars entries on.
const IluvatarSwitch = "enableIluvatar"

// AscendSwitch is the plugin argument (webhook flag: --enable-ascend) that
// turns the vnpus section on.
const AscendSwitch = "enableAscend"

// Vendors returns the settings of the vendors this build implements and
// that the file enables (nvidia, cambricon, hygon, metax GPU and sGPU,
// with opts.EnableIluvatar each iluvatars chip, kunlun XPU and vXPU, and
// with opts.EnableAscend each vnpus.configs chip), in that order, and
// every vendor section of the file
// with whether it is enabled and served, so the caller can report the ones
// it cannot serve.
func (c *Config) Vendors(opts Options) (enabled []devices.Config, sections []Section) {
	// add records a section this build implements and, when on, its
	// vendor's settings.
	add := func(key string, on bool, cfg devices.Config) {
		sections = append(sections, Section{Key: key, Enabled: on, Served: on})
		if on {
			enabled = append(enabled, cfg)
		}
	}
	// serve adds a section that is on when it names its count resource.
	serve := func(key string, cfg devices.Config) { add(key, cfg.ResourceCountName != "", cfg) }
	if n := c.NVIDIA; n != nil {
		serve("nvidia", n.vendorConfig())
	}
	if s := c.Cambricon; s != nil {
		serve("cambricon", s.vendorConfig())
	}
	if h := c.Hygon; h != nil {
		serve("hygon", h.vendorConfig())
	}
	if s := c.MetaX; s != nil {
		// Two vendors: whole GPUs (resourceCountName) and sGPU shares
		// (resourceVCountName), each on when its count is named.
		serve("metax", devices.Config{Name: "metax", ResourceCountName: s.ResourceCountName})
		add("metax.sgpu", s.ResourceVCountName != "", devices.Config{Name: "metax-sgpu", Vendor: metax.SGPUConfig{
			ResourceVCountName:  s.ResourceVCountName,
			ResourceVMemoryName: s.ResourceVMemoryName,
			ResourceVCoreName:   s.ResourceVCoreName,
			TopologyAware:       s.SGPUTopologyAware,
		}})
	}
	if s := c.MThreads; s != nil {
		serve("mthreads", devices.Config{Name: "mthreads", ResourceCountName: s.ResourceCountName, ResourceMemoryName: s.ResourceMemoryName, ResourceCoresName: s.ResourceCoreName})
	}
	for _, s := range c.Iluvatars {
		sec := Section{Key: "iluvatars[" + s.CommonWord + "]", Enabled: s.ResourceCountName != ""}
		switch {
		case sec.Enabled && !opts.EnableIluvatar:
			sec.Switch = IluvatarSwitch
		case sec.Enabled:
			sec.Served = true
			enabled = append(enabled, devices.Config{Name: "iluvatar", Vendor: ilu.Config{
				CommonWord:         s.CommonWord,
				ChipName:           s.ChipName,
				ResourceCountName:  s.ResourceCountName,
				ResourceMemoryName: s.ResourceMemoryName,
				ResourceCoreName:   s.ResourceCoreName,
			}})
		}
		sections = append(sections, sec)
	}
	if s := c.Enflame; s != nil {
		// Whole GCUs when resourceNameGCU is set; HAMi's DRS backend falls
		// back to its own names (resourceNameVGCU, then
		// enflame.com/drs-gcu): always live.
		sections = append(sections, Section{Key: "enflame", Enabled: true, Served: true})
		if s.ResourceNameGCU != "" {
			enabled = append(enabled, devices.Config{Name: "enflame-gcu", ResourceCountName: s.ResourceNameGCU})
		}
		drs := cmp.Or(s.ResourceNameDRSGCU, s.ResourceNameVGCU)
		enabled = append(enabled, devices.Config{Name: "enflame-drs", ResourceCountName: drs, ResourceMemoryName: s.ResourceNameGCUMemory, ResourceCoresName: s.ResourceNameGCUCore})
	}
	if s := c.Kunlun; s != nil {
		// Two vendors: whole XPUs (resourceCountName) and vXPU shares
		// (resourceVCountName), each on when its count is named.
		serve("kunlun", devices.Config{Name: "kunlun", ResourceCountName: s.ResourceCountName})
		add("kunlun.vxpu", s.ResourceVCountName != "", devices.Config{Name: "kunlun-vxpu", Vendor: kunlun.VXPUConfig{
			ResourceVCountName:  s.ResourceVCountName,
			ResourceVMemoryName: s.ResourceVMemoryName,
		}})
	}
	if s := c.AWSNeuron; s != nil {
		serve("awsneuron", devices.Config{Name: "awsneuron", ResourceCountName: s.ResourceCountName, ResourceCoresName: s.ResourceCoreName})
	}
	if s := c.AMD; s != nil {
		serve("amd", devices.Config{Name: "amd", ResourceCountName: s.ResourceCountName, ResourceMemoryName: s.ResourceMemoryName, ResourceCoresName: s.ResourceCoreName})
	}
	if s := c.Vastai; s != nil {
		serve("vastai", devices.Config{Name: "vastai", ResourceCountName: s.ResourceCountName})
	}
	if s := c.Biren; s != nil {
		serve("biren", devices.Config{Name: "biren", ResourceCountName: s.ResourceCountName})
	}
	if c.VNPUs != nil {
		chips := c.VNPUs.chips()
		for i, s := range c.VNPUs.Configs {
			sec := Section{Key: "vnpus.configs[" + s.CommonWord + "]", Enabled: s.ResourceName != ""}
			switch {
			case sec.Enabled && !opts.EnableAscend:
				sec.Switch = AscendSwitch
			case sec.Enabled:
				sec.Served = true
				enabled = append(enabled, devices.Config{Name: "ascend", Vendor: chips[i]})
			}
			sections = append(sections, sec)
		}
	}
	return enabled, sections
}

// vendorConfig maps the nvidia section onto the NVIDIA vendor's settings.
func (n *NVIDIA) vendorConfig() devices.Config {
	cfg := devices.Config{
		Name:                         "nvidia",
		ResourceCountName:            n.ResourceCountName,
		ResourceMemoryName:           n.ResourceMemoryName,
		ResourceMemoryPercentageName: n.ResourceMemoryPercentageName,
		ResourceCoresName:            n.ResourceCoreName,
		ResourcePriorityName:         n.ResourcePriorityName,
		DefaultMemoryMiB:             n.DefaultMemory,
		DefaultCores:                 n.DefaultCores,
		DefaultCount:                 ptr.To(n.DefaultGPUNum),
		MemoryFactor:                 n.MemoryFactor,
		RuntimeClassName:             n.RuntimeClassName,
		OverwriteEnv:                 n.OverwriteEnv,
		CorePolicy:                   n.GPUCorePolicy,
	}
	for _, a := range n.MigProfileAllowlist {
		cfg.MIGProfiles = append(cfg.MIGProfiles, devices.MIGProfileAllow{Models: a.Models, Profiles: a.Profiles})
	}
	if n.DeviceSplitCount != nil {
		cfg.NodeDefaults.SplitCount = int32(min(*n.DeviceSplitCount, 1<<20))
	}
	if n.DeviceMemoryScaling != nil {
		cfg.NodeDefaults.MemoryScaling = *n.DeviceMemoryScaling
	}
	if n.DeviceCoreScaling != nil {
		cfg.NodeDefaults.CoreScaling = *n.DeviceCoreScaling
	}
	return cfg
}

// vendorConfig maps the hygon section onto the Hygon vendor's settings.
// Empty memory and core names take the vendor's defaults (hygon.com/dcumem,
// hygon.com/dcucores).
func (h *Hygon) vendorConfig() devices.Config {
	return devices.Config{
		Name:               "hygon",
		ResourceCountName:  h.ResourceCountName,
		ResourceMemoryName: h.ResourceMemoryName,
		ResourceCoresName:  h.ResourceCoreName,
		MemoryFactor:       h.MemoryFactor,
	}
}

// vendorConfig maps the cambricon section onto the Cambricon vendor's
// settings. Empty memory and core names take the vendor's defaults
// (cambricon.com/mlu.smlu.vmemory, cambricon.com/mlu.smlu.vcore).
func (s *Cambricon) vendorConfig() devices.Config {
	return devices.Config{
		Name:               "cambricon",
		ResourceCountName:  s.ResourceCountName,
		ResourceMemoryName: s.ResourceMemoryName,
		ResourceCoresName:  s.ResourceCoreName,
	}
}

// chips maps the vnpus section onto one vnpu.Config per entry, with the
// section's hamiVnpuCore copied into each.
func (v *AscendVNPU) chips() []vnpu.Config {
	section := vnpu.VNPUs{HamiVnpuCore: v.HAMiVNPUCore}
	for _, s := range v.Configs {
		chip := vnpu.Config{
			CommonWord:         s.CommonWord,
			ChipName:           s.ChipName,
			ResourceName:       s.ResourceName,
			ResourceMemoryName: s.ResourceMemoryName,
			ResourceCoreName:   s.ResourceCoreName,
			MemoryAllocatable:  s.MemoryAllocatable,
			MemoryCapacity:     s.MemoryCapacity,
			MemoryFactor:       s.MemoryFactor,
			AICore:             s.AICore,
			AICPU:              s.AICPU,
			RuntimeClassName:   s.RuntimeClassName,
			OverwriteEnv:       s.OverwriteEnv,
			SuperPod:           s.SuperPod,
		}
		for _, t := range s.Templates {
			chip.Templates = append(chip.Templates, vnpu.Template{Name: t.Name, Memory: t.Memory, AICore: t.AICore, AICPU: t.AICPU})
		}
		section.Configs = append(section.Configs, chip)
	}
	return section.Chips()
}

package deviceconfig

import (
	"k8s.io/utils/ptr"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Section is one vendor section of the file, as enabled or not.
type Section struct {
	// Key is the section's path in the file, e.g. "hygon" or
	// "vnpus.configs[Ascend910B3]".
	Key string
	// Enabled is HAMi's rule: the section is present and names its count
	// resource (Ascend: resourceName).
	Enabled bool
}

// Vendors returns the settings of the vendors this build implements and
// that the file enables, and every vendor section of the file with
// whether it is enabled, so the caller can report the ones it cannot
// serve.
func (c *Config) Vendors() (enabled []devices.Config, sections []Section) {
	if n := c.NVIDIA; n != nil {
		on := n.ResourceCountName != ""
		sections = append(sections, Section{Key: "nvidia", Enabled: on})
		if on {
			enabled = append(enabled, n.vendorConfig())
		}
	}
	add := func(key string, present bool, count string) {
		if present {
			sections = append(sections, Section{Key: key, Enabled: count != ""})
		}
	}
	add("cambricon", c.Cambricon != nil, countOf(c.Cambricon, func(s *Cambricon) string { return s.ResourceCountName }))
	add("hygon", c.Hygon != nil, countOf(c.Hygon, func(s *Hygon) string { return s.ResourceCountName }))
	if s := c.MetaX; s != nil {
		add("metax", true, s.ResourceCountName+s.ResourceVCountName)
	}
	add("mthreads", c.MThreads != nil, countOf(c.MThreads, func(s *MThreads) string { return s.ResourceCountName }))
	for _, s := range c.Iluvatars {
		add("iluvatars["+s.CommonWord+"]", true, s.ResourceCountName)
	}
	if s := c.Enflame; s != nil {
		// HAMi's DRS backend falls back to its own names: always live.
		add("enflame", true, "on")
	}
	if s := c.Kunlun; s != nil {
		add("kunlun", true, s.ResourceCountName+s.ResourceVCountName)
	}
	add("awsneuron", c.AWSNeuron != nil, countOf(c.AWSNeuron, func(s *AWSNeuron) string { return s.ResourceCountName }))
	add("amd", c.AMD != nil, countOf(c.AMD, func(s *AMD) string { return s.ResourceCountName }))
	add("vastai", c.Vastai != nil, countOf(c.Vastai, func(s *CountOnly) string { return s.ResourceCountName }))
	add("biren", c.Biren != nil, countOf(c.Biren, func(s *CountOnly) string { return s.ResourceCountName }))
	if c.VNPUs != nil {
		for _, s := range c.VNPUs.Configs {
			add("vnpus.configs["+s.CommonWord+"]", true, s.ResourceName)
		}
	}
	return enabled, sections
}

func countOf[T any](s *T, name func(*T) string) string {
	if s == nil {
		return ""
	}
	return name(s)
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

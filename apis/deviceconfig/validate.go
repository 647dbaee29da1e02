package deviceconfig

import (
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CorePolicies are HAMi's gpuCorePolicy values ("" means default).
var CorePolicies = []string{"", "default", "force", "disable"}

// migProfileName is HAMi's shape of a MIG profile name: <n>g.<rest>.
var migProfileName = regexp.MustCompile(`^[0-9]+g\..+$`)

// Validate reports every setting no scheduler could work with, with its
// path in the file. HAMi refuses a file whose sections are all empty.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.empty() {
		errs = append(errs, field.Required(nil, "every section is empty; HAMi refuses such a file (all configurations are empty)"))
	}
	if c.NVIDIA != nil {
		errs = append(errs, c.NVIDIA.validate(field.NewPath("nvidia"))...)
	}
	if s := c.Cambricon; s != nil {
		errs = append(errs, names(field.NewPath("cambricon"), "resourceCountName", s.ResourceCountName, "resourceMemoryName", s.ResourceMemoryName, "resourceCoreName", s.ResourceCoreName)...)
	}
	if s := c.Hygon; s != nil {
		p := field.NewPath("hygon")
		errs = append(errs, names(p, "resourceCountName", s.ResourceCountName, "resourceMemoryName", s.ResourceMemoryName, "resourceCoreName", s.ResourceCoreName)...)
		errs = append(errs, nonNegative(p.Child("memoryFactor"), int64(s.MemoryFactor))...)
	}
	if s := c.MetaX; s != nil {
		errs = append(errs, names(field.NewPath("metax"), "resourceCountName", s.ResourceCountName, "resourceVCountName", s.ResourceVCountName,
			"resourceVMemoryName", s.ResourceVMemoryName, "resourceVCoreName", s.ResourceVCoreName)...)
	}
	if s := c.MThreads; s != nil {
		errs = append(errs, names(field.NewPath("mthreads"), "resourceCountName", s.ResourceCountName, "resourceMemoryName", s.ResourceMemoryName, "resourceCoreName", s.ResourceCoreName)...)
	}
	errs = append(errs, validateIluvatars(field.NewPath("iluvatars"), c.Iluvatars)...)
	if s := c.Enflame; s != nil {
		errs = append(errs, names(field.NewPath("enflame"), "resourceNameGCU", s.ResourceNameGCU, "resourceNameDRSGCU", s.ResourceNameDRSGCU,
			"resourceNameGCUMemory", s.ResourceNameGCUMemory, "resourceNameGCUCore", s.ResourceNameGCUCore,
			"resourceNameVGCU", s.ResourceNameVGCU, "resourceNameVGCUPercentage", s.ResourceNameVGCUPercentage)...)
	}
	if s := c.Kunlun; s != nil {
		errs = append(errs, names(field.NewPath("kunlun"), "resourceCountName", s.ResourceCountName, "resourceVCountName", s.ResourceVCountName, "resourceVMemoryName", s.ResourceVMemoryName)...)
	}
	if s := c.AWSNeuron; s != nil {
		errs = append(errs, names(field.NewPath("awsneuron"), "resourceCountName", s.ResourceCountName, "resourceCoreName", s.ResourceCoreName)...)
	}
	if s := c.AMD; s != nil {
		errs = append(errs, names(field.NewPath("amd"), "resourceCountName", s.ResourceCountName, "resourceMemoryName", s.ResourceMemoryName, "resourceCoreName", s.ResourceCoreName)...)
	}
	if s := c.Vastai; s != nil {
		errs = append(errs, names(field.NewPath("vastai"), "resourceCountName", s.ResourceCountName)...)
	}
	if s := c.Biren; s != nil {
		errs = append(errs, names(field.NewPath("biren"), "resourceCountName", s.ResourceCountName)...)
	}
	if c.VNPUs != nil {
		errs = append(errs, validateAscend(field.NewPath("vnpus", "configs"), c.VNPUs.Configs)...)
	}
	return errs
}

func (c *Config) empty() bool {
	return c.NVIDIA == nil && c.Cambricon == nil && c.Hygon == nil && c.MetaX == nil && c.MThreads == nil &&
		len(c.Iluvatars) == 0 && c.Enflame == nil && c.Kunlun == nil && c.AWSNeuron == nil && c.AMD == nil &&
		c.Vastai == nil && c.Biren == nil && (c.VNPUs == nil || len(c.VNPUs.Configs) == 0)
}

func (n *NVIDIA) validate(p *field.Path) field.ErrorList {
	errs := names(p, "resourceCountName", n.ResourceCountName, "resourceMemoryName", n.ResourceMemoryName,
		"resourceCoreName", n.ResourceCoreName, "resourceMemoryPercentageName", n.ResourceMemoryPercentageName,
		"resourcePriorityName", n.ResourcePriorityName)
	errs = append(errs, nonNegative(p.Child("defaultMemory"), int64(n.DefaultMemory))...)
	if n.DefaultCores < 0 || n.DefaultCores > 100 {
		errs = append(errs, field.Invalid(p.Child("defaultCores"), n.DefaultCores, "must be between 0 and 100"))
	}
	errs = append(errs, nonNegative(p.Child("defaultGPUNum"), int64(n.DefaultGPUNum))...)
	errs = append(errs, nonNegative(p.Child("memoryFactor"), int64(n.MemoryFactor))...)
	if !slices.Contains(CorePolicies, n.GPUCorePolicy) {
		errs = append(errs, field.NotSupported(p.Child("gpuCorePolicy"), n.GPUCorePolicy, CorePolicies[1:]))
	}
	if n.RuntimeClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n.RuntimeClassName) {
			errs = append(errs, field.Invalid(p.Child("runtimeClassName"), n.RuntimeClassName, msg))
		}
	}
	if n.DeviceSplitCount != nil {
		errs = append(errs, nonNegative(p.Child("deviceSplitCount"), *n.DeviceSplitCount)...)
	}
	if n.DeviceMemoryScaling != nil && *n.DeviceMemoryScaling < 0 {
		errs = append(errs, field.Invalid(p.Child("deviceMemoryScaling"), *n.DeviceMemoryScaling, "must not be negative"))
	}
	if n.DeviceCoreScaling != nil && *n.DeviceCoreScaling < 0 {
		errs = append(errs, field.Invalid(p.Child("deviceCoreScaling"), *n.DeviceCoreScaling, "must not be negative"))
	}
	for i, a := range n.MigProfileAllowlist {
		ap := p.Child("migProfileAllowlist").Index(i)
		if len(a.Models) == 0 {
			errs = append(errs, field.Required(ap.Child("models"), "at least one card model"))
		}
		if len(a.Profiles) == 0 {
			errs = append(errs, field.Required(ap.Child("profiles"), "at least one MIG profile"))
		}
		for j, prof := range a.Profiles {
			if !migProfileName.MatchString(prof) {
				errs = append(errs, field.Invalid(ap.Child("profiles").Index(j), prof, "must look like <n>g.<memory>, e.g. 1g.10gb"))
			}
		}
	}
	return errs
}

func validateIluvatars(p *field.Path, list []Iluvatar) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range list {
		ip := p.Index(i)
		if s.CommonWord == "" {
			errs = append(errs, field.Required(ip.Child("commonWord"), "the card type word, e.g. BI-V150"))
		} else if seen[s.CommonWord] {
			errs = append(errs, field.Duplicate(ip.Child("commonWord"), s.CommonWord))
		}
		seen[s.CommonWord] = true
		errs = append(errs, names(ip, "resourceCountName", s.ResourceCountName, "resourceMemoryName", s.ResourceMemoryName, "resourceCoreName", s.ResourceCoreName)...)
	}
	return errs
}

func validateAscend(p *field.Path, list []AscendConfig) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range list {
		ap := p.Index(i)
		if s.CommonWord == "" {
			errs = append(errs, field.Required(ap.Child("commonWord"), "the chip's type word, e.g. Ascend910B3"))
		} else if seen[s.CommonWord] {
			errs = append(errs, field.Duplicate(ap.Child("commonWord"), s.CommonWord))
		}
		seen[s.CommonWord] = true
		errs = append(errs, names(ap, "resourceName", s.ResourceName, "resourceMemoryName", s.ResourceMemoryName, "resourceCoreName", s.ResourceCoreName)...)
		errs = append(errs, nonNegative(ap.Child("memoryAllocatable"), s.MemoryAllocatable)...)
		errs = append(errs, nonNegative(ap.Child("memoryCapacity"), s.MemoryCapacity)...)
		errs = append(errs, nonNegative(ap.Child("memoryFactor"), int64(s.MemoryFactor))...)
		for j, t := range s.Templates {
			tp := ap.Child("templates").Index(j)
			if t.Name == "" {
				errs = append(errs, field.Required(tp.Child("name"), "the vNPU template name"))
			}
			if t.Memory <= 0 {
				errs = append(errs, field.Invalid(tp.Child("memory"), t.Memory, "must be positive (MiB)"))
			}
		}
	}
	return errs
}

// names checks resource names given as (field, value) pairs; empty values
// are allowed (the resource is then off, as in HAMi).
func names(p *field.Path, pairs ...string) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		for _, msg := range validation.IsQualifiedName(pairs[i+1]) {
			errs = append(errs, field.Invalid(p.Child(pairs[i]), pairs[i+1], msg))
		}
	}
	return errs
}

func nonNegative(p *field.Path, v int64) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(p, v, "must not be negative")}
	}
	return nil
}

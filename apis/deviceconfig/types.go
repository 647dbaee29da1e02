package deviceconfig

// Config is the whole device-config.yaml: one section per vendor, as HAMi
// v2.10's pkg/scheduler/config Config. A nil section is absent.
type Config struct {
	NVIDIA    *NVIDIA     `yaml:"nvidia"`
	Cambricon *Cambricon  `yaml:"cambricon"`
	Hygon     *Hygon      `yaml:"hygon"`
	MetaX     *MetaX      `yaml:"metax"`
	MThreads  *MThreads   `yaml:"mthreads"`
	Iluvatars []Iluvatar  `yaml:"iluvatars"`
	Enflame   *Enflame    `yaml:"enflame"`
	Kunlun    *Kunlun     `yaml:"kunlun"`
	AWSNeuron *AWSNeuron  `yaml:"awsneuron"`
	AMD       *AMD        `yaml:"amd"`
	Vastai    *CountOnly  `yaml:"vastai"`
	Biren     *CountOnly  `yaml:"biren"`
	VNPUs     *AscendVNPU `yaml:"vnpus"`
}

// NVIDIA is the nvidia section. The device-plugin settings (split count,
// scaling, preconfigured memory, log level, NUMA topology) are the
// defaults HAMi's device plugin reads from the same file.
type NVIDIA struct {
	ResourceCountName            string `yaml:"resourceCountName"`
	ResourceMemoryName           string `yaml:"resourceMemoryName"`
	ResourceCoreName             string `yaml:"resourceCoreName"`
	ResourceMemoryPercentageName string `yaml:"resourceMemoryPercentageName"`
	ResourcePriorityName         string `yaml:"resourcePriorityName"`
	OverwriteEnv                 bool   `yaml:"overwriteEnv"`
	DefaultMemory                int32  `yaml:"defaultMemory"`
	DefaultCores                 int32  `yaml:"defaultCores"`
	// DefaultGPUNum is the count the webhook adds to a container asking
	// only for memory or cores. Absent means 0 in HAMi: nothing is added.
	DefaultGPUNum       int32               `yaml:"defaultGPUNum"`
	MemoryFactor        int32               `yaml:"memoryFactor"`
	DisableCoreLimit    bool                `yaml:"disableCoreLimit"`
	MigProfileAllowlist []MIGProfileAllowed `yaml:"migProfileAllowlist"`
	GPUCorePolicy       string              `yaml:"gpuCorePolicy"`
	RuntimeClassName    string              `yaml:"runtimeClassName"`

	DeviceSplitCount          *int64   `yaml:"deviceSplitCount"`
	DeviceMemoryScaling       *float64 `yaml:"deviceMemoryScaling"`
	DeviceCoreScaling         *float64 `yaml:"deviceCoreScaling"`
	PreConfiguredDeviceMemory *int64   `yaml:"preConfiguredDeviceMemory"`
	LibCudaLogLevel           *string  `yaml:"libCudaLogLevel"`
	EnableNUMATopology        *bool    `yaml:"enableNumaTopology"`
}

// MIGProfileAllowed lists the MIG profiles allowed on cards whose model
// contains one of Models.
type MIGProfileAllowed struct {
	Models   []string `yaml:"models"`
	Profiles []string `yaml:"profiles"`
}

// Cambricon is the cambricon section (MLU).
type Cambricon struct {
	ResourceCountName  string `yaml:"resourceCountName"`
	ResourceMemoryName string `yaml:"resourceMemoryName"`
	ResourceCoreName   string `yaml:"resourceCoreName"`
}

// Hygon is the hygon section (DCU).
type Hygon struct {
	ResourceCountName  string `yaml:"resourceCountName"`
	ResourceMemoryName string `yaml:"resourceMemoryName"`
	ResourceCoreName   string `yaml:"resourceCoreName"`
	MemoryFactor       int32  `yaml:"memoryFactor"`
}

// MetaX is the metax section: whole GPUs and sGPU shares.
type MetaX struct {
	ResourceCountName   string `yaml:"resourceCountName"`
	ResourceVCountName  string `yaml:"resourceVCountName"`
	ResourceVMemoryName string `yaml:"resourceVMemoryName"`
	ResourceVCoreName   string `yaml:"resourceVCoreName"`
	SGPUTopologyAware   bool   `yaml:"sgpuTopologyAware"`
}

// MThreads is the mthreads section (Moore Threads).
type MThreads struct {
	ResourceCountName  string `yaml:"resourceCountName"`
	ResourceMemoryName string `yaml:"resourceMemoryName"`
	ResourceCoreName   string `yaml:"resourceCoreName"`
}

// Iluvatar is one entry of the iluvatars list.
type Iluvatar struct {
	ChipName           string `yaml:"chipName"`
	CommonWord         string `yaml:"commonWord"`
	ResourceCountName  string `yaml:"resourceCountName"`
	ResourceMemoryName string `yaml:"resourceMemoryName"`
	ResourceCoreName   string `yaml:"resourceCoreName"`
}

// Enflame is the enflame section: whole GCUs, DRS shares and the legacy
// shared-GCU names.
type Enflame struct {
	ResourceNameGCU            string `yaml:"resourceNameGCU"`
	ResourceNameDRSGCU         string `yaml:"resourceNameDRSGCU"`
	ResourceNameGCUMemory      string `yaml:"resourceNameGCUMemory"`
	ResourceNameGCUCore        string `yaml:"resourceNameGCUCore"`
	ResourceNameVGCU           string `yaml:"resourceNameVGCU"`
	ResourceNameVGCUPercentage string `yaml:"resourceNameVGCUPercentage"`
}

// Kunlun is the kunlun section: whole XPUs and vXPU shares.
type Kunlun struct {
	ResourceCountName   string `yaml:"resourceCountName"`
	ResourceVCountName  string `yaml:"resourceVCountName"`
	ResourceVMemoryName string `yaml:"resourceVMemoryName"`
}

// AWSNeuron is the awsneuron section.
type AWSNeuron struct {
	ResourceCountName string `yaml:"resourceCountName"`
	ResourceCoreName  string `yaml:"resourceCoreName"`
}

// AMD is the amd section.
type AMD struct {
	ResourceCountName  string `yaml:"resourceCountName"`
	ResourceMemoryName string `yaml:"resourceMemoryName"`
	ResourceCoreName   string `yaml:"resourceCoreName"`
}

// CountOnly is a section with a count resource alone (vastai, biren).
type CountOnly struct {
	ResourceCountName string `yaml:"resourceCountName"`
}

// AscendVNPU is the vnpus section (Huawei Ascend).
type AscendVNPU struct {
	HAMiVNPUCore bool           `yaml:"hamiVnpuCore"`
	Configs      []AscendConfig `yaml:"configs"`
}

// AscendConfig is one Ascend chip kind.
type AscendConfig struct {
	ChipName           string           `yaml:"chipName"`
	CommonWord         string           `yaml:"commonWord"`
	ResourceName       string           `yaml:"resourceName"`
	ResourceMemoryName string           `yaml:"resourceMemoryName"`
	ResourceCoreName   string           `yaml:"resourceCoreName"`
	MemoryAllocatable  int64            `yaml:"memoryAllocatable"`
	MemoryCapacity     int64            `yaml:"memoryCapacity"`
	MemoryFactor       int32            `yaml:"memoryFactor"`
	AICore             int32            `yaml:"aiCore"`
	AICPU              int32            `yaml:"aiCPU"`
	RuntimeClassName   string           `yaml:"runtimeClassName"`
	OverwriteEnv       bool             `yaml:"overwriteEnv"`
	SuperPod           bool             `yaml:"superPod"`
	Templates          []AscendTemplate `yaml:"templates"`
}

// AscendTemplate is one vNPU template.
type AscendTemplate struct {
	Name   string `yaml:"name"`
	Memory int64  `yaml:"memory"`
	AICore int32  `yaml:"aiCore"`
	AICPU  int32  `yaml:"aiCPU"`
}

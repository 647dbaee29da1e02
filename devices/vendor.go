package devices

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Vendor is one kind of device HAMi shares. Implementations are pure and
// safe for concurrent use.
type Vendor interface {
	// Name is the vendor word written in assignments, e.g. "NVIDIA".
	Name() string
	// Resources names the extended resources the vendor manages.
	Resources() ResourceNames
	// ParsePod reads what each container of the pod asks of this vendor,
	// init containers first, and the pod's card preferences.
	ParsePod(pod *corev1.Pod) (PodRequest, error)
	// Inventory decodes the node's cards. It returns (nil, nil) when the
	// node has none of this vendor's cards, and an error that says why when
	// the node claims cards but they cannot be used.
	Inventory(node *corev1.Node) ([]Card, error)
	// InventoryChanged reports whether an update of the node may change
	// what Inventory returns.
	InventoryChanged(old, updated *corev1.Node) bool
	// Fit places the pod's containers on the node's cards; used is
	// index-aligned with cards and is not modified.
	Fit(cards []Card, used []Usage, req *PodRequest) (Assignment, *Rejection)
	// AssignmentAnnotations are the pod annotation keys of the assignment:
	// the one the device plugin consumes and the one kept for accounting.
	// toAllocate is empty for vendors whose plugin reads only allocated.
	AssignmentAnnotations() (toAllocate, allocated string)
	// Default applies admission defaults to one container and reports
	// whether the container asks for this vendor's devices. It may change
	// a container that asks for nothing (env such as NVIDIA's
	// NVIDIA_VISIBLE_DEVICES=none). On error the container is unchanged.
	Default(ctr *corev1.Container) (bool, error)
}

// StandardFitter is a vendor whose Fit is FitPod with no rule of its own
// (no FitOptions, no request rewriting at fit time), so that every grant
// takes one of a card's Split shares, the memory asked and the cores
// asked, as GroupRoom counts them.
type StandardFitter interface {
	Vendor
	// FitsByStandardRules marks the vendor; it does nothing.
	FitsByStandardRules()
}

// RuntimeClassVendor is implemented by a vendor whose device pods need a
// runtime class (HAMi's runtimeClassName). The webhook sets
// spec.runtimeClassName to RuntimeClassName when the pod names none, the
// name is not empty and a container asks for the vendor's devices.
type RuntimeClassVendor interface {
	RuntimeClassName() string
}

// MemoryScaler is implemented by a vendor with HAMi's memoryFactor: the
// memory a container asks is multiplied by MemoryFactor (>= 1; 1 is off)
// in ParsePod, and a namespace's memory quota limit is multiplied by it
// too, so that a quota is written in the units the user asks in.
type MemoryScaler interface {
	MemoryFactor() int32
}

// ResourceNames are the extended resources of one vendor.
type ResourceNames struct {
	Count            corev1.ResourceName
	Memory           corev1.ResourceName
	MemoryPercentage corev1.ResourceName
	Cores            corev1.ResourceName
	Priority         corev1.ResourceName
}

// All lists the names that are set.
func (r ResourceNames) All() []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, n := range []corev1.ResourceName{r.Count, r.Memory, r.MemoryPercentage, r.Cores, r.Priority} {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// Config is the part of a vendor's behaviour an operator may set. Empty
// fields take the vendor's defaults. It is filled either from the plugin's
// own vendors list or from HAMi's device-config.yaml (apis/config).
type Config struct {
	// Name selects the vendor, e.g. "nvidia".
	Name string `json:"name"`
	// ResourceCountName etc. rename the extended resources.
	ResourceCountName            string `json:"resourceCountName,omitempty"`
	ResourceMemoryName           string `json:"resourceMemoryName,omitempty"`
	ResourceMemoryPercentageName string `json:"resourceMemoryPercentageName,omitempty"`
	ResourceCoresName            string `json:"resourceCoresName,omitempty"`
	ResourcePriorityName         string `json:"resourcePriorityName,omitempty"`
	// DefaultMemoryMiB is the memory per card of a container that names
	// none; 0 means the whole card.
	DefaultMemoryMiB int32 `json:"defaultMemoryMiB,omitempty"`
	// DefaultCores is the core share of a container that names none.
	DefaultCores int32 `json:"defaultCores,omitempty"`
	// DefaultCount is the card count the webhook adds to a container that
	// asks only for memory or cores; nil means 1, 0 adds none (HAMi's
	// defaultGPUNum: 0), and such a container then asks for no card.
	DefaultCount *int32 `json:"defaultCount,omitempty"`
	// MemoryFactor multiplies the memory a container asks for (HAMi's
	// memoryFactor); 0 and 1 leave it as written.
	MemoryFactor int32 `json:"memoryFactor,omitempty"`
	// RuntimeClassName is set on pods that ask for this vendor and name
	// no runtime class (webhook).
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	// OverwriteEnv hides the vendor's devices from containers that ask for
	// none (NVIDIA: NVIDIA_VISIBLE_DEVICES=none) (webhook).
	OverwriteEnv bool `json:"overwriteEnv,omitempty"`
	// CorePolicy is HAMi's gpuCorePolicy (default, force, disable); force
	// and disable are passed to every container as
	// GPU_CORE_UTILIZATION_POLICY (webhook).
	CorePolicy string `json:"corePolicy,omitempty"`
	// MIGProfiles lists, per card model, the MIG profiles the device plugin
	// may create (HAMi's migProfileAllowlist); first match wins.
	MIGProfiles []MIGProfileAllow `json:"migProfiles,omitempty"`
	// NodeDefaults are the device plugin's settings (split count and
	// scaling). The scheduler reads cards as registered; these only shape
	// simulated nodes and documentation.
	NodeDefaults NodeDefaults `json:"nodeDefaults,omitempty"`
	// Vendor is a vendor-specific payload its constructor reads
	// (devices/vendors), for settings the fields above do not cover: an
	// ascend.Config, one chip, for Name "ascend". nil for the others.
	Vendor any `json:"-"`
}

// MIGProfileAllow is one entry of HAMi's migProfileAllowlist.
type MIGProfileAllow struct {
	// Models are substrings of the card's model name.
	Models []string `json:"models"`
	// Profiles are MIG profile names such as 1g.10gb.
	Profiles []string `json:"profiles"`
}

// NodeDefaults are HAMi's device-plugin settings that a node config may
// override (deviceSplitCount, deviceMemoryScaling, deviceCoreScaling).
type NodeDefaults struct {
	SplitCount    int32   `json:"splitCount,omitempty"`
	MemoryScaling float64 `json:"memoryScaling,omitempty"`
	CoreScaling   float64 `json:"coreScaling,omitempty"`
}

// Card-count defaults.
const DefaultCardCount int32 = 1

// CardCountDefault returns the count the webhook adds (see DefaultCount).
func (c Config) CardCountDefault() int32 {
	if c.DefaultCount == nil {
		return DefaultCardCount
	}
	return *c.DefaultCount
}

// Validate reports settings no vendor can work with.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("vendor name is empty")
	case c.DefaultMemoryMiB < 0:
		return fmt.Errorf("vendor %s: defaultMemoryMiB %d is negative", c.Name, c.DefaultMemoryMiB)
	case c.DefaultCores < 0 || c.DefaultCores > 100:
		return fmt.Errorf("vendor %s: defaultCores %d is outside 0-100", c.Name, c.DefaultCores)
	case c.DefaultCount != nil && *c.DefaultCount < 0:
		return fmt.Errorf("vendor %s: defaultCount %d is negative", c.Name, *c.DefaultCount)
	case c.MemoryFactor < 0:
		return fmt.Errorf("vendor %s: memoryFactor %d is negative", c.Name, c.MemoryFactor)
	}
	return nil
}

// Renamable are the resources besides the count that a vendor lets Config
// rename.
type Renamable uint8

const (
	RenameMemory Renamable = 1 << iota
	RenameCores
)

// OnlyRenames reports whether c sets nothing but its name, its node
// defaults, its count resource's name and the names r allows: the whole
// configuration of vendors whose webhook applies no defaults and that read
// no payload.
func (c Config) OnlyRenames(r Renamable) bool {
	return (r&RenameMemory != 0 || c.ResourceMemoryName == "") &&
		(r&RenameCores != 0 || c.ResourceCoresName == "") &&
		c.ResourceMemoryPercentageName == "" && c.ResourcePriorityName == "" &&
		c.DefaultMemoryMiB == 0 && c.DefaultCores == 0 && c.DefaultCount == nil && c.MemoryFactor == 0 &&
		c.RuntimeClassName == "" && !c.OverwriteEnv && c.CorePolicy == "" && len(c.MIGProfiles) == 0 && c.Vendor == nil
}

// Registry holds the enabled vendors in a fixed order.
type Registry struct {
	vendors []Vendor
}

// NewRegistry returns a registry of the given vendors; names must be unique.
func NewRegistry(vendors ...Vendor) (*Registry, error) {
	seen := map[string]bool{}
	for _, v := range vendors {
		if seen[v.Name()] {
			return nil, fmt.Errorf("vendor %s registered twice", v.Name())
		}
		seen[v.Name()] = true
	}
	return &Registry{vendors: vendors}, nil
}

// Vendors returns the vendors in registration order; callers must not
// modify the slice.
func (r *Registry) Vendors() []Vendor { return r.vendors }

// ParsePod reads the pod's requests for every vendor; the result is
// index-aligned with Vendors. any is false when the pod asks for nothing.
func (r *Registry) ParsePod(pod *corev1.Pod) (reqs []PodRequest, any bool, err error) {
	reqs = make([]PodRequest, len(r.vendors))
	for i, v := range r.vendors {
		req, err := v.ParsePod(pod)
		if err == nil {
			if sc, ok := v.(ServeChecker); ok {
				err = sc.CheckServable(pod)
			}
		}
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", v.Name(), err)
		}
		reqs[i] = req
		if !req.IsZero() {
			any = true
		}
	}
	return reqs, any, nil
}

// Containers returns the pod's init containers then its regular
// containers, the order in which assignments list them.
func Containers(pod *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// InitContainersSucceeded reports whether the pod's init containers have
// all finished well, as HAMi decides it: the pod reports at least one init
// container status and every one is terminated with exit code 0. From then
// on HAMi counts the pod's regular containers alone (see ApplyGrants and
// Assignment.Regular), for good.
func InitContainersSucceeded(pod *corev1.Pod) bool {
	statuses := pod.Status.InitContainerStatuses
	if len(statuses) == 0 {
		return false
	}
	for _, s := range statuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

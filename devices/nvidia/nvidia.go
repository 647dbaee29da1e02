// Package nvidia is the NVIDIA vendor: HAMi's vGPU sharing of NVIDIA cards
// (hami-core), read from and written to HAMi's annotations.
package nvidia

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Annotation keys of the NVIDIA vendor.
const (
	RegisterAnnotation = "hami.io/node-nvidia-register"
	// ScoreAnnotation holds the topology scores between the node's cards
	// (written with the register annotation when the device plugin runs
	// with ENABLE_TOPOLOGY_SCORE=true).
	ScoreAnnotation      = "hami.io/node-nvidia-score"
	ToAllocateAnnotation = "hami.io/vgpu-devices-to-allocate"
	AllocatedAnnotation  = "hami.io/vgpu-devices-allocated"

	UseModelAnnotation   = "nvidia.com/use-gputype"
	AvoidModelAnnotation = "nvidia.com/nouse-gputype"
	UseUUIDAnnotation    = "nvidia.com/use-gpuuuid"
	AvoidUUIDAnnotation  = "nvidia.com/nouse-gpuuuid"
	NUMABindAnnotation   = "nvidia.com/numa-bind"
	ModeAnnotation       = "nvidia.com/vgpu-mode"
)

// VendorWord is written as the type of every NVIDIA grant.
const VendorWord = "NVIDIA"

// TaskPriorityEnv carries nvidia.com/priority to HAMi-core.
const TaskPriorityEnv = "CUDA_TASK_PRIORITY"

// CorePolicyEnv carries the core policy (devices.Config.CorePolicy) to
// HAMi-core (HAMi's util.CoreLimitSwitch).
const CorePolicyEnv = "GPU_CORE_UTILIZATION_POLICY"

// VisibleDevicesEnv is the NVIDIA container runtime's device list; the
// webhook sets it to "none" in containers that ask for no card when
// devices.Config.OverwriteEnv is on.
const VisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES"

// HAMi's gpuCorePolicy values. CorePolicyDefault (or empty) adds no env.
const (
	CorePolicyDefault = "default"
	CorePolicyForce   = "force"
	CorePolicyDisable = "disable"
)

// Default resource names.
const (
	DefaultCountName            = "nvidia.com/gpu"
	DefaultMemoryName           = "nvidia.com/gpumem"
	DefaultMemoryPercentageName = "nvidia.com/gpumem-percentage"
	DefaultCoresName            = "nvidia.com/gpucores"
	DefaultPriorityName         = "nvidia.com/priority"
)

// Vendor implements devices.Vendor for NVIDIA cards.
type Vendor struct {
	names         devices.ResourceNames
	defaultMemory int32
	defaultCores  int32
	defaultCount  int32
	// memoryFactor multiplies gpumem (HAMi's memoryFactor); always >= 1.
	memoryFactor int32
	// runtimeClass, overwriteEnv and corePolicy are the webhook's settings
	// (devices.Config).
	runtimeClass string
	overwriteEnv bool
	corePolicy   string
}

var _ devices.Vendor = &Vendor{}

// New returns the NVIDIA vendor with cfg's settings over the defaults.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.CorePolicy {
	case "", CorePolicyDefault, CorePolicyForce, CorePolicyDisable:
	default:
		return nil, fmt.Errorf("vendor %s: corePolicy %q is not one of %s, %s, %s", cfg.Name, cfg.CorePolicy, CorePolicyDefault, CorePolicyForce, CorePolicyDisable)
	}
	v := &Vendor{
		names: devices.ResourceNames{
			Count:            corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName)),
			Memory:           corev1.ResourceName(cmp.Or(cfg.ResourceMemoryName, DefaultMemoryName)),
			MemoryPercentage: corev1.ResourceName(cmp.Or(cfg.ResourceMemoryPercentageName, DefaultMemoryPercentageName)),
			Cores:            corev1.ResourceName(cmp.Or(cfg.ResourceCoresName, DefaultCoresName)),
			Priority:         corev1.ResourceName(cmp.Or(cfg.ResourcePriorityName, DefaultPriorityName)),
		},
		defaultMemory: cfg.DefaultMemoryMiB,
		defaultCores:  cfg.DefaultCores,
		defaultCount:  cfg.CardCountDefault(),
		memoryFactor:  max(cfg.MemoryFactor, 1),
		runtimeClass:  cfg.RuntimeClassName,
		overwriteEnv:  cfg.OverwriteEnv,
		corePolicy:    cfg.CorePolicy,
	}
	return v, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// RuntimeClassName implements devices.RuntimeClassVendor.
func (v *Vendor) RuntimeClassName() string { return v.runtimeClass }

// MemoryFactor implements devices.MemoryScaler.
func (v *Vendor) MemoryFactor() int32 { return v.memoryFactor }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation, AllocatedAnnotation
}

// Fit implements devices.Vendor with HAMi's rules: hami-core and mps cards
// are shared, a mig card gives a MIG slice (see devices.FitPod).
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	return devices.FitPod(VendorWord, cards, used, req)
}

// FitsByStandardRules implements devices.StandardFitter: Fit is FitPod.
func (v *Vendor) FitsByStandardRules() {}

// Inventory implements devices.Vendor.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[RegisterAnnotation]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RegisterAnnotation, err)
	}
	cards = nvidiaTyped(cards)
	if len(cards) == 0 {
		return nil, fmt.Errorf("%s lists no card whose type names NVIDIA", RegisterAnnotation)
	}
	if q, ok := node.Status.Allocatable[v.names.Count]; !ok || q.Sign() <= 0 {
		return nil, fmt.Errorf("allocatable %s is 0: the device plugin is not serving", v.names.Count)
	}
	if raw, ok := node.Annotations[ScoreAnnotation]; ok {
		// HAMi registers no card at all when the scores do not parse.
		if err := applyLinkScores(cards, raw); err != nil {
			return nil, err
		}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// nvidiaTyped keeps the cards whose type contains "nvidia" in any case:
// HAMi fits an NVIDIA request only on those (real device plugins always
// name NVIDIA in the type).
func nvidiaTyped(cards []devices.Card) []devices.Card {
	out := cards[:0]
	for _, c := range cards {
		if strings.Contains(strings.ToLower(c.Model), "nvidia") {
			out = append(out, c)
		}
	}
	return out
}

// linkScores is one element of the score annotation.
type linkScores struct {
	UUID  string         `json:"uuid"`
	Score map[string]int `json:"score"`
}

// applyLinkScores sets each card's Links from the first entry that names
// it in a hami.io/node-nvidia-score value.
func applyLinkScores(cards []devices.Card, raw string) error {
	var all []linkScores
	if err := json.Unmarshal([]byte(raw), &all); err != nil {
		return fmt.Errorf("%s is not a JSON array of {uuid, score}: %v", ScoreAnnotation, err)
	}
	for i := range cards {
		for _, ls := range all {
			if ls.UUID == cards[i].UUID {
				cards[i].Links = devices.EncodeLinks(ls.Score)
				break
			}
		}
	}
	return nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	if old.Annotations[RegisterAnnotation] != updated.Annotations[RegisterAnnotation] ||
		old.Annotations[ScoreAnnotation] != updated.Annotations[ScoreAnnotation] ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon] {
		return true
	}
	oq, oldOK := old.Status.Allocatable[v.names.Count]
	nq, newOK := updated.Status.Allocatable[v.names.Count]
	return oldOK != newOK || oq.Cmp(nq) != 0
}

// ParsePod implements devices.Vendor. Like HAMi, a container whose
// quantities cannot be read asks for no card rather than failing the pod
// (see parseContainer); preference annotations with values HAMi does not
// know fall back to HAMi's defaults.
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	var req devices.PodRequest
	containers := devices.Containers(pod)
	asked := false
	for _, c := range containers {
		r := v.parseContainer(c)
		if !r.IsZero() {
			asked = true
		}
		req.Containers = append(req.Containers, r)
	}
	if !asked {
		return devices.PodRequest{}, nil
	}
	req.Inits = len(pod.Spec.InitContainers)
	req.Preferences = parsePreferences(pod.Annotations)
	return req, nil
}

// parseContainer reads one container's request, limits before requests, as
// HAMi's GenerateResourceRequests does:
//   - a count that is not a whole number in 1..2^31-1 asks for no card;
//   - gpumem is multiplied by memoryFactor; a gpumem that is not a whole
//     number, is negative or exceeds (2^31-1)/memoryFactor makes the
//     container ask for no card;
//   - a gpumem-percentage that is not a whole number or is <= 0 is ignored,
//     above 100 it is 100;
//   - without gpumem and percentage the memory is defaultMemory (not
//     multiplied), else the whole card;
//   - gpucores that are not a whole number are ignored (defaultCores).
//     Negative gpucores are ignored too, where HAMi would grant negative
//     cores that corrupt the card's accounting.
func (v *Vendor) parseContainer(c *corev1.Container) devices.Request {
	count, ok := wholeQuantity(c, v.names.Count)
	if !ok || count <= 0 || count > math.MaxInt32 {
		return devices.Request{}
	}
	r := devices.Request{Count: int32(count), Cores: v.defaultCores}
	if q, present := lookup(c, v.names.Memory); present {
		mem, exact := q.AsInt64()
		factor := max(int64(v.memoryFactor), 1)
		if !exact || mem < 0 || mem > math.MaxInt32/factor {
			return devices.Request{}
		}
		r.MemoryMiB = int32(mem * factor)
	}
	if pct, ok := wholeQuantity(c, v.names.MemoryPercentage); ok && pct > 0 {
		r.MemoryPercent = int32(min(pct, 100))
	}
	if r.MemoryMiB == 0 && r.MemoryPercent == 0 {
		if v.defaultMemory > 0 {
			r.MemoryMiB = v.defaultMemory
		} else {
			r.MemoryPercent = 100
		}
	}
	if cores, ok := wholeQuantity(c, v.names.Cores); ok && cores >= 0 {
		r.Cores = int32(min(cores, math.MaxInt32))
	}
	return r
}

// lookup finds a resource in the limits, then the requests.
func lookup(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, bool) {
	q, ok := c.Resources.Limits[name]
	if !ok {
		q, ok = c.Resources.Requests[name]
	}
	return q, ok
}

// wholeQuantity reads a resource as a whole number; ok is false when it is
// absent or not a whole number.
func wholeQuantity(c *corev1.Container, name corev1.ResourceName) (int64, bool) {
	q, ok := lookup(c, name)
	if !ok {
		return 0, false
	}
	return q.AsInt64()
}

// quantity reads a whole, non-negative resource quantity from limits, then
// requests; the admission webhook refuses anything else.
func quantity(c *corev1.Container, name corev1.ResourceName) (int32, bool, error) {
	q, ok := lookup(c, name)
	if !ok {
		return 0, false, nil
	}
	v, exact := q.AsInt64()
	if !exact || v < 0 || v > 1<<31-1 {
		return 0, false, fmt.Errorf("%s %s is not a whole number between 0 and 2147483647", name, q.String())
	}
	return int32(v), true, nil
}

// parsePreferences reads the pod's card annotations. As in HAMi, a
// numa-bind value that is not a true boolean means no binding, and the card
// policy is kept as written (FitPod orders unknown words as spread).
// Invalid scoring weights make the pod fit no node (Preferences.Invalid).
func parsePreferences(annotations map[string]string) devices.Preferences {
	p := devices.Preferences{
		UseModels:   devices.SplitUpperList(annotations[UseModelAnnotation]),
		AvoidModels: devices.SplitUpperList(annotations[AvoidModelAnnotation]),
		UseUUIDs:    devices.SplitList(annotations[UseUUIDAnnotation]),
		AvoidUUIDs:  devices.SplitList(annotations[AvoidUUIDAnnotation]),
		Mode:        strings.TrimSpace(annotations[ModeAnnotation]),
	}
	if s, ok := annotations[NUMABindAnnotation]; ok {
		bind, err := strconv.ParseBool(s)
		p.NUMABind = err == nil && bind
	}
	if policy, ok := annotations[devices.CardPolicyAnnotation]; ok {
		p.Policy = devices.CardPolicy(policy)
		if policy == "" {
			// HAMi orders by an empty policy as by spread; an empty Policy
			// would take the scheduler's default instead.
			p.Policy = devices.CardSpread
		}
		for _, item := range devices.SplitList(policy) {
			if item == string(devices.CardMutex) {
				p.Exclusive = true
			}
		}
	}
	if s, ok := annotations[devices.ScoringWeightsAnnotation]; ok {
		w, err := devices.ParseScoringWeights(s)
		if err != nil {
			p.Invalid = err.Error()
		}
		p.Weights = w
	}
	return p
}

// Default implements devices.Vendor with HAMi's admission rules
// (MutateAdmission), in HAMi's order:
//   - a value that cannot be read (a memory percentage outside 0-100, a
//     fractional or negative count, ...) is an error, and the container is
//     left unchanged;
//   - nvidia.com/priority in limits becomes env CUDA_TASK_PRIORITY;
//   - corePolicy force or disable becomes env GPU_CORE_UTILIZATION_POLICY,
//     on every container whether it asks for a card or not;
//   - memory or cores in limits without the count add the count
//     (defaultCount; none when it is 0);
//   - a count without cores that asks a whole card's memory adds
//     exclusive cores;
//   - with overwriteEnv, a container that asks for no card gets
//     NVIDIA_VISIBLE_DEVICES=none.
//
// The container asks for cards when its limits name the count (even
// nvidia.com/gpu: 0), when the count was added, or when exclusive cores
// were added.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	if pct, ok, err := quantity(c, v.names.MemoryPercentage); err != nil {
		return false, err
	} else if ok && pct > 100 {
		return false, fmt.Errorf("%s %d is above 100", v.names.MemoryPercentage, pct)
	}
	for _, name := range []corev1.ResourceName{v.names.Count, v.names.Memory, v.names.Cores} {
		if _, _, err := quantity(c, name); err != nil {
			return false, err
		}
	}
	if q, ok := c.Resources.Limits[v.names.Priority]; ok {
		setEnv(c, TaskPriorityEnv, strconv.FormatInt(q.Value(), 10))
	}
	if v.corePolicy != "" && v.corePolicy != CorePolicyDefault {
		setEnv(c, CorePolicyEnv, v.corePolicy)
	}
	asks := v.addDefaultCount(c)
	if v.defaultExclusiveCores(c) {
		asks = true
	}
	if !asks && v.overwriteEnv {
		setEnv(c, VisibleDevicesEnv, "none")
	}
	return asks, nil
}

// setEnv sets name to value. Entries of that name already there (one the
// user wrote, or one a previous run added) are replaced in place rather
// than followed by a second entry, so running the defaults twice changes
// nothing and the container sees value, as it would with HAMi's appended
// entry (the last entry of a name wins).
func setEnv(c *corev1.Container, name, value string) {
	found := false
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			found = true
		}
	}
	if !found {
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func (v *Vendor) addDefaultCount(c *corev1.Container) bool {
	if _, ok := c.Resources.Limits[v.names.Count]; ok {
		return true
	}
	if v.defaultCount == 0 {
		// HAMi's defaultGPUNum: 0 adds no count: the container asks for no card.
		return false
	}
	for _, name := range []corev1.ResourceName{v.names.Cores, v.names.Memory, v.names.MemoryPercentage} {
		if _, ok := c.Resources.Limits[name]; ok {
			c.Resources.Limits[v.names.Count] = *resource.NewQuantity(int64(v.defaultCount), resource.DecimalSI)
			return true
		}
	}
	return false
}

func present(c *corev1.Container, name corev1.ResourceName) bool {
	_, inLimits := c.Resources.Limits[name]
	_, inRequests := c.Resources.Requests[name]
	return inLimits || inRequests
}

// defaultExclusiveCores gives 100 cores to a container that asks for cards
// but no cores, when it asks for the whole card's memory (100 percent, or
// no memory at all).
func (v *Vendor) defaultExclusiveCores(c *corev1.Container) bool {
	if !present(c, v.names.Count) || present(c, v.names.Cores) {
		return false
	}
	exclusive := false
	if pct, ok, _ := quantity(c, v.names.MemoryPercentage); ok {
		exclusive = pct == 100
	} else {
		exclusive = !present(c, v.names.Memory)
	}
	if !exclusive {
		return false
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[v.names.Cores] = *resource.NewQuantity(100, resource.DecimalSI)
	return true
}

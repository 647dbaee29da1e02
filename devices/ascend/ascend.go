// Package ascend is the Huawei Ascend vendor: HAMi's vNPU sharing of
// Ascend NPUs, one Vendor per chip (HAMi's vnpus.configs entry), read from
// and written to the annotations Ascend's device plugin uses.
package ascend

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Pod and node annotations of the Ascend vendor that do not depend on the
// chip. Chip-dependent keys are returned by the Vendor's methods and by
// the *Annotation functions below.
const (
	// VNPUModeAnnotation on a pod selects the split: hami-core is the soft
	// split; anything else (or none) is the hard split with templates.
	VNPUModeAnnotation = "huawei.com/vnpu-mode"
	// NodeHAMiCoreAnnotation on a node ("true"/"false", no prefix) says
	// whether the node supports the hami-core soft split; it overrides
	// Config.HamiVnpuCore.
	NodeHAMiCoreAnnotation = "hami-vnpu-core"
	// PredicateTimeAnnotation (no prefix) carries the decision's unix
	// seconds, written with the assignment.
	PredicateTimeAnnotation = "predicate-time"
	// VisibleDevicesEnv is blanked in containers that do not ask for the
	// chip when Config.OverwriteEnv is set.
	VisibleDevicesEnv = "ASCEND_VISIBLE_DEVICES"
)

// Sharing modes a card is given in Inventory (devices.Card.Mode) and a pod
// asks for (devices.Preferences.Mode).
const (
	// ModeHAMiCore: soft split; on a card, the node supports it.
	ModeHAMiCore = "hami-core"
	// ModeTemplate: the card's node supports only the hard (template)
	// split. Pods never ask for it by name: a hard-split pod asks for no
	// mode and fits either kind of node.
	ModeTemplate = "vnpu-template"
)

// NoNetworkID is the devices.Card.Group of an Ascend card that registered
// no custominfo.NetworkID; other cards' Group is their NetworkID. NetworkID
// placement applies only on nodes where every card has one (HAMi's
// hasNetworkID). Card.NUMA is the registered numa, which HAMi's card sort
// reads.
const NoNetworkID = -1

const (
	ascend910Prefix = "Ascend910"
	ascend910C      = "Ascend910C"
	// networkWeight scales the topology score, as HAMi does.
	networkWeight = 10
	// npusPerModule is the number of NPUs on one Ascend 910C module.
	npusPerModule = 2
)

// RegisterAnnotation is the node annotation with the chip's NPUs.
func RegisterAnnotation(commonWord string) string { return "hami.io/node-register-" + commonWord }

// HandshakeAnnotation is the chip's node handshake key.
func HandshakeAnnotation(commonWord string) string { return "hami.io/node-handshake-" + commonWord }

// ToAllocateAnnotation and AllocatedAnnotation are the chip's assignment
// keys.
func ToAllocateAnnotation(commonWord string) string {
	return "hami.io/" + commonWord + "-devices-to-allocate"
}

// AllocatedAnnotation is the assignment kept for accounting.
func AllocatedAnnotation(commonWord string) string {
	return "hami.io/" + commonWord + "-devices-allocated"
}

// UseUUIDAnnotation and AvoidUUIDAnnotation are the pod's NPU selectors.
func UseUUIDAnnotation(commonWord string) string { return "hami.io/use-" + commonWord + "-uuid" }

// AvoidUUIDAnnotation lists NPUs the pod must not get.
func AvoidUUIDAnnotation(commonWord string) string { return "hami.io/no-use-" + commonWord + "-uuid" }

// RuntimeInfoAnnotation is the pod annotation listing each assigned NPU
// with its template (the device plugin creates the vNPUs from it).
func RuntimeInfoAnnotation(commonWord string) string { return "huawei.com/" + commonWord }

// Vendor implements devices.Vendor for one Ascend chip.
type Vendor struct {
	cfg   Config
	names devices.ResourceNames

	registerKey, handshakeKey, toAllocateKey, allocatedKey string
	useUUIDKey, avoidUUIDKey, runtimeInfoKey               string

	// topology: the chip is a 910 (NetworkID-aware placement and score).
	topology bool
	// pairs: the chip is a 910C (NPUs in module pairs).
	pairs bool
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.Handshaker   = &Vendor{}
	_ devices.PodAnnotator = &Vendor{}
	_ devices.PodDefaulter = &Vendor{}
	_ devices.NodeScorer   = &Vendor{}
	_ devices.MemoryScaler = &Vendor{}
)

// New returns the vendor of one chip.
func New(cfg Config) (*Vendor, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cw := cfg.CommonWord
	cfg.Templates = slices.Clone(cfg.Templates)
	slices.SortStableFunc(cfg.Templates, func(a, b Template) int {
		switch {
		case a.Memory < b.Memory:
			return -1
		case a.Memory > b.Memory:
			return 1
		}
		return 0
	})
	if cfg.ResourceName == "" {
		cfg.ResourceName = "huawei.com/" + cw
	}
	if cfg.ResourceMemoryName == "" {
		cfg.ResourceMemoryName = "huawei.com/" + cw + "-memory"
	}
	if cfg.ResourceCoreName == "" {
		cfg.ResourceCoreName = "huawei.com/" + cw + "-core"
	}
	return &Vendor{
		cfg: cfg,
		names: devices.ResourceNames{
			Count:  corev1.ResourceName(cfg.ResourceName),
			Memory: corev1.ResourceName(cfg.ResourceMemoryName),
			Cores:  corev1.ResourceName(cfg.ResourceCoreName),
		},
		registerKey:    RegisterAnnotation(cw),
		handshakeKey:   HandshakeAnnotation(cw),
		toAllocateKey:  ToAllocateAnnotation(cw),
		allocatedKey:   AllocatedAnnotation(cw),
		useUUIDKey:     UseUUIDAnnotation(cw),
		avoidUUIDKey:   AvoidUUIDAnnotation(cw),
		runtimeInfoKey: RuntimeInfoAnnotation(cw),
		topology:       strings.HasPrefix(cw, ascend910Prefix),
		pairs:          cw == ascend910C,
	}, nil
}

// Config returns the chip's settings (templates sorted by memory).
func (v *Vendor) Config() Config {
	c := v.cfg
	c.Templates = slices.Clone(c.Templates)
	return c
}

// Name implements devices.Vendor: the chip's CommonWord.
func (v *Vendor) Name() string { return v.cfg.CommonWord }

// MemoryFactor implements devices.MemoryScaler: HAMi scales a namespace's
// <chip>-memory quota by the chip's memoryFactor too. 0 means 1.
func (v *Vendor) MemoryFactor() int32 { return max(v.cfg.MemoryFactor, 1) }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) { return v.toAllocateKey, v.allocatedKey }

// HandshakeAnnotation implements devices.Handshaker.
func (v *Vendor) HandshakeAnnotation() string { return v.handshakeKey }

// registeredExtra is the part of a registered NPU that the shared decoder
// does not keep.
type registeredExtra struct {
	CustomInfo map[string]any `json:"custominfo"`
}

// Inventory implements devices.Vendor. NPUs whose registered type does not
// contain the CommonWord (case-insensitive) are left out, as HAMi does.
// Each card's Mode says whether its node supports hami-core; its Group
// holds its NetworkID, or NoNetworkID.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[v.registerKey]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.registerKey, err)
	}
	ids, err := networkIDs(raw, len(cards))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.registerKey, err)
	}
	kept := cards[:0]
	keptIDs := ids[:0]
	upper := strings.ToUpper(v.cfg.CommonWord)
	for i, c := range cards {
		if strings.Contains(strings.ToUpper(c.Model), upper) {
			kept = append(kept, c)
			keptIDs = append(keptIDs, ids[i])
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s: no NPU type contains %s", v.registerKey, v.cfg.CommonWord)
	}
	if !devices.CountAllocatable(node, v.names.Count) {
		return nil, fmt.Errorf("allocatable %s is 0: the device plugin is not serving", v.names.Count)
	}
	mode := v.nodeMode(node)
	for i := range kept {
		kept[i].Mode = mode
		kept[i].Group = keptIDs[i]
	}
	devices.ApplyCordon(kept, node.Annotations[devices.DeviceCordon])
	return kept, nil
}

// networkIDs returns each registered NPU's custominfo.NetworkID, or
// NoNetworkID when it has none that is a number in 0..2^31-1. Legacy
// (non-JSON) registers carry none.
func networkIDs(raw string, n int) ([]int, error) {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = NoNetworkID
	}
	trimmed := strings.TrimSpace(raw)
	if !strings.HasPrefix(trimmed, "[") {
		return ids, nil
	}
	var extras []registeredExtra
	if err := json.Unmarshal([]byte(trimmed), &extras); err != nil {
		return nil, fmt.Errorf("custominfo of an NPU is not a JSON object: %v", err)
	}
	for i := range min(len(extras), n) {
		f, ok := extras[i].CustomInfo["NetworkID"].(float64)
		if ok && f >= 0 && f <= math.MaxInt32 {
			ids[i] = int(f)
		}
	}
	return ids, nil
}

// nodeMode is the card Mode of the node's NPUs.
func (v *Vendor) nodeMode(node *corev1.Node) string {
	supported := v.cfg.HamiVnpuCore
	if s, ok := node.Annotations[NodeHAMiCoreAnnotation]; ok {
		supported = s == "true"
	}
	if supported {
		return ModeHAMiCore
	}
	return ModeTemplate
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	for _, key := range []string{v.registerKey, devices.DeviceCordon} {
		if old.Annotations[key] != updated.Annotations[key] {
			return true
		}
	}
	if v.nodeMode(old) != v.nodeMode(updated) {
		return true
	}
	return devices.AllocatableChanged(old, updated, v.names.Count)
}

// ParsePod implements devices.Vendor.
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, v.useUUIDKey, v.avoidUUIDKey); err != nil {
		return devices.PodRequest{}, err
	}
	if pod.Annotations[VNPUModeAnnotation] == ModeHAMiCore {
		req.Preferences.Mode = ModeHAMiCore
	}
	return req, nil
}

// parseContainer reads one container: NPU count, memory per NPU (times
// memoryFactor; none is the whole NPU) and cores (percent, hami-core).
func (v *Vendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	r := devices.Request{Count: count}
	mem, _, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB, err = devices.ScaleMemory(v.names.Memory, mem, v.cfg.MemoryFactor); err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB == 0 {
		r.MemoryPercent = 100
	}
	if r.Cores, _, err = devices.ContainerQuantity(c, v.names.Cores); err != nil {
		return devices.Request{}, err
	}
	return r, nil
}

// template returns the name of the smallest template whose memory is at
// least mem, or "" when none is (the whole NPU).
func (v *Vendor) template(mem int64) string {
	for _, t := range v.cfg.Templates {
		if mem <= t.Memory {
			return t.Name
		}
	}
	return ""
}

// roundMemory is the hard split's memory for a request of mem MiB: the
// smallest template that holds it, else the whole NPU when mem is within
// the capacity, else 0 (refused).
func (v *Vendor) roundMemory(mem int64) int64 {
	for _, t := range v.cfg.Templates {
		if mem <= t.Memory {
			return t.Memory
		}
	}
	if mem <= v.cfg.MemoryCapacity {
		return v.cfg.MemoryAllocatable
	}
	return 0
}

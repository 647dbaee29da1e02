// Package cambricon is the Cambricon MLU vendor: HAMi's sharing of MLUs
// (dynamic smlu), with cards synthesised from the node's capacity and the
// annotations Cambricon's device plugin reads.
package cambricon

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Annotation keys of the Cambricon vendor.
const (
	ToAllocateAnnotation = "hami.io/cambricon-mlu-devices-to-allocate"
	AllocatedAnnotation  = "hami.io/cambricon-mlu-devices-allocated"

	UseUUIDAnnotation   = "cambricon.com/use-gpuuuid"
	AvoidUUIDAnnotation = "cambricon.com/nouse-gpuuuid"

	// AssignedAnnotation is set to "false" with every assignment; the
	// device plugin flips it once it has served the pod.
	AssignedAnnotation = "CAMBRICON_DSMLU_ASSIGNED"
	// ProfileAnnotation is "<index>_<cores>_<memory/256>" of the first
	// card of the first container that got one.
	ProfileAnnotation = "CAMBRICON_DSMLU_PROFILE"

	// LockAnnotation is Cambricon's own node lock (an RFC3339 time), taken
	// instead of hami.io/mutex.lock; see NodeLock.
	LockAnnotation = "cambricon.com/dsmlu.lock"
	// LockExpiry is the age after which HAMi replaces LockAnnotation.
	LockExpiry = 2 * time.Minute
)

// VendorWord is HAMi's CommonWord and card type for Cambricon.
const VendorWord = "MLU"

// Default resource names (HAMi's chart).
const (
	DefaultCountName  = "cambricon.com/vmlu"
	DefaultMemoryName = "cambricon.com/mlu.smlu.vmemory"
	DefaultCoresName  = "cambricon.com/mlu.smlu.vcore"
)

// MemoryUnitMiB is the size of one unit of the memory resource (and of the
// node's memory capacity): HAMi's fixed MemoryFactor 256.
const MemoryUnitMiB = 256

// DefaultCores is the core share of a container that names none: the
// whole MLU.
const DefaultCores int32 = 100

// CardWord is the middle of a synthesised card id, <node>-cambricon-mlu-<i>.
const CardWord = "cambricon-mlu"

// Vendor implements devices.Vendor for Cambricon MLUs.
type Vendor struct {
	names devices.ResourceNames
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.MemoryScaler = &Vendor{}
	_ devices.PodAnnotator = &Vendor{}
)

// New returns the Cambricon vendor with cfg's resource names over HAMi's
// defaults. Settings HAMi has no Cambricon equivalent for are refused.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.ResourceMemoryPercentageName != "" || cfg.ResourcePriorityName != "":
		return nil, fmt.Errorf("vendor %s: Cambricon has no memory percentage or priority resource", cfg.Name)
	case cfg.DefaultMemoryMiB != 0 || cfg.DefaultCores != 0 || cfg.DefaultCount != nil:
		return nil, fmt.Errorf("vendor %s: HAMi has no Cambricon defaults (defaultMemoryMiB, defaultCores, defaultCount)", cfg.Name)
	case cfg.MemoryFactor != 0 && cfg.MemoryFactor != MemoryUnitMiB:
		return nil, fmt.Errorf("vendor %s: Cambricon's memory unit is fixed at %d MiB (memoryFactor)", cfg.Name, MemoryUnitMiB)
	case cfg.RuntimeClassName != "" || cfg.OverwriteEnv || cfg.CorePolicy != "" || len(cfg.MIGProfiles) > 0:
		return nil, fmt.Errorf("vendor %s: runtimeClassName, overwriteEnv, corePolicy and migProfiles are NVIDIA settings", cfg.Name)
	}
	return &Vendor{names: devices.ResourceNames{
		Count:  corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName)),
		Memory: corev1.ResourceName(cmp.Or(cfg.ResourceMemoryName, DefaultMemoryName)),
		Cores:  corev1.ResourceName(cmp.Or(cfg.ResourceCoresName, DefaultCoresName)),
	}}, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// MemoryFactor implements devices.MemoryScaler: the memory resource counts
// 256 MiB units, and HAMi scales a namespace's memory quota likewise.
func (v *Vendor) MemoryFactor() int32 { return MemoryUnitMiB }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation, AllocatedAnnotation
}

// NodeLock is the node lock the scheduler must take for a pod
// whose regular containers ask for MLUs: Cambricon's own key, not
// hami.io/mutex.lock (see the package README).
func (v *Vendor) NodeLock() string { return LockAnnotation }

// Inventory implements devices.Vendor. HAMi synthesises one card per
// started 100 of the core capacity: ids <node>-cambricon-mlu-<i>, 100
// shares, 100 cores, memory capacity x 256 x 100 / core capacity MiB each,
// always healthy. A node without core capacity has no MLU.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	cores, ok, err := devices.WholeCapacity(node, v.names.Cores)
	if err != nil || !ok || cores == 0 {
		return nil, err
	}
	mem, _, err := devices.WholeCapacity(node, v.names.Memory)
	if err != nil {
		return nil, err
	}
	perCard := mem * MemoryUnitMiB * 100 / cores
	if mem > math.MaxInt64/(MemoryUnitMiB*100) || perCard > math.MaxInt32 {
		return nil, fmt.Errorf("capacity %s %d makes cards of more than %d MiB", v.names.Memory, mem, math.MaxInt32)
	}
	n := (cores + 99) / 100
	if n > maxCards {
		return nil, fmt.Errorf("capacity %s %d makes more than %d cards", v.names.Cores, cores, maxCards)
	}
	cards := make([]devices.Card, n)
	for i := range cards {
		cards[i] = devices.Card{
			UUID: CardID(node.Name, i), Index: i, Split: 100, MemoryMiB: int32(perCard), Cores: 100,
			Model: VendorWord, Mode: devices.DefaultMode, Healthy: true,
		}
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// maxCards bounds the cards synthesised from a capacity.
const maxCards = 1024

// CardID is the id HAMi gives card i of a node.
func CardID(node string, i int) string { return node + "-" + CardWord + "-" + strconv.Itoa(i) }

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return old.Name != updated.Name ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon] ||
		devices.CapacityChanged(old, updated, v.names.Cores) || devices.CapacityChanged(old, updated, v.names.Memory)
}

// Fit implements devices.Vendor: HAMi's standard share fit. HAMi also
// checks the namespace quota per card; every card of a node has the same
// memory, so the plugin's quota check after the fit is equivalent.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	return devices.FitPod(VendorWord, cards, used, req)
}

// FitsByStandardRules implements devices.StandardFitter: Fit is FitPod.
func (v *Vendor) FitsByStandardRules() {}

// ParsePod implements devices.Vendor. The card type selectors
// (cambricon.com/use-mlutype) are defined by HAMi but never read; only the
// uuid selectors and the card policy apply.
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

// parseContainer reads one container: count, memory in 256 MiB units
// (none is the whole card) and cores (none is 100).
func (v *Vendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	r := devices.Request{Count: count, Cores: DefaultCores}
	mem, _, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB, err = devices.ScaleMemory(v.names.Memory, mem, MemoryUnitMiB); err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB == 0 {
		r.MemoryPercent = 100
	}
	cores, ok, err := devices.ContainerQuantity(c, v.names.Cores)
	if err != nil {
		return devices.Request{}, err
	}
	if ok {
		r.Cores = cores
	}
	return r, nil
}

// AssignmentExtras implements devices.PodAnnotator: HAMi's
// CAMBRICON_DSMLU_ASSIGNED "false", the same flag as Cambricon's plugin
// spells it (PluginAssignedAnnotation), and CAMBRICON_DSMLU_PROFILE from the
// first card of the first container that got one. The card index is the
// number ending the card id, as HAMi synthesised it.
func (v *Vendor) AssignmentExtras(_ *corev1.Pod, a devices.Assignment, _ time.Time) (map[string]string, error) {
	for _, ctr := range a {
		if len(ctr) == 0 {
			continue
		}
		g := ctr[0]
		idx, err := cardIndex(g.UUID)
		if err != nil {
			return nil, err
		}
		return map[string]string{
			AssignedAnnotation:       "false",
			PluginAssignedAnnotation: "false",
			ProfileAnnotation:        strconv.Itoa(idx) + "_" + strconv.Itoa(int(g.Cores)) + "_" + strconv.Itoa(int(g.MemoryMiB/MemoryUnitMiB)),
		}, nil
	}
	return nil, nil
}

// cardIndex reads the index that ends a card id <node>-cambricon-mlu-<i>.
func cardIndex(id string) (int, error) {
	i := strings.LastIndexByte(id, '-')
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("card id %q does not end in a card index", id)
	}
	return n, nil
}

// Default implements devices.Vendor. HAMi's webhook only detects MLU
// containers (count in limits); values the scheduler could not read are
// refused here.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	for _, name := range []corev1.ResourceName{v.names.Count, v.names.Memory, v.names.Cores} {
		if _, _, err := devices.ContainerQuantity(c, name); err != nil {
			return false, err
		}
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}

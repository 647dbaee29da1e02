// Package hygon is the Hygon DCU vendor: HAMi's sharing of Hygon DCUs,
// read from and written to the annotations Hygon's device plugin uses.
package hygon

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Annotation keys of the Hygon vendor.
const (
	RegisterAnnotation   = "hami.io/node-dcu-register"
	HandshakeAnnotation  = "hami.io/node-handshake-dcu"
	ToAllocateAnnotation = "hami.io/dcu-devices-to-allocate"
	AllocatedAnnotation  = "hami.io/dcu-devices-allocated"

	UseTypeAnnotation   = "hygon.com/use-dcutype"
	AvoidTypeAnnotation = "hygon.com/nouse-dcutype"
	UseUUIDAnnotation   = "hygon.com/use-gpuuuid"
	AvoidUUIDAnnotation = "hygon.com/nouse-gpuuuid"
)

// VendorWord is HAMi's CommonWord for Hygon: the type written in every
// grant, and the word a card's registered type must contain.
const VendorWord = "DCU"

// Default resource names (HAMi's chart).
const (
	DefaultCountName  = "hygon.com/dcunum"
	DefaultMemoryName = "hygon.com/dcumem"
	DefaultCoresName  = "hygon.com/dcucores"
)

// DefaultCores is the core share of a container that names none: HAMi
// gives Hygon containers the whole card's cores unless they ask otherwise.
const DefaultCores int32 = 100

// Vendor implements devices.Vendor for Hygon DCUs.
type Vendor struct {
	names         devices.ResourceNames
	memoryFactor  int32
	defaultMemory int32
	defaultCores  int32
}

var (
	_ devices.Vendor       = &Vendor{}
	_ devices.Handshaker   = &Vendor{}
	_ devices.MemoryScaler = &Vendor{}
)

// New returns the Hygon vendor with cfg's settings over HAMi's defaults.
// Settings HAMi has no Hygon equivalent for are refused rather than
// silently ignored.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.ResourceMemoryPercentageName != "":
		return nil, fmt.Errorf("vendor %s: Hygon has no memory percentage resource (resourceMemoryPercentageName)", cfg.Name)
	case cfg.ResourcePriorityName != "":
		return nil, fmt.Errorf("vendor %s: Hygon has no priority resource (resourcePriorityName)", cfg.Name)
	case cfg.DefaultCount != nil:
		return nil, fmt.Errorf("vendor %s: HAMi's webhook adds no DCU count (defaultCount)", cfg.Name)
	case cfg.RuntimeClassName != "" || cfg.OverwriteEnv || cfg.CorePolicy != "" || len(cfg.MIGProfiles) > 0:
		return nil, fmt.Errorf("vendor %s: runtimeClassName, overwriteEnv, corePolicy and migProfiles are NVIDIA settings", cfg.Name)
	}
	v := &Vendor{
		names: devices.ResourceNames{
			Count:  corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName)),
			Memory: corev1.ResourceName(cmp.Or(cfg.ResourceMemoryName, DefaultMemoryName)),
			Cores:  corev1.ResourceName(cmp.Or(cfg.ResourceCoresName, DefaultCoresName)),
		},
		memoryFactor:  cfg.MemoryFactor,
		defaultMemory: cfg.DefaultMemoryMiB,
		defaultCores:  DefaultCores,
	}
	if cfg.DefaultCores > 0 {
		v.defaultCores = cfg.DefaultCores
	}
	return v, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// MemoryFactor implements devices.MemoryScaler: HAMi scales a namespace's
// dcumem quota by the Hygon memoryFactor too. 0 means 1.
func (v *Vendor) MemoryFactor() int32 { return max(v.memoryFactor, 1) }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation, AllocatedAnnotation
}

// HandshakeAnnotation implements devices.Handshaker.
func (v *Vendor) HandshakeAnnotation() string { return HandshakeAnnotation }

// Fit implements devices.Vendor: HAMi's standard share fit.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	return devices.FitPod(VendorWord, cards, used, req)
}

// FitsByStandardRules implements devices.StandardFitter: Fit is FitPod.
func (v *Vendor) FitsByStandardRules() {}

// Inventory implements devices.Vendor. Cards whose registered type does
// not contain DCU are not Hygon's and are left out, as HAMi does.
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[RegisterAnnotation]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RegisterAnnotation, err)
	}
	if cards = devices.KeepModel(cards, VendorWord); len(cards) == 0 {
		return nil, fmt.Errorf("%s: no card type contains %s", RegisterAnnotation, VendorWord)
	}
	if !devices.CountAllocatable(node, v.names.Count) {
		return nil, fmt.Errorf("allocatable %s is 0: the device plugin is not serving", v.names.Count)
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.RegisterChanged(old, updated, RegisterAnnotation, v.names.Count)
}

// ParsePod implements devices.Vendor.
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return req, err
	}
	a := pod.Annotations
	if req.Preferences, err = devices.UUIDPreferences(a, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	req.Preferences.UseModels = devices.SplitUpperList(a[UseTypeAnnotation])
	req.Preferences.AvoidModels = devices.SplitUpperList(a[AvoidTypeAnnotation])
	return req, nil
}

// parseContainer reads one container: count, memory per card (times
// memoryFactor; none is the whole card) and cores (none is 100).
func (v *Vendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	r := devices.Request{Count: count, Cores: v.defaultCores}
	mem, _, err := devices.ContainerQuantity(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB, err = devices.ScaleMemory(v.names.Memory, mem, v.memoryFactor); err != nil {
		return devices.Request{}, err
	}
	if r.MemoryMiB == 0 {
		if v.defaultMemory > 0 {
			r.MemoryMiB = v.defaultMemory
		} else {
			r.MemoryPercent = 100
		}
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

// Default implements devices.Vendor. HAMi's webhook only detects Hygon
// containers (count in limits) and changes nothing; values the scheduler
// could not read are refused here.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	for _, name := range []corev1.ResourceName{v.names.Count, v.names.Memory, v.names.Cores} {
		if _, _, err := devices.ContainerQuantity(c, name); err != nil {
			return false, err
		}
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}

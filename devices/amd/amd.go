// Package amd is the AMD vendor: HAMi's sharing of AMD Instinct GPUs
// (pkg/device/amd), read from the register annotation of AMD's HAMi device
// plugin; memory in MiB and compute units (CUs) per card.
package amd

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// VendorWord is HAMi's CommonWord for AMD: a registered type must contain
// it. Grants carry the card's own product type instead.
const VendorWord = "AMD"

// Annotation keys.
const (
	RegisterAnnotation   = "hami.io/node-amd-register"
	ToAllocateAnnotation = "hami.io/amd-devices-to-allocate"
	AllocatedAnnotation  = "hami.io/amd-devices-allocated"

	UseTypeAnnotation   = "amd.com/use-gputype"
	AvoidTypeAnnotation = "amd.com/nouse-gputype"
	UseUUIDAnnotation   = "amd.com/use-gpu-uuid"
	AvoidUUIDAnnotation = "amd.com/nouse-gpu-uuid"
)

// Default resource names (HAMi's chart).
const (
	DefaultCountName  = "amd.com/gpu"
	DefaultMemoryName = "amd.com/gpumem"
	DefaultCoresName  = "amd.com/gpucores"
)

// Vendor implements devices.Vendor for AMD GPUs.
type Vendor struct {
	names devices.ResourceNames
}

var _ devices.Vendor = &Vendor{}

// New returns the AMD vendor with cfg's resource names over HAMi's
// defaults.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(devices.RenameMemory | devices.RenameCores) {
		return nil, fmt.Errorf("vendor %s: AMD takes only resourceCountName, resourceMemoryName and resourceCoresName", cfg.Name)
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

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation, AllocatedAnnotation
}

var _ devices.NodeLocker = &Vendor{}

// NodeLock implements devices.NodeLocker: the node lock key HAMi takes for this vendor.
func (v *Vendor) NodeLock() string { return devices.NodeLock }

// Inventory implements devices.Vendor: the JSON register annotation, cards
// whose type contains AMD (case-insensitive). HAMi has no handshake for
// AMD; the node is healthy while its capacity of the count resource is
// positive.
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
	for _, c := range cards {
		// The type is written into assignments.
		if strings.ContainsAny(c.Model, ",:;") {
			return nil, fmt.Errorf("%s: card %s type %q contains a separator (, : or ;)", RegisterAnnotation, c.UUID, c.Model)
		}
	}
	if q, ok := node.Status.Capacity[v.names.Count]; !ok || q.Sign() <= 0 {
		return nil, fmt.Errorf("%s: capacity %s is 0: the device plugin is not serving", RegisterAnnotation, v.names.Count)
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return old.Annotations[RegisterAnnotation] != updated.Annotations[RegisterAnnotation] ||
		old.Annotations[devices.DeviceCordon] != updated.Annotations[devices.DeviceCordon] ||
		devices.CapacityChanged(old, updated, v.names.Count)
}

// ParsePod implements devices.Vendor. HAMi reads AMD requests from limits
// only: count, memory in MiB (none: the whole card), cores in percent
// 1-100 (none: 100).
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

func limit(c *corev1.Container, name corev1.ResourceName) (int64, bool, error) {
	q, ok := c.Resources.Limits[name]
	if !ok {
		return 0, false, nil
	}
	n, exact := q.AsInt64()
	if !exact || n < 0 || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("%s %s is not a whole number between 0 and %d", name, q.String(), math.MaxInt32)
	}
	return n, true, nil
}

func (v *Vendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := limit(c, v.names.Count)
	if err != nil || count == 0 {
		return devices.Request{}, err
	}
	mem, _, err := limit(c, v.names.Memory)
	if err != nil {
		return devices.Request{}, err
	}
	cores, ok, err := limit(c, v.names.Cores)
	if err != nil {
		return devices.Request{}, err
	}
	if !ok {
		cores = 100
	} else if cores < 1 || cores > 100 {
		return devices.Request{}, fmt.Errorf("%s must be an integer percentage between 1 and 100", v.names.Cores)
	}
	return devices.Request{Count: int32(count), MemoryMiB: int32(mem), Cores: int32(cores)}, nil
}

// Fit implements devices.Vendor with HAMi's AMD rules: health, type and
// uuid selectors, shares, mutex, free memory (none asked: the whole card)
// and free CUs, where the percentage asked becomes max(1, devcore x pct /
// 100) CUs, at most devcore (a request without cores and with the whole
// memory takes every CU). No "exclusive 100" or "cores full" rule. Grants
// carry the card's product type.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	p := &req.Preferences
	return devices.FitPodWith(VendorWord, cards, used, req, devices.FitOptions{Check: func(_ int, c *devices.Card, u devices.Usage, r devices.Request, _ devices.Assignment) (devices.Grant, devices.Refusal, bool) {
		switch {
		case !p.WantsUUID(c.UUID):
			return devices.Grant{}, devices.RefuseUUID, false
		case u.Sharers >= c.Split:
			return devices.Grant{}, devices.RefuseShares, false
		case p.Exclusive && u.Sharers > 0:
			return devices.Grant{}, devices.RefuseExclusive, false
		}
		mem := r.MemoryMiB
		if mem <= 0 && c.MemoryMiB > 0 {
			mem = c.MemoryMiB
		}
		if int64(c.MemoryMiB)-u.MemoryMiB < int64(mem) {
			return devices.Grant{}, devices.RefuseMemory, false
		}
		var cus int32
		if r.Cores > 0 {
			if c.Cores <= 0 {
				return devices.Grant{}, devices.RefuseCores, false
			}
			cus = int32(min(max(int64(c.Cores)*int64(r.Cores)/100, 1), int64(c.Cores)))
		} else if c.MemoryMiB > 0 && mem >= c.MemoryMiB {
			cus = c.Cores
		}
		if int64(c.Cores)-u.Cores < int64(cus) {
			return devices.Grant{}, devices.RefuseCores, false
		}
		return devices.Grant{UUID: c.UUID, Vendor: c.Model, MemoryMiB: mem, Cores: cus}, 0, true
	}})
}

// Default implements devices.Vendor with HAMi's admission rule: a
// container with the count in limits must ask cores (if any) as a whole
// percentage 1-100. A container with only AMD memory or cores in limits is
// reported as an AMD container too, as HAMi does.
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	if _, ok := c.Resources.Limits[v.names.Count]; ok {
		if _, err := v.parseContainer(c); err != nil {
			return false, err
		}
		return true, nil
	}
	_, mem := c.Resources.Limits[v.names.Memory]
	_, cores := c.Resources.Limits[v.names.Cores]
	return mem || cores, nil
}

// Package biren is the Biren vendor: HAMi's placement of Biren GPUs
// (pkg/device/biren, docs/biren-support.md), read from the register
// annotation of Biren's device plugin. Count only: no memory or core
// sharing.
package biren

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// VendorWord is HAMi's CommonWord for Biren; registered types must contain
// it.
const VendorWord = "Biren"

// Annotation keys (note the capital B in the assignment keys).
const (
	RegisterAnnotation   = "hami.io/node-biren-register"
	HandshakeAnnotation  = "hami.io/node-handshake-biren"
	ToAllocateAnnotation = "hami.io/Biren-devices-to-allocate"
	AllocatedAnnotation  = "hami.io/Biren-devices-allocated"

	UseUUIDAnnotation   = "birentech.com/use-gpuuuid"
	AvoidUUIDAnnotation = "birentech.com/nouse-gpuuuid"
)

// DefaultCountName is the chart's count resource.
const DefaultCountName = "birentech.com/gpu"

// Vendor implements devices.Vendor for Biren.
type Vendor struct {
	names devices.ResourceNames
}

var (
	_ devices.Vendor     = &Vendor{}
	_ devices.Handshaker = &Vendor{}
)

// New returns the Biren vendor; only the count resource can be renamed.
func New(cfg devices.Config) (*Vendor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.OnlyRenames(0) {
		return nil, fmt.Errorf("vendor %s: Biren takes only resourceCountName", cfg.Name)
	}
	return &Vendor{names: devices.ResourceNames{Count: corev1.ResourceName(cmp.Or(cfg.ResourceCountName, DefaultCountName))}}, nil
}

// Name implements devices.Vendor.
func (v *Vendor) Name() string { return VendorWord }

// Resources implements devices.Vendor.
func (v *Vendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *Vendor) AssignmentAnnotations() (string, string) {
	return ToAllocateAnnotation, AllocatedAnnotation
}

// HandshakeAnnotation implements devices.Handshaker.
func (v *Vendor) HandshakeAnnotation() string { return HandshakeAnnotation }

var _ devices.NodeLocker = &Vendor{}

// NodeLock implements devices.NodeLocker: the node lock key HAMi takes for this vendor.
func (v *Vendor) NodeLock() string { return devices.NodeLock }

// Inventory implements devices.Vendor: the JSON register annotation (the
// legacy form is read too), devcore forced to 100 (HAMi: only for the card
// score). Every card of the register is Biren's, whatever its type: since
// 2026-05 Biren's plugin registers the driver's GPU name (e.g. BR104) in
// runc mode, where HAMi keeps only types containing "Biren" and so offers
// no card on such a node (docs/vendors.md, "Vendors' device plugins").
func (v *Vendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[RegisterAnnotation]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", RegisterAnnotation, err)
	}
	for i := range cards {
		cards[i].Cores = 100
	}
	if !devices.CountAllocatable(node, v.names.Count) {
		return nil, fmt.Errorf("%s: allocatable %s is 0: the device plugin is not serving", RegisterAnnotation, v.names.Count)
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *Vendor) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.RegisterChanged(old, updated, RegisterAnnotation, v.names.Count)
}

// ParsePod implements devices.Vendor: the count (limits, else requests);
// each card is asked as 100% memory and 0 cores (HAMi's request, which
// only orders the cards).
func (v *Vendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, devices.CountOnlyRequest(v.names.Count))
	if err != nil || !asked {
		return req, err
	}
	if req.Preferences, err = devices.UUIDPreferences(pod.Annotations, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	return req, nil
}

// Fit implements devices.Vendor with HAMi's Biren rules: health, uuid,
// shares, mutex; no memory or core check; grants record 0/0.
func (v *Vendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	p := &req.Preferences
	return devices.FitPodWith(VendorWord, cards, used, req, devices.FitOptions{Check: func(_ int, c *devices.Card, u devices.Usage, _ devices.Request, _ devices.Assignment) (devices.Grant, devices.Refusal, bool) {
		switch {
		case !p.WantsUUID(c.UUID):
			return devices.Grant{}, devices.RefuseUUID, false
		case u.Sharers >= c.Split:
			return devices.Grant{}, devices.RefuseShares, false
		case p.Exclusive && u.Sharers > 0:
			return devices.Grant{}, devices.RefuseExclusive, false
		}
		return devices.Grant{UUID: c.UUID, Vendor: VendorWord}, 0, true
	}})
}

// Default implements devices.Vendor: detection only (count in limits).
func (v *Vendor) Default(c *corev1.Container) (bool, error) {
	if _, _, err := devices.ContainerQuantity(c, v.names.Count); err != nil {
		return false, err
	}
	_, ok := c.Resources.Limits[v.names.Count]
	return ok, nil
}

package kunlun

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// Annotation keys of vXPUs.
const (
	VXPURegisterAnnotation   = "hami.io/node-register-xpu"
	VXPUHandshakeAnnotation  = "hami.io/node-handshake-xpu"
	VXPUToAllocateAnnotation = "hami.io/xpu-devices-to-allocate"
	VXPUAllocatedAnnotation  = "hami.io/xpu-devices-allocated"
)

// VXPUWord is HAMi's CommonWord, card type and grant type of vXPUs.
const VXPUWord = "XPU"

// Default vXPU resource names (HAMi's chart).
const (
	DefaultVXPUCountName  = "kunlunxin.com/vxpu"
	DefaultVXPUMemoryName = "kunlunxin.com/vxpu-memory"
)

// VXPUMaxMemoryMiB is a whole XPU; the memory templates are a quarter and
// a half of it.
const VXPUMaxMemoryMiB = 98304

// RoundVXPUMemory is HAMi's trimMemory: the request rounded up to 24576,
// 49152, else 98304 MiB.
func RoundVXPUMemory(mib int64) int64 {
	for _, t := range []int64{24576, 49152} {
		if mib <= t {
			return t
		}
	}
	return VXPUMaxMemoryMiB
}

// VXPUVendor implements devices.Vendor for Kunlunxin vXPUs.
type VXPUVendor struct {
	names devices.ResourceNames
}

var (
	_ devices.Vendor     = &VXPUVendor{}
	_ devices.Handshaker = &VXPUVendor{}
)

// VXPUConfig is the vXPU part of HAMi's kunlun section, carried in
// devices.Config.Vendor.
type VXPUConfig struct {
	ResourceVCountName  string
	ResourceVMemoryName string
}

// NewVXPU returns the vXPU vendor configured by the VXPUConfig in
// cfg.Vendor (nil: HAMi's chart names).
func NewVXPU(cfg devices.Config) (*VXPUVendor, error) {
	var vc VXPUConfig
	if cfg.Vendor != nil {
		var ok bool
		if vc, ok = cfg.Vendor.(VXPUConfig); !ok {
			return nil, fmt.Errorf("vendor %s: want a kunlun.VXPUConfig, got %T", cfg.Name, cfg.Vendor)
		}
	}
	shared := cfg
	shared.Vendor = nil
	if _, err := New(shared); err != nil || shared.ResourceCountName != "" {
		return nil, fmt.Errorf("vendor %s: set the vXPU resources in the kunlun section (resourceVCountName, resourceVMemoryName)", cfg.Name)
	}
	return &VXPUVendor{names: devices.ResourceNames{
		Count:  corev1.ResourceName(cmp.Or(vc.ResourceVCountName, DefaultVXPUCountName)),
		Memory: corev1.ResourceName(cmp.Or(vc.ResourceVMemoryName, DefaultVXPUMemoryName)),
	}}, nil
}

// Name implements devices.Vendor.
func (v *VXPUVendor) Name() string { return VXPUWord }

// Resources implements devices.Vendor.
func (v *VXPUVendor) Resources() devices.ResourceNames { return v.names }

// AssignmentAnnotations implements devices.Vendor.
func (v *VXPUVendor) AssignmentAnnotations() (string, string) {
	return VXPUToAllocateAnnotation, VXPUAllocatedAnnotation
}

// HandshakeAnnotation implements devices.Handshaker.
func (v *VXPUVendor) HandshakeAnnotation() string { return VXPUHandshakeAnnotation }

// NodeLock: HAMi takes hami.io/mutex.lock for vXPU pods.
func (v *VXPUVendor) NodeLock() string { return devices.NodeLock }

// Inventory implements devices.Vendor: hami.io/node-register-xpu (JSON, as
// HAMi writes it; the legacy form is accepted too); cards whose type lacks
// XPU are left out; a node whose allocatable vXPU count is 0 is refused.
func (v *VXPUVendor) Inventory(node *corev1.Node) ([]devices.Card, error) {
	raw, ok := node.Annotations[VXPURegisterAnnotation]
	if !ok {
		return nil, nil
	}
	cards, err := devices.DecodeInventory(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", VXPURegisterAnnotation, err)
	}
	if cards = devices.KeepModel(cards, VXPUWord); len(cards) == 0 {
		return nil, fmt.Errorf("%s: no card type contains %s", VXPURegisterAnnotation, VXPUWord)
	}
	if !devices.CountAllocatable(node, v.names.Count) {
		return nil, fmt.Errorf("allocatable %s is 0: the device plugin is not serving", v.names.Count)
	}
	devices.ApplyCordon(cards, node.Annotations[devices.DeviceCordon])
	return cards, nil
}

// InventoryChanged implements devices.Vendor.
func (v *VXPUVendor) InventoryChanged(old, updated *corev1.Node) bool {
	return devices.RegisterChanged(old, updated, VXPURegisterAnnotation, v.names.Count)
}

// ParsePod implements devices.Vendor: memory rounded up to a template
// (none: a whole XPU), cores = memory x 100 / 98304; both uuid selector
// pairs; mutex takes unused cards only.
func (v *VXPUVendor) ParsePod(pod *corev1.Pod) (devices.PodRequest, error) {
	req, asked, err := devices.ParseContainers(pod, v.parseContainer)
	if err != nil || !asked {
		return devices.PodRequest{}, err
	}
	a := pod.Annotations
	if req.Preferences, err = devices.UUIDPreferences(a, UseUUIDAnnotation, AvoidUUIDAnnotation); err != nil {
		return devices.PodRequest{}, err
	}
	addBaiduUUIDs(&req.Preferences, a)
	return req, nil
}

// parseContainer reads one container: a count, and memory rounded up to a
// template (none: a whole XPU) with cores in proportion.
func (v *VXPUVendor) parseContainer(c *corev1.Container) (devices.Request, error) {
	count, _, err := devices.ContainerQuantity(c, v.names.Count)
	if err != nil || count <= 0 {
		return devices.Request{}, err
	}
	mem := int64(VXPUMaxMemoryMiB)
	if m, ok, err := devices.ContainerQuantity(c, v.names.Memory); err != nil {
		return devices.Request{}, err
	} else if ok {
		// HAMi rounds an explicit 0 up to 24576 too.
		mem = RoundVXPUMemory(int64(m))
	}
	return devices.Request{Count: count, MemoryMiB: int32(mem), Cores: int32(mem * 100 / VXPUMaxMemoryMiB)}, nil
}

// Fit implements devices.Vendor, HAMi's FitVXPU under the 8-card
// topology: a card fits when used memory + the request <= its memory and
// it is unused or its average slice (used memory / users) equals the
// request; the share count is not checked; mutex takes unused cards only.
func (v *VXPUVendor) Fit(cards []devices.Card, used []devices.Usage, req *devices.PodRequest) (devices.Assignment, *devices.Rejection) {
	mutex := req.Preferences.Exclusive
	return fitTopology(VXPUWord, cards, used, req, func(c *devices.Card, u devices.Usage, r *devices.Request) bool {
		if mutex && u.Sharers > 0 {
			return false
		}
		if int64(r.MemoryMiB)+u.MemoryMiB > int64(c.MemoryMiB) {
			return false
		}
		return u.Sharers == 0 || u.MemoryMiB/int64(u.Sharers) == int64(r.MemoryMiB)
	}, func(_ *devices.Card, r *devices.Request) (int32, int32) { return r.MemoryMiB, r.Cores })
}

// Default implements devices.Vendor, HAMi's vXPU webhook: a container with
// the count in its limits asks for vXPUs; a memory limit is rounded up to
// a template and written to limits and requests.
func (v *VXPUVendor) Default(c *corev1.Container) (bool, error) {
	if _, ok := c.Resources.Limits[v.names.Count]; !ok {
		return false, nil
	}
	for _, name := range []corev1.ResourceName{v.names.Count, v.names.Memory} {
		if _, _, err := devices.ContainerQuantity(c, name); err != nil {
			return false, err
		}
	}
	q, ok := c.Resources.Limits[v.names.Memory]
	if !ok {
		return true, nil
	}
	rounded := *resource.NewQuantity(RoundVXPUMemory(q.Value()), resource.DecimalSI)
	c.Resources.Limits[v.names.Memory] = rounded
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[v.names.Memory] = rounded
	return true, nil
}

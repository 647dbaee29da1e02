package dra

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hami-scheduler/hami-scheduler/devices"
)

// MiB is one mebibyte, the unit of HAMi's memory grants.
const MiB = 1 << 20

// DeviceKey names a device as allocations do.
type DeviceKey struct {
	Driver, Pool, Device string
}

// Device is one card a driver publishes on a node.
type Device struct {
	Key    DeviceKey
	Driver Driver
	// Card is the device as HAMi's fit sees it.
	Card devices.Card
	// Shared is the device's allowMultipleAllocations: a claim may take a
	// share of it. A device that is not shared goes to one claim whole.
	Shared bool
	// Policies are the request policies of the capacities that hold
	// memory and cores (nil when the device sets none).
	Memory, Cores *resourceapi.CapacityRequestPolicy
	// MemoryBytes is the memory capacity's value.
	MemoryBytes int64
}

// NodeDevices are the cards the node's ResourceSlices publish, for each
// driver model, in the order the slices list them.
type NodeDevices struct {
	Devices []Device
	// Problems say which devices could not be read, and why; they are
	// left out.
	Problems []string
}

// ForVendor returns the devices of a vendor's drivers and their cards.
func (n *NodeDevices) ForVendor(vendor string) ([]Device, []devices.Card) {
	var ds []Device
	var cards []devices.Card
	for _, d := range n.Devices {
		if d.Driver.Vendor == vendor {
			ds = append(ds, d)
			cards = append(cards, d.Card)
		}
	}
	return ds, cards
}

// Inventory reads the cards a node's ResourceSlices publish, for the known
// driver models: of each pool, the slices of its newest generation; of
// each slice, the devices whose "type" attribute is the driver's; ordered
// by driver, then card index. split is how many containers may share one
// card of a vendor (HAMi's device split count: a DRA driver sets no such
// bound); a card that is not shared goes whole.
func Inventory(nodeSlices []*resourceapi.ResourceSlice, split func(vendor string) int32) NodeDevices {
	newest := map[[2]string]int64{}
	for _, s := range nodeSlices {
		k := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	var out NodeDevices
	for _, s := range nodeSlices {
		driver, ok := DriverNamed(s.Spec.Driver)
		if !ok || s.Spec.Pool.Generation < newest[[2]string{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if stringAttr(d, driver, "type") != driver.Type {
				continue
			}
			dev, err := readDevice(driver, s.Spec.Pool.Name, d, split(driver.Vendor))
			if err != nil {
				out.Problems = append(out.Problems, fmt.Sprintf("%s device %s: %v", driver.Name, d.Name, err))
				continue
			}
			out.Devices = append(out.Devices, dev)
		}
	}
	slices.SortStableFunc(out.Devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Key.Driver, b.Key.Driver), cmp.Compare(a.Card.Index, b.Card.Index))
	})
	return out
}

// readDevice maps one device onto a card.
func readDevice(driver Driver, pool string, d *resourceapi.Device, split int32) (Device, error) {
	uuid := stringAttr(d, driver, "uuid")
	if uuid == "" {
		return Device{}, fmt.Errorf("no uuid attribute")
	}
	memory, ok := d.Capacity[driver.Memory]
	if !ok {
		return Device{}, fmt.Errorf("no %s capacity", driver.Memory)
	}
	bytes := memory.Value.Value()
	if bytes < MiB || bytes/MiB > int64(^uint32(0)>>1) {
		return Device{}, fmt.Errorf("%s capacity %s is out of range", driver.Memory, memory.Value.String())
	}
	dev := Device{
		Key:         DeviceKey{Driver: driver.Name, Pool: pool, Device: d.Name},
		Driver:      driver,
		Shared:      d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations,
		Memory:      memory.RequestPolicy,
		MemoryBytes: bytes,
		Card: devices.Card{
			UUID:      uuid,
			Index:     index(d, driver),
			Split:     split,
			MemoryMiB: int32(bytes / MiB),
			Cores:     100,
			Model:     driver.model(stringAttr(d, driver, "productName")),
			NUMA:      int(intAttr(d, driver, driver.NUMA)),
			Mode:      devices.DefaultMode,
			Healthy:   !tainted(d),
		},
	}
	if !dev.Shared {
		dev.Card.Split = 1
	}
	if driver.Cores != "" {
		cores, ok := d.Capacity[driver.Cores]
		if !ok {
			return Device{}, fmt.Errorf("no %s capacity", driver.Cores)
		}
		if v := cores.Value.Value(); v != 100 {
			return Device{}, fmt.Errorf("%s capacity is %s, want 100 (percent of the card)", driver.Cores, cores.Value.String())
		}
		dev.Cores = cores.RequestPolicy
	}
	return dev, nil
}

// tainted reports whether the device carries a taint that keeps new
// claims away (NoSchedule or NoExecute).
func tainted(d *resourceapi.Device) bool {
	for _, t := range d.Taints {
		if t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}

// attr looks an attribute up by its short name or by its name qualified
// with the driver's domain.
func attr(d *resourceapi.Device, driver Driver, name resourceapi.QualifiedName) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[name]; ok {
		return a, true
	}
	a, ok := d.Attributes[resourceapi.QualifiedName(driver.Name+"/"+string(name))]
	return a, ok
}

func stringAttr(d *resourceapi.Device, driver Driver, name resourceapi.QualifiedName) string {
	if a, ok := attr(d, driver, name); ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

func intAttr(d *resourceapi.Device, driver Driver, name resourceapi.QualifiedName) int64 {
	if name == "" {
		return 0
	}
	a, ok := attr(d, driver, name)
	switch {
	case !ok:
		return 0
	case a.IntValue != nil:
		return *a.IntValue
	case len(a.IntValues) > 0:
		return a.IntValues[0]
	}
	return 0
}

var lastNumber = regexp.MustCompile(`(\d+)$`)

// index is the card's index attribute, else the device name's last
// number (gpu-3: 3).
func index(d *resourceapi.Device, driver Driver) int {
	if driver.Index != "" {
		if a, ok := attr(d, driver, driver.Index); ok && a.IntValue != nil {
			return int(*a.IntValue)
		}
	}
	if m := lastNumber.FindString(d.Name); m != "" {
		n, _ := strconv.Atoi(m)
		return n
	}
	return 0
}

// quantity is a capacity value of n in the unit the capacity counts in.
func quantity(n int64, binary bool) resource.Quantity {
	if binary {
		return *resource.NewQuantity(n, resource.BinarySI)
	}
	return *resource.NewQuantity(n, resource.DecimalSI)
}
